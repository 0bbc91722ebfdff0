"""A fault injector for tests/test_faults.py: reads ``KILL_AT MODE NAME ROWS`` lines on stdin
and, for each, forks a child that ingests ``ROWS`` predictions as study ``NAME`` into the
warehouse given as argv[1] and kills itself with SIGKILL at its KILL_AT-th file-system
step (rename, replace, unlink, rmdir or folder swap); answers one JSON line per child.

MODE is ``replace`` (re-ingest NAME with --replace, swapping folders in one step),
``fallback`` (the same where the swap is unavailable: two renames) or ``new``.

relcol is imported once, here; each child only runs the ingest, so a trial costs a fork,
not a Python start-up.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

import relcol
from relcol.store import _files
from tests.test_sandbox import small_predictions

# what each child calls, imported here once, before forking (relcol imports a name on its
# first use: a child left to do it would spend most of its time importing)
ingest_predictions, open_warehouse = relcol.ingest_predictions, relcol.open_warehouse

STEPS = ("rename", "replace", "unlink", "rmdir")


def child(root: str, kill_at: int, mode: str, name: str, rows: int) -> None:
    calls = 0

    def counted(step):
        def wrapper(*args, **kwargs):
            nonlocal calls
            calls += 1
            if calls == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return step(*args, **kwargs)

        return wrapper

    for step in STEPS:
        setattr(os, step, counted(getattr(os, step)))
    if mode == "fallback":
        _files.exchange = counted(lambda a, b: False)
    else:
        _files.exchange = counted(_files.exchange)
    frame = small_predictions(rows, seed=rows)
    ingest_predictions(frame, open_warehouse(root), name=name, model="m", replace=mode != "new")


def main() -> None:
    root = sys.argv[1]
    for line in sys.stdin:
        kill_at, mode, name, rows = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                child(root, int(kill_at), mode, name, int(rows))
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        code = None if killed else os.waitstatus_to_exitcode(status)
        print(json.dumps({"killed": killed, "code": code}), flush=True)


if __name__ == "__main__":
    main()
