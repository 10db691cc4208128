"""Layer 5: promotion of text automata to token automata (seed 000 Sec. 5-7).

- ``token_language``: a promoted pattern as one value built once
  (``bpefst.promote``), its views (guide, on demand, shared rows, DFA) read
  from that build; ``language_build``: the build per mode, with its limits
  and refusals; ``parts``: the tokenizer's trie and A_BPE, in a bounded cache
- ``agnostic``: every tokenization of every match (Eq. 3): the token lattice
- ``on_demand``: the canonical product (Eq. 5) as a lazy product (lattice
  and liveness built up front, states as a decoder reaches them)
- ``pretokenized``: the chunked pattern (the pattern times the tokenizer's
  pre-tokenization, gpt2, cl100k, o200k) and the canonical product with its
  rows shared; ``chunking``: the chunk-boundary automata
- ``direct``: Algorithm 2 merge by merge on the pattern (Eq. 4)
- ``canonical``: banned sets and token bitsets the canonical products share
- ``schema_fallback``: a JSON Schema's open objects, cut where they do not fit
- ``guided``: the decoding API over a promoted automaton
- ``constraints``: a regex or JSON Schema -> pattern text
"""

from .agnostic import SpellingTrie, promote_agnostic
from .direct import promote_direct
from .guided import GuidedAutomaton
from .language_build import MODES
from .on_demand import OnDemandCanonical
from .constraints import constraint_pattern
from .parts import DEFAULT_PARTS, PartsCache, TokenizerParts
from .token_language import TokenLanguage

__all__ = ["DEFAULT_PARTS", "PartsCache", "TokenLanguage", "TokenizerParts", "MODES", "GuidedAutomaton", "constraint_pattern",
           "OnDemandCanonical", "SpellingTrie", "promote_agnostic", "promote_direct"]
