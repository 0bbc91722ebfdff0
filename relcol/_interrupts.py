"""Ctrl-C that cannot be lost.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and
code in between (a library's ``except Exception``, a worker pool, a native extension
turning it into its own error) may swallow it or turn it into another error. The command
line therefore records that the signal arrived (``install``): it then ends with exit
code 130 whatever became of the exception, and ``check`` stops a command before it
publishes anything.
"""

from __future__ import annotations

import signal
import threading

_received = threading.Event()


def install() -> None:
    """Record SIGINT, then raise KeyboardInterrupt as Python's own handler does.

    Polars installs a native SIGINT handler of its own when it is first imported, replacing
    whatever was there; a Ctrl-C outside a Polars computation then ended the process by
    the default action (killed by SIGINT, no message). Polars is therefore imported before
    this handler is installed, so the handler installed last, and in force, is this one.
    """
    import polars  # noqa: F401  (its import replaces the SIGINT handler: see above)

    def handler(signum, frame):
        _received.set()
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, handler)


def received() -> bool:
    return _received.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C arrived, even if something swallowed it."""
    if _received.is_set():
        raise KeyboardInterrupt
