"""Run a function in a forked child and collect its bytes: the one-shot half of ``--jobs``.

``Tokenizer.encode(text, jobs=J)`` cuts the text at safe boundaries, hands all
parts but the first to forked children and encodes the first part itself.  A
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
