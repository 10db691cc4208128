"""Large subtrees of the spelling trie, so that the agnostic walk can file their tokens in bulk.

The agnostic walk (:func:`.agnostic._walk_transforms`) steps through the
trie one chain at a time, carrying the transform a spelling induces on the
pattern's states.  Often a whole subtree needs no walking: when every symbol
used below a node moves the current transform the same way, and the next
one, and so on for the subtree's height (a loop over ``[A-Za-z ]`` reading
the letter tokens below ``" hel"``), then all tokens ``d`` symbols below the
node share the transform reached after ``d`` steps, whatever they spell.

This index holds what that shortcut needs, built once per trie:

* for every node with at least :data:`MIN_TOKENS` tokens strictly below it,
  the set of symbols on the arcs below it (its *alphabet*, interned) and its
  height; smaller subtrees are walked, as checking them would cost about as
  much as walking them;
* the tokens of each spelled length in trie preorder, so that the tokens of
  one length below a node are one slice, found by bisecting preorder
  positions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

# Measured on the bench patterns: 16 and 64 gain the same on GPT-2 JSON (the walk
# 22 ms -> 10 ms); below 64, cl100k's mixed-symbol subtrees cost more checks than
# they save (cl100k JSON 38 ms at 16, 34 ms at 64).
MIN_TOKENS = 64

NOT_INDEXED = -1


class Subtrees:
    """Per node: alphabet id (or :data:`NOT_INDEXED`), height and preorder range; tokens by length in preorder."""

    def __init__(self, children: list[dict[int, int]], ends: list[list[int]]):
        order, depth, symbol_in = _preorder(children)
        count = len(children)
        position = [0] * count
        for k, node in enumerate(order):
            position[node] = k
        end, height, below = [0] * count, [0] * count, [0] * count
        for node in reversed(order):
            last, tall, size = position[node] + 1, 0, 0
            for child in children[node].values():
                last = max(last, end[child])
                tall = max(tall, height[child] + 1)
                size += below[child] + len(ends[child])
            end[node], height[node], below[node] = last, tall, size
        interned: dict[frozenset[int], int] = {}
        self.alphabet_id = [NOT_INDEXED] * count
        for node in range(count):
            if below[node] >= MIN_TOKENS:
                symbols = frozenset(symbol_in[position[node] + 1:end[node]])
                self.alphabet_id[node] = interned.setdefault(symbols, len(interned))
        self.alphabets: list[frozenset[int]] = list(interned)
        self.height, self.depth, self.position, self.end = height, depth, position, end
        self._positions: dict[int, list[int]] = {}
        self._tokens: dict[int, list[int]] = {}
        for k, node in enumerate(order):
            if ends[node]:
                length = depth[node]
                self._positions.setdefault(length, []).extend([k] * len(ends[node]))
                self._tokens.setdefault(length, []).extend(ends[node])

    def tokens_below(self, node: int, distance: int) -> list[int]:
        """The tokens spelled ``distance`` symbols below ``node``."""
        positions = self._positions.get(self.depth[node] + distance)
        if positions is None:
            return []
        lo = bisect_right(positions, self.position[node])
        hi = bisect_left(positions, self.end[node], lo)
        return self._tokens[self.depth[node] + distance][lo:hi]


def _preorder(children: list[dict[int, int]]) -> tuple[list[int], list[int], list[int]]:
    """Nodes in preorder, each node's depth, and the symbol on the arc into each preorder position."""
    order: list[int] = []
    symbol_in: list[int] = []
    depth = [0] * len(children)
    stack = [(0, -1)]
    while stack:
        node, symbol = stack.pop()
        order.append(node)
        symbol_in.append(symbol)
        for s, child in children[node].items():
            depth[child] = depth[node] + 1
            stack.append((child, s))
    return order, depth, symbol_in
