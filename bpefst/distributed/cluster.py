"""Connecting to Ray, which is optional: ``pip install 'bpefst[ray]'``.

Without an address, :func:`connect` joins the cluster ``RAY_ADDRESS`` names or
starts a local one (``ray.init()``); inside a program that has already called
``ray.init``, it uses that cluster.  Workers import bpefst, so on a real
cluster bpefst must be installed on every node (or shipped with a runtime
environment, ``ray.init(runtime_env={"py_modules": [bpefst]})``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from types import ModuleType

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
    """For the command line: keep Ray's own logging and progress bars off stderr (bpefst reports progress itself)."""
    os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    for name in ("ray", "ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        from ray.data import DataContext
    except ImportError:
        return
    context = DataContext.get_current()
    context.enable_progress_bars = False
    if hasattr(context, "enable_operator_progress_bars"):
        context.enable_operator_progress_bars = False
    for name in ("ray", "ray.data", "ray.data._internal"):
        logging.getLogger(name).setLevel(logging.ERROR)


def task_error(exc: BaseException) -> BpefstError | None:
    """The BpefstError a worker raised, found inside Ray's wrappers (RayTaskError, Ray Data's), or None."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 16:
        if isinstance(current, BpefstError):
            message = str(current).strip().splitlines()
            return BpefstError(message[-1] if message else type(current).__name__)
        current = getattr(current, "cause", None) or current.__cause__ or current.__context__
        seen += 1
    return None


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
