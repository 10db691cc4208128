"""Benchmark: pattern promotion (issue 6), with the peers measured in the same run.

Usage: .venv/bin/python benchmarks/bench_promote.py [--table1] [--outlines] [--repeat N]
(no flag: both tables)

* ``--table1``: Table 1 of seed 000.  The input automaton is ``table1_automaton``
  (strings within one edit of the 100 words of ``table1_words.txt``; 2,381
  states and 46,202 arcs with the 4k tokenizer) promoted with the four WikiText
  tokenizers by Eq. 4 (``canonical-direct``: Algorithm 2 merge by merge) and by
  Eq. 5 (``canonical``, whole match: the token lattice ∩ A_BPE, its rows shared,
  written out and minimized, over the tokenizer's parts (spelling trie and
  explicit A_BPE) built once), best of N, beside the paper's times.  The two
  results must be equal languages (``bpefst.automata.equivalent``).
* ``--outlines``: tokenization-agnostic promotion against outlines-core's
  ``Index`` (built in Rust) on eight patterns, for GPT-2 and cl100k.
  outlines-core gets a ``Vocabulary(eos_id, {token bytes: [ids]})`` of the same
  ordinary tokens (raw bytes, so tokens that are not valid UTF-8 are kept; the
  GPT-2 byte-to-unicode spelling is undone by the tokenizer reader).  Its index
  adds one EOS self-loop per final state; those are subtracted from its
  transition count.  It walks the regex crate's (unminimized) DFA while we walk
  the minimal pattern DFA, so state counts may differ; the languages are
  checked equal after converting its index to a DFA and minimizing both.
  Our canonical promotion (Eq. 5, A_BPE prebuilt once per vocabulary) is timed
  beside it, with the transitions canonicality removed (minimal agnostic DFA vs
  minimal canonical DFA).  Like outlines' ``Vocabulary``, our spelling trie is
  built once per vocabulary with everything a walk reads (chains and the index
  of large subtrees, :mod:`bpefst.promotion.subtrees`), as a server promoting
  pattern after pattern keeps it; the time to build it is printed.  A one-off
  ``bpefst promote`` builds the trie but not the subtree index.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from bpefst.automata import DFA, StateLimitExceeded, equivalent, intersect, minimize  # noqa: E402
from bpefst.promotion import GuidedAutomaton, PartsCache, TokenLanguage, promote_agnostic  # noqa: E402
from bpefst.promotion.language_build import Limits  # noqa: E402
from bpefst.bpe import CanonicalAutomaton  # noqa: E402
from bpefst.promotion.canonical import banned_view, token_mask  # noqa: E402
from bpefst.regex.edit_distance import table1_automaton  # noqa: E402
from bpefst.regex.wordlists import read_words  # noqa: E402
from bpefst.regex import alphabet_for, compile_regex  # noqa: E402
from bpefst.tokenizer import load_tokenizer  # noqa: E402

# Table 1 of seed 000: vocabulary -> (Eq. 4 seconds, Eq. 5 seconds)
TABLE1 = {4000: (16.09, 0.19), 8000: (43.39, 0.24), 16000: (103.37, 0.38), 32000: (228.57, 0.45)}

SHARED_MAX_STATES = 500_000  # the pre-tokenization-aware canonical automaton (JSON on cl100k: 75,723 states)
MINIMIZE_MAX_ARCS = 5_000_000  # larger canonical automata are not written out and minimized here
CANONICAL_MAX_STATES = 2_000  # the canonical product is abandoned beyond this, and its size bound reported
PARTS = PartsCache(size=1)  # the tokenizer's trie and A_BPE, built once per vocabulary (as a server keeps them)


def language(pattern: DFA, model, mode: str = "canonical", pretokenize: bool = True, max_states: int | None = None):
    """A fresh language over the cached parts (so each timed run builds its product), without an arc limit."""
    return TokenLanguage(pattern, model, mode, pretokenize, limits=Limits(max_states, None), parts=PARTS)

PATTERNS = {
    "date": r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    "number": r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",
    "time": r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?",
    "email": r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)",
    "json": r'\{"name": "[A-Za-z ]{1,10}", "age": [0-9]{1,3}\}',
    "weekday": r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)",
    "greek": r"[α-ω]{1,4}",
    "cyrillic": r"[А-Яа-я]{2,5}( [А-Яа-я]{2,5})?",
}


def product_size_bound(lattice: DFA, automaton: CanonicalAutomaton) -> tuple[int, int]:
    """An upper bound on ``(states, arcs)`` of ``lattice ∩ A_BPE`` before minimization, without building it.

    Every product state is the start or ``(r, BANNED(t) ∩ out(r))`` for some
    lattice arc ``q -t-> r``, and has ``|out(r)|`` minus its banned tokens as
    arcs.  Costs one bitset AND per (arc target, token class): this is how
    this benchmark reports how large a canonical automaton would be when it is
    too large to materialize (e-mail or JSON patterns over 50k-100k vocabularies).
    """
    transitions = [{t: r for t, r in row.items() if automaton.reachable[t]} for row in lattice.transitions]
    token_class, class_banned, bit_of, _ = banned_view(transitions, automaton)
    masks = [token_mask(row if bit_of is None else map(bit_of.__getitem__, row)) for row in transitions]
    pairs = {(r, token_class[t]) for row in transitions for t, r in row.items()}
    states = {(r, class_banned[c] & masks[r]) for r, c in pairs}
    states.add((lattice.start, 0))
    arcs = sum(len(transitions[r]) - banned.bit_count() for r, banned in states)
    return len(states), arcs


def best_of(n: int, fn):
    """(best wall time, last result) over ``n`` runs."""
    best, result = float("inf"), None
    for _ in range(n):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def bench_table1(repeat: int) -> None:
    words = read_words(open(DATA / "wikitext-bpe" / "table1_words.txt", encoding="utf-8"))
    print("Table 1 of seed 000: promoting the edit-distance-one automaton (best of", repeat, "runs; A_BPE and trie prebuilt)")
    header = (f"{'vocab':>6} {'input':>14} {'A_BPE':>6} {'Eq.5':>7} {'paper':>6} {'ratio':>6} {'lattice':>8} {'product':>8} "
              f"{'Eq.4':>7} {'paper':>7} {'speedup':>8} {'result':>14} {'equal':>5}")
    print(header)
    for size, (paper4, paper5) in TABLE1.items():
        model = load_tokenizer(DATA / "wikitext-bpe" / f"tokenizer_{size}.json")
        pattern = table1_automaton(model, words)
        started = time.perf_counter()
        PARTS.get(model)  # spelling trie and explicit A_BPE (under 65,536 tokens), once
        prebuild = time.perf_counter() - started

        def eq5():
            built = language(pattern, model, pretokenize=False)
            return built, built.dfa()

        t5, (p5, dfa5) = best_of(repeat, eq5)
        t4, dfa4 = best_of(max(1, repeat // 2), lambda: language(pattern, model, "canonical-direct", pretokenize=False).dfa())
        same = equivalent(dfa5, dfa4).equal
        print(f"{size:>6} {pattern.num_states:>5,}/{pattern.num_arcs:>7,} {prebuild:>5.2f}s {t5:>6.3f}s {paper5:>5.2f}s {t5 / paper5:>5.2f}x "
              f"{p5.timings['shared_rows']:>7.3f}s {p5.timings['dfa']:>7.3f}s {t4:>6.2f}s {paper4:>6.2f}s {paper4 / t4:>7.1f}x "
              f"{dfa5.num_states:>5,}/{dfa5.num_arcs:>7,} {str(same):>5}")
    print("ratio = our Eq. 5 / paper's Eq. 5 (goal <= 1); speedup = paper's Eq. 4 / our Eq. 4 (goal >= 10);"
          " lattice/product = stage times of the last Eq. 5 run (the product with its rows shared, then written out"
          " and minimized).\n")


def outlines_vocabulary(model):
    from outlines_core import Vocabulary

    mapping: dict[bytes, list[int]] = {}
    for token_id, token in model.vocab.items():
        mapping.setdefault(model.token_bytes(token_id), []).append(token_id)
    eos = next((i for s, i in model.specials.items() if "endoftext" in s), model.max_id + 1)
    return Vocabulary(eos, mapping), eos


def outlines_dfa(index, eos: int) -> DFA:
    """outlines-core's index as a DFA over token ids (its EOS self-loops dropped)."""
    transitions = index.get_transitions()
    states = {index.get_initial_state(), *transitions, *index.get_final_states()}
    for row in transitions.values():
        states.update(row.values())
    number = {s: i for i, s in enumerate(sorted(states))}
    rows = [{} for _ in number]
    for s, row in transitions.items():
        rows[number[s]] = {t: number[r] for t, r in row.items() if t != eos}
    return DFA(rows, number[index.get_initial_state()], frozenset(number[s] for s in index.get_final_states()))


