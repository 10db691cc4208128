"""A time and memory bound for long commands (``promote --timeout/--max-memory``).

Some patterns make promotion's intermediate automata explode (``.{0,500}`` over
cl100k); counting states and arcs (``--max-states``/``--max-arcs``) catches most,
but not all, before the machine runs out of memory or the user of patience.  A
timer that fires every quarter second checks the elapsed time and the resident
memory (``/proc/self/statm``) and stops the command with a one-line error: the
work is pure Python, so the check runs between two bytecodes of it, whatever
it is doing.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
from typing import Iterator

CHECK_EVERY = 0.25  # seconds


class LimitExceeded(BaseException):
    """Raised from the timer; a BaseException so that no ``except Exception`` in the work swallows it."""


def resident_megabytes() -> float:
    """The process's resident memory now (Linux), else its peak so far."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def bounded(seconds: float, megabytes: float) -> Iterator[None]:
    """Run the body, raising :class:`LimitExceeded` once it takes longer than ``seconds`` or more memory than ``megabytes``."""
    if not hasattr(signal, "setitimer"):
        yield
        return
    started = time.monotonic()

    def check(signum, frame) -> None:
        if frame is not None and frame.f_code.co_name == "__del__":
            return  # raised in a finalizer, it would be printed with a traceback and ignored: the next tick raises
        elapsed = time.monotonic() - started
        if elapsed > seconds:
            stop(f"took more than --timeout {seconds:g} s")
        used = resident_megabytes()
        if used > megabytes:
            stop(f"needed more than --max-memory {megabytes:,.0f} MB ({used:,.0f} MB)")

    def stop(message: str) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)  # once: not again in the finalizers the work runs as it unwinds
        raise LimitExceeded(message)

    previous = signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, CHECK_EVERY, CHECK_EVERY)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
