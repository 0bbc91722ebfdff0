"""Control characters made visible: every code point against the rule written out here."""

from __future__ import annotations

import pytest

from relcol.text import printable, printable_line


def _expected(code: int, *, lines: bool, symbols: bool = True) -> str:
    """One character as the module docstring says it is shown."""
    if lines and chr(code) in "\n\t":
        return chr(code)
    if code < 0x20:
        return chr(0x2400 + code) if symbols else "\ufffd"
    if code == 0x7F:
        return "\u2421" if symbols else "\ufffd"
    if 0x80 <= code < 0xA0 or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return "\ufffd"
    return chr(code)


CODES = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]  # no lone surrogates


@pytest.mark.parametrize("symbols", [True, False])
def test_printable_each_character(symbols: bool) -> None:
    got = [printable(chr(c), symbols=symbols) for c in CODES]
    assert got == [_expected(c, lines=True, symbols=symbols) for c in CODES]


def test_printable_line_each_character() -> None:
    got = [printable_line(chr(c)) for c in CODES]
    assert got == [_expected(c, lines=False) for c in CODES]


def test_a_long_text() -> None:
    """A page-sized text is returned as it is when it has nothing to swap, and swapped
    wherever it has, its last character included."""
    page = "<p>model é ✓</p>\n\t" * 100_000
    assert printable(page) is page
    assert printable_line(page) == page.replace("\n", "␊").replace("\t", "␉")
    marked = page + "\x1b[31m\u202e"
    assert printable(marked) == page + "␛[31m\ufffd"
    assert printable(marked, symbols=False) == page + "\ufffd[31m\ufffd"
