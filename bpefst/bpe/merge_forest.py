"""The merge tree of every token, as BPE builds it.

When BPE encodes the spelling of a token ``t`` on its own, the last merge it
applies combines two tokens ``left(t)`` and ``right(t)`` at some rank
``rank(t)``; recursively this is ``t``'s merge tree.  Base symbols have rank
-1.  A token whose spelling does not encode to itself is *unreachable*: no
canonical sequence contains it.

The trees come from the merge list alone, in one pass in rank order: merge
``m = (l, r) -> t`` builds ``t`` exactly when ``l`` and ``r`` are reachable and
no merge across the ``l | r`` boundary fires before rank ``m``, which is the
pair walk of :mod:`.compatibility` with its time limit set to ``m``.  When
several merges produce the same token, the first one that passes is the one BPE
uses (the string's evolution is deterministic, and a later producer can only
act if the earlier one never saw its two halves side by side).

The right spine of ``t`` (``t, right(t), right(right(t)), ...``) and its left
spine are what decide whether two tokens may stand next to each other
(Berglund & van der Merwe 2023, restated in seed 000 Sec. 6.5 and seed 001
Sec. 5).

All of this assumes BPE applies merges in rank order, which holds exactly when
no merge needs a token that BPE builds only at a later rank (a *rank
inversion*).  A merge list can have one when two merges produce the same token:
``(b, bb) -> bbb`` at rank 1 never fires on ``bbb`` (rank 0 makes ``bb b``
first), so ``bbb`` comes from a later ``(bb, b)``, after which an earlier-ranked
merge ``(a, bbb)`` can still fire (HF's priority queue does fire it).  No
published tokenizer we know has one (GPT-2, cl100k, o200k and the WikiText
models have none); :meth:`MergeForest.from_model` refuses such lists rather
than build a wrong automaton.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BpefstError
from ..tokenizer import BPEModel

BASE_RANK = -1
NO_TOKEN = -1


@dataclass
class MergeForest:
    """Per-token merge trees plus the pair -> rank table (ids index the lists)."""

    size: int  # one past the largest ordinary token id
    rank: list[int]  # rank of the merge that builds each token; BASE_RANK for base symbols
    left: list[int]  # left child, NO_TOKEN for base symbols and unused ids
    right: list[int]
    reachable: list[bool]
    pair_rank: dict[tuple[int, int], int]  # every merge of the model, (left, right) -> rank

    @classmethod
    def from_model(cls, model: BPEModel, engine: str | None = None) -> "MergeForest":
        """The forest of a model's merges, in one pass in rank order (module docstring); on the compiled
        core where it is built (``engine``: see :func:`bpefst.native.choose`), whose pure twin is
        :meth:`_from_model_pure`."""
        from .. import native

        model.check_dense()
        size = max(model.vocab, default=-1) + 1
        if native.choose(engine) == "compiled" and size <= native.CORE_MAX_ID:
            return cls._from_model_compiled(model, size)
        return cls._from_model_pure(model, size)

    @classmethod
    def _from_model_compiled(cls, model: BPEModel, size: int) -> "MergeForest":
        from array import array

        from .. import native

        packed = native.core.build_forest(max(size, 1), array("I", model.base_ids).tobytes(), native.merge_triples(model))
        rank, left, right, reachable, inversion = packed
        forest = cls(size=size, rank=array("i", rank).tolist()[:size], left=array("i", left).tolist()[:size],
                     right=array("i", right).tolist()[:size], reachable=list(map(bool, reachable[:size])),
                     pair_rank={pair: rank for rank, pair in enumerate(model.merges)})
        if inversion >= 0:
            forest._check_rank_order(model)  # names the merge
        return forest

    @classmethod
    def _from_model_pure(cls, model: BPEModel, size: int) -> "MergeForest":
        from .compatibility import compatible_before

        forest = cls(
            size=size,
            rank=[BASE_RANK] * size,
            left=[NO_TOKEN] * size,
            right=[NO_TOKEN] * size,
            reachable=[False] * size,
            pair_rank={pair: rank for rank, pair in enumerate(model.merges)},
        )
        for token in model.base_ids:
            forest.reachable[token] = True
        built = forest.reachable
        for m, ((a, b), t) in enumerate(zip(model.merges, model.merge_results)):
            if built[t] or not (built[a] and built[b]):
                continue
            if compatible_before(forest, a, b, m):
                forest.rank[t], forest.left[t], forest.right[t] = m, a, b
                built[t] = True
        forest._check_rank_order(model)
        return forest

    def _check_rank_order(self, model: BPEModel) -> None:
        for m, (a, b) in enumerate(model.merges):
            for side in (a, b):
                if self.reachable[side] and self.rank[side] > m:
                    raise BpefstError(
                        f"merge {m} ({model.vocab[a]!r} {model.vocab[b]!r}) needs {model.vocab[side]!r}, which BPE builds only at "
                        f"merge {self.rank[side]}: with this rank inversion merges do not apply in rank order, and the "
                        "canonical automaton is not defined by the construction bpefst uses"
                    )

    @property
    def reachable_ids(self) -> list[int]:
        return [t for t, ok in enumerate(self.reachable) if ok]

    def right_spine(self, token: int) -> list[int]:
        spine = [token]
        while self.right[spine[-1]] != NO_TOKEN:
            spine.append(self.right[spine[-1]])
        return spine

    def left_spine(self, token: int) -> list[int]:
        spine = [token]
        while self.left[spine[-1]] != NO_TOKEN:
            spine.append(self.left[spine[-1]])
        return spine
