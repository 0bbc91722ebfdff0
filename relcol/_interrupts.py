"""Ctrl-C that cannot be lost.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and
code in between (a library's ``except Exception``, a worker pool, a native extension
turning it into its own error) may swallow it or turn it into another error. The command
line therefore records that the signal arrived (``install``): it then ends with exit
code 130 whatever became of the exception, and ``check`` stops a command before it
publishes anything. A signal that arrives while Polars' own Python code runs is sent again
shortly rather than raised there (``_handler``).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import signal
import sys
import threading

_received = threading.Event()
# a KeyboardInterrupt has been raised for the recorded Ctrl-C (none is sent again after it)
_raised = threading.Event()
#: Seconds after which a Ctrl-C that arrived in Polars' own Python code is sent again.
AGAIN = 0.05


def install() -> None:
    """Record SIGINT, then raise KeyboardInterrupt as Python's own handler does.

    Polars installs a native SIGINT handler of its own when it is first imported, replacing
    whatever was there; a Ctrl-C outside a Polars computation then ended the process by
    the default action (killed by SIGINT, no message). This handler is therefore installed
    again right after Polars' import, whenever that happens (``_AfterPolars``), so the handler
    in force is this one; a command that never needs Polars (``--help``) never imports it.
    """
    signal.signal(signal.SIGINT, _handler)
    if not isinstance(sys.unraisablehook, _Unraisable):
        sys.unraisablehook = _Unraisable(sys.unraisablehook)
    if "polars" not in sys.modules and not any(isinstance(f, _AfterPolars) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPolars())


def _handler(signum, frame):
    _received.set()
    if _in_polars(frame):
        # Polars' native code calls small Python helpers around a map_batches function (its
        # frame wrappers) and unwraps their result: a KeyboardInterrupt raised in one became a
        # Rust panic, printed with its backtrace. The signal is sent again shortly, until it
        # lands outside Polars' code, where it is raised as anywhere else.
        threading.Timer(AGAIN, _again, (signum,)).start()
        return
    _raised.set()
    signal.default_int_handler(signum, frame)


def _again(signum: int) -> None:
    if not _raised.is_set():
        os.kill(os.getpid(), signum)


def _in_polars(frame) -> bool:
    """Whether ``frame`` (the main thread's, where a signal is handled) runs Polars' own code."""
    polars = sys.modules.get("polars")
    if frame is None or polars is None or polars.__file__ is None:
        return False
    return frame.f_code.co_filename.startswith(os.path.dirname(polars.__file__) + os.sep)


class _Unraisable:
    """``sys.unraisablehook`` that stays silent on a recorded Ctrl-C.

    A KeyboardInterrupt raised inside a weakref callback or a ``__del__`` (matplotlib's
    transforms drop their children in such callbacks while a figure is drawn) cannot
    propagate: Python prints "Exception ignored in" with a traceback and goes on. The Ctrl-C
    is recorded all the same, so the command still stops and says so in one line; anything
    else goes to the hook that was there before."""

    def __init__(self, previous) -> None:
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if not (isinstance(unraisable.exc_value, KeyboardInterrupt) and _received.is_set()):
            self.previous(unraisable)


class _AfterPolars(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``polars`` is first imported, it lets the other finders load
    it and installs relcol's SIGINT handler once Polars' own has replaced it."""

    def find_spec(self, name, path, target=None):
        if name != "polars":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def exec_module(module):
                try:
                    run(module)
                finally:
                    if threading.current_thread() is threading.main_thread():
                        signal.signal(signal.SIGINT, _handler)

            spec.loader.exec_module = exec_module
        return spec


def received() -> bool:
    return _received.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C arrived, even if something swallowed it."""
    if _received.is_set():
        _raised.set()
        raise KeyboardInterrupt


class Hold:
    """Ctrl-C held back from here until ``release()``: a SIGINT meanwhile is recorded, then
    delivered by ``release()`` as the handler in force before would have delivered it
    (relcol's records it and raises KeyboardInterrupt). For a step that must not stop half
    way, such as publishing a report's tables into the warehouse and its folder, which belong
    together. Off the main thread it holds nothing (Python delivers signals to the main
    thread only)."""

    def __init__(self) -> None:
        self._caught: tuple | None = None
        self._held = threading.current_thread() is threading.main_thread()
        if self._held:
            self._previous = signal.signal(signal.SIGINT, self._record)

    def _record(self, signum, frame) -> None:
        self._caught = (signum, frame)

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        # None: a handler not installed from Python; Python's own is the nearest
        previous = signal.default_int_handler if self._previous is None else self._previous
        signal.signal(signal.SIGINT, previous)
        if self._caught is None or previous is signal.SIG_IGN:
            return
        if callable(previous):
            previous(*self._caught)
        else:  # SIG_DFL: the default action, as the signal would have had
            os.kill(os.getpid(), signal.SIGINT)


def held_while_compiling(dispatcher):
    """A numba function (``dispatcher``) that compiles for new argument types, or loads them
    from numba's cache, with Ctrl-C held (``Hold``), and runs as it is.

    Numba hands LLVM's object code over in ctypes callbacks, and Python drops an exception
    raised inside one, printing it as "Exception ignored on calling ctypes callback
    function" with a traceback: a Ctrl-C there printed that traceback before
    "relcol: aborted", or lost the compiled object so that numba failed with a RuntimeError.
    Held, it arrives once the compiled code is ready. Running the compiled code is not
    held (it may take long).

    The hold wraps the dispatcher's ``_compile_for_args``, which numba's dispatcher calls
    only for argument types it has no code for; a call with known types stays on numba's own
    path. (A wrapper around each call must take every argument's numba type in Python to
    know whether the call compiles: 5–20 µs per argument, about a tenth of a second in a
    bootstrap of 800 groups.)"""
    compile_for_args = dispatcher._compile_for_args

    def held(*args, **kws):
        hold = Hold()
        try:
            return compile_for_args(*args, **kws)
        finally:
            hold.release()

    dispatcher._compile_for_args = held
    return dispatcher
