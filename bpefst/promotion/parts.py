"""What every promotion over one tokenizer starts from, kept in an explicit, size-bounded cache.

Promoting any pattern over a tokenizer walks its **spelling trie** (the tokens
by their spellings, :class:`~.agnostic.SpellingTrie`) and asks its **A_BPE**
(the canonical automaton of seed 000 Eq. 5, used through the 1-local pair
check of Sec. 6.5) which token pairs may follow each other.  Both depend on
the tokenizer only, take seconds to build over GPT-2 or cl100k, and are
read-only once built, so one pair serves every language over that tokenizer.

:class:`PartsCache` keeps them per tokenizer fingerprint, least recently
used first out, never more than ``size`` tokenizers: a process that promotes
schema after schema over one tokenizer builds the parts once and holds
memory flat.  The cache is a value: :func:`bpefst.promote` takes one as
``parts=`` and otherwise uses :data:`DEFAULT_PARTS` (two tokenizers).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..bpe import CanonicalAutomaton, MergeForest, build_canonical
from ..errors import BpefstError
from ..tokenizer import BPEModel
from .agnostic import SpellingTrie


@dataclass(frozen=True)
class TokenizerParts:
    """The spelling trie (with its walk indexes) and A_BPE of one tokenizer."""

    trie: SpellingTrie
    automaton: CanonicalAutomaton

    @classmethod
    def build(cls, model: BPEModel, automaton: CanonicalAutomaton | None = None, warm: bool = True) -> "TokenizerParts":
        """Build both (``automaton``: an A_BPE the caller already has).

        ``warm``: also build now the indexes walks and decoding steps read
        (otherwise each is built on first use, by whatever needs it): parts
        kept in a cache serve many languages, so their indexes are built
        once, up front.
        """
        trie = SpellingTrie.from_model(model)
        if automaton is None:
            automaton = build_canonical(MergeForest.from_model(model))
        if warm:
            trie.steps(), trie.chains(), trie.subtrees(), trie.native_walker()
            automaton.banned_mask(0)  # builds the index of one token's banned set that decoding steps read
        return cls(trie, automaton)


class PartsCache:
    """``model -> TokenizerParts``, at most ``size`` tokenizers (least recently used evicted)."""

    def __init__(self, size: int = 2):
        if size < 1:
            raise BpefstError(f"a parts cache holds at least one tokenizer (size={size})")
        self.size = size
        self._entries: OrderedDict[str, TokenizerParts] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, model: BPEModel) -> TokenizerParts:
        """The parts of ``model``, built on the first request for its fingerprint."""
        key = model.fingerprint
        parts = self._entries.get(key)
        if parts is None:
            parts = self._entries[key] = TokenizerParts.build(model)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return parts

    def clear(self) -> None:
        self._entries.clear()


DEFAULT_PARTS = PartsCache(size=2)
