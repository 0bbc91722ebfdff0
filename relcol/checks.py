"""Checks on what a caller passes to a public function, made once at that boundary.

The metrics, the warehouse's SQL and the report validate their parameters with these, so
a foundation module (it imports no relcol package) keeps the layers' imports one-way. Inner
helpers (the ``_``-prefixed builders) trust their arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING

from relcol.errors import ColumnNotFoundError, ParameterError

if TYPE_CHECKING:  # only in annotations: the warehouse's SQL path runs without Polars
    import polars as pl

#: The most equal-width bins a calibration metric takes: far finer than any test set
#: can fill, and small enough that a per-bin table stays small.
MAX_BINS = 1000


def is_int(value: object) -> bool:
    """An integer, not a bool (bool is an int subclass, but ``bins=True`` is a mistake)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A real number (int or float, NaN included), not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)


def check_int(
    name: str,
    value: object,
    low: int = 1,
    high: int | None = None,
    *,
    note: str = "",
    error: type[Exception] = ParameterError,
) -> int:
    """``value`` as an int >= ``low`` (and <= ``high``), else ``error`` naming it.

    >>> check_int("jobs", 2)
    2
    >>> check_int("bins", 0, 1, 1000)
    Traceback (most recent call last):
    ...
    relcol.errors.ParameterError: bins must be an int in [1, 1000]. Got 0.
    >>> check_int("jobs", True)
    Traceback (most recent call last):
    ...
    relcol.errors.ParameterError: jobs must be an int >= 1. Got True.
    """
    if not is_int(value) or value < low or (high is not None and value > high):
        expected = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise error(f"{name} must be an int {expected}{note}. Got {value!r}.")
    return int(value)


def check_interval(
    name: str, value: object, interval: str, *, error: type[Exception] = ParameterError
) -> float:
    """``value`` as a float in ``interval``, written "(0, 1)", "[0, 1)", "(0, 1]" or "[0, 1]".

    NaN and infinities are outside every such interval.

    >>> check_interval("alpha", 0.05, "(0, 1)")
    0.05
    >>> check_interval("tau", float("nan"), "[0, 1)")
    Traceback (most recent call last):
    ...
    relcol.errors.ParameterError: tau must be a number in [0, 1). Got nan.
    """
    low, high = (float(end) for end in interval[1:-1].split(","))
    ok = is_number(value)
    if ok:
        number = float(value)
        ok = (low < number if interval[0] == "(" else low <= number) and (
            number < high if interval[-1] == ")" else number <= high
        )
    if not ok:
        raise error(f"{name} must be a number in {interval}. Got {value!r}.")
    return number


#: Seeds are keys of the counter-based generator, which takes non-negative Int64 words.
SEED_BOUND = 2**62


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` as a generator seed, an int in [0, 2^62)."""
    if not is_int(value) or not 0 <= value < SEED_BOUND:
        raise ParameterError(f"{name} must be an int in [0, 2^62). Got {value!r}.")
    return int(value)


def check_bins(bins: object) -> int:
    """``bins`` as an int in [1, MAX_BINS], or a ``ParameterError`` naming the value received."""
    return check_int("bins", bins, 1, MAX_BINS)


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
    return check_int("draws", draws)


def check_share(name: str, value: object, *, low_open: bool) -> float:
    """``value`` as a float in (0, 1] (``low_open``) or [0, 1]."""
    return check_interval(name, value, "(0, 1]" if low_open else "[0, 1]")
