"""Count what a JSON Schema's chunked pattern spends on characters outside ASCII: the numbers behind the
factorization sketched in docs/decoding.md ("What stands between these figures and the peers'").

Usage: .venv/bin/python benchmarks/count_mid_character.py SCHEMA.json [--vocab gpt2|cl100k] [--max-depth D]

SCHEMA.json is a schema, or a JSONSchemaBench file (its ``schema`` member).  The raw product of the schema's
byte automaton, the pre-tokenizer's chunker and the UTF-8 decoder is enumerated in Python, keyed as
``pretokenized._chunked_pattern`` keys it (before the trim and the merge of the compiled route), and printed:

* its states between characters and inside one (decoder state not 0), and the distinct (chunker state,
  decoder state) pairs among the latter: what one copy of the decoder per chunker state would hold;
* the lattice arcs from the mid-character states (every token whose first symbol such a state reads, walked
  through the product without a cut), split into those that end inside the character or at its end (a
  gadget's, the same for every state with that (chunker, decoder) pair) and those that go on past the
  character's end (an entry's), with the symbols those walk after the character.

A count, not a timing: it runs in Python, seconds over GPT-2, tens over cl100k.  It assumes what the
factorization needs of an entry (every state with one (chunker, decoder) pair reads the character alike) and
checks it: a pair whose states file different numbers of gadget arcs is reported.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bpefst.automata import trim  # noqa: E402
from bpefst.promotion import pretokenized  # noqa: E402
from bpefst.promotion.chunking import chunker_for  # noqa: E402
from bpefst.regex import alphabet_for  # noqa: E402
from bpefst.regex.json_schema import schema_to_dfa  # noqa: E402
from bpefst.tokenizer import load_tokenizer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
VOCABS = {"gpt2": ("gpt2/vocab.json", "gpt2"), "cl100k": ("tiktoken/cl100k_base.tiktoken.gz", "cl100k")}


def raw_product(pattern, chunker, step) -> list[tuple[int, int, int]]:
    """Every (pattern, chunker, decoder) state reached from the start, breadth first, cuts included."""
    start = (pattern.start, chunker.dfa.start, 0)
    index, states = {start: 0}, [start]
    for p, c, d in states:
        moves = [(p_next, step(c, d, symbol)) for symbol, p_next in pattern.transitions[p].items()]
        targets = [(p_next, *moved) for p_next, moved in moves if moved is not None]
        if d == 0 and chunker.boundary in chunker.dfa.transitions[c]:
            targets.append((p, chunker.dfa.transitions[c][chunker.boundary], 0))
        for key in targets:
            if key not in index:
                index[key] = len(states)
                states.append(key)
    return states


def schema_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of the scripts that measure one schema: the file, the vocabulary, max_depth."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("schema", type=Path)
    parser.add_argument("--vocab", choices=sorted(VOCABS), default="gpt2")
    parser.add_argument("--max-depth", type=int, default=2)
    return parser


def load_case(args: argparse.Namespace):
    """``(schema, model, chunker)`` of those arguments: a schema file or a JSONSchemaBench file's ``schema``."""
    warnings.simplefilter("ignore")
    document = json.loads(args.schema.read_text())
    schema = document.get("schema", document) if isinstance(document, dict) else document
    path, preset = VOCABS[args.vocab]
    return schema, load_tokenizer(DATA / path), chunker_for(preset)


def main() -> None:
    args = schema_arguments(__doc__.split("\n\n")[0]).parse_args()
    schema, model, chunker = load_case(args)
    pattern = trim(schema_to_dfa(schema, alphabet_for(model), max_depth=args.max_depth))
    values, decoder = pretokenized._symbol_values(model, chunker)
    step = pretokenized._symbol_stepper(values, decoder, chunker)
    states = raw_product(pattern, chunker, step)
    mid = [q for q in states if q[2]]
    print(f"{args.schema.name} over {args.vocab}: pattern {len(pattern.transitions):,} states, raw product {len(states):,}")
    print(f"  between characters {len(states) - len(mid):,}, inside one {len(mid):,}, "
          f"distinct (chunker, decoder) pairs among those {len({(c, d) for _, c, d in mid}):,}")

    def move(state, symbol):
        p, c, d = state
        p_next = pattern.transitions[p].get(symbol)
        moved = None if p_next is None else step(c, d, symbol)
        return None if moved is None else (p_next, *moved)

    spellings = model.spellings
    by_first = collections.defaultdict(list)
    for token, spelling in spellings.items():
        if spelling:
            by_first[spelling[0]].append(token)
    gadget: dict[tuple[int, int], set[int]] = collections.defaultdict(set)  # pair -> the counts its states file
    arcs = leaving = after = 0
    for q in mid:
        inside = 0
        for first in pattern.transitions[q[0]]:
            for token in by_first.get(first, ()):
                state, ended, walked_after = q, False, 0
                for symbol in spellings[token]:
                    state = move(state, symbol)
                    if state is None:
                        break
                    walked_after += ended
                    ended = ended or state[2] == 0
                if state is None:
                    continue
                arcs += 1
                if walked_after:
                    leaving += 1
                    after += walked_after
                else:
                    inside += 1
        gadget[(q[1], q[2])].add(inside)
    held = sum(max(counts) for counts in gadget.values())
    print(f"  lattice arcs from the mid-character states {arcs:,}")
    print(f"  a gadget's (ending inside the character or at its end), once per pair {held:,}")
    print(f"  leaving the character (per entry) {leaving:,} ({leaving / max(len(mid), 1):.1f} a state), "
          f"symbols walked after the character {after:,}")
    print(f"  held once and per entry, against today: {(held + leaving) / max(arcs, 1):.1%}")
    uneven = sum(len(counts) > 1 for counts in gadget.values())
    if uneven:
        print(f"  {uneven:,} pairs whose states file different numbers of gadget arcs (entries that read a "
              f"character differently: those pairs need more than one gadget)")


if __name__ == "__main__":
    main()
