"""Parallel tokenizing: ``bpefst tokenize --jobs J`` against its own single process, on a large input.

Usage::

    .venv/bin/python benchmarks/bench_jobs.py                          # 100 MB, cl100k, ids and bin, 3 rounds
    .venv/bin/python benchmarks/bench_jobs.py --size-mb 30 --rounds 5 --modes ids,stdin,bin --jobs 2,3
    .venv/bin/python benchmarks/bench_jobs.py --input /tmp/big.txt --tokenizer o200k_base

The input is pydocs and fortunes (English; 22% non-ASCII multilingual)
decompressed and concatenated until ``--size-mb``, written to a temporary
file (or ``--input``).  Every round runs each configuration once, interleaved
(1 job, J jobs, 1 job, ...), each a fresh ``python -m bpefst tokenize`` process,
so a noisy neighbour hurts all of them alike; medians over the rounds are
printed with the ratio ``median(1 job) / median(J jobs)`` and the machine's
load average before and after (a 2-core machine shared with other work
cannot show 2x).  Every output is compared with the single process's: the
run stops on the first difference.

Modes: ``ids`` (a text file to ``--format ids -o FILE``: the streaming path,
byte pieces to the workers), ``stdin`` (the same through a pipe from ``cat``), ``bin``
(``--format bin -o FILE``: the documents path, segments to the workers),
``api`` (in this process: ``Tokenizer.encode(text, jobs=J)`` on a fresh
tokenizer, cold caches and tables built inside the timing, on the first
``--api-mb`` of the input; its "tokenize" column is the same wall time),
``batch`` (in this process: ``Tokenizer.encode_batch(paragraphs, jobs=J)`` on
the same text cut at blank lines, the tokenizer's tables built before the
clock, its chunk caches cold: the compiled core's threads).

Linux with ``kernel.sched_autogroup_enabled = 1`` (the default on desktop and
many VM kernels) shares the CPUs fairly between *sessions*, not processes:
while another session keeps a core busy, all J workers of this one share
what is left of its fair share, and no ``--jobs`` can beat one process.  The
script prints the setting and the load; compare wall times only from a quiet
machine, or read the CPU columns (``cores`` = CPU seconds / wall seconds).

Per run: wall seconds, the tokenize seconds ``--stats`` reports (load
excluded), and the CPU seconds of the whole process tree (the parent's and
the workers', from ``getrusage(RUSAGE_CHILDREN)``); ``--profile`` adds a run
in this process that splits CPU between the parent (reading, cutting,
writing) and its workers.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))


def build_input(size_mb: float, path: Path) -> Path:
    corpora = [lzma.open(SHARED / "corpora" / f"{name}.txt.xz").read() for name in ("pydocs", "fortunes")]
    target = int(size_mb * 1e6)
    written = 0
    with open(path, "wb") as out:
        k = 0
        while written < target:
            data = corpora[k % 2][: target - written]
            out.write(data)
            written += len(data)
            k += 1
    return path


def tokenizer_path(name: str) -> Path:
    return SHARED / "gpt2" / "vocab.json" if name == "gpt2" else SHARED / "tiktoken" / f"{name}.tiktoken.gz"


def autogroup() -> str:
    try:
        return "on" if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1" else "off"
    except OSError:
        return "unknown"


def run_once(tokenizer: Path, source: Path, mode: str, jobs: int, out: Path) -> dict:
    fmt = "bin" if mode == "bin" else "ids"
    args = [sys.executable, "-m", "bpefst", "tokenize", str(tokenizer), "-" if mode == "stdin" else str(source),
            "--format", fmt, "-o", str(out), "--jobs", str(jobs), "--stats", "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    feeder = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE) if mode == "stdin" else None
    with open(os.devnull, "rb") as nothing:
        done = subprocess.run(args, stdin=feeder.stdout if feeder else nothing, capture_output=True, env=env)
    if feeder is not None:
        feeder.stdout.close()
        feeder.wait()
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"bench_jobs: {' '.join(args)} failed:\n{done.stderr.decode()}")
    found = re.search(r"bytes in ([0-9.]+) s", done.stderr.decode())
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "tokenize": float(found.group(1)) if found else wall, "cpu": cpu, "digest": digest}


def run_api(model, text: str, jobs: int) -> dict:
    from bpefst.pipeline.encoder import Tokenizer

    tok = Tokenizer(model)
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    ids = tok.encode(text, disallowed_special=(), jobs=jobs)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum((a.ru_utime - b.ru_utime) + (a.ru_stime - b.ru_stime) for a, b in zip(after, before))
    digest = hashlib.sha256(str(ids).encode()).hexdigest()
    return {"wall": wall, "tokenize": wall, "cpu": cpu, "digest": digest}


def run_batch(model, documents: list[str], jobs: int) -> dict:
    """``Tokenizer.encode_batch(documents, jobs=J)``: the tokenizer's tables built before the clock (a
    library user's tokenizer is loaded once), its chunk caches cold."""
    from bpefst.pipeline.encoder import Tokenizer

    tok = Tokenizer(model)
    tok.encode_ordinary("warm the tables, not the cache")
    before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    ids = tok.encode_batch(documents, disallowed_special=(), jobs=jobs)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    digest = hashlib.sha256(str(ids).encode()).hexdigest()
    return {"wall": wall, "tokenize": wall, "cpu": cpu, "digest": digest}


