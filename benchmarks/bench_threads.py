"""Benchmark: promoting JSON schemas beside a decoder in another thread, llguidance in the same run.

Usage: .venv/bin/python benchmarks/bench_threads.py SAMPLE_DIR [--sample N --seed S] [--vocab gpt2|cl100k]
       [--no-peers]

A serving engine sets up each request's schema in a worker thread while its
main thread goes on decoding the other requests (vLLM's structured output
does this).  What matters then is whether the set-up holds the GIL: while a
compiled routine holds it, the decoding thread waits.  SAMPLE_DIR and the
sample are ``bench_json_schema.py``'s (JSONSchemaBench's MaskBench files, a
seeded sample of the ones with tests); only the schemas both tools compile
are timed.  In one process, over one tokenizer:

* **stall**: the main thread steps a guide built beforehand (a
  ``fill_next_token_bitmask`` and a ``step`` per token, through an e-mail
  pattern and back to its start) while a worker thread sets up the sample's
  schemas one after another (``bpefst.promote(...).guide()`` and the first
  mask; llguidance: ``LLMatcher`` and its first mask).  Printed: the longest
  and the 99th-percentile gap between two decoding steps, beside the same
  loop with no worker (the gaps Python's own thread switching makes are the
  5 ms switch interval, ``sys.getswitchinterval()``).  A garbage collection
  stops every thread, whichever thread's allocations set it off, and its
  length grows with the process's heap (a serving process holding torch and
  transformers); the gaps no collection overlaps are printed apart, with the
  number of collections and the longest (``gc.freeze()`` after loading a
  model takes what was loaded out of the collections' reach);
* **throughput**: the schemas set up one after another on one thread, then
  on two threads at once (a thread pool of 2 taking them in turn); printed
  the wall-clock time of each and their ratio (2 cores: at most 2x).

The figure the compiled core is judged by is the stall outside collections:
the compiled routines of a set-up run their loops without the GIL (the
chunked product, its merge of mid-character states and its grouping of
equal rows; the rows' copy and lookup table of each walk; the walk state by
state and the walk carrying transforms; the liveness fixpoint), so a set-up
holds it for its Python glue and for reading and making Python objects.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import importlib.util
import json
import sys
import threading
import time
import warnings
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_guided import DATA, VOCABS, LLGuidance  # noqa: E402
from bench_json_schema import sample_files  # noqa: E402
from bpefst.decoding import allocate_token_bitmask  # noqa: E402
from bpefst.errors import BpefstError  # noqa: E402
from bpefst.promotion.parts import DEFAULT_PARTS  # noqa: E402
from bpefst.regex.json_schema import SchemaWarning  # noqa: E402

EMAIL = r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)"
EMAIL_TEXT = "jane.doe_42@example.org"


class Ours:
    name = "bpefst"

    def __init__(self, tokenizer):
        import bpefst

        self.bpefst, self.tokenizer = bpefst, tokenizer
        self.size = tokenizer.model.max_id + 1

    def set_up(self, schema) -> None:
        guide = self.bpefst.promote(self.tokenizer, json_schema=schema).guide()
        guide.fill_next_token_bitmask(guide.start, allocate_token_bitmask(1, self.size))


class Peer:
    name = "llguidance"

    def __init__(self, label, model):
        import llguidance.numpy

        self.ll = LLGuidance(label, model, model.specials.get("<|endoftext|>"))
        self.allocate = llguidance.numpy.allocate_token_bitmask

    def set_up(self, schema) -> None:
        llguidance = self.ll.llguidance
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema),
                                                                defaults={"whitespace_flexible": False})
        matcher = llguidance.LLMatcher(self.ll.tokenizer, grammar)
        self.ll.fill(matcher, self.allocate(1, self.ll.tokenizer.vocab_size))  # (one per call: threads share the peer)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())


def compiled_by_all(tools, files) -> list:
    """The sample's schemas every tool sets up (each tried once, untimed)."""
    kept = []
    for path in files:
        schema = json.loads(path.read_text())["schema"]
        try:
            for tool in tools:
                tool.set_up(schema)
        except (BpefstError, RuntimeError, ValueError, TypeError):
            continue
        kept.append(schema)
    return kept