def bench_outlines(repeat: int) -> None:
    import importlib.metadata

    from outlines_core import Index

    version = importlib.metadata.version("outlines_core")
    print(f"Agnostic promotion vs outlines-core {version} Index (best of {repeat}; same process; vocabulary/trie/A_BPE prebuilt once)")
    for name, source in (("gpt2", "gpt2/vocab.json"), ("cl100k", "tiktoken/cl100k_base.tiktoken.gz")):
        model = load_tokenizer(DATA / source)
        alphabet = alphabet_for(model)
        started = time.perf_counter()
        vocabulary, eos = outlines_vocabulary(model)
        t_vocab = time.perf_counter() - started
        started = time.perf_counter()
        parts = PARTS.get(model)  # the spelling trie with its walk indexes, and A_BPE with its indexes
        trie, automaton = parts.trie, parts.automaton
        t_parts = time.perf_counter() - started
        print(f"\n{name}: {len(model.vocab):,} tokens; outlines Vocabulary {t_vocab:.2f}s, our parts (spelling trie and "
              f"A_BPE, {automaton.encoding}) {t_parts:.2f}s")
        print(f"{'pattern':>9} {'outlines':>9} {'states/arcs':>14} {'agnostic':>9} {'states/arcs':>14} {'ratio':>6} {'same':>5} "
              f"{'shared':>9} {'ratio':>6} {'shared arcs':>13} {'pre-tok':>9} {'ratio':>6} {'arcs':>9} {'on-demand':>9} {'ratio':>6} {'expanded':>10} {'ratio':>6} {'states':>7} {'step us':>12} {'canonical':>10} {'ratio':>6} {'min agn arcs':>12} {'min can arcs':>12} {'removed':>8}")
        totals = [0.0, 0.0, 0.0]
        for label, regex in PATTERNS.items():
            pattern = compile_regex(regex, alphabet)
            t_out, index = best_of(repeat, lambda: Index(regex, vocabulary))
            theirs = outlines_dfa(index, eos)
            t_agn, lattice = best_of(repeat, lambda: promote_agnostic(pattern, model, trie, minimal=False))
            agnostic_min = minimize(lattice)
            same = language_relation(minimize(theirs), agnostic_min)
            totals[0] += t_out
            totals[1] += t_agn
            line = (f"{label:>9} {t_out * 1e3:>7.1f}ms {theirs.num_states:>5,}/{theirs.num_arcs:>8,} {t_agn * 1e3:>7.1f}ms "
                    f"{lattice.num_states:>5,}/{lattice.num_arcs:>8,} {t_agn / t_out:>5.2f}x {same:>5} ")
            cell, arcs = pretokenized_cell(pattern, model, t_out, repeat)
            line += cell + on_demand_cell(pattern, model, index, t_out, repeat, arcs)
            started = time.perf_counter()
            try:
                t_can, canonical = best_of(repeat, lambda: language(pattern, model, pretokenize=False,
                                                                    max_states=CANONICAL_MAX_STATES).dfa())
            except StateLimitExceeded:
                spent = time.perf_counter() - started
                states, arcs = product_size_bound(lattice, automaton)
                print(line + f"{'gave up':>10} {'-':>6} {agnostic_min.num_arcs:>12,} {'-':>12} {'-':>8}  "
                      f"(> {CANONICAL_MAX_STATES:,} states, abandoned after {spent:.1f}s; unminimized product <= {states:,} states,"
                      f" {arcs:,} arcs)")
                totals[2] = float("nan")
                continue
            totals[2] += t_can
            removed = agnostic_min.num_arcs - canonical.num_arcs
            print(line + f"{t_can * 1e3:>8.1f}ms {t_can / t_out:>5.2f}x {agnostic_min.num_arcs:>12,} {canonical.num_arcs:>12,} "
                  f"{removed / max(agnostic_min.num_arcs, 1):>7.1%}")
        print(f"{'total':>9} {totals[0] * 1e3:>7.1f}ms {'':>14} {totals[1] * 1e3:>7.1f}ms {'':>14} {totals[1] / totals[0]:>5.2f}x {'':>5} "
              f"{totals[2] * 1e3:>8.1f}ms {totals[2] / totals[0]:>5.2f}x")
    print("\nratio = ours / outlines-core (goals: agnostic <= 2x, canonical <= 4x).  arcs exclude outlines' EOS self-loops;"
          " 'same' = equal languages after minimization ('sub': outlines' language is a proper subset of ours; its index"
          " drops tokens that continue a match past a point where a shorter match ends, e.g. '1' '.' '5' for numbers);"
          " 'removed' = share of the minimal agnostic DFA's arcs that canonicality removes (negative: the canonical DFA is"
          " larger).  'pre-tok' = canonical promotion with the tokenizer's pre-tokenization (the default of `bpefst"
          " promote`: exactly the encodings of the matches), minimized; 'shared' = the same automaton trim but not"
          " minimized, its rows shared (TokenLanguage.shared_rows(), what a decoder needs; 'pre-tok' is skipped past 5"
          " million arcs); 'on-demand' = the same automaton as a lazy product (lattice and liveness built, states as a decoder"
          " reaches them), 'expanded' = that product with every reachable state answered (explore(), its states counted;"
          " skipped past 5 million arcs, where 'shared' is the complete form);"
          " 'canonical' = each match as one chunk (--no-pretokenize).")


