"""Standard streams that may be closed, and the signals a command ends with.

``bpefst info x >&-`` starts with no stdout at all (``sys.stdout is None``), and
``bpefst tokenize x <&-`` with no stdin.  Rather than failing with an
AttributeError wherever a command first touches the stream, each missing stream
is replaced by a stand-in that raises the usual one-line error when used, so a
command that never writes to stdout (``convert -o``) still works.  The closed
descriptors are reopened on /dev/null first, so that a file the command opens
cannot take descriptor 1 and receive what was meant for stdout.
"""

from __future__ import annotations

import io
import os
import sys

from ..errors import BpefstError


class PipeClosed(BaseException):
    """stdout's reader went away; a BaseException so click does not turn it into exit 1."""


class Interrupted(BaseException):
    """Ctrl-C inside a command; a BaseException so click does not print "Aborted!" and exit 1."""


class StdoutError(OSError):
    """Writing to stdout failed (a full disk, an I/O error): told apart from the OSErrors of anything else."""


class ClosedStream:
    """Stands in for a standard stream that was closed before bpefst started."""

    def __init__(self, name: str):
        self.name = name

    def _fail(self, *args, **kwargs):
        verb = "read from" if self.name == "stdin" else "write to"
        raise BpefstError(f"cannot {verb} {self.name}: it is closed")

    write = writelines = read = read1 = readline = readlines = readinto = fileno = __iter__ = __next__ = _fail

    @property
    def buffer(self) -> "ClosedStream":
        return self

    def flush(self) -> None:
        pass  # nothing was written

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        pass

    closed = False
    encoding = "utf-8"
    errors = "strict"


class WholeWrites(io.RawIOBase):
    """A raw file descriptor whose ``write`` writes everything or raises.

    When the reader of a pipe exits during one large ``write``, the kernel
    returns the part it took and Python's BufferedWriter quietly drops the rest
    (``sys.stdout.buffer.write`` returns a short count that ``print`` ignores);
    writing the rest raises BrokenPipeError as it should.
    """

    def __init__(self, fd: int):
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        done = 0
        try:
            while done < len(view):
                done += os.write(self._fd, view[done:])
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None
        return done

    def close(self) -> None:  # the descriptor belongs to the process
        pass


def whole_writes_stdout() -> None:
    """Route ``sys.stdout`` through :class:`WholeWrites`, keeping its encoding and buffering mode."""
    old = sys.stdout
    try:
        fd = old.fileno()
    except (AttributeError, OSError, ValueError, BpefstError):
        return
    old.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(WholeWrites(fd)), encoding=old.encoding, errors=old.errors,
                                  line_buffering=old.line_buffering)


def guard_standard_streams() -> None:
    """Replace each closed standard stream by a :class:`ClosedStream` (see module docstring)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if name == "stderr":
            sys.stderr = open(os.devnull, "w")  # messages have nowhere to go; the exit status still tells
        else:
            setattr(sys, name, ClosedStream(name))
