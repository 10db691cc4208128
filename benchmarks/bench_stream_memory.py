"""Peak memory of ``bpefst tokenize`` on inputs whose lines (or chunks) are as long as the input.

Usage::

    .venv/bin/python benchmarks/bench_stream_memory.py                    # all cases, 50 MB and 1 GB
    .venv/bin/python benchmarks/bench_stream_memory.py --cases spaces-gpt2,letter-cl100k --size-mb 10
    .venv/bin/python benchmarks/bench_stream_memory.py --big-mb 0         # skip the 1 GB case
    .venv/bin/python benchmarks/bench_stream_memory.py --cases prose-line-cl100k,spaces-cl100k --size-mb 200 --big-mb 0 --jobs 2

Issue 16 (item 11) asks for a peak resident memory of at most 200 MB on each of:
50 MB of prose on a single line (cl100k), 50 MB of spaces (GPT-2 and cl100k), 50 MB
of one letter, 1 GB of ordinary text -- with the ids identical to tiktoken's / HF's.
The ``break-*`` cases are a line break followed by that many spaces (cl100k and
o200k decide the line break's chunk only where the spaces end): then ``b``, a line
break and ``b``, the end of the input, or tabs and spaces (``\\r\\n`` first) and ``b``.

Each case writes its input file, runs ``python -m bpefst tokenize TOKENIZER FILE
--format msgpack -o OUT`` under ``/usr/bin/time -v`` (the figure is its "Maximum
resident set size") and then checks OUT against an independent encoder in this
process (its memory is not measured):

* cl100k, o200k: tiktoken built offline from the shared rank file, on the whole input;
  for the 1 GB case on blocks of whole lines cut before a line that starts with a
  non-space (the cl100k pattern never matches across a line break followed by a
  non-space: ``\\s*[\\r\\n]`` ends at the break, the other alternatives stop at it);
* GPT-2: tiktoken built from GPT-2's ``vocab.json`` (ranks = ids, as tiktoken's own
  ``gpt2`` encoding), which is first checked against HF ``tokenizers`` on the first
  megabyte of the input (HF on 50 MB of spaces needs about 10 GB);
* where tiktoken's regex engine overflows its stack (GPT-2's ``\\s+(?!\\S)`` over a
  megabyte of spaces), the chunks come from the ``regex`` module with the same
  pattern and each is encoded by tiktoken's BPE (see :func:`oracle_encode`).

The inputs: pydocs prose with line breaks replaced by spaces, repeated to the size;
spaces; ``a`` repeated; pydocs and fortunes (multilingual) repeated to 1 GB with
their line breaks.

``--jobs J`` runs every case with ``--jobs 1`` and ``--jobs J`` and checks that both
give the same ids.  With workers, "max RSS" (``time -v``) is the largest of the
processes, so the memory of the process tree is printed too: the summed
proportional set size (``Pss`` of ``/proc/PID/smaps_rollup``, sampled every 50 ms,
of the command and its workers), which counts a page the workers share with the
parent since the fork once, not once per process as summed RSS would.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import itertools
import json
import lzma
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CL100K = SHARED / "tiktoken" / "cl100k_base.tiktoken.gz"
O200K = SHARED / "tiktoken" / "o200k_base.tiktoken.gz"
GPT2 = SHARED / "gpt2" / "vocab.json"
CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
PATTERNS = {"cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN, "gpt2": GPT2_PATTERN}
TOKENIZERS = {"cl100k": CL100K, "o200k": O200K, "gpt2": GPT2}
LIMIT_MB = 200
os.environ.setdefault("RUST_BACKTRACE", "0")  # tiktoken's stack overflow (see oracle_encode) prints one line, not a trace
WRITE_BLOCK = 1 << 22


def _corpus(name: str) -> bytes:
    return lzma.open(SHARED / "corpora" / f"{name}.txt.xz").read()


def _write_repeated(path: Path, unit: bytes, size: int) -> None:
    """``unit`` (whole UTF-8 characters) repeated to about ``size`` bytes, ending on a whole character."""
    with open(path, "wb") as out:
        _write_repeated_to(out, unit, size)


def _write_repeated_to(out, unit: bytes, size: int) -> None:
    written = 0
    while written < size:
        piece = unit[: size - written]
        if len(piece) < len(unit):
            piece = piece.decode("utf-8", errors="ignore").encode()  # drops only a cut last character
        out.write(piece)
        written += len(piece)
        if not piece:
            break


# a line break, spaces to the size, and what ends them
BREAK_SPACES = {"break-spaces": (b"a\n", b" ", b"b"), "break-spaces-break": (b"a\n", b" ", b"\nb"),
                "break-spaces-end": (b"a\n", b" ", b""), "crlf-tabs-spaces": (b"a\r\n" + b"\t" * 1000, b" ", b"\t\tb")}


def make_input(kind: str, path: Path, size: int) -> None:
    if kind in BREAK_SPACES:
        head, unit, tail = BREAK_SPACES[kind]
        with open(path, "wb") as out:
            out.write(head)
            _write_repeated_to(out, unit * WRITE_BLOCK, size - len(head) - len(tail))
            out.write(tail)
    elif kind == "prose-line":
        text = _corpus("pydocs").replace(b"\r", b" ").replace(b"\n", b" ")
        _write_repeated(path, text, size)
    elif kind == "spaces":
        _write_repeated(path, b" " * WRITE_BLOCK, size)
    elif kind == "letter":
        _write_repeated(path, b"a" * WRITE_BLOCK, size)
    elif kind == "normal":
        _write_repeated(path, _corpus("pydocs") + b"\n" + _corpus("fortunes") + b"\n", size)
    else:
        raise ValueError(kind)


def tree_pss_kb(pid: int) -> int:
    """The summed proportional set size of a process and its descendants (0 for those already gone)."""
    total, stack = 0, [pid]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                total += next((int(line.split()[1]) for line in rollup if line.startswith("Pss:")), 0)
            with open(f"/proc/{pid}/task/{pid}/children") as children:
                stack.extend(map(int, children.read().split()))
        except (OSError, ValueError):
            continue
    return total


def run_tokenize(tokenizer: Path, path: Path, out: Path, jobs: int = 1) -> tuple[float, float, float]:
    """(peak RSS of one process in MB, peak summed PSS of the process tree in MB, wall seconds) of
    ``bpefst tokenize`` under ``/usr/bin/time -v``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    began = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", sys.executable, "-m", "bpefst", "tokenize", str(tokenizer), str(path),
                             "--format", "msgpack", "-o", str(out), "--jobs", str(jobs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    tree_peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            tree_peak[0] = max(tree_peak[0], tree_pss_kb(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = proc.stderr.read()
    proc.wait()
    sampler.join()
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"bpefst tokenize failed:\n{stderr}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(peak.group(1)) / 1024, tree_peak[0] / 1024, seconds


def same_ids(first: Path, second: Path) -> bool:
    """Whether two msgpack outputs hold the same ids (their arrays may be cut differently)."""
    return all(a == b for a, b in itertools.zip_longest(our_ids(first), our_ids(second)))


def tiktoken_from_ranks(name: str):
    """tiktoken built offline from the shared rank file of ``cl100k`` or ``o200k`` and its published pattern."""
    import tiktoken

    ranks = {}
    for line in gzip.open(TOKENIZERS[name]).read().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(f"{name}_base", pat_str=PATTERNS[name], mergeable_ranks=ranks, special_tokens={})


def tiktoken_gpt2():
    """tiktoken over GPT-2's vocab.json: tokens decoded from GPT-2's byte-to-unicode map, rank = id."""
    import tiktoken

    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    byte_of = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            byte_of[chr(256 + extra)] = b
            extra += 1
    vocab = json.loads(GPT2.read_text(encoding="utf-8"))
    ranks = {bytes(byte_of[c] for c in token): rank for token, rank in vocab.items() if token != "<|endoftext|>"}
    return tiktoken.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})


def hf_gpt2():
    import tokenizers

    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(GPT2), str(GPT2.parent / "merges.txt")))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def our_ids(out: Path):
    import msgpack

    with open(out, "rb") as f:
        for array in msgpack.Unpacker(f, max_array_len=1 << 30):
            yield from array