def pretokenized_cell(pattern: DFA, model, t_out: float, repeat: int) -> tuple[str, int]:
    """The pre-tokenization-aware canonical promotion (the default for real tokenizers), two ways.

    * shared rows: ``shared_rows()``, the trim automaton with its
      rows shared (what a decoder needs; its arcs are counted, not written);
      once only when one run takes over a second (e-mail and JSON: 2-10 s);
    * minimal: the same automaton written out and minimized (``dfa()``, what ``bpefst
      promote`` writes), with its arc count; not attempted past
      MINIMIZE_MAX_ARCS arcs (e-mail and JSON come to 0.2-1.4 billion).
    """
    def shared_rows():
        return language(pattern, model, max_states=SHARED_MAX_STATES).shared_rows()

    t_shared, shared = best_of(1, shared_rows)
    if t_shared < 1.0:
        t_shared, shared = best_of(repeat, shared_rows)
    cell = f"{t_shared * 1e3:>7.1f}ms {t_shared / t_out:>5.2f}x {shared.num_arcs:>13,} "
    if shared.num_arcs > MINIMIZE_MAX_ARCS:
        return cell + f"{'skipped':>9} {'-':>6} {'-':>9} ", shared.num_arcs
    t_pre, result = best_of(repeat, lambda: language(pattern, model, max_states=SHARED_MAX_STATES).dfa())
    return cell + f"{t_pre * 1e3:>7.1f}ms {t_pre / t_out:>5.2f}x {result.num_arcs:>9,} ", shared.num_arcs


