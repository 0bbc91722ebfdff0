"""Work beside the caller's own: one function run in a thread while the caller goes on.

A step of mostly serial Polars work (the consistency table) leaves a core idle that a step
of BLAS and compiled loops (the bootstrap) does not fill; run side by side they finish
sooner. Polars and numpy release the GIL while they compute, so a thread is enough.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager


class Stopped(Exception):
    """Raised by work that was asked to stop: nobody wants its result any more."""


@contextmanager
def beside(
    function: Callable[..., object], *args, inline: bool = False, **kwargs
) -> Iterator[Future]:
    """``function(*args, stop=event, **kwargs)`` started in a thread; the block's
    ``future.result()`` waits for it and raises what it raised.

    ``function`` checks ``stop`` between its steps and raises ``Stopped`` once it is set.
    Leaving the block by an exception (an error, Ctrl-C) sets it and does not wait: the
    work ends at its next step, and the exception goes on at once. ``inline``: run it here
    and now instead (the future is then done when the block starts).
    """
    stop = threading.Event()
    if inline:
        future: Future = Future()
        future.set_result(function(*args, stop=stop, **kwargs))
        yield future
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="relcol-beside")
    future = pool.submit(function, *args, stop=stop, **kwargs)
    try:
        yield future
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=False)
