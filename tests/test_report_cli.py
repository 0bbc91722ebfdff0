"""The terminal side of the report: help with examples and exit codes, output for scripts."""

from __future__ import annotations

import json

import pytest

from tests.test_cli import relcol

COMMANDS = (
    ("ingest",),
    ("report",),
    ("sql",),
    ("shell",),
    ("recalibrate",),
    ("example",),
    ("simulate", "consistency"),
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from tests.conftest import TINY

    cwd = tmp_path_factory.mktemp("terminal")
    done = relcol("ingest", "--study", str(TINY), "--quiet", cwd=cwd)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    return cwd


def test_top_level_help_lists_exit_codes_and_examples(tmp_path):
    done = relcol("--help", cwd=tmp_path)
    assert done.returncode == 0
    for line in ("Exit codes:", "0  success", "2  bad input or usage", "relcol ingest", "--json"):
        assert line in done.stdout, line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command, tmp_path):
    done = relcol(*command, "--help", cwd=tmp_path)
    assert done.returncode == 0 and "Example" in done.stdout
    assert f"relcol {' '.join(command)}" in done.stdout


def test_report_for_scripts_quiet_and_json(workdir):
    quiet = relcol("report", "--quiet", cwd=workdir)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip().endswith("index.html") and len(quiet.stdout.splitlines()) == 1
    as_json = relcol("report", "--json", cwd=workdir)
    assert as_json.returncode == 0, as_json.stderr
    rows = json.loads(as_json.stdout)
    assert len(rows) == 72 and {"ece", "gap", "accuracy"} <= set(rows[0])


def test_a_usage_error_exits_2_with_one_line(workdir):
    done = relcol("report", "--bins", "0", cwd=workdir)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
