"""Preparing a training set: ``bpefst tokenize --format bin`` against ``--format ids``, in one run.

Usage::

    .venv/bin/python benchmarks/bench_datasets.py                          # cl100k and gpt2, pydocs + fortunes
    .venv/bin/python benchmarks/bench_datasets.py --tokenizer gpt2 --rounds 3
    .venv/bin/python benchmarks/bench_datasets.py --big-mb 1024            # also a 1 GB concatenation (one document)
    .venv/bin/python benchmarks/bench_datasets.py --progress               # record the progress bar on a terminal
    .venv/bin/python benchmarks/bench_datasets.py --jobs 2                 # also bin with --jobs 2 against --jobs 1

For each tokenizer the two shared corpora (``pydocs.txt.xz``, ``fortunes.txt.xz``,
decompressed once to a temporary directory so both runs read the same plain
files) are tokenized by the command a user runs:

* ``bin``: ``bpefst tokenize T pydocs.txt fortunes.txt --eot <|endoftext|> --format bin -o out.bin``
  (two documents, an EOT after each);
* ``ids``: ``bpefst tokenize T pydocs.txt fortunes.txt --eot <|endoftext|> --format ids -o out.ids``
  (the same documents written as text);
* ``ids-stream`` (reference): ``bpefst tokenize T all.txt --format ids`` on the
  concatenated text, the single-stream path that existed before datasets;
* ``bin-jJ`` (with ``--jobs J``): the ``bin`` command with ``--jobs J``; its
  output must equal the one-process file byte for byte, and the ratio
  ``--jobs 1`` / ``--jobs J`` (wall and CPU) is printed.  On 2 cores the wall
  ratio is the speed-up; the CPU ratio below 1 is what the J processes cost
  beyond one (each worker's own cold chunk cache, the hand-over of batches).

Rounds are interleaved and the best wall time of each counts; the ratio
bin / ids is printed, for wall time and for CPU time (user + system of the
command, which a busy shared machine disturbs much less than wall time).  Every run goes through ``/usr/bin/time -v`` for its
maximum resident set size (else ``resource.getrusage(RUSAGE_CHILDREN)``, an
upper bound over all runs so far).  The ``bin`` output is compared byte for
byte with a numpy array built from tiktoken's ids (``encode_ordinary`` of each
document, then the EOT id; tiktoken for GPT-2 is built from its vocab.json,
whose ids are its merge ranks).

``--big-mb N`` writes N MB of the corpora concatenated over and over to one
file and tokenizes it as one document to ``bin`` (streaming memory); its ids
are checked against tiktoken per corpus-sized piece cut at a line start
followed by a letter (where pre-tokenization cannot join the two sides).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import lzma
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

EOT = "<|endoftext|>"
TOKENIZERS = {
    "cl100k": (SHARED / "tiktoken" / "cl100k_base.tiktoken.gz", 100257, "uint32"),
    "gpt2": (SHARED / "gpt2" / "vocab.json", 50256, "uint16"),
}
CORPORA = ("pydocs", "fortunes")


def tiktoken_for(name: str):
    """tiktoken built offline: cl100k from its rank file, GPT-2 from vocab.json (ids are merge ranks)."""
    import tiktoken

    from bpefst.tokenizer import load_tokenizer

    path, eot, _ = TOKENIZERS[name]
    pattern = load_tokenizer(path).pattern
    if name == "cl100k":
        ranks = {}
        for line in gzip.open(path).read().splitlines():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    else:
        from bpefst.tokenizer.byte_unicode import char_to_byte  # the GPT-2 printable character -> byte table

        vocab = json.loads(Path(path).read_text())
        table = char_to_byte()
        ranks = {bytes(table[c] for c in token): i for token, i in vocab.items() if token != EOT}
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={EOT: eot})


CACHE: list[str] = []  # ["--cache-size", N] when given
JOBS: list[int] = []  # [J] when --jobs J is given
CPU: dict[str, float] = {}  # label -> best CPU seconds (user + system) of the command, robust to a busy machine


def run_timed(args: list[str], label: str | None = None) -> tuple[float, int | None]:
    """Wall seconds and max RSS (KB) of one command; its CPU seconds go to ``CPU[label]`` (best so far)."""
    timer = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([*timer, *args], capture_output=True)
    seconds = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed: {shlex.join(args)}\n{done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if label is not None:
        CPU[label] = min(CPU.get(label, cpu), cpu)
    if timer:
        found = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
        return seconds, int(found.group(1)) if found else None
    return seconds, after.ru_maxrss


def bench(name: str, work: Path, texts: dict[str, str], rounds: int) -> None:
    import numpy as np

    path, eot, dtype = TOKENIZERS[name]
    tok = work / f"{name}.bpefst"  # converted once: loading is not what is measured
    subprocess.run([sys.executable, "-m", "bpefst", "convert", str(path), "--format", "bpefst", "-o", str(tok)], check=True,
                   capture_output=True)
    files = [str(work / f"{c}.txt") for c in CORPORA]
    size = sum(os.path.getsize(f) for f in files)
    bpefst = [sys.executable, "-m", "bpefst", "tokenize", str(tok), *CACHE]
    commands = {
        "bin": [*bpefst, *files, "--eot", EOT, "--format", "bin", "-o", str(work / "out.bin")],
        "ids": [*bpefst, *files, "--eot", EOT, "--format", "ids", "-o", str(work / "out.ids")],
        "ids-stream": [*bpefst, str(work / "all.txt"), "--format", "ids", "-o", str(work / "stream.ids")],
    }
    for jobs in JOBS:
        commands[f"bin-j{jobs}"] = [*bpefst, *files, "--eot", EOT, "--format", "bin", "--jobs", str(jobs),
                                    "-o", str(work / f"out-j{jobs}.bin")]
    best: dict[str, float] = {}
    rss: dict[str, int] = {}
    for _ in range(rounds):
        for label, command in commands.items():
            seconds, kb = run_timed(command, f"{name} {label}")
            best[label] = min(best.get(label, seconds), seconds)
            rss[label] = max(rss.get(label, 0), kb or 0)
    (work / "empty.txt").write_bytes(b"")
    load_seconds, load_kb = run_timed([*bpefst, str(work / "empty.txt"), "--format", "ids", "-o", str(work / "empty.ids")])
    encoding = tiktoken_for(name)
    reference = np.concatenate([np.asarray(encoding.encode_ordinary(texts[c]) + [eot], dtype=dtype) for c in CORPORA])
    written = (work / "out.bin").read_bytes()
    identical = written == reference.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    print(f"\n{name}: pydocs + fortunes, {size / 1e6:.1f} MB, {len(reference):,} ids ({dtype}), best of {rounds}, "
          f"load {load_seconds:.2f} s (included below), max RSS of loading alone (empty input) {(load_kb or 0) / 1024:.1f} MB")
    for label in commands:
        seconds = best[label]
        net = max(seconds - load_seconds, 1e-9)
        print(f"  {label:<11} {seconds:6.2f} s  {size / seconds / 1e6:6.2f} MB/s  ({size / net / 1e6:6.2f} MB/s without load)  "
              f"max RSS {rss[label] / 1024:6.1f} MB")
    cpu = {label: CPU[f"{name} {label}"] for label in commands}
    print("  CPU seconds (user + system, best): " + ", ".join(f"{label} {cpu[label]:.2f}" for label in commands))
    print(f"  bin / ids: wall {best['bin'] / best['ids']:.3f}, CPU {cpu['bin'] / cpu['ids']:.3f};   "
          f"bin / ids-stream: wall {best['bin'] / best['ids-stream']:.3f}, CPU {cpu['bin'] / cpu['ids-stream']:.3f}")
    print(f"  bin byte-identical to numpy array of tiktoken ids: {identical}")
    for jobs in JOBS:
        label = f"bin-j{jobs}"
        same = (work / f"out-j{jobs}.bin").read_bytes() == written
        print(f"  bin --jobs 1 / --jobs {jobs}: wall {best['bin'] / best[label]:.2f}x "
              f"({(best['bin'] - load_seconds) / max(best[label] - load_seconds, 1e-9):.2f}x without load), "
              f"CPU {cpu['bin'] / cpu[label]:.2f};  output byte-identical to --jobs 1: {same}")
        assert same, f"--jobs {jobs} output differs"
    assert list(map(int, (work / "out.ids").read_text().split())) == reference.tolist(), "ids output differs"


def bench_big(name: str, work: Path, texts: dict[str, str], megabytes: int) -> None:
    """N MB of the corpora repeated, as one document, to bin: time, max RSS, ids against tiktoken piecewise."""
    import numpy as np

    path, eot, dtype = TOKENIZERS[name]
    tok = work / f"{name}.bpefst"
    unit = "".join(texts[c] if texts[c].endswith("\n") else texts[c] + "\n" for c in CORPORA)
    unit = unit if unit[0].isalpha() else "A" + unit  # every repetition starts after "\n" with a letter: a safe cut
    encoded_unit = unit.encode()
    repeats = max(1, megabytes * 1_000_000 // len(encoded_unit))
    big = work / "big.txt"
    with open(big, "wb") as handle:
        for _ in range(repeats):
            handle.write(encoded_unit)
    size = os.path.getsize(big)
    seconds, kb = run_timed([sys.executable, "-m", "bpefst", "tokenize", str(tok), *CACHE, str(big), "--format", "bin",
                             "-o", str(work / "big.bin")])
    unit_ids = np.asarray(tiktoken_for(name).encode_ordinary(unit), dtype=dtype)
    written = np.fromfile(work / "big.bin", dtype=dtype)
    identical = len(written) == repeats * len(unit_ids) and all(
        np.array_equal(written[k * len(unit_ids) : (k + 1) * len(unit_ids)], unit_ids) for k in range(repeats))
    print(f"\n{name}: {size / 1e6:.0f} MB concatenation ({repeats} x pydocs + fortunes) as one document to bin: "
          f"{seconds:.1f} s, {size / seconds / 1e6:.2f} MB/s, max RSS {kb / 1024:.1f} MB, ids = tiktoken's: {identical}")
    big.unlink()
    (work / "big.bin").unlink()


def record_progress(work: Path) -> None:
    """Run ``tokenize`` on the 11 MB pydocs under ``script`` (a pseudo-terminal) and show the bar's last frame."""
    script = shutil.which("script")
    if script is None:
        print("\nprogress: util-linux `script` not installed; skipped")
        return
    path, _, _ = TOKENIZERS["cl100k"]
    command = shlex.join([sys.executable, "-m", "bpefst", "tokenize", str(work / "cl100k.bpefst"), str(work / "pydocs.txt"),
                          "--eot", EOT, "--format", "bin", "-o", str(work / "p.bin")])
    shown = subprocess.run([script, "-qc", command, "/dev/null"], capture_output=True, env={**os.environ, "COLUMNS": "120"})
    frames = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.stdout.decode("utf-8", "replace")).replace("\r", "\n").split("\n")
    frames = [f.strip() for f in frames if "tokenizing" in f]
    print(f"\nprogress on a terminal (cl100k, pydocs {os.path.getsize(work / 'pydocs.txt') / 1e6:.1f} MB): {len(frames)} frames")
    for frame in frames[1 : len(frames) // 2 + 1 : max(1, len(frames) // 6)] + frames[-1:]:
        print(f"  {frame}")
    piped = subprocess.run(shlex.split(command), capture_output=True)
    print(f"  stderr when not a terminal: {piped.stderr!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", choices=[*TOKENIZERS, "all"], default="all")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--big-mb", type=int, default=0, help="Also tokenize this many MB of the corpora concatenated (one document).")
    parser.add_argument("--progress", action="store_true", help="Record the progress bar on a pseudo-terminal.")
    parser.add_argument("--cache-size", type=int, help="Pass --cache-size to every bpefst run (the chunk cache bounds memory).")
    parser.add_argument("--jobs", type=int, default=1, help="Also run the bin command with --jobs J and print the speed-up.")
    options = parser.parse_args()
    if options.jobs > 1:
        JOBS.append(options.jobs)
    if options.cache_size:
        CACHE.extend(["--cache-size", str(options.cache_size)])
    names = list(TOKENIZERS) if options.tokenizer == "all" else [options.tokenizer]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        texts = {}
        for corpus in CORPORA:
            data = lzma.open(SHARED / "corpora" / f"{corpus}.txt.xz").read()
            (work / f"{corpus}.txt").write_bytes(data)
            texts[corpus] = data.decode("utf-8")
        (work / "all.txt").write_bytes(b"".join((work / f"{c}.txt").read_bytes() for c in CORPORA))
        for name in names:
            bench(name, work, texts, options.rounds)
            if options.big_mb:
                bench_big(name, work, texts, options.big_mb)
        if options.progress:
            if not (work / "cl100k.bpefst").exists():
                subprocess.run([sys.executable, "-m", "bpefst", "convert", str(TOKENIZERS["cl100k"][0]), "--format", "bpefst",
                                "-o", str(work / "cl100k.bpefst")], check=True, capture_output=True)
            record_progress(work)


if __name__ == "__main__":
    main()
