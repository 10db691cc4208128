"""Forked worker processes for ``jobs``: one-shot calls and a long-lived ordered group.

Two shapes, both built on ``os.fork``: a child starts with everything the
parent has (the model, the transducer and tables built before the fork, the
text itself), so nothing is pickled on the way in.

* :class:`ForkedCall` and :class:`PieceQueue`: ``Tokenizer.encode(text, jobs=J)``
  cuts a text already in memory into pieces, forks J-1 children and encodes
  pieces itself too; every process takes the next unclaimed piece from the
  queue until none is left, and each child returns its ids as one packed array.
* :func:`map_ordered`: ``bpefst tokenize --jobs J`` streams an input of any size
  through J workers forked once; the parent hands each task (raw bytes) to the
  least busy worker and yields the results (bytes) in task order.  A process
  pool would pickle every task and result and, in the parent, every Python
  object of a result; here the parent moves bytes only, so it stays off the
  cores the workers need.

Only for POSIX systems (``os.fork``); :func:`fork_available` says whether it can
be used.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
from collections import deque
from typing import Callable, Iterator

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


# -- a group of long-lived workers: tasks in, results out, in order ---------------------------

_TASK_HEADER = struct.Struct("<Q")  # payload length
_RESULT_HEADER = struct.Struct("<cQ")  # status, payload length
_RAISE = b"R"  # an error of the task source itself, kept in the parent


class TaskSource:
    """Where :func:`map_ordered` gets its tasks without blocking on them.

    ``take()`` returns the next task (bytes), None when none is ready yet, or
    raises StopIteration when there are no more; ``wake_fd`` becomes readable
    when ``take`` may have something new.  A plain iterator is wrapped by
    :class:`IteratorSource`, whose ``take`` may block.
    """

    wake_fd: int | None = None

    def take(self) -> bytes | None:
        raise NotImplementedError


class IteratorSource(TaskSource):
    def __init__(self, tasks):
        self._tasks = iter(tasks)

    def take(self) -> bytes | None:
        return next(self._tasks)


def map_ordered(handler: Callable[[bytes], bytes], source, jobs: int, per_worker: int = 2) -> Iterator[bytes]:
    """``handler(task)`` for every task of ``source``, in ``jobs`` forked workers; results yielded in task order.

    The workers are forked once, before the first task, and live until the
    generator ends: each reads a task from its pipe, runs ``handler`` (which it
    inherited with everything else the parent had at the fork, so nothing is
    pickled) and writes the result back.  The parent only moves bytes: it hands
    a task to the worker with the fewest outstanding (at most ``per_worker``
    each, so a worker finds its next task waiting when it finishes one, and a
    slower worker simply gets fewer), reads results as they come and yields
    them in order.  Pipes are written without blocking and read as soon as
    readable (``select``), so a worker writing a long result never waits for a
    parent that is writing it a task.

    A task that raises in its worker raises the same exception (pickled
    across) when its turn comes; results before it are yielded first, and so
    are they before an error of ``source`` itself.
    Closing the generator early stops the workers.
    """
    if not isinstance(source, TaskSource):
        source = IteratorSource(source)
    workers = _start_workers(handler, jobs)
    try:
        yield from _dispatch(workers, source, per_worker)
    finally:
        for worker in workers:
            worker.stop()


def map_in_threads(handler: Callable[[bytes], bytes], source, jobs: int, per_thread: int = 2) -> Iterator[bytes]:
    """:func:`map_ordered` on ``jobs`` threads of this process instead of forked workers.

    For a handler whose work runs without the GIL (the compiled core's
    encode, each call on a chunk cache of its own): nothing is forked, no task
    or result crosses a pipe, and the caches stay warm for the whole input.
    Results come in task order, at most ``jobs * per_thread`` tasks in flight;
    a task's exception, or the source's, is raised when its turn comes.
    """
    from concurrent.futures import ThreadPoolExecutor

    if not isinstance(source, TaskSource):
        source = IteratorSource(source)
    pending: deque = deque()  # futures, and a source error last, in task order
    exhausted = False
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bpefst-piece") as pool:
        try:
            while True:
                while not exhausted and len(pending) < jobs * per_thread:
                    try:
                        task = source.take()
                    except StopIteration:
                        exhausted = True
                    except Exception as exc:  # reading failed: raised after the results of the tasks before it
                        pending.append(exc)
                        exhausted = True
                    else:
                        if task is not None:
                            pending.append(pool.submit(handler, task))
                        elif not pending:  # nothing to wait for but the input
                            _wait_readable(source.wake_fd)
                            continue
                    if exhausted or task is None:
                        break
                if not pending:
                    return
                head = pending.popleft()
                if isinstance(head, BaseException):
                    raise head
                yield head.result()
        finally:
            for future in pending:
                if not isinstance(future, BaseException):
                    future.cancel()


def _wait_readable(fd: int | None) -> None:
    """Wait until ``fd`` (a source's wake-up pipe) has something, and drain it."""
    if fd is None:
        return
    readable, _, _ = select.select([fd], [], [], 1.0)
    if readable:
        os.read(fd, 1 << 16)


def close_quietly(*fds: int) -> None:
    """Close file descriptors, ignoring those already closed (cleanup paths run after errors)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


class _Worker:
    def __init__(self, pid: int, task_fd: int, result_fd: int):
        self.pid, self.task_fd, self.result_fd = pid, task_fd, result_fd
        self.assigned: deque[int] = deque()  # task numbers sent, results not yet read
        self.outgoing: deque[memoryview] = deque()  # task bytes not yet written
        self.incoming = bytearray()

    def stop(self) -> None:
        close_quietly(self.task_fd, self.result_fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _start_workers(handler: Callable[[bytes], bytes], jobs: int) -> list[_Worker]:
    workers: list[_Worker] = []
    gc.freeze()  # see ForkedCall: a collection in a child would copy every inherited object
    try:
        for _ in range(jobs):
            task_read, task_write = os.pipe()
            result_read, result_write = os.pipe()
            try:
                pid = os.fork()
            except OSError as exc:
                for fd in (task_read, task_write, result_read, result_write):
                    os.close(fd)
                for worker in workers:
                    worker.stop()
                raise BpefstError(f"cannot start a worker process: {exc}") from None
            if pid == 0:  # the child: never returns
                os.close(task_write)
                os.close(result_read)
                for worker in workers:  # pipes of the siblings started before this one
                    os.close(worker.task_fd)
                    os.close(worker.result_fd)
                _serve(handler, task_read, result_write)
            os.close(task_read)
            os.close(result_write)
            _widen(task_write)
            _widen(result_read)
            os.set_blocking(task_write, False)
            os.set_blocking(result_read, False)
            workers.append(_Worker(pid, task_write, result_read))
    finally:
        gc.unfreeze()
    return workers


def _widen(fd: int) -> None:
    """Ask Linux for a 1 MiB pipe buffer (fewer wake-ups per megabyte); elsewhere keep the default."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass


def _serve(handler: Callable[[bytes], bytes], task_fd: int, result_fd: int) -> None:
    """A worker's life: tasks from ``task_fd``, results to ``result_fd``, until the parent closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops the workers
    status = 0
    try:
        while True:
            header = _read_exact(task_fd, _TASK_HEADER.size)
            if not header:
                break
            task = _read_exact(task_fd, _TASK_HEADER.unpack(header)[0])
            try:
                result, kind = handler(task), _OK
            except BaseException as exc:  # sent to the parent, which raises it in its turn
                try:
                    result = pickle.dumps(exc)
                except Exception:
                    result = pickle.dumps(BpefstError(str(exc)))
                kind = _FAILED
            _write_blocking(result_fd, _RESULT_HEADER.pack(kind, len(result)))
            _write_blocking(result_fd, result)  # and serve on: the parent decides when to stop
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _dispatch(workers: list[_Worker], source: TaskSource, per_worker: int) -> Iterator[bytes]:
    finished: dict[int, tuple[bytes, object]] = {}  # task number -> (status, payload), read but not yet yielded
    sent = yielded = 0
    exhausted = False
    window = len(workers) * (per_worker + 1)  # bounds the results held for the one the output waits for
    while True:
        while not exhausted and sent - yielded < window:
            worker = min(workers, key=lambda w: len(w.assigned))
            if len(worker.assigned) >= per_worker:
                break
            try:
                task = source.take()
            except StopIteration:
                exhausted = True
                break
            except Exception as exc:  # reading failed: raised after the results of the tasks before it
                finished[sent] = (_RAISE, exc)
                sent += 1
                exhausted = True
                break
            if task is None:
                break
            worker.assigned.append(sent)
            worker.outgoing.append(memoryview(_TASK_HEADER.pack(len(task))))
            worker.outgoing.append(memoryview(task))
            sent += 1
            _flush(worker)
        if yielded in finished:  # then back to handing out tasks: the window has room again
            while yielded in finished:
                kind, payload = finished.pop(yielded)
                yielded += 1
                if kind == _FAILED:
                    raise pickle.loads(payload)
                if kind == _RAISE:
                    raise payload
                yield payload
            continue
        if exhausted and yielded == sent:
            return
        readers = [w.result_fd for w in workers if w.assigned]
        waiting_for_source = (not exhausted and source.wake_fd is not None and sent - yielded < window
                              and any(len(w.assigned) < per_worker for w in workers))
        if waiting_for_source:
            readers.append(source.wake_fd)
        writers = [w.task_fd for w in workers if w.outgoing]
        readable, writable, _ = select.select(readers, writers, [])
        for worker in workers:
            if worker.task_fd in writable:
                _flush(worker)
            if worker.result_fd in readable:
                _receive(worker, finished)
        if waiting_for_source and source.wake_fd in readable:
            os.read(source.wake_fd, 1 << 16)


def _flush(worker: _Worker) -> None:
    """Write as much of the worker's pending task bytes as its pipe takes now."""
    out = worker.outgoing
    while out:
        try:
            n = os.write(worker.task_fd, out[0])
        except BlockingIOError:
            return
        except BrokenPipeError:
            raise BpefstError("a worker process died before returning its result") from None
        out[0] = out[0][n:]
        if not out[0]:
            out.popleft()


def _receive(worker: _Worker, finished: dict[int, tuple[bytes, bytes]]) -> None:
    """Read what the worker wrote; every complete result goes to ``finished`` under its task number."""
    try:
        block = os.read(worker.result_fd, 1 << 20)
    except BlockingIOError:
        return
    if not block:
        raise BpefstError("a worker process died before returning its result")
    buffer = worker.incoming
    buffer += block
    while len(buffer) >= _RESULT_HEADER.size:
        kind, length = _RESULT_HEADER.unpack_from(buffer)
        end = _RESULT_HEADER.size + length
        if len(buffer) < end:
            return
        with memoryview(buffer) as view:
            payload = bytes(view[_RESULT_HEADER.size : end])
        finished[worker.assigned.popleft()] = (kind, payload)
        del buffer[:end]


def _read_exact(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd`` (fewer only at end of file)."""
    parts = []
    while size > 0:
        block = os.read(fd, min(size, 1 << 22))
        if not block:
            break
        parts.append(block)
        size -= len(block)
    return b"".join(parts)


def _write_blocking(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
