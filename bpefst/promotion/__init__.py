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
- ``guided``: the decoding API over a promoted automaton
- ``constraints``: a regex or JSON Schema over a tokenizer -> a cached guided automaton
- ``edit_distance``, ``wordlists``: input automata (Table 1; --words)
"""

from .agnostic import SpellingTrie, promote_agnostic
from .canonical import intersect_canonical
from .direct import promote_direct
from .guided import GuidedAutomaton
from .on_demand import OnDemandCanonical
from .pretokenized import promote_pretokenized
from .promote import MODES, Promotion, promote
from .constraints import constraint_pattern, guide, promote_constraint

__all__ = ["MODES", "GuidedAutomaton", "constraint_pattern", "guide", "promote_constraint", "OnDemandCanonical", "Promotion", "SpellingTrie", "intersect_canonical", "promote", "promote_agnostic", "promote_direct",
           "promote_pretokenized"]