def line_blocks(path: Path, size: int = 1 << 22):
    """The file in blocks of whole lines, cut only before a line starting with a non-space."""
    block: list[bytes] = []
    held = 0
    with open(path, "rb") as f:
        for line in f:
            if held >= size and line[:1] and not line[:1].isspace():
                yield b"".join(block).decode("utf-8")
                block, held = [], 0
            block.append(line)
            held += len(line)
    if block:
        yield b"".join(block).decode("utf-8")


def oracle_encode(encoder, pattern: str, text: str) -> tuple[list[int], str]:
    """The oracle's ids for ``text`` and how they were found.

    tiktoken's ``encode_ordinary`` where it copes; its regex engine overflows its
    stack on the GPT-2 pattern over a megabyte-long run of spaces (``\\s+(?!\\S)``
    backtracks), and there the chunks come from the ``regex`` module with the same
    published pattern and each goes through tiktoken's BPE (``_encode_single_piece``).
    """
    try:
        return encoder.encode_ordinary(text), "tiktoken"
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
    import regex

    ids: list[int] = []
    cache: dict[str, list[int]] = {}
    for chunk in regex.finditer(pattern, text):
        piece = chunk.group()
        found = cache.get(piece)
        if found is None:
            found = encoder._encode_single_piece(piece.encode("utf-8"))
            if len(piece) < 64:
                cache[piece] = found
        ids.extend(found)
    return ids, "tiktoken BPE on regex chunks"


def check_ids(encoder, pattern: str, path: Path, out: Path, whole: bool) -> tuple[bool, int, str]:
    """Whether OUT holds exactly the oracle's ids for the file; the number of ids; how the oracle ran."""
    got = our_ids(out)
    count = 0
    how = set()
    blocks = [path.read_bytes().decode("utf-8")] if whole else line_blocks(path)  # keeps \r\n as it is
    for text in blocks:
        expected, used = oracle_encode(encoder, pattern, text)
        how.add(used)
        mine = list(itertools.islice(got, len(expected)))
        if mine != expected:
            return False, count, ", ".join(sorted(how))
        count += len(expected)
    return next(got, None) is None, count, ", ".join(sorted(how))


