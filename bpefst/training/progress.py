"""What a training run reports while it works (the CLI shows it with rich).

The base class ignores everything; the command line subclasses it.  Calls are
cheap and frequent (one per block, one per merge): implementations should
throttle their own display updates.
"""

from __future__ import annotations

from typing import Union

Token = Union[bytes, str, None]


class TrainingProgress:
    """No-op progress sink; override the methods you want to show."""

    def counting_started(self, total_bytes: int | None) -> None:
        """Counting begins; ``total_bytes`` is None when reading stdin."""

    def bytes_counted(self, nbytes: int) -> None:
        """Another ``nbytes`` of corpus were handed to the counters."""

    def counting_done(self, distinct_chunks: int) -> None:
        """Counting finished with this many distinct chunks."""

    def merging_started(self, max_merges: int) -> None:
        """Merging begins; at most ``max_merges`` new tokens are wanted."""

    def merged(self, done: int, left: Token, right: Token, count: int) -> None:
        """Merge number ``done`` joined ``left`` and ``right``, which occurred ``count`` times."""

    def merging_done(self, merges: int) -> None:
        """Merging finished after ``merges`` merges."""
