"""A study run in a child process started with the portable numeric environment.

The variables of ``relcol.study.portable_environment()`` take effect only when a process
starts, so ``relcol.ingest(..., portable=True)`` (and ``relcol ingest --portable``) runs
the study in a new Python process that has them: the parent sends the loaded study and
the options (pickled, on the child's stdin); the child runs ``run_study`` and answers on
a pipe of its own (not its stdout, which its worker processes share: a line they print
there must not be taken for an answer) with one line per finished fit (``P <n>``, for the
caller's ``progress``) and a last line holding the result or the ``RelcolError`` it raised
(``R``/``E`` and the pickle in hex). Whatever the child or its workers print goes to the
parent's stderr. A Ctrl-C reaches both processes (one process group): the child discards
what it staged and stops, and the parent raises ``KeyboardInterrupt`` once it has. A
SIGTERM sent to the parent alone is passed on to the child.

Run as ``python -m relcol.workflows._portable WAREHOUSE FD``: that is the child, answering on
the inherited file descriptor FD.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

from relcol.errors import ParameterError, RelcolError
from relcol.store import IngestResult, Warehouse
from relcol.study import PORTABLE, Study, portable_environment, run_study


class ChildStopped(RelcolError):
    """The portable child process ended without an answer (killed by a signal); the exit
    code is the one a shell reports for it (128 + the signal's number)."""

    def __init__(self, code: int) -> None:
        self.exit_code = 128 - code if code < 0 else code
        how = f"by signal {-code}" if code < 0 else f"with exit code {code}"
        super().__init__(
            f"the portable ingest's child process was stopped {how}; nothing was written"
        )


def in_portable_process(
    study: Study,
    warehouse: Warehouse,
    *,
    progress: Callable[[int], None] | None = None,
    **options: object,
) -> IngestResult:
    """``run_study(study, warehouse, progress=progress, **options)`` in a child process with
    the portable environment; here, when this process already has it."""
    if os.environ.get(PORTABLE) == "1":
        return run_study(study, warehouse, progress=progress, **options)
    if options.get("backend") == "dask" and os.environ.get("DASK_SCHEDULER_ADDRESS"):
        raise ParameterError(
            "--portable cannot pin the workers of a running Dask cluster: start them with the "
            "variables of relcol.study.portable_environment() instead."
        )
    env = os.environ | portable_environment()
    read, write = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", __name__, str(warehouse.root), str(write)],
            stdin=subprocess.PIPE,
            stdout=2,  # what the child or its workers print: onto our stderr
            pass_fds=(write,),
            env=env,
        )
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)  # the child holds its own copy: EOF here once it (and only it) ends
    answers = os.fdopen(read, "rb")
    answer: tuple[bytes, object] | None = None
    with answers, _signals_passed_to(child):
        try:
            child.stdin.write(pickle.dumps((study, options)))
            child.stdin.close()
            for line in answers:
                kind, _, payload = line.rstrip(b"\n").partition(b" ")
                if kind == b"P":
                    if progress is not None:
                        progress(int(payload))
                else:
                    answer = kind, pickle.loads(bytes.fromhex(payload.decode()))
            code = child.wait()
        except BaseException:
            child.terminate()
            child.wait()
            raise
    if answer is not None and answer[0] == b"R":
        return answer[1]
    if answer is not None and answer[0] == b"E":
        raise answer[1]
    if code in (130, -signal.SIGINT):
        raise KeyboardInterrupt
    raise ChildStopped(code)


class _signals_passed_to:
    """While the child runs: ignore Ctrl-C here (it reaches the child too, which cleans up
    and stops; an ignored signal would stay ignored in a child started later, so this starts
    after the child) and pass a SIGTERM sent to this process on to the child. Only the main
    thread can set handlers; elsewhere nothing changes."""

    def __init__(self, child: subprocess.Popen) -> None:
        self.child = child
        self.previous: dict[int, object] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self.previous = {
            signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
            signal.SIGTERM: signal.signal(
                signal.SIGTERM, lambda signum, _: self.child.send_signal(signum)
            ),
        }

    def __exit__(self, *_: object) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def _child(root: str, fd: str) -> int:
    """Run the study sent on stdin into the warehouse at ``root``; answer on ``fd``, which
    no process it starts inherits."""
    study, options = pickle.loads(sys.stdin.buffer.read())
    os.set_inheritable(int(fd), False)
    out = os.fdopen(int(fd), "wb")

    def tell(kind: str, payload: bytes) -> None:
        out.write(kind.encode() + b" " + payload + b"\n")
        out.flush()

    try:
        result = run_study(
            study, Warehouse(root), progress=lambda n: tell("P", str(n).encode()), **options
        )
    except RelcolError as exc:
        tell("E", pickle.dumps(exc).hex().encode())
        return 2
    except KeyboardInterrupt:
        return 130
    tell("R", pickle.dumps(result).hex().encode())
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], sys.argv[2]))
