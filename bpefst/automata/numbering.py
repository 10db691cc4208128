"""Numbering the states of a lazily built automaton: hashable keys -> 0, 1, 2, ... in the order first named.

Every lazy construction (products, subset constructions, the on-demand
canonical product of promotion) names its states by values (pairs, tuples,
frozensets of configurations) and needs them as consecutive integers, with a
limit on how many it may make.  :class:`Numbering` is that one step: calling
it with a key returns the key's number, giving the next one to a new key, and
raises :class:`~.errors.StateLimitExceeded` once more than ``limit`` states
are named.  ``keys[k]`` is the key of state ``k``; it grows while a caller
iterates over it, which is how a breadth-first exploration walks its queue.
"""

from __future__ import annotations

from typing import Hashable

from .errors import StateLimitExceeded


class Numbering:
    """``key -> state number`` in the order keys are first named (module docstring)."""

    def __init__(self, what: str, limit: int | None = None):
        self.what, self.limit = what, limit
        self.index: dict[Hashable, int] = {}
        self.keys: list = []

    def __call__(self, key: Hashable) -> int:
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.keys)
            self.keys.append(key)
            if self.limit is not None and k >= self.limit:
                raise StateLimitExceeded(self.what, self.limit)
        return k

    def __len__(self) -> int:
        return len(self.keys)
