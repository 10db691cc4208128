"""A training-set file end to end: ``bpefst tokenize`` against the tiktoken script people write, in one run.

Usage::

    .venv/bin/python benchmarks/bench_end_to_end.py                 # cl100k, pydocs + fortunes, 3 rounds
    .venv/bin/python benchmarks/bench_end_to_end.py --encoding o200k_base --rounds 5

Both sides start a fresh process, load the same rank file, read the same two
uncompressed files (pydocs and fortunes, decompressed once to a temporary
folder beforehand), tokenize each as one document with special tokens as plain
text, and write every id as a uint32 to one ``.bin`` file; start-up is
included, as a user waits for it:

* ``bpefst``: ``python -m bpefst tokenize RANKFILE pydocs.txt fortunes.txt
  --format bin --dtype uint32 -o out.bin`` (one process);
* ``tiktoken``: a short script: ``tiktoken.Encoding`` from the rank file,
  ``encode_ordinary_batch`` of the two texts (tiktoken's own threads), numpy
  ``tofile``.

Rounds are interleaved and the medians compared; the two output files must be
byte-identical (checked every round).
"""

from __future__ import annotations

import argparse
import filecmp
import lzma
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

TIKTOKEN_SCRIPT = r"""
import base64, gzip, sys
import numpy as np
import tiktoken
rank_file, output, *inputs = sys.argv[1:]
ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in gzip.open(rank_file).read().splitlines() if line)}
patterns = {PATTERNS}
enc = tiktoken.Encoding("bench", pat_str=patterns[rank_file.rsplit("/", 1)[-1].split(".")[0]], mergeable_ranks=ranks, special_tokens={{}})
texts = [open(path, encoding="utf-8", newline="").read() for path in inputs]
ids = enc.encode_ordinary_batch(texts)
np.concatenate([np.asarray(x, dtype=np.uint32) for x in ids]).tofile(output)
"""


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs the shared reference data at {DATA}")
    sys.path.insert(0, str(ROOT))
    from bpefst import engine
    from bpefst.tokenizer.pretokenize import PRESETS

    patterns = {"cl100k_base": PRESETS["cl100k"], "o200k_base": PRESETS["o200k"]}
    rank_file = str(DATA / "tiktoken" / f"{args.encoding}.tiktoken.gz")
    with tempfile.TemporaryDirectory() as folder:
        inputs = []
        for name in ("pydocs", "fortunes"):
            path = os.path.join(folder, f"{name}.txt")
            Path(path).write_bytes(lzma.open(DATA / "corpora" / f"{name}.txt.xz").read())
            inputs.append(path)
        script = os.path.join(folder, "tiktoken_bin.py")
        Path(script).write_text(TIKTOKEN_SCRIPT.replace("{PATTERNS}", repr(patterns)).replace("{{}}", "{}"))
        ours, theirs = os.path.join(folder, "bpefst.bin"), os.path.join(folder, "tiktoken.bin")
        commands = {
            "bpefst": [sys.executable, "-m", "bpefst", "tokenize", rank_file, *inputs, "--format", "bin", "--dtype", "uint32",
                       "-o", ours],
            "tiktoken": [sys.executable, script, rank_file, theirs, *inputs],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                times[name].append(timed(command))
            if not filecmp.cmp(ours, theirs, shallow=False):
                sys.exit("the two .bin files differ")
        size = sum(os.path.getsize(path) for path in inputs) / 1e6
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"{args.encoding}, pydocs + fortunes ({size:.1f} MB) to uint32 .bin, start-up included, median of "
              f"{args.rounds} interleaved rounds, outputs byte-identical; bpefst engine: {engine()}\n")
        print("| tool | seconds | MB/s | ratio (tiktoken / tool) |")
        print("|---|---|---|---|")
        for name, seconds in medians.items():
            print(f"| {name} | {seconds:.2f} | {size / seconds:.1f} | {medians['tiktoken'] / seconds:.2f}x |")


if __name__ == "__main__":
    main()
