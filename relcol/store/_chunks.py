"""Runs of whole cells of a bounded number of rows: the unit a large study is stored and read
in (``Staging`` stores its views chunk by chunk; ``relcol.metrics.by_chunks`` and the bootstrap
read it run by run)."""

from __future__ import annotations

from collections.abc import Sequence


def chunk_spans(sizes: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """(start, length) of consecutive runs of cells of at most ``budget`` rows in all (a
    cell larger than that is a run of its own); one empty run when there are no cells."""
    out, start, rows = [], 0, 0
    for i, n in enumerate(sizes):
        if rows and rows + n > budget:
            out.append((start, i - start))
            start, rows = i, 0
        rows += n
    out.append((start, len(sizes) - start))
    return out
