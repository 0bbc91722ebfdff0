"""Checks on what a caller passes to a public metric function, made once at that boundary.

Inner helpers (the ``_``-prefixed builders) trust their arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from relcol.errors import ColumnNotFoundError, ParameterError


def check_bins(bins: object) -> int:
    """``bins`` as an int >= 1, or a ``ParameterError`` naming the value received."""
    # bool is an int subclass, but bins=True is a mistake, not a bin count
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ParameterError(f"bins must be an int >= 1. Got {bins!r}.")
    return bins


def check_keys(by: str | Iterable[str]) -> list[str]:
    """The grouping columns as a list (a single name is one key)."""
    return [by] if isinstance(by, str) else list(by)


def check_columns(function: str, frame: pl.LazyFrame, needed: Sequence[str]) -> None:
    """Raise ``ColumnNotFoundError`` unless ``frame`` has every column in ``needed``."""
    available = frame.collect_schema().names()
    missing = [name for name in dict.fromkeys(needed) if name not in available]
    if missing:
        raise ColumnNotFoundError.from_missing_and_available(function, missing, available)
