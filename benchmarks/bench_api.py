"""Loading and pickling a tokenizer: bpefst against tiktoken, side by side in one run.

For cl100k_base and o200k_base, each figure is the median over ``--repeat``
interleaved runs, each in a fresh process (imports done before the clock
starts, so only loading is timed):

* tiktoken: read the ``.tiktoken.gz`` rank file (gzip, base64) and construct
  ``tiktoken.Encoding`` with the published pattern and specials, then encode
  one short string (what a user does before the first call returns);
* bpefst: ``bpefst.load`` of the same rank file, and of a ``.bpefst`` artifact
  converted from it, then the same short encode;
* pickling: size, ``pickle.dumps`` and ``pickle.loads`` time of each loaded
  tokenizer (tiktoken's ``Encoding`` pickles its ranks).

Run: ``python benchmarks/bench_api.py [--repeat 5]``.  Needs ../shared/data.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "tiktoken"
sys.path.insert(0, str(ROOT / "tests"))

CHILD = r"""
import base64, gzip, json, pickle, sys, time
sys.path.insert(0, {tests!r})
which, name, path = sys.argv[1:4]
if which == "tiktoken":
    import tiktoken
    from conftest import TIKTOKEN_SPECS
    started = time.perf_counter()
    ranks = {{base64.b64decode(t): int(r) for t, r in (line.split() for line in gzip.open(path).read().splitlines() if line)}}
    pattern, specials = TIKTOKEN_SPECS[name]
    enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
else:
    import bpefst
    started = time.perf_counter()
    enc = bpefst.load(path)
enc.encode("Hello world, this is the first call.")
loaded = time.perf_counter() - started
t = time.perf_counter(); data = pickle.dumps(enc); dumped = time.perf_counter() - t
t = time.perf_counter(); again = pickle.loads(data); again.encode("Hello"); undumped = time.perf_counter() - t
print(json.dumps({{"load": loaded, "size": len(data), "dumps": dumped, "loads": undumped}}))
"""


def run(which: str, name: str, path: Path) -> dict:
    code = CHILD.format(tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code, which, name, str(path)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs the shared data at {DATA}")
    with tempfile.TemporaryDirectory() as tmp:
        print("| encoding | tiktoken load | bpefst load (.tiktoken.gz) | bpefst load (.bpefst) | pickle size tiktoken / bpefst (.bpefst file) | "
              "pickle dumps / loads tiktoken | pickle dumps / loads bpefst |")
        print("|---|---|---|---|---|---|---|")
        for name in ("cl100k_base", "o200k_base"):
            ranks = DATA / f"{name}.tiktoken.gz"
            artifact = Path(tmp) / f"{name}.bpefst"
            subprocess.run([sys.executable, "-m", "bpefst", "convert", str(ranks), "-o", str(artifact)], check=True, capture_output=True)
            runs: dict[str, list[dict]] = {"tiktoken": [], "ranks": [], "artifact": []}
            for _ in range(args.repeat):
                runs["tiktoken"].append(run("tiktoken", name, ranks))
                runs["ranks"].append(run("bpefst", name, ranks))
                runs["artifact"].append(run("bpefst", name, artifact))
            med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in runs.items()}
            tk, rk, ar = med["tiktoken"], med["ranks"], med["artifact"]
            print(f"| {name} | {tk['load']:.3f} s | {rk['load']:.3f} s ({rk['load'] / tk['load']:.2f}x) | {ar['load']:.3f} s "
                  f"({ar['load'] / tk['load']:.2f}x) | {tk['size'] / 1e6:.2f} MB / {ar['size'] / 1e6:.2f} MB "
                  f"({artifact.stat().st_size / 1e6:.2f} MB, {ar['size'] / artifact.stat().st_size:.2f}x) | "
                  f"{tk['dumps']:.3f} / {tk['loads']:.3f} s | {ar['dumps']:.3f} / {ar['loads']:.3f} s |")


if __name__ == "__main__":
    main()
