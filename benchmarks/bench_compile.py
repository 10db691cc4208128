"""Benchmark: compiling A_BPE (issue 4) and validating id streams, with the peers in the same run.

Usage: .venv/bin/python benchmarks/bench_compile.py [--skip-large] [--skip-validate]

* WikiText 4k-32k (explicit encoding, minimal state count included) beside
  Table 2 of seed 000;
* cl100k and o200k (implicit encoding; with --stats-style state counting);
* each compile runs in its own process so its peak memory (ru_maxrss) is its own;
* validation of tiktoken's ids for pydocs.txt against tiktoken's own
  decode + re-encode of the same ids (best of 3 each), plus the BPE-only check.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))

# Table 2 of seed 000 (states, default arcs, implicit stored arcs, implicit size in bytes)
TABLE2 = {4000: ("827", "3.1M", "222k", 2.4e6), 8000: ("2.0k", "14.4M", "1.3M", 15.9e6), 16000: ("3.8k", "55.6M", "5.4M", 70.3e6), 32000: ("6.4k", "173.0M", "32.2M", 449.9e6)}


def compile_job(source: str, encoding: str, out: str) -> dict:
    """Runs in a child process: load, build, count states, save; report times and peak memory."""
    from bpefst.bpe import MergeForest, build_canonical
    from bpefst.bpe.canonical_io import save_canonical
    from bpefst.tokenizer import load_tokenizer

    t0 = time.perf_counter()
    model = load_tokenizer(source)
    t1 = time.perf_counter()
    automaton = build_canonical(MergeForest.from_model(model), encoding)
    sizes = automaton.size_stats()
    t2 = time.perf_counter()
    save_canonical(automaton, model, out)
    t3 = time.perf_counter()
    return {
        "load_s": round(t1 - t0, 2), "compile_s": round(t2 - t1, 2), "save_s": round(t3 - t2, 2),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "bytes": os.path.getsize(out), **sizes,
    }


def run_child(source: str, encoding: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        code = f"import json,sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_compile as b; print(json.dumps(b.compile_job({source!r}, {encoding!r}, {tmp + '/a.dfa'!r})))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def bench_compile(skip_large: bool) -> None:
    print("A_BPE for the WikiText tokenizers (explicit), beside Table 2 of seed 000")
    print(f"{'vocab':>6} {'states':>8} {'paper':>6} {'arcs':>13} {'paper':>7} {'stored':>11} {'paper':>6} {'bytes':>11} {'1/4 paper':>10} {'compile':>8} {'peak MB':>8}")
    for size, (p_states, p_arcs, p_stored, p_bytes) in TABLE2.items():
        r = run_child(str(DATA / "wikitext-bpe" / f"tokenizer_{size}.json"), "explicit")
        print(f"{size:>6} {r['states']:>8,} {p_states:>6} {r['arcs']:>13,} {p_arcs:>7} {r['banned_per_state']:>11,} {p_stored:>6} "
              f"{r['bytes']:>11,} {int(p_bytes / 4):>10,} {r['compile_s']:>7}s {r['peak_mb']:>8}")
    if skip_large:
        return
    print("\nLarge vocabularies (implicit; states counted from banned-set signatures)")
    for name in ("cl100k_base", "o200k_base"):
        r = run_child(str(DATA / "tiktoken" / f"{name}.tiktoken.gz"), "implicit")
        print(f"{name}: load {r['load_s']}s, compile+count {r['compile_s']}s, save {r['save_s']}s, peak {r['peak_mb']} MB, "
              f"states {r['states']:,}, arcs {r['arcs']:,}, banned pairs {r['banned_pairs']:,}, artifact {r['bytes']:,} bytes")


def best_of(n: int, fn) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_validate() -> None:
    from conftest import tiktoken_oracle

    from bpefst.bpe import MergeForest, build_canonical
    from bpefst.pipeline.validate import Validator
    from bpefst.tokenizer import load_tokenizer

    enc = tiktoken_oracle("cl100k_base")
    text = lzma.open(DATA / "corpora" / "pydocs.txt.xz").read().decode("utf-8")
    ids = enc.encode(text, allowed_special="all")
    model = load_tokenizer(DATA / "tiktoken" / "cl100k_base.tiktoken.gz")
    automaton = build_canonical(MergeForest.from_model(model), "implicit")
    blocks = [ids[i : i + 65536] for i in range(0, len(ids), 65536)]

    def tiktoken_roundtrip():
        assert enc.encode(enc.decode(ids), allowed_special="all") == ids

    def ours(pretokenize=True):
        validator = Validator(model, automaton, pretokenize=pretokenize)
        return validator.check_stream(blocks)

    assert ours() is None
    cold = Validator(model, build_canonical(MergeForest.from_model(model), "implicit"))
    t_cold = best_of(1, lambda: cold.check_stream(blocks))
    t_tk = best_of(3, tiktoken_roundtrip)
    t_ours = best_of(3, ours)
    print(f"\nvalidate pydocs.txt ({len(text.encode()) / 1e6:.1f} MB, {len(ids):,} cl100k ids)")
    print(f"  tiktoken decode + re-encode : {t_tk:.2f} s")
    print(f"  bpefst validate (full)      : {t_ours:.2f} s  -> {t_tk / t_ours:.2f}x tiktoken (cold pair cache: {t_cold:.2f} s, {t_tk / t_cold:.2f}x)")
    # BPE-only: tiktoken's ids are not BPE-canonical across pre-tokenization chunks (the full check
    # exempts those pairs), so time --no-pretokenize on a stream that is: the reference encoder's
    # tokenization of 1 MB of pydocs as a single chunk.
    from dataclasses import replace

    from bpefst.tokenizer import ReferenceEncoder

    whole = ReferenceEncoder(replace(model, pattern=None)).encode_ordinary(text[:1_000_000])
    whole_blocks = [whole[i : i + 65536] for i in range(0, len(whole), 65536)]
    bpe_only = Validator(model, automaton, pretokenize=False)
    assert bpe_only.check_stream(whole_blocks) is None
    t_bpe = best_of(3, lambda: bpe_only.check_stream(whole_blocks))
    print(f"  bpefst validate --no-pretokenize: {len(whole) / t_bpe / 1e6:.2f} M tokens/s "
          f"({len(whole):,} ids of 1 MB in {t_bpe:.2f} s; the full check above runs at {len(ids) / t_ours / 1e6:.2f} M tokens/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-validate", action="store_true")
    parser.add_argument("--only-validate", action="store_true")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs the shared data at {DATA}")
    if not args.only_validate:
        bench_compile(args.skip_large)
    if not args.skip_validate:
        bench_validate()


if __name__ == "__main__":
    main()
