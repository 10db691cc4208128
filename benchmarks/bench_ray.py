"""Ray engine benchmark: counting and tokenizing a large corpus on a local Ray cluster vs one machine.

Every configuration runs the ``bpefst`` command line in a subprocess, as a user
would, in the same run on the same machine (ratios only mean something side by
side); a sampler thread records peak resident memory (RSS) of the driver (the
command), of its own worker processes (``--jobs``), and of the Ray worker
processes (``ray::...``), every 0.2 s.

    .venv/bin/python benchmarks/bench_ray.py                  # 1000 MB corpus (about 25 minutes on 2 busy cores)
    .venv/bin/python benchmarks/bench_ray.py --size-mb 256    # smaller

Measured:

1. Ray's overhead on a small input: ``bpefst train corpus.en`` locally, with
   ``--engine ray`` starting its own local cluster, and joining a running one;
2. counting the big corpus (``bpefst count``) in 1 process, ``--jobs 2`` and
   ``--engine ray`` (a local cluster of 2 CPUs); the three count artifacts must
   be byte-identical (the artifact is sorted);
3. merging on the driver (``bpefst train --from-counts``);
4. the count table sizes (distinct chunks, artifact bytes) for pydocs,
   fortunes and the big corpus: what the driver holds whatever the number of
   machines;
5. tokenizing the big corpus, cut into 16 files at document boundaries, into
   shards (``--output-dir``) in 1 process, ``--jobs 2`` and ``--engine ray``;
   the concatenated shards must be byte-identical.

The corpus is pydocs + fortunes + corpus.en repeated (documents separated by
``<|endoftext|>``), written under /tmp (never into the repository).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
EOT = "<|endoftext|>"
BPEFST = [sys.executable, "-m", "bpefst"]


# -- corpora ---------------------------------------------------------------------------------


def make_corpora(workdir: Path, size_mb: int, files: int) -> dict[str, Path]:
    """pydocs.txt, fortunes.txt and big.txt (``size_mb`` MB) plus big/ (``files`` pieces cut between documents)."""
    workdir.mkdir(parents=True, exist_ok=True)
    paths = {name: workdir / f"{name}.txt" for name in ("pydocs", "fortunes")}
    for name, path in paths.items():
        if not path.exists():
            path.write_bytes(lzma.open(DATA / "corpora" / f"{name}.txt.xz").read())
    big = workdir / f"big-{size_mb}mb.txt"
    pieces = workdir / f"big-{size_mb}mb"
    separator = f"\n{EOT}\n".encode()
    if not big.exists() or not pieces.is_dir():
        unit = separator.join([paths["pydocs"].read_bytes(), paths["fortunes"].read_bytes(), (DATA / "cs336" / "corpus.en").read_bytes()])
        target = size_mb << 20
        with open(big, "wb") as out:
            written = 0
            while written < target:
                out.write(unit + separator)
                written += len(unit) + len(separator)
        data = big.read_bytes()
        shutil.rmtree(pieces, ignore_errors=True)
        pieces.mkdir()
        start = 0
        for k in range(files):
            end = len(data) if k == files - 1 else data.find(separator, (k + 1) * len(data) // files)
            end = len(data) if end < 0 else end
            (pieces / f"part-{k:03d}.txt").write_bytes(data[start:end])
            start = end
        del data
    return {**paths, "big": big, "pieces": pieces, "corpus.en": DATA / "cs336" / "corpus.en"}


# -- running and sampling ------------------------------------------------------------------------


class Sampler(threading.Thread):
    """Peak RSS of a process (the driver), of its descendants, and of Ray worker processes."""

    def __init__(self, pid: int, ray: bool):
        super().__init__(daemon=True)
        self.pid, self.ray = pid, ray
        self.driver = self.children = self.ray_worker = self.ray_total = 0
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        try:
            driver = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.done.is_set():
            try:
                self.sample(psutil, driver)
            except Exception:  # a process vanishing mid-scan must not end the sampling
                pass
            self.done.wait(0.2)

    def sample(self, psutil, driver) -> None:
        self.driver = max(self.driver, driver.memory_info().rss)
        kids = []
        for child in driver.children(recursive=True):
            try:
                kids.append(child.memory_info().rss)
            except psutil.Error:
                continue
        self.children = max([self.children, *kids])
        workers = []
        for process in psutil.process_iter(["cmdline"]) if self.ray else ():
            try:
                cmdline = process.info["cmdline"] or []
                if cmdline and cmdline[0].startswith("ray::"):  # worker processes (not raylet, GCS, monitors)
                    workers.append(process.memory_info().rss)
            except psutil.Error:
                continue
        if workers:
            self.ray_worker = max(self.ray_worker, max(workers))
            self.ray_total = max(self.ray_total, sum(workers))


def run(args: list[str], ray: bool = False) -> dict:
    started = time.perf_counter()
    process = subprocess.Popen([*BPEFST, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = Sampler(process.pid, ray)
    sampler.start()
    out, err = process.communicate()
    elapsed = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"bpefst {' '.join(args)} failed:\n{err.decode()}")
    return {"seconds": elapsed, "driver_mb": sampler.driver / 2**20, "children_mb": sampler.children / 2**20,
            "ray_worker_mb": sampler.ray_worker / 2**20, "ray_workers_mb": sampler.ray_total / 2**20, "stderr": err.decode()}


def show(label: str, result: dict, base: float | None = None) -> None:
    ratio = f"  {result['seconds'] / base:5.2f}x" if base else ""
    workers = ""
    if result["children_mb"] and not result["ray_worker_mb"]:
        workers += f", --jobs workers peak {result['children_mb']:.0f} MB"
    if result["ray_worker_mb"]:
        workers += f", Ray worker peak {result['ray_worker_mb']:.0f} MB (all {result['ray_workers_mb']:.0f} MB)"
    print(f"  {label:<34} {result['seconds']:8.2f} s{ratio}   driver peak {result['driver_mb']:.0f} MB{workers}", flush=True)


# -- the measurements ------------------------------------------------------------------------------


def overhead(corpora: dict, workdir: Path, address: str | None) -> None:
    path = str(corpora["corpus.en"])
    common = ["--vocab-size", "500", "--special-token", EOT, "-q"]
    if address is None:
        local = run(["train", path, *common, "-j", "1", "-o", str(workdir / "l.bpefst")])
        show("train corpus.en, 1 process", local)
        cold = run(["train", path, *common, "--engine", "ray", "-o", str(workdir / "r.bpefst")], ray=True)
        show("  --engine ray (starts a cluster)", cold, local["seconds"])
        return
    warm = run(["train", path, *common, "--engine", "ray", "--address", address, "-o", str(workdir / "w.bpefst")], ray=True)
    show("  --engine ray --address (running)", warm)
    assert (workdir / "w.bpefst").read_bytes() == (workdir / "l.bpefst").read_bytes() == (workdir / "r.bpefst").read_bytes()


def count_tables(corpora: dict, workdir: Path) -> None:
    print("\ncount tables (what the driver holds, whatever the number of machines):", flush=True)
    for name in ("corpus.en", "pydocs", "fortunes"):
        out = workdir / f"{name}.counts"
        result = run(["count", str(corpora[name]), "--special-token", EOT, "-j", "1", "-o", str(out)])
        distinct = int(result["stderr"].split("counted ")[1].split(" ")[0])
        print(f"  {name:<10} {os.path.getsize(corpora[name]) / 2**20:8.1f} MB -> {distinct:>10,} distinct chunks, "
              f"artifact {os.path.getsize(out) / 2**20:6.2f} MB, counting peak RSS {result['driver_mb']:.0f} MB", flush=True)


def big_count(corpora: dict, workdir: Path, address: str, vocab_size: int) -> None:
    big = str(corpora["big"])
    size = os.path.getsize(big) / 2**20
    print(f"\ncounting {size:.0f} MB (bpefst count):", flush=True)
    one = run(["count", big, "--special-token", EOT, "-j", "1", "-o", str(workdir / "big-1.counts")])
    show("1 process", one)
    two = run(["count", big, "--special-token", EOT, "-j", "2", "-o", str(workdir / "big-2.counts")])
    show("--jobs 2", two, one["seconds"])
    ray = run(["count", big, "--special-token", EOT, "--engine", "ray", "--address", address, "-o", str(workdir / "big-ray.counts")], ray=True)
    show("--engine ray (2 CPUs, 64 MB tasks)", ray, one["seconds"])
    same = (workdir / "big-1.counts").read_bytes() == (workdir / "big-2.counts").read_bytes() == (workdir / "big-ray.counts").read_bytes()
    distinct = int(one["stderr"].split("counted ")[1].split(" ")[0])
    print(f"  identical count artifacts: {same}; {distinct:,} distinct chunks, artifact "
          f"{os.path.getsize(workdir / 'big-1.counts') / 2**20:.2f} MB", flush=True)
    merged = run(["train", "--from-counts", str(workdir / "big-ray.counts"), "--vocab-size", str(vocab_size), "-o", str(workdir / "big.bpefst"), "-q"])
    show(f"merging on the driver ({vocab_size} vocab)", merged)
    print(f"  summing tables on the driver: {summing_rate(workdir / 'big-1.counts'):.1f} M entries/s", flush=True)


def summing_rate(path: Path) -> float:
    """Entries per second that :func:`add_counts` adds into a total (the driver's work per table received)."""
    from collections import Counter

    from bpefst.training.counts import add_counts, load_counts

    table = load_counts(path).counts
    total: Counter = Counter(table)
    started = time.perf_counter()
    add_counts(total, table)
    return len(table) / (time.perf_counter() - started) / 1e6


def big_tokenize(corpora: dict, workdir: Path, address: str) -> None:
    pieces = corpora["pieces"]
    files = len(list(pieces.iterdir()))
    size = sum(p.stat().st_size for p in pieces.iterdir()) / 2**20
    tokenizer = str(DATA / "gpt2" / "vocab.json")
    print(f"\ntokenizing {size:.0f} MB in {files} files with GPT-2 into shards (bpefst tokenize --output-dir):", flush=True)
    outputs = {}
    base = None
    for label, extra in (("1 process", ["-j", "1"]), ("--jobs 2", ["-j", "2"]),
                         ("--engine ray (2 CPUs, shard i <- file i)", ["--engine", "ray", "--address", address])):
        out = workdir / f"shards-{len(outputs)}"
        shutil.rmtree(out, ignore_errors=True)
        result = run(["tokenize", tokenizer, str(pieces), "--eot", EOT, "--output-dir", str(out), "-q"], ray="ray" in label)
        show(label, result, base)
        base = base or result["seconds"]
        outputs[label] = out
    streams = []
    for out in outputs.values():
        manifest = json.loads((out / "manifest.json").read_text())
        digest = __import__("hashlib").sha256()
        for shard in manifest["shards"]:
            with open(out / shard["file"], "rb") as handle:
                for block in iter(lambda: handle.read(1 << 24), b""):
                    digest.update(block)
        streams.append((digest.hexdigest(), (out / "index.npy").read_bytes(), manifest["ids"]))
    print(f"  identical id streams and indexes: {all(s == streams[0] for s in streams)}; {streams[0][2]:,} ids", flush=True)
    for out in outputs.values():
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1000, help="size of the big corpus")
    parser.add_argument("--vocab-size", type=int, default=8192, help="vocabulary for the merge on the driver")
    parser.add_argument("--workdir", default="/tmp/bpefst-bench-ray", help="where the corpora and outputs go (not the repository)")
    parser.add_argument("--skip", action="append", default=[], choices=["count", "tokenize", "tables"], help="skip a part")
    options = parser.parse_args()
    import logging

    import ray

    workdir = Path(options.workdir)
    corpora = make_corpora(workdir, options.size_mb, 16)
    print(f"Ray {ray.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    print("\nRay's overhead on a small input (corpus.en, 130 KB, vocab 500):", flush=True)
    overhead(corpora, workdir, None)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    address = ray.get_runtime_context().gcs_address
    try:
        overhead(corpora, workdir, address)
        if "tables" not in options.skip:
            count_tables(corpora, workdir)
        if "count" not in options.skip:
            big_count(corpora, workdir, address, options.vocab_size)
        if "tokenize" not in options.skip:
            big_tokenize(corpora, workdir, address)
    finally:
        ray.shutdown()
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
