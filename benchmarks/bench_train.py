"""Training benchmark: bpefst's trainer against HF ``tokenizers``' BpeTrainer, in one run.

Runs both trainers on the same corpus, vocabulary size and number of cores and
prints the wall times and their ratio (never a timed test: ratios only mean
something measured side by side on the same machine).  Also checks that the
merges agree with HF (``--tie-break hf``) and times the CS336 corpus.

    .venv/bin/python benchmarks/bench_train.py                 # pydocs @ 10k, corpus.en @ 500, 2 MB exactness
    .venv/bin/python benchmarks/bench_train.py --scale 1000    # also a 1000 MB corpus @ 32k (slow; /tmp)

The corpora come from ``../shared/data`` (decompressed into a temporary
directory, never into the repository).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
EOT = "<|endoftext|>"


def hf_train(path: str, vocab_size: int) -> tuple[float, list[tuple[bytes, bytes]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from bpefst.tokenizer.byte_unicode import decode_text

    started = time.perf_counter()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train([path], trainer)
    elapsed = time.perf_counter() - started
    merges = json.loads(tok.to_str())["model"]["merges"]
    return elapsed, [tuple(decode_text(p) for p in (m.split(" ") if isinstance(m, str) else m)) for m in merges]


def bpefst_train(path: str, vocab_size: int, tie_break: str, jobs: int | None = None) -> tuple[float, list[tuple[bytes, bytes]]]:
    from bpefst.training import train_bpe

    started = time.perf_counter()
    model = train_bpe([path], vocab_size, special_tokens=[EOT], tie_break=tie_break, jobs=jobs)
    elapsed = time.perf_counter() - started
    return elapsed, [(model.vocab[a], model.vocab[b]) for a, b in model.merges]


def decompress(name: str, workdir: Path, limit: int | None = None) -> str:
    raw = lzma.open(DATA / "corpora" / f"{name}.txt.xz").read(limit if limit else -1)
    if limit:
        raw = raw.decode("utf-8", "ignore").encode("utf-8")
    path = workdir / (f"{name}.txt" if not limit else f"{name}-{limit}.txt")
    path.write_bytes(raw)
    return str(path)


def speed(workdir: Path, vocab_size: int, repeats: int) -> None:
    path = decompress("pydocs", workdir)
    print(f"pydocs.txt ({os.path.getsize(path) / 1e6:.1f} MB) at vocab {vocab_size}, {os.cpu_count()} cores, best of {repeats}:")
    hf = min(hf_train(path, vocab_size)[0] for _ in range(repeats))
    for tie_break in ("hf", "lexicographic"):
        ours = min(bpefst_train(path, vocab_size, tie_break)[0] for _ in range(repeats))
        print(f"  HF BpeTrainer {hf:6.2f} s   bpefst --tie-break {tie_break:<13} {ours:6.2f} s   ratio {ours / hf:.2f}")


def cs336(repeats: int) -> None:
    path = str(DATA / "cs336" / "corpus.en")
    best = min(bpefst_train(path, 500, "lexicographic")[0] for _ in range(repeats))
    command = (
        "from bpefst.cli import cli\n"
        "from bpefst.cli.train_command import train\n"
        "cli.commands.setdefault('train', train)\n"
        f"cli.main(['train', {path!r}, '--vocab-size', '500', '--special-token', {EOT!r}, '-q', '-o', {os.devnull!r} + '.bpefst'])\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        command = command.replace(repr(os.devnull) + " + '.bpefst'", repr(os.path.join(tmp, "cs336.bpefst")))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", command], check=True, cwd=ROOT)
        cli_wall = time.perf_counter() - started
    print(f"corpus.en at vocab 500: train_bpe {best:.3f} s (best of {repeats}); whole CLI process {cli_wall:.3f} s")


def exactness(workdir: Path, vocab_sizes: list[int]) -> None:
    for name in ("pydocs", "fortunes"):
        path = decompress(name, workdir, 2_000_000)
        for vocab_size in vocab_sizes:
            hf_time, hf_merges = hf_train(path, vocab_size)
            our_time, our_merges = bpefst_train(path, vocab_size, "hf")
            same = hf_merges == our_merges
            first = next((i for i, (x, y) in enumerate(zip(hf_merges, our_merges)) if x != y), None)
            print(
                f"{name} first 2 MB at vocab {vocab_size}: {len(our_merges)} merges, identical to HF: {same}"
                + ("" if same else f" (first difference at merge {first})")
                + f"  [HF {hf_time:.2f} s, bpefst {our_time:.2f} s]"
            )


def make_scale_corpus(workdir: Path, megabytes: int) -> str:
    """pydocs repeated, each copy followed by varied text, up to ``megabytes`` MB."""
    base = lzma.open(DATA / "corpora" / "pydocs.txt.xz").read()
    fortunes = lzma.open(DATA / "corpora" / "fortunes.txt.xz").read().split(b"\n")
    path = workdir / f"scale-{megabytes}mb.txt"
    target = megabytes * 1_000_000
    written = 0
    copy = 0
    with open(path, "wb") as out:
        while written < target:
            varied = b"\n".join(line + b" #%d" % (copy * 7919 + i) for i, line in enumerate(fortunes[copy * 2000 % len(fortunes) :][:20000]))
            for piece in (base, b"\n", varied, b"\n"):
                out.write(piece)
                written += len(piece)
            copy += 1
    return str(path)


def scale(workdir: Path, megabytes: int, vocab_size: int) -> None:
    path = make_scale_corpus(workdir, megabytes)
    size = os.path.getsize(path)
    started = time.perf_counter()
    code = (
        "import resource, sys, time\n"
        "from bpefst.training import train_bpe\n"
        "t = time.perf_counter()\n"
        f"m = train_bpe([{path!r}], {vocab_size}, special_tokens=[{EOT!r}])\n"
        "print(f'{time.perf_counter() - t:.1f}', len(m.merges))\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    (train_time, merges), (main_kb, child_kb) = (line.split() for line in result.stdout.strip().splitlines())
    print(
        f"scale: {size / 1e6:.0f} MB corpus at vocab {vocab_size}: {merges} merges, train_bpe {train_time} s (process {wall:.1f} s); "
        f"peak RSS main {int(main_kb) / 1e6:.2f} GB, largest worker {int(child_kb) / 1e6:.2f} GB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--exact-vocab", type=int, nargs="*", default=[5_000, 10_000], help="vocab sizes of the 2 MB HF comparisons")
    parser.add_argument("--scale", type=int, metavar="MB", help="also train a corpus of this many MB at vocab 32,000")
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"needs the shared reference data at {DATA}")
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="bench_train.") as tmp:
        workdir = Path(tmp)
        if not args.skip_speed:
            speed(workdir, args.vocab_size, args.repeats)
            cs336(max(args.repeats, 3))
            exactness(workdir, args.exact_vocab)
        if args.scale:
            scale(workdir, args.scale, 32_000)


if __name__ == "__main__":
    main()
