"""Layer 1: a small generic finite-state toolkit over integer alphabets.

Automata are values: operations return new automata and never modify their
arguments.  One concept per module:

- ``dfa``: :class:`DFA` (partial transition function) and :class:`DFABuilder`
- ``shared_rows``: :class:`SharedRowDFA`, a DFA whose states share rows
  (for automata too large to write out arc by arc)
- ``nfa``: :class:`NFA` with epsilon arcs and :class:`NFABuilder`
- ``thompson``: regular-expression combinators building NFAs
- ``determinization``: subset construction
- ``trimming``: accessible / co-accessible states, trimming
- ``minimization``: Hopcroft minimization and canonical numbering
- ``product``: lazy products: intersect, union, difference, symmetric difference
- ``exploration``: materialize an implicitly given DFA (lazy breadth-first search)
- ``numbering``: hashable keys -> consecutive state numbers, with a state limit (every lazy construction)
- ``complementation``: completion and complement w.r.t. an alphabet
- ``equivalence``: Hopcroft-Karp equivalence with shortest counterexamples
- ``language``: enumerate / count / sample accepted strings, finiteness
- ``relabel``: symbol mapping, state renumbering
- ``reversal``: mirror-image NFA
- ``dot``: Graphviz output
- ``serialize``: msgpack artifacts (kind ``automaton``)

Nothing here knows about BPE.
"""

from . import thompson
from .complementation import complement, complete
from .determinization import determinize
from .dfa import DFA, DFABuilder
from .dot import to_dot
from .equivalence import Equivalence, counterexample, equivalent
from .errors import ArcLimitExceeded, StateLimitExceeded
from .exploration import explore
from .language import (count_by_length, count_strings, distances_to_final, enumerate_strings, is_finite, random_accepted,
                       random_within_reach, sampler, shortest_accepted)
from .minimization import canonical, minimize
from .nfa import NFA, NFABuilder
from .product import difference, intersect, symmetric_difference, union
from .relabel import map_symbols, renumber
from .reversal import reverse
from .shared_rows import SharedRowDFA
from .serialize import from_bytes, load, save, to_bytes
from .trimming import accessible, coaccessible, is_trim, trim

__all__ = [
    "DFA", "DFABuilder", "NFA", "NFABuilder", "thompson", "determinize", "trim", "is_trim", "accessible",
    "coaccessible", "minimize", "canonical", "intersect", "union", "difference", "symmetric_difference",
    "explore", "complete", "complement", "equivalent", "counterexample", "Equivalence", "enumerate_strings",
    "count_strings", "count_by_length", "random_accepted", "random_within_reach", "distances_to_final", "sampler",
    "shortest_accepted", "is_finite",
    "map_symbols", "renumber", "reverse", "to_dot", "to_bytes", "from_bytes", "save", "load",
    "StateLimitExceeded", "ArcLimitExceeded", "SharedRowDFA",
]
