"""Layer 4: the finite-state constructions of BPE (seeds 000 and 001).

- ``merge_forest``: each token's merge tree as BPE builds it; reachability
- ``compatibility``: may token ``v`` follow token ``u``? (the pair walk)
- ``banned``: all banned pairs at once, as bitsets, from the merge structure
- ``canonical``: the canonical automaton A_BPE, explicit and implicit encodings
- ``merge_step``: Algorithm 2 of seed 001, merging one rule into any token DFA
"""

from .canonical import START, CanonicalAutomaton, ExplicitCanonical, ImplicitCanonical, build_canonical, count_states
from .compatibility import compatible_before, is_canonical_pair
from .merge_forest import MergeForest
from .merge_step import MergeableDFA, apply_merges

__all__ = [
    "START", "CanonicalAutomaton", "ExplicitCanonical", "ImplicitCanonical", "MergeForest", "MergeableDFA",
    "apply_merges", "build_canonical", "compatible_before", "count_states", "is_canonical_pair",
]
