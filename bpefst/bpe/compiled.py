"""A tokenizer's compiled automata as values: what ``bpefst.compile`` returns and ``bpefst.load_automaton`` reads.

:class:`CanonicalDFA` is A_BPE with the model it was built from (seed 001
Sec. 5, seed 000 Sec. 6.5): it answers whether a token sequence is one BPE
produces (each adjacent pair canonical, as A_BPE is 1-local) and can be
saved as a ``canonical-dfa`` artifact.  :class:`CompiledTransducer` is the
subsequential transducer (seed 001 Sec. 6) with its eagerly built states, saved
as a ``transducer`` artifact that ``bpefst.load`` reads back as a tokenizer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Sequence

from ..automata import DFA
from ..tokenizer import BPEModel
from .canonical import CanonicalAutomaton, build_canonical
from .merge_forest import MergeForest
from .transducer import SubsequentialTransducer


@dataclass
class CanonicalDFA:
    """A_BPE of ``model``: accepts exactly the token sequences BPE produces for some text (no pre-tokenization)."""

    model: BPEModel
    automaton: CanonicalAutomaton

    @classmethod
    def build(cls, model: BPEModel, encoding: str = "auto") -> "CanonicalDFA":
        """``encoding``: ``explicit`` (banned-set bitsets), ``implicit`` (merge trees, any size) or ``auto``."""
        return cls(model, build_canonical(MergeForest.from_model(model), encoding))

    @classmethod
    def load(cls, path: str | os.PathLike, expected_fingerprint: str | None = None) -> "CanonicalDFA":
        from .canonical_io import load_canonical

        return cls(*load_canonical(path, expected_fingerprint))

    def save(self, path: str | os.PathLike) -> None:
        from .canonical_io import save_canonical

        save_canonical(self.automaton, self.model, path)

    @property
    def encoding(self) -> str:
        return self.automaton.encoding

    def is_canonical(self, ids: Sequence[int]) -> bool:
        """Whether BPE produces ``ids`` for the text they spell (taken as one chunk)."""
        return self.automaton.is_canonical(ids)

    def first_violation(self, ids: Sequence[int]) -> int | None:
        """The index of the first token that cannot follow its predecessor, or None."""
        return self.automaton.first_violation(ids)

    def allowed(self, previous: int, token: int) -> bool:
        """Whether ``token`` may follow ``previous`` in a canonical sequence."""
        return self.automaton.allowed(previous, token)

    def to_dfa(self) -> DFA:
        """The automaton written out, one state per class of tokens with equal banned sets (small vocabularies)."""
        return self.automaton.to_dfa()

    @property
    def stats(self) -> dict:
        return {**self.automaton.size_stats(), **self.automaton.stats}


@dataclass
class CompiledTransducer:
    """The tokenizing transducer of ``model``, with ``stats`` of its eager build."""

    model: BPEModel
    transducer: SubsequentialTransducer
    stats: dict = field(default_factory=dict)

    @classmethod
    def build(cls, model: BPEModel, budget: int | None = None) -> "CompiledTransducer":
        """Build ``budget`` states eagerly (the default keeps them under half a million arcs)."""
        from .transducer_io import compile_transducer

        return cls(model, *compile_transducer(model, budget))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CompiledTransducer":
        from .transducer_io import read_transducer

        model, transducer = read_transducer(path)
        return cls(model, transducer, dict(getattr(transducer, "artifact_stats", {})))

    def save(self, path: str | os.PathLike) -> None:
        from .transducer_io import write_transducer

        write_transducer(path, self.model, self.transducer, self.stats)

    def transduce(self, symbols: str) -> list[int]:
        """The tokens of one chunk given as its code string (see :class:`SubsequentialTransducer`)."""
        return self.transducer.transduce(symbols)
