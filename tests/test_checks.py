"""One checks module: every parameter check goes through relcol.checks, with one message per
mistake wherever it is made."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from relcol.checks import (
    check_bins,
    check_int,
    check_interval,
    check_seed,
    check_share,
    is_int,
    is_number,
)
from relcol.errors import ParameterError, SpecError

ROOT = Path(__file__).resolve().parent.parent


def test_no_hand_written_type_checks_outside_the_checks_module():
    pattern = re.compile(r"isinstance\([^)]*,\s*bool\)")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [*ROOT.joinpath("relcol").rglob("*.py"), *ROOT.joinpath("cli").rglob("*.py")]
        if path.name != "checks.py"
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(line)
    ]
    # relcol.metrics.uniform's keys refuse a bool with a TypeError of their own (a programming
    # error inside an expression, not a user's parameter)
    assert [f for f in found if not f.startswith("relcol/metrics/_random.py")] == []


def test_predicates_refuse_bools_and_accept_numpy_scalars():
    assert [is_int(v) for v in (3, np.int64(3), True, 3.0, "3")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert [is_number(v) for v in (0.5, 2, np.float32(0.5), False, "0.5", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


@pytest.mark.parametrize(
    ("interval", "accepted", "refused"),
    [
        ("(0, 1)", [1e-9, 0.5, 1 - 1e-9], [0, 1, -0.1, float("nan"), float("inf"), True, "0.5"]),
        ("[0, 1)", [0, 0.0, 0.999], [1, 1.0, -1e-12, float("nan")]),
        ("(0, 1]", [1, 1.0, 0.01], [0, 0.0, 1.0000001]),
        ("[0, 0.5)", [0, 0.4999], [0.5, float("-inf")]),
    ],
)
def test_intervals_are_read_from_their_notation(interval, accepted, refused):
    for value in accepted:
        assert check_interval("x", value, interval) == float(value)
    for value in refused:
        with pytest.raises(ParameterError) as caught:
            check_interval("x", value, interval)
        assert str(caught.value) == f"x must be a number in {interval}. Got {value!r}."


def test_int_bounds_messages_and_error_class():
    assert check_int("n", np.int64(7), 2) == 7 and type(check_int("n", np.int64(7))) is int
    with pytest.raises(ParameterError, match=r"^n must be an int >= 2\. Got 1\.$"):
        check_int("n", 1, 2)
    with pytest.raises(SpecError, match=r"^mar: k must be an int in \[1, 5\]\. Got 6\.$"):
        check_int("mar: k", 6, 1, 5, error=SpecError)
    with pytest.raises(
        ParameterError, match=r"^bootstrap must be an int >= 0 \(0: none\)\. Got -1\.$"
    ):
        check_int("bootstrap", -1, 0, note=" (0: none)")


def test_bins_seed_and_shares_keep_their_messages():
    assert check_bins(1000) == 1000
    for bad in (0, 1001, True, 15.0):
        with pytest.raises(ParameterError, match=r"^bins must be an int in \[1, 1000\]\. Got "):
            check_bins(bad)
    assert check_seed(2**62 - 1) == 2**62 - 1
    with pytest.raises(
        ParameterError, match=r"^seed must be an int in \[0, 2\^62\)\. Got 4611686018427387904\.$"
    ):
        check_seed(2**62)
    assert check_share("coverage", 1, low_open=True) == 1.0
    with pytest.raises(ParameterError, match=r"^coverage must be a number in \(0, 1\]\. Got 0\.$"):
        check_share("coverage", 0, low_open=True)


def test_the_sql_macros_refuse_bins_in_the_same_words():
    """bins is checked in Python (metrics, warehouse, report) and in the SQL macros: one text."""
    with pytest.raises(ParameterError) as caught:
        check_bins(0)
    expected = str(caught.value).removesuffix("Got 0.")
    for macro in ("bin_index.sql", "bin_statistics.sql"):
        assert f"error('{expected}Got '" in (ROOT / "sql" / "macros" / macro).read_text()
