"""The naive trainer: recount every pair after every merge (003, "Naive Implementation").

Slow (O(corpus) per merge) and obviously right, it is the oracle the tests
compare :mod:`.merging` against, merge by merge.  It shares only the initial
vocabulary with the fast trainer; the tie-breaks are written directly from
their definitions:

* ``lexicographic``: ``max`` over ``(count, left bytes, right bytes)`` (003);
* ``hf``: ``min`` over ``(-count, left id, right id)`` (HF ``BpeTrainer``).
"""

from __future__ import annotations

from typing import Sequence

from .vocabulary import Vocabulary


def naive_merges(
    words: list[list[int]],
    counts: Sequence[int],
    vocab: Vocabulary,
    vocab_size: int,
    *,
    min_frequency: int = 0,
    tie_break: str = "lexicographic",
) -> list[tuple[int, int]]:
    """Same contract as :func:`.merging.learn_merges`."""
    words = [list(w) for w in words]
    merges: list[tuple[int, int]] = []
    while len(vocab) < vocab_size:
        pair_counts: dict[tuple[int, int], int] = {}
        for word, count in zip(words, counts):
            for pair in zip(word, word[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + count
        if not pair_counts:
            break
        if tie_break == "hf":
            best = min(pair_counts, key=lambda p: (-pair_counts[p], p))
        else:
            best = max(pair_counts, key=lambda p: (pair_counts[p], vocab.token_bytes(p[0]), vocab.token_bytes(p[1])))
        if pair_counts[best] < max(1, min_frequency):
            break
        new = vocab.add_merge(*best)
        if best not in merges:
            merges.append(best)
        words = [_replace(word, best, new) for word in words]
    return merges


def _replace(word: list[int], pair: tuple[int, int], new: int) -> list[int]:
    out: list[int] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out