def decoding_gaps(tokenizer, work=None) -> tuple[list[float], list[float], list[tuple[float, float]]]:
    """Gaps between decoding steps of a guide over the e-mail pattern, for as long as ``work`` runs in a worker
    thread (None: 2,000 steps with no worker): every gap, the gaps over 1 ms that no garbage collection
    overlaps, and the collections' (start, end) times (a collection stops every thread, whichever thread's
    allocation set it off)."""
    import bpefst

    guide = bpefst.promote(tokenizer, EMAIL).guide()
    bitmask = allocate_token_bitmask(1, tokenizer.model.max_id + 1)
    tokens = tokenizer.encode(EMAIL_TEXT)
    collections: list[tuple[float, float]] = []
    began: list[float] = []

    def timed(phase, info) -> None:
        if phase == "start":
            began.append(time.perf_counter())
        elif began:
            collections.append((began.pop(), time.perf_counter()))

    worker = threading.Thread(target=work) if work is not None else None
    gaps, long_spans, state, k = array("d"), [], guide.start, 0  # (millions of steps: no tuple per step)
    gc.callbacks.append(timed)
    try:
        if worker is not None:
            worker.start()
        last = time.perf_counter()
        while (worker.is_alive() if worker is not None else len(gaps) < 2000):
            guide.fill_next_token_bitmask(state, bitmask)
            state = guide.step(state, tokens[k])
            k += 1
            if k == len(tokens):
                state, k = guide.start, 0
            now = time.perf_counter()
            gaps.append(now - last)
            if now - last > 1e-3:  # (only a long gap can be the longest outside the collections)
                long_spans.append((last, now))
            last = now
        if worker is not None:
            worker.join()
    finally:
        gc.callbacks.remove(timed)
    outside = [b - a for a, b in long_spans if not any(start < b and end > a for start, end in collections)]
    return list(gaps), outside or [0.0], collections


def percentile(values, share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sample_dir", type=Path)
    parser.add_argument("--sample", type=int, default=40, metavar="N")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--vocab", choices=list(VOCABS), default="gpt2")
    parser.add_argument("--no-peers", action="store_true", help="leave llguidance out")
    args = parser.parse_args()
    if not args.no_peers and importlib.util.find_spec("llguidance") is None:
        parser.error("the peer needs llguidance: pip install -e '.[bench]', or pass --no-peers")
    import bpefst

    # cut or ignored keywords, said once per schema: set once for every thread (catch_warnings is not thread-safe)
    warnings.simplefilter("ignore", SchemaWarning)
    tokenizer = bpefst.load(DATA / VOCABS[args.vocab])
    DEFAULT_PARTS.get(tokenizer.model)  # per-tokenizer set-up, once, before any clock
    tools = [Ours(tokenizer)] + ([] if args.no_peers else [Peer(args.vocab, tokenizer.model)])
    schemas = compiled_by_all(tools, sample_files(args.sample_dir, args.sample, args.seed))
    print(f"{args.vocab}: {len(schemas)} schemas of a sample of {args.sample} (seed {args.seed}) set up by "
          f"{' and '.join(tool.name for tool in tools)}; switch interval {sys.getswitchinterval() * 1e3:.0f} ms")
    alone, _, _ = decoding_gaps(tokenizer)
    print(f"{'decoding beside':<24} {'longest gap':>12} {'without a GC':>13} {'p99 gap':>9} {'steps':>9} "
          f"{'collections (longest)':>22}")
    print(f"{'nothing':<24} {max(alone) * 1e3:>9.2f} ms {'':>13} {percentile(alone, 0.99) * 1e3:>6.3f} ms "
          f"{len(alone):>9}")
    for tool in tools:
        gaps, outside, collections = decoding_gaps(tokenizer, lambda tool=tool: list(map(tool.set_up, schemas)))
        longest_collection = max((end - start for start, end in collections), default=0.0)
        print(f"{tool.name + ' setting up':<24} {max(gaps) * 1e3:>9.2f} ms {max(outside) * 1e3:>10.2f} ms "
              f"{percentile(gaps, 0.99) * 1e3:>6.3f} ms {len(gaps):>9} {len(collections):>8} "
              f"({longest_collection * 1e3:.1f} ms)")
    print(f"\n{'set-up of the schemas':<28} {'1 thread':>10} {'2 threads':>10} {'ratio':>7}")
    for tool in tools:
        started = time.perf_counter()
        list(map(tool.set_up, schemas))
        one = time.perf_counter() - started
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(tool.set_up, schemas))
        two = time.perf_counter() - started
        print(f"{tool.name:<28} {one:>8.2f} s {two:>8.2f} s {one / two:>6.2f}x")


if __name__ == "__main__":
    main()
