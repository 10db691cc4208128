"""Benchmark: constrained decoding masks (issue 20), with the peers measured in the same run.

Usage: .venv/bin/python benchmarks/bench_guided.py [--repeat N] [--vocab gpt2|cl100k ...] [--no-llguidance]

For the eight patterns of bench_promote.py and two JSON schemas, over GPT-2 and
cl100k, it measures for bpefst (canonical, on demand: the route of
``bpefst.promote(...).guide()``), outlines-core 0.2.14 (``Index`` + ``Guide``) and llguidance
(``LLMatcher``, when its wheel is installed):

* **per vocabulary**: our spelling trie and A_BPE with their indexes, built
  (in this process, once), and read from the disk cache a ``cache_dir`` keeps
  them in (``from disk``: a fresh process, model loaded beforehand, best of N);
  beside them the peers' per-vocabulary objects.
* **first mask**: from the regex (or schema) to the first packed int32 bitmask
  written, with the per-vocabulary objects built once beforehand (our spelling
  trie and A_BPE, outlines' ``Vocabulary``, llguidance's ``LLTokenizer``), best
  of N; ``from disk``: ours again, the set-up read from ``guide``'s on-disk
  cache (``cache_dir``) that an earlier process wrote.  Schemas go through each tool's own translation (ours:
  ``schema_to_regex``; outlines: ``build_regex_from_schema``; llguidance:
  ``grammar_from_json_schema``).
* **per step**: one bitmask fill plus one advance, averaged over 20 random
  walks of canonical token sequences (each peer walks the prefix it accepts).
  ``warm``: the walks were already decoded once (our on-demand states and
  masks are built; the peers' are built up front anyway); ``cold``: the first
  decode over a fresh automaton, states expanded as reached (its mean, best of
  N fresh automata like the other columns, and the 99th percentile of the
  steps of one more cold pass, each step timed).
* **a bounded free-text string**: ``{"type": "string", "maxLength": 20}``
  through ``bpefst.promote(tokenizer, json_schema=...)``, promote to the first
  mask, best of N, beside llguidance's grammar, matcher and first mask.

Ratios are ours / peer (below 1: we are faster).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_promote import PATTERNS, best_of, outlines_vocabulary  # noqa: E402
from bpefst.decoding import allocate_token_bitmask  # noqa: E402
import bpefst  # noqa: E402
from bpefst.promotion import GuidedAutomaton  # noqa: E402
from bpefst.promotion.parts import DEFAULT_PARTS  # noqa: E402
from bpefst.regex.json_schema import schema_to_regex  # noqa: E402
from bpefst.tokenizer import load_tokenizer  # noqa: E402

SCHEMAS = {
    "person": {"type": "object",
               "properties": {"name": {"type": "string", "pattern": "^[A-Za-z ]{1,10}$"},
                              "age": {"type": "integer", "minimum": 0, "maximum": 120}, "member": {"type": "boolean"}},
               "required": ["name", "age"]},
    "record": {"type": "object",
               "properties": {"id": {"type": "string", "format": "uuid"},
                              "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
                              "score": {"type": "integer", "minimum": 0, "maximum": 100}},
               "required": ["id", "score"]},
}
VOCABS = {"gpt2": "gpt2/vocab.json", "cl100k": "tiktoken/cl100k_base.tiktoken.gz"}
CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


def walks_of(guided: GuidedAutomaton, count: int = 20, seed: int = 1) -> list[list[int]]:
    """Random canonical token sequences (random allowed tokens; stop at acceptance now and then)."""
    rng = random.Random(seed)
    walks = []
    for _ in range(count):
        state, seq = guided.start, []
        while len(seq) < 40:
            row = guided.allowed(state)
            if not row or (guided.is_accepting(state) and rng.random() < 0.3):
                break
            token = rng.choice(row)
            seq.append(token)
            state = guided.step(state, token)
        walks.append(seq)
    return walks


# -- the three decoders, each: first mask from a constraint, and a timed pass over walks ------------------
class Ours:
    name = "bpefst"

    def __init__(self, model, eos):
        self.model, self.eos = model, eos
        self.bitmask = allocate_token_bitmask(1, model.max_id + 1)

    def first(self, regex, cache_dir=None):
        guided = bpefst.promote(self.model, regex, cache_dir=cache_dir).guide(stop_ids=[self.eos])
        guided.fill_next_token_bitmask(guided.start, self.bitmask)
        return guided

    def run(self, guided, walks) -> tuple[float, int]:
        steps, started = 0, time.perf_counter()
        fill, step = guided.fill_next_token_bitmask, guided.step
        for seq in walks:
            state = guided.start
            for token in seq:
                fill(state, self.bitmask)
                state = step(state, token)
                steps += 1
        return time.perf_counter() - started, steps

    def each_step(self, guided, walks) -> list[float]:
        """The seconds of every step (fill + advance) of one pass, one clock read per step."""
        times, clock = [], time.perf_counter
        fill, step = guided.fill_next_token_bitmask, guided.step
        for seq in walks:
            state = guided.start
            for token in seq:
                started = clock()
                fill(state, self.bitmask)
                state = step(state, token)
                times.append(clock() - started)
        return times


class Outlines:
    name = "outlines"

    def __init__(self, model):
        from outlines_core import Guide, Index

        self.Guide, self.Index = Guide, Index
        self.vocabulary, self.eos = outlines_vocabulary(model)
        self.bitmask = allocate_token_bitmask(1, max(model.max_id + 1, self.eos + 1))

    def regex_of(self, label, source):
        if label in SCHEMAS:
            from outlines_core.json_schema import build_regex_from_schema

            return build_regex_from_schema(json.dumps(source))
        return source

    def first(self, regex):
        guide = self.Guide(self.Index(regex, self.vocabulary))
        guide.write_mask_into(self.bitmask.ctypes.data, self.bitmask.size, 4)
        return guide

    def accepted(self, guide, walks) -> list[list[int]]:
        """Each walk's prefix outlines accepts (its language can be smaller: bench_promote's 'sub')."""
        prefixes = []
        for seq in walks:
            guide.reset()
            n = 0
            for token in seq:
                if token not in guide.get_tokens():
                    break
                guide.advance(token, return_tokens=False)
                n += 1
            prefixes.append(seq[:n])
        return prefixes

    def run(self, guide, walks) -> tuple[float, int]:
        steps, started = 0, time.perf_counter()
        ptr, size = self.bitmask.ctypes.data, self.bitmask.size
        write, advance, reset = guide.write_mask_into, guide.advance, guide.reset
        for seq in walks:
            reset()
            for token in seq:
                write(ptr, size, 4)
                advance(token, return_tokens=False)
            steps += len(seq)
        return time.perf_counter() - started, steps


class LLGuidance:
    name = "llguidance"

    def __init__(self, label, model, eos):
        import llguidance
        import llguidance.numpy as llnp

        self.llguidance, self.fill = llguidance, llnp.fill_next_token_bitmask
        if label == "gpt2":
            import tokenizers
            import llguidance.hf

            data = DATA / "gpt2"
            tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(data / "vocab.json"), str(data / "merges.txt")))
            tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = tokenizers.decoders.ByteLevel()
            tok.add_special_tokens(["<|endoftext|>"])
            import transformers

            fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")
            self.tokenizer = llguidance.hf.from_tokenizer(fast, n_vocab=model.max_id + 1, eos_token=eos)
        else:
            import tiktoken
            import llguidance.tiktoken

            ranks = {}
            for line in gzip.open(DATA / "tiktoken" / "cl100k_base.tiktoken.gz").read().splitlines():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
            encoding = tiktoken.Encoding("cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks,
                                         special_tokens=dict(sorted(model.specials.items(), key=lambda kv: kv[1])))
            self.tokenizer = llguidance.tiktoken.lltokenizer_from_encoding(encoding)
        self.bitmask = llnp.allocate_token_bitmask(1, self.tokenizer.vocab_size)

    def regex_of(self, label, source):
        matcher = self.llguidance.LLMatcher
        if label in SCHEMAS:
            return matcher.grammar_from_json_schema(json.dumps(source), defaults={"whitespace_flexible": False})
        return matcher.grammar_from_regex(source)

    def first(self, grammar):
        matcher = self.llguidance.LLMatcher(self.tokenizer, grammar)
        self.fill(matcher, self.bitmask)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def accepted(self, matcher, walks) -> list[list[int]]:
        prefixes = []
        for seq in walks:
            matcher.reset()
            n = 0
            for token in seq:
                if not matcher.consume_token(token):
                    break
                n += 1
            prefixes.append(seq[:n])
        return prefixes

    def run(self, matcher, walks) -> tuple[float, int]:
        steps, started = 0, time.perf_counter()
        fill, bitmask, consume = self.fill, self.bitmask, matcher.consume_token
        for seq in walks:
            matcher.reset()
            for token in seq:
                fill(matcher, bitmask)
                consume(token)
            steps += len(seq)
        return time.perf_counter() - started, steps


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def per_step(decoder, built, walks) -> float:
    elapsed, steps = decoder.run(built, walks)
    return elapsed / max(steps, 1)


def parts_from_disk(label: str, model, repeat: int) -> tuple[float, int]:
    """Our per-vocabulary parts read back from a cache_dir (written here), timed in fresh processes: best
    seconds from the model loaded to the parts warm, and the file's size."""
    from bpefst.promotion.parts import cache_path

    script = ("import sys, time\n"
              "from bpefst.promotion.parts import PartsCache\n"
              "from bpefst.tokenizer import load_tokenizer\n"
              "model = load_tokenizer(sys.argv[1])\n"
              "started = time.perf_counter()\n"
              "PartsCache().get(model, sys.argv[2])\n"
              "print(time.perf_counter() - started)\n")
    with tempfile.TemporaryDirectory() as cache:
        DEFAULT_PARTS.get(model, cache)  # written by this process (the parts are in memory already) ...
        size = cache_path(cache, model.fingerprint).stat().st_size
        runs = [subprocess.run([sys.executable, "-W", "error", "-c", script, str(DATA / VOCABS[label]), cache], check=True,
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
                for _ in range(repeat)]  # ... and read by the next ones
    return min(map(float, runs)), size


def bench_vocab(label: str, repeat: int, use_llguidance: bool) -> None:
    model = load_tokenizer(DATA / VOCABS[label])
    eos = model.specials.get("<|endoftext|>", model.max_id + 1)
    started = time.perf_counter()
    DEFAULT_PARTS.get(model)  # the trie and A_BPE with the indexes every walk reads, once per tokenizer
    t_ours = time.perf_counter() - started
    t_parts_disk, parts_size = parts_from_disk(label, model, repeat)
    ours = Ours(model, eos)
    started = time.perf_counter()
    outlines = Outlines(model)
    t_out = time.perf_counter() - started
    peers = [outlines]
    note = f"outlines Vocabulary {t_out:.2f}s"
    if use_llguidance:
        started = time.perf_counter()
        try:
            peers.append(LLGuidance(label, model, eos))
            note += f", llguidance LLTokenizer {time.perf_counter() - started:.2f}s"
        except ImportError as exc:
            note += f", llguidance not installed ({exc})"
    print(f"\n{label}: {len(model.vocab):,} tokens; per vocabulary: our trie + A_BPE {t_ours:.2f}s built, "
          f"{t_parts_disk:.2f}s from disk (fresh process, {parts_size / 1e6:.0f} MB file), {note}")
    head = f"{'constraint':>10} {'first mask':>10} {'from disk':>9}"
    for peer in peers:
        head += f" {peer.name:>11} {'ratio':>6}"
    head += f" {'step cold':>10} {'cold p99':>9} {'step warm':>10}"
    for peer in peers:
        head += f" {peer.name:>11} {'ratio':>6}"
    print(head + "   (first mask: ms; steps: us)")
    for decoder in (ours, *peers):  # first-use costs (Unicode tables, lazy indexes) out of the first row
        decoder.first(decoder.regex_of("warm-up", "(yes|no)") if decoder is not ours else "(yes|no)")
    for name, source in [*PATTERNS.items(), *SCHEMAS.items()]:
        # objects closed, as in the earlier tables (open objects are bench_json_schema.py's subject)
        regex = schema_to_regex(source, open_objects=False) if name in SCHEMAS else source
        t_first, guided = best_of(repeat, lambda: ours.first(regex))
        with tempfile.TemporaryDirectory() as cache:
            ours.first(regex, cache)  # written by an earlier process ...
            t_disk, _ = best_of(repeat, lambda: ours.first(regex, cache))  # ... and read by this one
        walks = walks_of(ours.first(regex))
        # a fresh automaton each time: states expanded as reached (best of N, as every other column)
        cold = min(per_step(ours, ours.first(regex), walks) for _ in range(repeat))
        cold_p99 = percentile(ours.each_step(ours.first(regex), walks), 0.99)  # again, each step timed
        per_step(ours, guided, walks)  # expand what the walks reach ...
        warm = min(per_step(ours, guided, walks) for _ in range(repeat))  # ... and time the steps again
        line = f"{name:>10} {t_first * 1e3:>8.1f}ms {t_disk * 1e3:>7.1f}ms"
        steps = ""
        for peer in peers:
            peer_regex = peer.regex_of(name, source)
            t_peer, built = best_of(repeat, lambda: peer.first(peer_regex))
            theirs = peer.accepted(built, walks)
            per_step(peer, built, theirs)
            t_step = min(per_step(peer, built, theirs) for _ in range(repeat))
            line += f" {t_peer * 1e3:>9.1f}ms {t_first / t_peer:>5.2f}x"
            short = sum(map(len, walks)) - sum(map(len, theirs))
            steps += f" {t_step * 1e6:>9.1f}us {warm / t_step:>5.2f}x" + (f" (-{short} steps)" if short else "")
        print(line + f" {cold * 1e6:>8.1f}us {cold_p99 * 1e6:>7.0f}us {warm * 1e6:>8.1f}us" + steps, flush=True)
    bench_bounded_string(ours, peers, repeat)


BOUNDED_STRING = {"type": "string", "maxLength": 20}  # free text, bounded: every character counted


def bench_bounded_string(ours: Ours, peers: list, repeat: int) -> None:
    """Set-up (promote + first mask) of a free-text string of at most 20 characters, beside llguidance's."""
    def first():
        guided = bpefst.promote(ours.model, json_schema=BOUNDED_STRING).guide(stop_ids=[ours.eos])
        guided.fill_next_token_bitmask(guided.start, ours.bitmask)

    t_ours, _ = best_of(repeat, first)
    line = f"{'maxLength:20 string schema':>26}: set-up {t_ours:.2f}s"
    for peer in peers:
        if isinstance(peer, LLGuidance):
            grammar = peer.llguidance.LLMatcher.grammar_from_json_schema(json.dumps(BOUNDED_STRING),
                                                                         defaults={"whitespace_flexible": False})
            t_peer, _ = best_of(repeat, lambda: peer.first(grammar))
            line += f", llguidance {t_peer * 1e3:.1f}ms"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best is reported)")
    parser.add_argument("--vocab", action="append", choices=list(VOCABS), help="vocabularies (default: both)")
    parser.add_argument("--no-llguidance", action="store_true", help="leave llguidance out")
    args = parser.parse_args()
    import importlib.metadata as meta

    versions = ", ".join(f"{p} {meta.version(p)}" for p in ("outlines_core", "llguidance") if _installed(p))
    print(f"Constrained-decoding masks: bpefst (canonical, on demand) vs {versions}; best of {args.repeat}; one process")
    for label in args.vocab or list(VOCABS):
        bench_vocab(label, args.repeat, not args.no_llguidance)
    print("\nratio = bpefst / peer (below 1: bpefst faster; first-mask ratios use the column built from scratch).  first mask:"
          " regex or schema -> first bitmask filled (from disk: the set-up read from guide's cache_dir);"
          " step: one bitmask fill + one advance along canonical walks (cold: first decode, states expanded on the way,"
          " its mean, best of N fresh automata, and the 99th percentile of one more pass;"
          " warm: states already expanded, as when a guide is reused across requests).")


def _installed(package: str) -> bool:
    import importlib.metadata as meta

    try:
        meta.version(package)
        return True
    except meta.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
