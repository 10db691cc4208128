"""Layer 5: promotion of text automata to token automata (seed 000 Sec. 5-7).

- ``agnostic``: every tokenization of every match (Eq. 3)
- ``canonical``: the lattice intersected with A_BPE (Eq. 5)
- ``direct``: Algorithm 2 merge by merge on the pattern (Eq. 4)
- ``chunking``, ``pretokenized``: canonical promotion that follows a
  tokenizer's pre-tokenization (gpt2, cl100k, o200k): the chunk-boundary automaton
  and the product with it
- ``promote``: the routes behind one call, with stage timings
- ``on_demand``: the pre-tokenized canonical automaton as a lazy product
  (lattice and liveness built up front, states as a decoder reaches them)
- ``token_language``: a promoted pattern as one value built once
  (``bpefst.promote``), its views (guide, on demand, shared rows, DFA) read
  from that build; ``language_build``: the build per mode, with its limits
  and refusals; ``parts``: the tokenizer's trie and A_BPE, in a bounded cache
- ``guided``: the decoding API over a promoted automaton
- ``constraints``: a regex or JSON Schema -> pattern text
"""

from .agnostic import SpellingTrie, promote_agnostic
from .canonical import intersect_canonical
from .direct import promote_direct
from .guided import GuidedAutomaton
from .on_demand import OnDemandCanonical
from .promote import MODES, Promotion, promote
from .constraints import constraint_pattern
from .parts import DEFAULT_PARTS, PartsCache, TokenizerParts
from .token_language import TokenLanguage

__all__ = ["DEFAULT_PARTS", "PartsCache", "TokenLanguage", "TokenizerParts", "MODES", "GuidedAutomaton", "constraint_pattern", "OnDemandCanonical", "Promotion", "SpellingTrie", "intersect_canonical", "promote", "promote_agnostic", "promote_direct"]
