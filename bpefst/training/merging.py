"""Learning merges: a max-heap of pair counts plus an inverted index pair -> words.

This is the fast BPE trainer of 003 ("Inverted Index") with the priority queue
of 002 Sec. 4 (Algorithm 2): the corpus is a list of distinct words (pre-tokens
as lists of token ids, each with its count); ``pair_counts`` holds, for every
adjacent pair, the number of times it occurs in the corpus (overlapping
occurrences counted, as the naive trainer counts windows); ``where`` maps a
pair to the words that contain it.  Each merge

1. pops the best pair from the heap (lazy invalidation: an entry whose count
   is stale is re-pushed with the current count, or dropped at zero; counts of
   existing pairs only ever fall, so stale entries are upper bounds and the
   first entry whose count is current is the true maximum);
2. visits only the words listed for that pair, replacing each occurrence left
   to right and adjusting the counts of the neighbouring pairs in place
   (``(x, a) -> (x, ab)`` and ``(b, y) -> (ab, y)``), so the work of a merge is
   proportional to the number of occurrences it rewrites (002 Thm. 4.2);
3. pushes the pairs the merge created, with their final counts.

Pairs are packed into one int, ``left << shift | right``, which is much cheaper
to hash than a tuple.  Heap entries are ``(-count, tie, ..., pair)``: for the
``lexicographic`` tie-break ``tie`` is a pair of order-reversing keys of the
token byte strings (see :func:`.vocabulary.reverse_order_key`), for ``hf`` it
is the packed pair itself, so that the smallest ``(left id, right id)`` wins
as in HF ``tokenizers``' ``BpeTrainer``.
"""

from __future__ import annotations

from collections import defaultdict
from heapq import heapify, heappop, heappush
from typing import Callable, Sequence

from .vocabulary import Vocabulary

# Called after each merge with (merges done, left id, right id, count).
MergeCallback = Callable[[int, int, int, int], None]


def learn_merges(
    words: list[list[int]],
    counts: Sequence[int],
    vocab: Vocabulary,
    vocab_size: int,
    *,
    min_frequency: int = 0,
    tie_break: str = "lexicographic",
    on_merge: MergeCallback | None = None,
) -> list[tuple[int, int]]:
    """Merge until the vocabulary has ``vocab_size`` entries; returns the merges.

    ``words`` are rewritten in place and ``vocab`` grows.  Training stops early
    when no pair is left or the best pair occurs fewer than ``min_frequency``
    times (HF's rule).
    """
    shift = max(vocab_size, len(vocab) + 1).bit_length()
    pair_counts, where = _count_pairs(words, counts, shift)
    entry = _entry_maker(vocab, shift, tie_break)
    heap = [entry(pair, count) for pair, count in pair_counts.items()]
    heapify(heap)
    threshold = max(1, min_frequency)
    merges: list[tuple[int, int]] = []
    merged: set[int] = set()
    mask = (1 << shift) - 1
    while len(vocab) < vocab_size:
        best = _pop_best(heap, pair_counts, entry)
        if best is None:
            break
        pair, count = best
        if count < threshold:
            break
        left, right = pair >> shift, pair & mask
        new = vocab.add_merge(left, right)
        if pair not in merged:
            merged.add(pair)
            merges.append((left, right))
        created = _apply_merge(words, counts, where.pop(pair), left, right, new, shift, pair_counts, where)
        del pair_counts[pair]
        for key in created:
            created_count = pair_counts[key]
            if created_count > 0:
                heappush(heap, entry(key, created_count))
        if on_merge is not None:
            on_merge(len(merges), left, right, count)
    return merges


def _count_pairs(words: list[list[int]], counts: Sequence[int], shift: int) -> tuple[dict[int, int], defaultdict[int, list[int]]]:
    """Initial pair counts and inverted index (a word may be listed more than once)."""
    pair_counts: dict[int, int] = {}
    where: defaultdict[int, list[int]] = defaultdict(list)
    get = pair_counts.get
    for index, word in enumerate(words):
        count = counts[index]
        left = word[0]
        for right in word[1:]:
            pair = left << shift | right
            pair_counts[pair] = get(pair, 0) + count
            where[pair].append(index)
            left = right
    return pair_counts, where


def _entry_maker(vocab: Vocabulary, shift: int, tie_break: str) -> Callable[[int, int], tuple]:
    if tie_break == "hf":
        return lambda pair, count: (-count, pair)
    keys = vocab.reverse_keys  # grows as tokens are created; read at push time
    mask = (1 << shift) - 1
    return lambda pair, count: (-count, keys[pair >> shift], keys[pair & mask], pair)


def _pop_best(heap: list[tuple], pair_counts: dict[int, int], entry: Callable[[int, int], tuple]) -> tuple[int, int] | None:
    """The pair with the highest current count (ties by the entry order), or None."""
    while heap:
        top = heappop(heap)
        pair = top[-1]
        count = pair_counts.get(pair, 0)
        if count == -top[0]:
            return pair, count
        if count > 0:
            heappush(heap, entry(pair, count))
    return None


def _apply_merge(
    words: list[list[int]],
    counts: Sequence[int],
    word_ids: list[int],
    a: int,
    b: int,
    new: int,
    shift: int,
    pair_counts: dict[int, int],
    where: defaultdict[int, list[int]],
) -> dict[int, list[int]]:
    """Rewrite ``a b -> new`` in the listed words; returns the pairs created (with the words).

    Occurrences are replaced left to right (``a a a -> aa a``), and each
    replacement moves the count of its neighbours' pairs, as HF's
    ``Word::merge`` does; the merged pair's own count is dropped by the caller.
    """
    get = pair_counts.get
    created: dict[int, list[int]] = {}
    b_key, new_key = b << shift, new << shift
    same = a == b
    for index in set(word_ids):
        word = words[index]
        count = counts[index]
        remaining = word.count(a)
        i = 0
        while remaining:
            i = word.index(a, i)
            remaining -= 1
            if i + 1 == len(word) or word[i + 1] != b:
                i += 1
                continue
            if same:
                remaining -= 1
            if i:
                x = word[i - 1]
                pair_counts[x << shift | a] -= count
                key = x << shift | new
                pair_counts[key] = get(key, 0) + count
                listed = created.get(key)
                if listed is None:
                    created[key] = [index]
                else:
                    listed.append(index)
            word[i : i + 2] = (new,)
            if i + 1 < len(word):
                y = word[i + 1]
                pair_counts[b_key | y] -= count
                key = new_key | y
                pair_counts[key] = get(key, 0) + count
                listed = created.get(key)
                if listed is None:
                    created[key] = [index]
                else:
                    listed.append(index)
            i += 1
    for key, listed in created.items():
        if key in where:
            where[key] += listed
        else:
            where[key] = listed
    return created
