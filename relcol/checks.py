"""Checks on what a caller passes to a public function, made once at that boundary.

The metrics, the warehouse's SQL and the report validate their parameters with these, so
a foundation module (it imports no relcol package) keeps the layers' imports one-way. Inner
helpers (the ``_``-prefixed builders) trust their arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import polars as pl

from relcol.errors import ColumnNotFoundError, ParameterError

#: The most equal-width bins a calibration metric takes: far finer than any test set
#: can fill, and small enough that a per-bin table stays small.
MAX_BINS = 1000


def check_bins(bins: object) -> int:
    """``bins`` as an int in [1, MAX_BINS], or a ``ParameterError`` naming the value received."""
    # bool is an int subclass, but bins=True is a mistake, not a bin count
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= MAX_BINS:
        raise ParameterError(f"bins must be an int in [1, {MAX_BINS}]. Got {bins!r}.")
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


def check_choice(name: str, value: object, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed``, else a ``ParameterError`` listing them."""
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ParameterError(f"{name} must be one of {choices}. Got {value!r}.")
    return value


def check_draws(draws: object) -> int:
    """``draws`` (Monte Carlo draws R) as an int >= 1."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ParameterError(f"draws must be an int >= 1. Got {draws!r}.")
    return draws


def check_share(name: str, value: object, *, low_open: bool) -> float:
    """``value`` as a float in (0, 1] (``low_open``) or [0, 1]."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        number = float(value)
        ok = (0.0 < number if low_open else 0.0 <= number) and number <= 1.0
    if not ok:
        interval = "(0, 1]" if low_open else "[0, 1]"
        raise ParameterError(f"{name} must be a number in {interval}. Got {value!r}.")
    return number
