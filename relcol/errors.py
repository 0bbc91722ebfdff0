"""The one exception family relcol raises for problems a user can fix.

The CLI turns every ``RelcolError`` into one line on stderr and a non-zero exit;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterable


class RelcolError(Exception):
    """Base class: a problem with the user's input or environment, stated in one line."""

    exit_code = 2


class SpecError(RelcolError):
    """A study spec (TOML) is malformed or names something that does not exist."""


class InputError(RelcolError):
    """A data or prediction file cannot be used as given."""


class WarehouseError(RelcolError):
    """The warehouse is missing, locked, or would be changed in a way that is refused."""


class OutputError(RelcolError):
    """A file or folder relcol was asked to write (a report, ``--out``) cannot be written."""


class ParameterError(RelcolError, ValueError):
    """A function or option parameter is outside its allowed values; the message names both."""


class ColumnNotFoundError(InputError):
    """A named column is absent; the message lists the columns that do exist."""

    @classmethod
    def from_missing_and_available(
        cls, source: str, missing: Iterable[str], available: Iterable[str]
    ) -> ColumnNotFoundError:
        missing = sorted(missing)
        plural = "s" if len(missing) > 1 else ""
        return cls(
            f"{source}: column{plural} {', '.join(map(repr, missing))} not found; "
            f"available: {', '.join(map(repr, available))}"
        )


def first_line(exc: BaseException) -> str:
    """The first line of a library's exception message (its name when the message is empty):
    what a one-line error quotes as the reason."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def expect(condition: bool, error: type[RelcolError], message: str) -> None:
    """Raise ``error(message)`` unless ``condition`` holds."""
    if not condition:
        raise error(message)