def on_demand_cell(pattern: DFA, model, index, t_out: float, repeat: int, arcs: int) -> str:
    """``on_demand()``: build time, the time to answer every reachable state (explored to the
    end, not attempted past MINIMIZE_MAX_ARCS ``arcs``), and the cost of a decoding step beside outlines-core's."""
    def build():
        return language(pattern, model).on_demand()

    t_lazy, lazy = best_of(repeat, build)

    def expanded():  # every reachable state answered: the lazy product explored to the end
        whole = build()
        whole.explore()
        return whole

    if arcs > MINIMIZE_MAX_ARCS:  # e-mail and JSON: hundreds of millions of arcs written out one by one
        expanded_cell = f"{'skipped':>10} {'-':>6} {'-':>7} "
    else:
        t_all, whole = best_of(1, expanded)
        if t_all < 1.0:
            t_all, whole = best_of(repeat, expanded)
        expanded_cell = f"{t_all * 1e3:>8.1f}ms {t_all / t_out:>5.2f}x {whole.num_states:>7,} "
    rng = random.Random(1)
    walks = []
    for _ in range(20):  # random accepted sequences, chosen on one automaton and timed on fresh ones
        state, seq = lazy.start, []
        while state is not None and len(seq) < 40:
            row = lazy.row(state)
            if not row or (state in lazy.finals and rng.random() < 0.3):
                break
            token = rng.choice(sorted(row))
            seq.append(token)
            state = row[token]
        walks.append(seq)
    fresh = build()
    guided = GuidedAutomaton(fresh)
    steps = sum(map(len, walks))
    started = time.perf_counter()
    for seq in walks:
        state = guided.start
        for token in seq:
            guided.allowed_mask(state)
            state = guided.step(state, token)
    ours = (time.perf_counter() - started) / max(steps, 1)
    started = time.perf_counter()
    taken = 0
    for seq in walks:
        state = index.get_initial_state()
        for token in seq:
            index.get_allowed_tokens(state)
            state = index.get_next_state(state, token)
            taken += 1
            if state is None:  # outlines' language can be smaller (see 'sub')
                break
    theirs = (time.perf_counter() - started) / max(taken, 1)
    return f"{t_lazy * 1e3:>7.1f}ms {t_lazy / t_out:>5.2f}x " + expanded_cell + f"{ours * 1e6:>6.0f}/{theirs * 1e6:<5.0f} "


def language_relation(theirs: DFA, ours: DFA) -> str:
    """'True' for equal minimal DFAs, 'sub' when ``theirs`` is a proper subset of ``ours``, else 'False'."""
    if theirs == ours:
        return "True"
    return "sub" if minimize(intersect(theirs, ours)) == theirs else "False"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table1", action="store_true", help="Table 1 of seed 000 (Eq. 4 vs Eq. 5)")
    parser.add_argument("--outlines", action="store_true", help="agnostic/canonical promotion vs outlines-core")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (best is reported)")
    args = parser.parse_args()
    both = not (args.table1 or args.outlines)
    if args.table1 or both:
        bench_table1(args.repeat)
    if args.outlines or both:
        bench_outlines(args.repeat)


if __name__ == "__main__":
    main()
