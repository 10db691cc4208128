"""A byte-progress display on stderr (rich): bytes read of the total, rate, time left.

Shown only when stderr is a terminal and the user did not ask for quiet, so
logs and pipes stay clean.  :func:`byte_progress` returns a display with
``update(done, documents, ids)`` and ``close()``; the silent one does nothing.
"""

from __future__ import annotations

import sys


class SilentProgress:
    def update(self, done: int, documents: int | None = None, ids: int | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class ByteProgress(SilentProgress):
    """``tokenizing ━━━━━╸━━━━ 41.2/110.0 MB 12.3 MB/s 0:00:05  812 documents, 2.6M ids``."""

    def __init__(self, description: str, total: int | None):
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                                  TimeRemainingColumn(), TextColumn("{task.fields[counts]}"),
                                  console=Console(stderr=True), refresh_per_second=5, transient=False)
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, counts="")

    def update(self, done: int, documents: int | None = None, ids: int | None = None) -> None:
        counts = "" if documents is None else f"{documents:,} documents, {ids:,} ids"
        if documents is None:
            self._progress.update(self._task, completed=done)
        else:
            self._progress.update(self._task, completed=done, counts=counts)

    def close(self) -> None:
        self._progress.stop()


def byte_progress(description: str, total: int | None, quiet: bool = False) -> SilentProgress:
    """A :class:`ByteProgress` when stderr is a terminal and not ``quiet``, else a silent one."""
    if quiet or not sys.stderr.isatty():
        return SilentProgress()
    return ByteProgress(description, total)