CASES = {
    # name: (input kind, tokenizer, size key)
    "prose-line-cl100k": ("prose-line", "cl100k", "size"),
    "spaces-gpt2": ("spaces", "gpt2", "size"),
    "spaces-cl100k": ("spaces", "cl100k", "size"),
    "letter-cl100k": ("letter", "cl100k", "size"),
    "letter-gpt2": ("letter", "gpt2", "size"),
    "normal-1g-cl100k": ("normal", "cl100k", "big"),
    "break-spaces-cl100k": ("break-spaces", "cl100k", "size"),
    "break-spaces-break-cl100k": ("break-spaces-break", "cl100k", "size"),
    "break-spaces-end-cl100k": ("break-spaces-end", "cl100k", "size"),
    "crlf-tabs-spaces-cl100k": ("crlf-tabs-spaces", "cl100k", "size"),
    "break-spaces-o200k": ("break-spaces", "o200k", "size"),
    "break-spaces-end-o200k": ("break-spaces-end", "o200k", "size"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated, from: " + ", ".join(CASES))
    parser.add_argument("--size-mb", type=float, default=50)
    parser.add_argument("--big-mb", type=float, default=1024, help="size of the ordinary-text case (0: skip it)")
    parser.add_argument("--workdir", default=None, help="where the inputs and outputs go (default: a temporary folder)")
    parser.add_argument("--no-oracle", action="store_true", help="measure memory only")
    parser.add_argument("--jobs", type=int, default=1, help="also run with --jobs J and compare with --jobs 1")
    args = parser.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"needs the shared reference data at {SHARED}")
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bpefst-stream-"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = {"size": int(args.size_mb * 1e6), "big": int(args.big_mb * (1 << 20))}
    oracles = {}
    rows = []
    for name in args.cases.split(","):
        kind, tokenizer, size_key = CASES[name]
        size = sizes[size_key]
        if size <= 0:
            continue
        path = work / f"{kind}-{size}.txt"
        if not path.exists() or path.stat().st_size < size - 4:
            make_input(kind, path, size)
        out = work / f"{name}.msgpack"
        peak, tree, seconds = run_tokenize(TOKENIZERS[tokenizer], path, out)
        verdict = "not checked"
        if args.jobs > 1:
            out_jobs = work / f"{name}-jobs.msgpack"
            peak_jobs, tree_jobs, seconds_jobs = run_tokenize(TOKENIZERS[tokenizer], path, out_jobs, args.jobs)
            same = "same ids" if same_ids(out, out_jobs) else "DIFFERENT ids"
            print(f"{name} --jobs {args.jobs}: max RSS {peak_jobs:.0f} MB, process tree {tree_jobs:.0f} MB, "
                  f"{seconds_jobs:.1f} s, {same} as --jobs 1 (max RSS {peak:.0f} MB, tree {tree:.0f} MB, {seconds:.1f} s)",
                  flush=True)
            rows.append((f"{name} --jobs {args.jobs}", path.stat().st_size, max(peak_jobs, tree_jobs), seconds_jobs,
                         "ok" if max(peak_jobs, tree_jobs) <= LIMIT_MB else "OVER", f"{same} as --jobs 1"))
            out_jobs.unlink()
        if not args.no_oracle:
            if tokenizer not in oracles:
                oracles[tokenizer] = tiktoken_gpt2() if tokenizer == "gpt2" else tiktoken_from_ranks(tokenizer)
            pattern = PATTERNS[tokenizer]
            if tokenizer == "gpt2":  # the tiktoken stand-in must agree with HF first
                with open(path, "rb") as f:
                    sample = f.read(1 << 20).decode("utf-8", errors="ignore")
                if oracle_encode(oracles["gpt2"], pattern, sample)[0] != hf_gpt2().encode(sample).ids:
                    raise SystemExit("tiktoken over GPT-2's vocab.json disagrees with HF tokenizers")
            began = time.perf_counter()
            same, count, how = check_ids(oracles[tokenizer], pattern, path, out, whole=size_key != "big")
            if tokenizer == "gpt2":
                how += " (equal to HF tokenizers on the first MB)"
            verdict = f"{'identical' if same else 'DIFFERENT'} to {how}, {count:,} ids ({time.perf_counter() - began:.0f} s)"
        status = "ok" if peak <= LIMIT_MB else "OVER"
        rows.append((name, path.stat().st_size, peak, seconds, status, verdict))
        print(f"{name}: {path.stat().st_size / 1e6:.0f} MB, max RSS {peak:.0f} MB ({status}), {seconds:.1f} s; {verdict}", flush=True)
        out.unlink()
    print()
    print(f"| case | input | max RSS (limit {LIMIT_MB} MB) | wall time | ids |")
    print("|---|---|---|---|---|")
    for name, size, peak, seconds, status, verdict in rows:
        print(f"| {name} | {size / 1e6:,.0f} MB | {peak:.0f} MB {status} | {seconds:.1f} s | {verdict} |")


if __name__ == "__main__":
    main()
