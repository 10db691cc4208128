"""Connecting to Ray, which is optional: ``pip install 'bpefst[ray]'``.

Without an address, :func:`connect` joins the cluster ``RAY_ADDRESS`` names or
starts a local one (``ray.init()``); inside a program that has already called
``ray.init``, it uses that cluster.  Workers import bpefst, so on a real
cluster bpefst must be installed on every node (or shipped with a runtime
environment, ``ray.init(runtime_env={"py_modules": [bpefst]})``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Iterator

from ..errors import BpefstError

INSTALL_HINT = "pip install 'bpefst[ray]'"


def require_ray() -> ModuleType:
    """The ``ray`` module, or a BpefstError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise BpefstError(f"the ray engine needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def require_ray_data() -> ModuleType:
    ray = require_ray()
    try:
        import ray.data
    except ImportError:
        raise BpefstError(f"Ray Data is not installed: pip install 'ray[data]' (or {INSTALL_HINT})") from None
    return ray.data


def connect(address: str | None = None) -> ModuleType:
    """``ray``, initialised: the running cluster of this process, or the one at ``address``."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, configure_logging=True, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
        where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BpefstError(f"cannot start or join the Ray cluster ({where}): {first}") from None
    return ray


def quiet_driver() -> None:
    """For the command line: keep Ray's own output off stderr, which is for bpefst's one-line messages.

    Ray Data logs through Python loggers and progress bars, but Ray's C++ core
    writes warnings straight to file descriptor 2 (and the cluster processes a
    local ``ray.init`` starts inherit it).  So descriptor 2 is pointed at
    /dev/null and Python's ``sys.stderr`` moved to a duplicate of the real one:
    bpefst's messages and progress display still reach the terminal, Ray's do
    not (they stay in Ray's log files, under /tmp/ray/session_*/logs).
    """
    os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    try:
        import ray.data  # noqa: F401  (Ray sets up its log handlers on import: on the stderr about to go quiet)
    except ImportError:
        pass  # reported when the engine is asked for
    try:
        sys.stderr.flush()
        real = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        sys.stderr = io.TextIOWrapper(io.FileIO(real, "w"), encoding=sys.stderr.encoding, errors="backslashreplace", line_buffering=True)
    except (OSError, ValueError, AttributeError):
        pass  # no real descriptor 2 (an embedding host): leave stderr as it is


def task_error(exc: BaseException) -> BpefstError | None:
    """The BpefstError a worker raised, found inside Ray's wrappers (RayTaskError and its ``cause``), or None.

    Only the first line of its message is kept: Ray Data appends its retry
    notes to the original exception's message.
    """
    current: BaseException | None = exc
    for _ in range(16):
        if current is None:
            return None
        cause = getattr(current, "cause", None)
        if isinstance(current, BpefstError) and not isinstance(cause, BaseException):
            lines = str(current).strip().splitlines()
            return BpefstError(lines[0] if lines else type(current).__name__)
        current = cause if isinstance(cause, BaseException) else (current.__cause__ or current.__context__)
    return None


@contextlib.contextmanager
def original_errors(dataset) -> Iterator[None]:
    """While Ray Data runs ``dataset`` (a pipeline of ours), have it raise the UDF's own exception
    (a BpefstError with its message) rather than a generic UserCodeException.  A Dataset runs
    with the DataContext it was made with, so the setting goes there, and is restored after."""
    context = dataset.context
    before = context.raise_original_map_exception
    context.raise_original_map_exception = True
    try:
        yield
    finally:
        context.raise_original_map_exception = before


def reraise(exc: BaseException, what: str) -> None:
    """Raise what the user should see for an exception out of Ray: the worker's own BpefstError,
    a one-line BpefstError for Ray's failures (a task failing, a node lost), anything else as is."""
    error = task_error(exc)
    if error is not None:
        raise error from None
    if type(exc).__module__.split(".")[0] == "ray":
        lines = str(exc).strip().splitlines()
        raise BpefstError(f"{what} failed on Ray: {lines[0] if lines else type(exc).__name__}") from None
    raise exc


@dataclass(frozen=True)
class CrashOnce:
    """Fault injection for tests: the worker given part ``index`` exits its process, once.

    The first worker to reach the part creates ``marker`` and exits without
    cleaning up (``os._exit``), as a killed process would; Ray retries the task
    on another worker, which finds the marker and carries on.
    """

    marker: str
    index: int

    def __call__(self, index: int) -> None:
        if index != self.index:
            return
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        os._exit(1)
