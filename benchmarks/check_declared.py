"""Check a JSON Schema's declared part (bpefst/promotion/declared.py) against the whole solve on real schemas.

Usage: .venv/bin/python benchmarks/check_declared.py DIR [--vocab gpt2|cl100k] [--count N] [--min-states K]
       [--seed S]

DIR holds JSONSchemaBench files (a ``schema`` member each) or schemas.  A seeded shuffle of them is read until
``--count`` schemas whose open chunked pattern has at least ``--min-states`` states have been checked (the
smaller ones are solved by regions or whole, never deferred).  For each: the schema translated open and closed,
the open one chunked, the declared states D (``reached_by_prefixes``), the declared part's solve
(``DeclaredLiveness``) and the whole lattice's; every state the declared part holds must have the whole solve's
good set and filed tokens.  Printed per schema: the chunked states, D, the states held (S), the states that
differ (0 expected), and the two solves' times; the exit status is 1 when a state differs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

from count_mid_character import DATA, VOCABS  # (its sibling here; it puts the package on the path)

from bpefst.automata import trim
from bpefst.errors import BpefstError
from bpefst.promotion import on_demand, pretokenized
from bpefst.promotion.agnostic import walk_groups
from bpefst.promotion.chunking import chunker_for
from bpefst.promotion.declared import DeclaredLiveness, reached_by_prefixes
from bpefst.promotion.parts import DEFAULT_PARTS
from bpefst.regex import alphabet_for
from bpefst.regex.json_schema import schema_to_dfa
from bpefst.tokenizer import load_tokenizer


def filed_tokens(row) -> set[tuple[int, int]]:
    return {(token, r) for tokens, r in row for token in tokens}


def check(schema, model, chunker, parts, min_states: int) -> dict | None:
    """The figures of one schema (module docstring), None when it does not translate or is too small."""
    alphabet = alphabet_for(model)
    try:
        open_pattern = trim(schema_to_dfa(schema, alphabet))
        closed = trim(schema_to_dfa(schema, alphabet, open_objects=False))
        chunked = pretokenized.chunked_pattern(open_pattern, model, chunker, 2_000_000, 40_000_000, parts.trie)
    except (BpefstError, RecursionError, ValueError):
        return None
    n = len(chunked.transitions)
    if n < min_states:
        return None
    cut = on_demand._cuts(chunked.transitions, pretokenized.BOUNDARY)
    started = time.perf_counter()
    declared_states = reached_by_prefixes(chunked, closed)
    declared = DeclaredLiveness(chunked, parts.trie, parts.automaton, cut, declared_states, then_whole=None)
    declared_seconds = time.perf_counter() - started
    started = time.perf_counter()
    groups = [(t, p) for t, p in walk_groups(chunked, parts.trie, None, keep=parts.automaton.reachable_flags) if p]
    good, filed = on_demand.solve_liveness(groups, n, chunked.finals, cut, parts.automaton)
    whole_seconds = time.perf_counter() - started
    held = [q for q in range(n) if declared.holds(q)]
    differ = [q for q in held if declared[q] != good[q] or filed_tokens(declared.filed_of(q)) != filed_tokens(filed[q])]
    return {"states": n, "declared": declared_states.count(1), "held": len(held), "differ": len(differ),
            "declared_ms": declared_seconds * 1e3, "whole_ms": whole_seconds * 1e3}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--vocab", choices=sorted(VOCABS), default="gpt2")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--min-states", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=43)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    path, preset = VOCABS[args.vocab]
    model = load_tokenizer(DATA / path)
    parts, chunker = DEFAULT_PARTS.get(model), chunker_for(preset)
    files = sorted(args.directory.glob("*.json"))
    random.Random(args.seed).shuffle(files)
    results = []
    for file in files:
        if len(results) >= args.count:
            break
        document = json.loads(file.read_text())
        found = check(document.get("schema", document) if isinstance(document, dict) else document,
                      model, chunker, parts, args.min_states)
        if found is None:
            continue
        results.append(found)
        print(f"{file.name[:48]:48s} states {found['states']:7,}  D {found['declared']:6,}  S {found['held']:6,}  "
              f"differ {found['differ']}  declared part {found['declared_ms']:6.1f} ms  whole {found['whole_ms']:6.1f} ms",
              flush=True)
    shares = sorted(r["held"] / r["states"] for r in results)
    small = sum(r["declared"] <= 0.5 * r["states"] for r in results)
    print(f"{args.vocab}: {len(results)} schemas, {sum(r['differ'] for r in results)} states differing; S a median "
          f"{shares[len(shares) // 2]:.0%} of the states; declared at most half (deferred by bpefst.promote) in {small}")
    return 1 if any(r["differ"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
