"""Connecting to Ray, which is optional: ``pip install 'bpefst[ray]'``.

Without an address, :func:`connect` joins the cluster ``RAY_ADDRESS`` names or
starts a local one (``ray.init()``); inside a program that has already called
``ray.init``, it uses that cluster.  Workers import bpefst, so on a real
cluster bpefst must be installed on every node (or shipped with a runtime
environment, ``ray.init(runtime_env={"py_modules": [bpefst]})``).

When Ray fails, the user is told what failed, in Ray's terms, and what to try
(:func:`connect`, :func:`reraise`): a cluster that cannot be reached or cannot
start, an address-space limit under which Ray's processes cannot start
(refused up front: :func:`check_address_space`), a task failing after its
retries, a worker killed for lack of memory, the connection to the cluster
lost.  Such an error is never reported as something else (a lost connection
used to surface as "cannot write to stdout").
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import resource
import socket
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Iterator

from ..errors import BpefstError

INSTALL_HINT = "pip install 'bpefst[ray]'"
LOGS_HINT = "Ray's own logs are in /tmp/ray/session_latest/logs"


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
    """``ray``, initialised: the running cluster of this process, or the one at ``address``.

    Any failure is a one-line BpefstError saying whether the cluster could not
    be joined or could not start, why, and what to try.  An address-space
    limit too small for Ray is refused before Ray is started (see
    :func:`check_address_space`).
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    joining = address or os.environ.get("RAY_ADDRESS")
    if not (joining or "").startswith("ray://"):  # a Ray Client driver maps no object store
        check_address_space()
    if joining:
        check_reachable(joining)
    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, configure_logging=True, log_to_driver=False)
    except Exception as exc:  # Ray raises plain Exception for a node that does not come up
        if joining:
            raise BpefstError(f"cannot join the Ray cluster at {joining}: {first_line(exc)}; check the address "
                              "(`ray status` on the head node), or unset RAY_ADDRESS to start a local cluster") from None
        raise BpefstError(f"Ray could not start a local cluster: {first_line(exc)}; {LOGS_HINT}, or use --engine local") from None
    return ray


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """Refuse a ``HOST:PORT`` address where nothing answers, before Ray is asked to join it.

    Ray's own attempt at an unreachable cluster keeps retrying for minutes
    before it gives up; a TCP connection to the head's port answers in
    milliseconds (refused) or within ``timeout`` seconds.  ``auto`` and
    ``ray://`` addresses are left to Ray.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or address == "auto":
        return
    host = host.strip("[]") or "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or ("no answer within %.0f s" % timeout if isinstance(exc, TimeoutError) else type(exc).__name__)
        raise BpefstError(f"cannot join the Ray cluster at {address}: nothing answers there ({why}); check the address "
                          "(`ray status` on the head node shows it), or unset RAY_ADDRESS to start a local cluster") from None


def check_address_space() -> None:
    """Refuse to start or join Ray under an address-space limit (``ulimit -v``) below the machine's memory.

    Every Ray process maps the node's shared object store (30% of the
    machine's memory by default) and reserves far more address space than it
    uses (thread stacks, arenas).  Under a smaller limit its C++ core dies as
    it starts (the raylet, the GCS, or this very process, with no Python
    exception to report: the command would end with no message, or with an
    unrelated one).  The limit that memory caps should use is a cgroup's
    (resident memory), which Ray handles.
    """
    limit = address_space_limit()
    memory = physical_memory()
    if limit is None or memory is None or limit >= memory:
        return
    raise BpefstError(f"Ray cannot start workers under this process's address-space limit of {limit >> 20:,} MiB "
                      f"(ulimit -v; the machine has {memory >> 20:,} MiB): Ray's processes map its shared object store "
                      "and die when they cannot; raise the limit (ulimit -v unlimited), cap memory with a cgroup instead "
                      "(systemd-run -p MemoryMax=..., docker --memory), or use --engine local")


def address_space_limit() -> int | None:
    """This process's address-space limit in bytes (``ulimit -v``), or None when there is none."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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


# Ray's exceptions by class name (ray.exceptions is imported only with Ray): what happened, and what to try
_RAY_FAILURES = (
    (("OutOfMemoryError", "OutOfDiskError"), "Ray ran out of memory on a node and killed a worker",
     "give the workers more memory, or fewer CPUs per node so fewer run at once"),
    (("WorkerCrashedError", "ActorDiedError", "RayActorError", "ActorUnavailableError", "TaskUnschedulableError",
      "ActorUnschedulableError"), "a Ray worker died and its task failed after its retries",
     f"the worker may have run out of memory or been killed; {LOGS_HINT}"),
    (("NodeDiedError", "LocalRayletDiedError", "RaySystemError", "ObjectLostError", "OwnerDiedError",
      "ObjectReconstructionFailedError", "GetTimeoutError", "RpcError"), "the Ray cluster failed",
     f"{LOGS_HINT}; or use --engine local"),
)


def reraise(exc: BaseException, what: str) -> None:
    """Raise what the user should see for an exception out of Ray: the worker's own BpefstError, a one-line
    BpefstError naming Ray, what failed and what to try for Ray's failures (a task failing after its retries,
    a worker out of memory, a node or the connection lost), anything else (a bug) as is."""
    error = task_error(exc)
    if error is not None:
        raise error from None
    if isinstance(exc, (KeyboardInterrupt, BpefstError)):
        raise exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    for classes, happened, advice in _RAY_FAILURES:
        if names.intersection(classes):
            raise BpefstError(f"{what} failed: {happened} ({first_line(exc)}); {advice}") from None
    if isinstance(exc, ConnectionError):  # Ray's own sockets (our files' errors are BpefstErrors)
        raise BpefstError(f"{what} failed: the connection to the Ray cluster was lost ({exc.strerror or first_line(exc)}); "
                          f"its processes may have died (out of memory?): {LOGS_HINT}") from None
    if type(exc).__module__.split(".")[0] == "ray":
        raise BpefstError(f"{what} failed on Ray: {first_line(exc)}; {LOGS_HINT}") from None
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
