"""Large subtrees of the spelling trie, so that the agnostic walk can file their tokens in bulk.

The agnostic walk (:func:`.agnostic._walk_transforms`) steps through the
trie one chain at a time, carrying the transform a spelling induces on the
pattern's states.  Often a whole subtree needs no walking: when every symbol
used below a node moves the current transform the same way, and the next
one, and so on for the subtree's height (a loop over ``[A-Za-z ]`` reading
the letter tokens below ``" hel"``), then all tokens ``d`` symbols below the
node share the transform reached after ``d`` steps, whatever they spell.

This index holds what that shortcut needs.  Only nodes with at least
:data:`MIN_TOKENS` tokens strictly below them are indexed (smaller subtrees
cost about as much to check as to walk); for each, the set of symbols on
the arcs below it (its *alphabet*, interned) and its height.  It is built
from the spellings sorted: the tokens below a node are the ones its
spelling prefixes, a contiguous range found by bisection, so only the
indexed nodes and their children are visited.  Per spelled length the
sorted spellings give the tokens ``d`` symbols below a node as one slice.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import chain
from operator import itemgetter

# Measured on the bench patterns: 16 and 64 gain the same on GPT-2 JSON (the walk
# 22 ms -> 10 ms); below 64, cl100k's mixed-symbol subtrees cost more checks than
# they save (cl100k JSON 38 ms at 16, 34 ms at 64).
MIN_TOKENS = 64

NOT_INDEXED = -1
_AFTER = float("inf")  # sorts after every symbol: ``prefix + (_AFTER,)`` bounds the spellings ``prefix`` starts


class Subtrees:
    """Per node: alphabet id (or :data:`NOT_INDEXED`) and height; tokens by length and prefix."""

    def __init__(self, children: list[dict[int, int]], spellings: dict[int, tuple[int, ...]]):
        ordered = sorted(spellings.items(), key=itemgetter(1))
        keys = list(map(itemgetter(1), ordered))
        tokens = list(map(itemgetter(0), ordered))
        lengths = list(map(len, keys))
        by_length = sorted(range(len(keys)), key=lengths.__getitem__)  # stable: by spelling within a length
        lengths.sort()
        self._by_length: dict[int, tuple[list[tuple[int, ...]], list[int]]] = {}
        start = 0
        while start < len(by_length):
            length = lengths[start]
            stop = bisect_left(lengths, length + 1, start)
            group = by_length[start:stop]
            self._by_length[length] = (list(map(keys.__getitem__, group)), list(map(tokens.__getitem__, group)))
            start = stop
        self.alphabet_id = [NOT_INDEXED] * len(children)
        self.height = [0] * len(children)
        self._prefix: dict[int, tuple[int, ...]] = {}
        self.alphabets: list[frozenset[int]] = []
        indexed = self._find_large(children, keys)
        self._index_alphabets(children, keys, indexed)

    def _find_large(self, children: list[dict[int, int]], keys: list[tuple[int, ...]]) -> list[tuple[int, int, int]]:
        """``(node, lo, hi)`` for the large nodes, parents first; ``keys[lo:hi]`` spell the tokens at and below."""
        found = []
        stack = [(0, ())]
        while stack:
            node, prefix = stack.pop()
            lo = bisect_left(keys, prefix)
            hi = bisect_left(keys, (*prefix, _AFTER), lo)
            at_node = bisect_left(keys, (*prefix, -_AFTER), lo, hi) - lo  # tokens spelled exactly ``prefix``
            if hi - lo - at_node < MIN_TOKENS:
                continue
            found.append((node, lo, hi))
            self._prefix[node] = prefix
            self.height[node] = max(map(len, keys[lo:hi])) - len(prefix)
            stack.extend((child, (*prefix, symbol)) for symbol, child in children[node].items())
        return found

    def _index_alphabets(self, children: list[dict[int, int]], keys: list[tuple[int, ...]],
                         indexed: list[tuple[int, int, int]]) -> None:
        """Each large node's alphabet, children before parents: small children are read off their spellings."""
        symbols_below: dict[int, frozenset[int]] = {}
        interned: dict[frozenset[int], int] = {}
        for node, lo, hi in reversed(indexed):
            prefix = self._prefix[node]
            depth = len(prefix)
            symbols: set[int] = set()
            for symbol, child in children[node].items():
                symbols.add(symbol)
                below = symbols_below.get(child)
                if below is None:
                    child_lo = bisect_left(keys, (*prefix, symbol), lo, hi)
                    child_hi = bisect_left(keys, (*prefix, symbol, _AFTER), child_lo, hi)
                    below = chain.from_iterable(spelling[depth + 1:] for spelling in keys[child_lo:child_hi])
                symbols.update(below)
            alphabet = symbols_below[node] = frozenset(symbols)
            self.alphabet_id[node] = interned.setdefault(alphabet, len(interned))
        self.alphabets = list(interned)

    def tokens_below(self, node: int, distance: int) -> list[int]:
        """The tokens spelled ``distance`` symbols below ``node`` (an indexed node)."""
        group = self._by_length.get(len(self._prefix[node]) + distance)
        if group is None:
            return []
        spellings, tokens = group
        prefix = self._prefix[node]
        lo = bisect_left(spellings, prefix)
        hi = bisect_left(spellings, (*prefix, _AFTER), lo)
        return tokens[lo:hi]

    # -- kept on disk (bpefst.promotion.parts) ---------------------------------------------------------------
    def to_tables(self) -> dict:
        """The index as msgpack-ready values; :meth:`from_tables` rebuilds it without sorting the spellings.

        The spellings themselves are not stored here: per spelled length only the token ids in their order,
        whose spellings the loader looks up in the trie's (the same tuples, as when built).
        """
        nodes = [node for node, alphabet in enumerate(self.alphabet_id) if alphabet != NOT_INDEXED]
        return {
            "nodes": len(self.alphabet_id),
            "indexed": [(node, self.alphabet_id[node], self.height[node], self._prefix[node]) for node in nodes],
            "alphabets": [list(alphabet) for alphabet in self.alphabets],
            "by_length": [(length, tokens) for length, (_, tokens) in self._by_length.items()],
        }

    @classmethod
    def from_tables(cls, tables: dict, spellings: dict[int, tuple[int, ...]], nodes: int) -> "Subtrees":
        """The index :meth:`to_tables` wrote, over the same trie (of ``nodes`` nodes, whose ``spellings`` are
        given); raises (ValueError, KeyError, ...) on tables that do not fit it (the caller treats any
        exception as a damaged file)."""
        if tables["nodes"] != nodes:
            raise ValueError("the subtree index is for another trie")
        index = cls.__new__(cls)
        index.alphabets = [frozenset(alphabet) for alphabet in tables["alphabets"]]
        index.alphabet_id, index.height = [NOT_INDEXED] * nodes, [0] * nodes
        index._prefix = {}
        for node, alphabet, height, prefix in tables["indexed"]:
            if not (0 <= node < nodes and 0 <= alphabet < len(index.alphabets) and 0 <= height):
                raise ValueError("subtree index out of range")
            index.alphabet_id[node], index.height[node], index._prefix[node] = alphabet, height, tuple(prefix)
        index._by_length = {}
        for length, tokens in tables["by_length"]:
            keys = list(map(spellings.__getitem__, tokens))
            if keys and set(map(len, keys)) != {length}:
                raise ValueError("subtree index lists a token under another length")
            index._by_length[length] = (keys, list(tokens))
        return index
