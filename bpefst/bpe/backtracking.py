"""BPE of a chunk at the token level: longest tokens first, backtracking where a pair is not canonical.

The textbook encoder applies merges one at a time, about one per input byte.
This one places whole tokens.  It rests on two facts:

* BPE's output is the only tokenization of a string whose tokens are all
  reachable and whose adjacent pairs are all canonical (the canonical
  language is 1-local: Berglund & van der Merwe 2023, Corollary 2; seed 000
  Sec. 6.5, seed 001 Sec. 5);
* whether a pair ``(u, v)`` is canonical is decided by walking the right
  spine of ``u`` and the left spine of ``v`` (:mod:`.compatibility`).

So any search that finds a tokenization with those two properties has found
BPE's.  The search tries, at each position, the longest reachable token that
spells a prefix of the rest; if it cannot follow the previous token it tries the
next shorter one, and when none is left it takes back the previous token and
tries a shorter one there.  Real text almost never backtracks: the longest
token is usually right, and a chunk of ``k`` tokens costs about ``k``
dictionary probes per token plus ``k - 1`` pair tests (cached), where the
textbook encoder pays one rescan per merge.  The idea of encoding this way is
the backtracking encoder of GitHub's ``bpe`` crate (rust-gems; described in
its README); this is an independent implementation on bpefst's own tables.

The search is complete (it enumerates tokenizations in a fixed order, so it
finds the one that exists) but could in principle revisit positions many
times; a step budget linear in the chunk length bounds it, and a chunk over
budget returns ``None`` for the caller to encode another way.

Only for byte-level models whose tokens each come from one merge, with
merges in rank order (see :mod:`.chunk_encoder`, which calls it for long
chunks); reachability and pair verdicts come from :mod:`.lazy_forest`.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import repeat
from typing import TYPE_CHECKING

from .lazy_forest import REACHABLE

if TYPE_CHECKING:
    from ..tokenizer import BPEModel
    from .lazy_forest import LazyForest

STEPS_PER_BYTE = 4  # search budget: backtracking steps per byte of the chunk (plus a constant)


class BacktrackingEncoder:
    """``encode(data)`` -> BPE ids of the bytes ``data``, or None when the search runs over budget."""

    def __init__(self, model: "BPEModel", forest: "LazyForest"):
        self.forest = forest
        self._token = model.token_to_id.get
        vocab = model.vocab
        self._length = list(map(len, map(vocab.get, range(forest.size), repeat(b""))))
        # Token prefixes -> the token they spell (or -1 when only a prefix), entered one
        # group of tokens (same first two bytes) at a time as text needs them, from the
        # sorted spellings: a tokenizer pays only for the groups its text uses.
        self._sorted = sorted(model.token_to_id)
        self._expanded: set[bytes] = set()
        self._prefixes: dict[bytes, int] = {spelled: i for spelled, i in model.token_to_id.items() if len(spelled) == 1}

    def _expand(self, key: bytes) -> None:
        """Enter every token that starts with the two bytes ``key``, and all its prefixes."""
        self._expanded.add(key)
        prefixes, token_id, spellings = self._prefixes, self._token, self._sorted
        setdefault = prefixes.setdefault
        setdefault(key, -1)
        group = []
        for k in range(bisect_left(spellings, key), len(spellings)):
            spelled = spellings[k]
            if not spelled.startswith(key):
                break
            group.append(spelled)
            for end in range(3, len(spelled)):
                setdefault(spelled[:end], -1)
        for spelled in group:
            prefixes[spelled] = token_id(spelled)

    def encode(self, data: bytes) -> list[int] | None:
        """BPE ids of ``data`` (a chunk's bytes), or None when the search goes over budget."""
        n = len(data)
        forest = self.forest
        state, reachable = forest.state, forest.reachable
        whole = self._token(data)
        if whole is not None and (state[whole] == REACHABLE or (not state[whole] and reachable(whole))):
            return [whole]
        prefixes, expanded, length = self._prefixes, self._expanded, self._length
        get = prefixes.get
        verdicts, shift = forest.verdicts, forest.shift
        ids: list[int] = []
        starts: list[int] = []
        saved: list[tuple[list[int], int]] = []
        budget = STEPS_PER_BYTE * n + 16
        pos = 0
        candidates = None
        k = 0
        while True:
            if candidates is None:  # the reachable tokens that spell a prefix of data[pos:], longest first
                if pos + 1 < n and data[pos : pos + 2] not in expanded:
                    self._expand(data[pos : pos + 2])
                candidates = []
                end = pos + 1
                while True:
                    found = get(data[pos:end])
                    if found is None:
                        break
                    if found >= 0 and (state[found] == REACHABLE or (not state[found] and reachable(found))):
                        candidates.append(found)
                    if end == n:
                        break
                    end += 1
                candidates.reverse()
                k = 0
            if ids:
                previous = ids[-1] << shift
                while k < len(candidates):
                    t = candidates[k]
                    k += 1
                    if verdicts[previous | t]:
                        break
                else:  # nothing fits after the previous token: take it back, try it shorter
                    budget -= 1
                    if budget < 0:
                        return None
                    ids.pop()
                    pos = starts.pop()
                    candidates, k = saved.pop()
                    continue
            else:
                if k >= len(candidates):
                    return None
                t = candidates[k]
                k += 1
            ids.append(t)
            starts.append(pos)
            saved.append((candidates, k))
            pos += length[t]
            if pos == n:
                return ids
            candidates = None
