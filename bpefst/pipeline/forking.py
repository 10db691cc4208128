"""Run a function in a forked child and collect its bytes: the one-shot half of ``--jobs``.

``Tokenizer.encode(text, jobs=J)`` cuts the text at safe boundaries into
pieces, forks J-1 children and encodes pieces itself too; every process takes
the next unclaimed piece from a :class:`PieceQueue` until none is left.  A
fork costs a few milliseconds and the child starts with everything the parent
has (the model, the transducer, the text itself), so nothing is pickled on the
way in; only the result, a packed array of ids, travels back through a pipe.
A process pool would pay for pickling the text and, on a fresh tokenizer, for
starting processes that then sit idle while the caller waits.

Only for POSIX systems (``os.fork``); :func:`fork_available` says whether it can
be used.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
from typing import Callable

from ..errors import BpefstError

_OK, _FAILED = b"O", b"E"


def fork_available() -> bool:
    return hasattr(os, "fork")


class ForkedCall:
    """``fn()`` run in a forked child; :meth:`result` returns the bytes it returned.

    An exception raised by ``fn`` in the child is raised again by :meth:`result`
    (pickled across; an unpicklable one becomes a BpefstError with its text).
    """

    def __init__(self, fn: Callable[[], bytes]):
        read_end, write_end = os.pipe()
        # Objects the child inherits stay shared (copy-on-write) only while nothing
        # writes to them; a garbage collection in the child would touch every one.
        gc.freeze()
        try:
            pid = os.fork()
        except OSError as exc:
            gc.unfreeze()
            os.close(read_end)
            os.close(write_end)
            raise BpefstError(f"cannot start a worker process: {exc}") from None
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _run_child(fn, write_end)
        gc.unfreeze()
        os.close(write_end)
        self.pid = pid
        self._fd = read_end

    def result(self) -> bytes:
        try:
            data = _read_all(self._fd)
        finally:
            self._reap()
        if data[:1] == _OK:
            return data[1:]
        if data[:1] == _FAILED:
            raise pickle.loads(data[1:])
        raise BpefstError("a worker process died before returning its result")

    def cancel(self) -> None:
        """Stop the child (if it still runs) and release its pipe."""
        if self._fd is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            os.waitpid(self.pid, 0)


class PieceQueue:
    """The numbers ``0 .. count-1`` in a pipe, taken in order by whichever process asks first.

    Written whole and closed for writing before any fork, so a read returns
    one number or, once all are taken, nothing: the kernel hands each byte
    of a pipe to exactly one reader, so no lock is needed.  Processes that
    share pieces this way finish together even when one of them runs slower
    (a busy core, copy-on-write faults), which fixed halves do not.
    """

    LIMIT = 255  # one byte per number

    def __init__(self, count: int):
        if not 0 < count <= self.LIMIT:
            raise ValueError(f"a piece queue holds 1 to {self.LIMIT} pieces, not {count}")
        self._fd, write_end = os.pipe()
        try:
            os.write(write_end, bytes(range(count)))  # far below the pipe's capacity
        finally:
            os.close(write_end)

    def take(self) -> int | None:
        """The next piece number, or None when all are taken."""
        data = os.read(self._fd, 1)
        return data[0] if data else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _run_child(fn: Callable[[], bytes], fd: int) -> None:
    status = 0
    try:
        try:
            payload = _OK + fn()
        except BaseException as exc:  # sent to the parent, which raises it there
            try:
                payload = _FAILED + pickle.dumps(exc)
            except Exception:
                payload = _FAILED + pickle.dumps(BpefstError(str(exc)))
        _write_all(fd, payload)
    except BaseException:
        status = 1
    finally:
        os._exit(status)  # no atexit handlers, no flushing of the parent's buffers


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.close(fd)


def _read_all(fd: int) -> bytes:
    parts = []
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            return b"".join(parts)
        parts.append(block)
