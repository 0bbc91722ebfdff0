"""The ``relcol`` command: parse arguments, call the library, print. No logic lives here.

Exit codes: 0 success; 1 an unexpected error (a bug: the traceback is shown);
2 bad input or usage (one line on stderr; nothing in the warehouse changed), or damage found
by `relcol check`; 3 `relcol shell` could not find the DuckDB shell; 4 `relcol monitor`
raised an alert.
"""

from __future__ import annotations

import atexit
import os
import sys

import click
from relcol.cli._check import check
from relcol.cli._common import complain, say
from relcol.cli._example import example
from relcol.cli._ingest import ingest
from relcol.cli._monitor import monitor
from relcol.cli._recalibrate import recalibrate
from relcol.cli._report import report
from relcol.cli._simulate import simulate
from relcol.cli._sql import shell, sql

from relcol import _interrupts as interrupts

_EPILOG = """\b
Scripts: --quiet (-q) prints only what a script needs, --json prints the result as JSON
on stdout; progress bars and messages go to stderr.
\b
Exit codes:
  0  success
  1  an unexpected error (a bug: the traceback is shown; please report it)
  2  bad input or usage (one line on stderr; nothing in the warehouse changed);
     `relcol check`: the warehouse has damaged or missing files
  3  `relcol shell` could not find the DuckDB shell
  4  `relcol monitor`: an alert fired
  130  interrupted
Every command has --help with examples, e.g. `relcol report --help`."""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=_EPILOG,
)
@click.version_option(package_name="relcol")
def main() -> None:
    """Measure whether a classifier's confidence can be trusted, and where that trust breaks.

    \b
    relcol ingest                 run the built-in study into ./warehouse
    relcol report                 metrics -> reports/<study>/index.html + terminal summary
    relcol sql "SELECT model, corruption, severity, ece FROM calibration ORDER BY ALL"
    relcol shell                  the DuckDB shell with every view defined
    relcol check                  verify the warehouse's files against their checksums
    relcol ingest --predictions predictions.csv --name my-model    predictions made elsewhere
    relcol recalibrate --study my-model --method temperature       fit and judge a map
    relcol monitor --study my-model   per-period metrics and alerts (ingested with --period)
    relcol example email          the published email example
    relcol simulate consistency   a simulated study with known error dependence
    """


for command in (ingest, report, sql, shell, check, recalibrate, monitor, example):
    main.add_command(command)
main.add_command(simulate)


def run() -> None:
    """The console entry point: like ``main``, with usage errors as one line and exit 2, and
    exit 130 after Ctrl-C whatever the interrupted code made of it (never a traceback)."""
    interrupts.install()
    try:
        _run()
        if not interrupts.received():
            _finish()  # returns only when Ctrl-C arrived while it ran
    except KeyboardInterrupt:
        pass
    except BaseException:
        if not interrupts.received():
            raise
    click.echo("relcol: aborted", err=True)
    # Exit now with 130. A plain sys.exit would do, except that Python kills itself with
    # SIGINT at exit when a KeyboardInterrupt once passed through an import, however it
    # was handled afterwards; the exit handlers (temporary folders) still run first.
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def _finish() -> None:
    """Exit 0 after a completed command: the exit handlers run with relcol's SIGINT handler
    still in force, then the process ends at once. Python's own finalization first restores
    the default SIGINT action, so a Ctrl-C in its last moments killed the process by the
    signal, with no message; here it is seen, and the command exits 130."""
    try:
        atexit._run_exitfuncs()
    except KeyboardInterrupt:
        return
    if interrupts.received():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a closed pipe: nothing more can be said on it
            pass
    os._exit(0)


def _run() -> None:
    try:
        main(standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        say(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
    except click.UsageError as exc:
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        complain(f"{exc.format_message()}{hint}", 2)
    except click.Abort:
        raise KeyboardInterrupt from None
    except click.ClickException as exc:
        complain(exc.format_message(), exc.exit_code)
