"""Measure the deferral of a JSON Schema's extra members: the numbers behind the design in docs/decoding.md
("Session 43").  Nothing here is built into bpefst yet.

Usage: .venv/bin/python benchmarks/measure_deferral.py SCHEMA.json [--vocab gpt2|cl100k] [--repeat N]

SCHEMA.json is a schema, or a JSONSchemaBench file (its ``schema`` member).  The schema is translated twice,
as bpefst reads it (objects open: extra members allowed) and closed (``open_objects=False``: the listed
members only), and both are chunked as promotion chunks them.  Then:

* D, the open chunked pattern's states that prefixes of closed texts reach (the two walked together from
  their starts: each prefix of a closed text leads the open pattern to one state);
* S, D closed under the lattice's targets that are not open (a token into an open target is good whatever
  follows, ``bpefst/promotion/regions.py``): every token of every state of S is walked;
* the liveness fixpoint over S alone, its open targets as finals, checked against the whole lattice's
  solve: the good set of every state of S must be the same, and so must the tokens filed under it (their
  grouping may differ).  A mismatch is printed and the exit status is 1.

The times are the prototype's, best of ``--repeat``, to compare with a set-up of the whole lattice
(``bench_json_schema.py``): the walk of the two chunked patterns together runs in Python over rows made as
dicts, and the walks build their lookup tables for every state, where a built version would mark D on the
pattern's states and fill the tables of the rows it reads only.
"""

from __future__ import annotations

import sys
import time

from count_mid_character import load_case, schema_arguments  # (its sibling here; it puts the package on the path)

from bpefst.automata import trim
from bpefst.promotion import agnostic, on_demand, pretokenized
from bpefst.promotion.parts import DEFAULT_PARTS
from bpefst.promotion.pretokenized import BOUNDARY
from bpefst.regex import alphabet_for
from bpefst.regex.json_schema import schema_to_dfa


def reached_by_prefixes(open_rows, open_start: int, closed_rows, closed_start: int) -> bytearray:
    """Per state of the open chunked pattern, 1 where a prefix of a closed text leads (the closed language
    lies within the open one, so the open pattern reads every symbol the closed one reads)."""
    reached = bytearray(len(open_rows))
    reached[open_start] = 1
    seen = {(open_start, closed_start)}
    stack = [(open_start, closed_start)]
    while stack:
        o, c = stack.pop()
        row = open_rows[o]
        for symbol, c_next in closed_rows[c].items():
            pair = (row[symbol], c_next)
            if pair not in seen:
                seen.add(pair)
                stack.append(pair)
                reached[pair[0]] = 1
    return reached


def deferred_setup(schema, model, chunker, parts, max_depth: int) -> dict:
    """The prototype's set-up of S (module docstring) with its times, and what the whole solve checks."""
    times = {}
    started = time.perf_counter()
    alphabet = alphabet_for(model)
    open_pattern = schema_to_dfa(schema, alphabet, max_depth=max_depth)
    closed_pattern = schema_to_dfa(schema, alphabet, max_depth=max_depth, open_objects=False)
    times["translations"] = time.perf_counter() - started
    trie, automaton = parts.trie, parts.automaton
    chunked = pretokenized.chunked_pattern(trim(open_pattern), model, chunker, 2_000_000, 40_000_000, trie)
    closed = pretokenized.chunked_pattern(trim(closed_pattern), model, chunker, 2_000_000, 40_000_000, trie)
    times["chunked patterns"] = time.perf_counter() - started - sum(times.values())
    kept = reached_by_prefixes(chunked.transitions, chunked.start, closed.transitions, closed.start)
    times["D (Python)"] = time.perf_counter() - started - sum(times.values())
    n = len(chunked.transitions)
    cut = on_demand._cuts(chunked.transitions, BOUNDARY)
    is_open = bytearray(n)
    for q in chunked.finals:
        is_open[q] = 1
    for q, after in enumerate(cut):
        if after is not None:
            is_open[q] = 1
    walker, keep = parts.trie.native_walker(), bytes(automaton.reachable_flags)
    weights = agnostic._row_weights(chunked.transitions, trie.leading_counts())
    heavy = bytes(int(w >= agnostic._TRANSFORM_WALK_WEIGHT and k) for w, k in zip(weights, kept))
    rest = bytes(int(w < agnostic._TRANSFORM_WALK_WEIGHT and k) for w, k in zip(weights, kept))
    groups = [(tokens, pairs) for tokens, pairs in agnostic._walk_natively(
        walker, chunked.transitions, None, groups=True, keep=keep, transforms=True, sources=heavy) if len(pairs)]
    groups += agnostic._walk_natively(walker, chunked.transitions, None, groups=True, keep=keep, sources=rest)
    solved = bytearray(kept)
    closing = [r for _, pairs in groups for r in pairs.values() if not solved[r] and not is_open[r]]
    walk_state = walker.over(chunked.transitions, keep).walk if closing else None
    while closing:
        q = closing.pop()
        if solved[q]:
            continue
        solved[q] = 1
        for r, tokens in walk_state(q):
            groups.append((tokens, {q: r}))
            if not solved[r] and not is_open[r]:
                closing.append(r)
    times["walks of S"] = time.perf_counter() - started - sum(times.values())
    good, filed = on_demand.solve_liveness(groups, n, [q for q in range(n) if is_open[q]], [None] * n, automaton)
    times["solve of S"] = time.perf_counter() - started - sum(times.values())
    return {"times": times, "chunked": chunked, "closed": closed, "kept": kept, "solved": solved, "good": good,
            "filed": filed, "cut": cut}


def filed_tokens(row) -> list[tuple[int, int]]:
    """A state's filed (token, target) pairs, whatever groups they were filed in."""
    return sorted((token, r) for tokens, r in row for token in tokens)


def main() -> int:
    parser = schema_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    schema, model, chunker = load_case(args)
    parts = DEFAULT_PARTS.get(model)
    runs = [deferred_setup(schema, model, chunker, parts, args.max_depth) for _ in range(max(1, args.repeat))]
    best = min(runs, key=lambda run: sum(run["times"].values()))
    chunked, good, filed, solved = best["chunked"], best["good"], best["filed"], best["solved"]
    n = len(chunked.transitions)
    print(f"{args.schema.name} over {args.vocab}: open chunked pattern {n:,} states, closed "
          f"{len(best['closed'].transitions):,}; D {sum(best['kept']):,} states, S {sum(solved):,}")
    print("  prototype times (best of %d): " % len(runs)
          + ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in best["times"].items()))
    whole = agnostic.walk_groups(chunked, parts.trie, None, keep=parts.automaton.reachable_flags)
    whole_good, whole_filed = on_demand.solve_liveness([(t, p) for t, p in whole if p], n, chunked.finals,
                                                       best["cut"], parts.automaton)
    differ = [q for q in range(n) if solved[q] and (good[q] != whole_good[q] or filed_tokens(filed[q]) != filed_tokens(whole_filed[q]))]
    print(f"  against the whole solve: {len(differ)} of the {sum(solved):,} states of S differ"
          + (f" (the first: {differ[0]})" if differ else " (good sets and filed tokens equal)"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