def profile(tokenizer: Path, source: Path, jobs: int) -> str:
    """One in-process run of the streaming path: CPU of this process (the parent) and of its workers."""
    from bpefst.pipeline.encoder import Tokenizer
    from bpefst.pipeline.tokenize import tokenize_stream

    tok = Tokenizer.load(str(tokenizer))
    tok._build_tables()  # what every run builds once before forking; not the parent's per-byte work
    self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    with open(source, "rb") as stream, open(os.devnull, "wb") as out:
        tokenize_stream(tok, stream, out, "ids", jobs=jobs)
    wall = time.perf_counter() - began
    self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    parent = (self1.ru_utime - self0.ru_utime) + (self1.ru_stime - self0.ru_stime)
    workers = (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)
    return (f"profile jobs={jobs}: wall {wall:.2f} s, parent CPU {parent:.2f} s ({parent / wall:.0%} of a core), "
            f"workers CPU {workers:.2f} s ({workers / max(wall, 1e-9) / jobs:.0%} of a core each), "
            f"load {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", default="cl100k_base", help="cl100k_base, o200k_base or gpt2")
    parser.add_argument("--size-mb", type=float, default=100.0)
    parser.add_argument("--input", type=Path, help="use this text file instead of building one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", default="2", help="comma-separated J values compared with 1")
    parser.add_argument("--modes", default="ids,bin", help="comma-separated: ids, stdin, bin")
    parser.add_argument("--api-mb", type=float, default=24.0, help="text size for the api mode")
    parser.add_argument("--profile", action="store_true", help="also split CPU between parent and workers (ids mode)")
    args = parser.parse_args()
    jobs_list = [int(j) for j in args.jobs.split(",")]
    modes = args.modes.split(",")
    tokenizer = tokenizer_path(args.tokenizer)
    with tempfile.TemporaryDirectory(prefix="bench_jobs") as tmp:
        tmpdir = Path(tmp)
        source = args.input or build_input(args.size_mb, tmpdir / "input.txt")
        size = source.stat().st_size
        sizes = {mode: size for mode in modes}
        if "api" in modes or "batch" in modes:
            from bpefst.tokenizer import load_tokenizer

            model = load_tokenizer(str(tokenizer))
            with open(source, "rb") as stream:
                api_text = stream.read(int(args.api_mb * 1e6)).decode("utf-8", "ignore")
            sizes["api"] = sizes["batch"] = len(api_text.encode())
            documents = [part + "\n\n" for part in api_text.split("\n\n")]  # paragraphs as documents
        print(f"input {source} ({size / 1e6:.1f} MB), tokenizer {args.tokenizer}, {os.cpu_count()} CPUs, "
              f"load average before {' '.join(f'{x:.2f}' for x in os.getloadavg())}, autogroup {autogroup()}")
        if args.profile:
            for jobs in [1, *jobs_list]:
                print(profile(tokenizer, source, jobs), flush=True)
        results: dict[tuple[str, int], list[dict]] = {}
        for round_ in range(args.rounds):
            for mode in modes:
                for jobs in [1, *jobs_list]:
                    if mode == "api":
                        result = run_api(model, api_text, jobs)
                    elif mode == "batch":
                        result = run_batch(model, documents, jobs)
                    else:
                        result = run_once(tokenizer, source, mode, jobs, tmpdir / f"out-{mode}-{jobs}")
                    results.setdefault((mode, jobs), []).append(result)
                    reference = results[(mode, 1)][0]["digest"]
                    if result["digest"] != reference:
                        sys.exit(f"bench_jobs: {mode} --jobs {jobs} wrote different output than --jobs 1")
                    print(f"round {round_ + 1} {mode:5s} jobs={jobs}: wall {result['wall']:.2f} s, tokenize "
                          f"{result['tokenize']:.2f} s, CPU {result['cpu']:.2f} s, load {os.getloadavg()[0]:.2f}", flush=True)
        print(f"\nmedians over {args.rounds} interleaved rounds; load average after "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; outputs identical to --jobs 1")
        print("| mode | jobs | wall s | tokenize s | MB/s | CPU s | cores | speed-up (tokenize) | speed-up (wall) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for mode in modes:
            one = results[(mode, 1)]
            for jobs in [1, *jobs_list]:
                runs = results[(mode, jobs)]
                wall = statistics.median(r["wall"] for r in runs)
                tok = statistics.median(r["tokenize"] for r in runs)
                cpu = statistics.median(r["cpu"] for r in runs)
                base_tok = statistics.median(r["tokenize"] for r in one)
                base_wall = statistics.median(r["wall"] for r in one)
                print(f"| {mode} | {jobs} | {wall:.2f} | {tok:.2f} | {sizes[mode] / tok / 1e6:.2f} | {cpu:.2f} | {cpu / wall:.2f} | "
                      f"{base_tok / tok:.2f}x | {base_wall / wall:.2f}x |")


if __name__ == "__main__":
    main()
