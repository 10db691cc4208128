"""``bpefst validate`` against tiktoken's decode + encode + compare, in one run.

Usage::

    .venv/bin/python benchmarks/bench_validate.py                  # cl100k, pydocs, 3 rounds
    .venv/bin/python benchmarks/bench_validate.py --rounds 5 --corpus fortunes --encoding o200k_base

The ids are tiktoken's encoding of the corpus (built offline from the shared
rank file), written once as whitespace-separated text, as ``bpefst tokenize``
writes them.  Each round times, interleaved (so a noisy neighbour hurts all
alike), and the medians are compared:

* ``tiktoken``: ``encode(decode(ids), allowed_special="all") == ids`` on the
  parsed list (the peer: what a user writes to check a stream);
* ``tiktoken + parse``: the same after reading the file and ``int`` of each word;
* ``bpefst list``: :meth:`Validator.check` on the same parsed list (a fresh
  ``Validator`` per round, built outside the clock: cold cache of canonical
  pairs; the token-level chunk tables are shared per automaton, so they are
  cold in the first round only);
* ``before``: :class:`DecodingValidator` (the algorithm ``Validator`` used
  before the token-level path: decode blocks, re-run the pattern) on the list;
* ``bpefst file``: reading and parsing the file as the CLI does
  (:func:`parse_id_blocks`) and validating the blocks, in this process, with
  numpy loaded (as in a library user's process: the parser then uses numpy's
  reader) and without (the JSON reader, as the CLI, which does not import numpy);
* ``bpefst CLI file`` / ``bpefst CLI stdin``: ``python -m bpefst validate``
  end to end in a fresh process (everything cold), minus the median of the
  same command on a one-token input (start-up: loading the rank file, the
  automaton, the tables), as the issue measures "start-up excluded".  The
  start-up itself is printed too.

Every run's verdict is checked (canonical, with the right token count).
"""

from __future__ import annotations

import argparse
import gc
import lzma
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_tokenize import SHARED, build_tiktoken, tokenizer_path  # noqa: E402

from bpefst.bpe import MergeForest, build_canonical  # noqa: E402
from bpefst.pipeline import validate as validate_module  # noqa: E402
from bpefst.pipeline.validate import DecodingValidator, Validator, parse_id_blocks  # noqa: E402
from bpefst.tokenizer import load_tokenizer  # noqa: E402


def timed(fn) -> tuple[float, object]:
    gc.collect()
    began = time.perf_counter()
    result = fn()
    return time.perf_counter() - began, result


def cli(args: list[str], stdin_path: str | None = None) -> tuple[float, str]:
    """One run of the CLI; with ``stdin_path`` the file's bytes arrive through a pipe (as from ``cat``)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    data = open(stdin_path, "rb").read() if stdin_path else b""
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bpefst", "validate", *args], input=data, capture_output=True, env=env)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        sys.exit(f"bpefst validate failed ({proc.returncode}): {proc.stdout.decode()} {proc.stderr.decode()}")
    return seconds, proc.stdout.decode().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    parser.add_argument("--corpus", default="pydocs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true", help="skip the end-to-end CLI runs")
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"needs the shared data at {SHARED}")

    rank_file = str(tokenizer_path(args.encoding))
    model = load_tokenizer(rank_file)
    automaton = build_canonical(MergeForest.from_model(model), "implicit")
    enc = build_tiktoken(args.encoding, model)
    text = lzma.open(SHARED / "corpora" / f"{args.corpus}.txt.xz").read().decode("utf-8")
    ids = enc.encode(text, allowed_special="all")
    workdir = tempfile.mkdtemp()
    ids_path = os.path.join(workdir, "ids.txt")
    one_path = os.path.join(workdir, "one.txt")
    with open(ids_path, "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    with open(one_path, "w") as f:
        f.write(f"{ids[0]}\n")
    expected_line = f"canonical: {len(ids)} tokens"

    def tiktoken_check():
        return enc.encode(enc.decode(ids), allowed_special="all") == ids

    def tiktoken_file():
        with open(ids_path, "rb") as f:
            parsed = list(map(int, f.read().split()))
        return enc.encode(enc.decode(parsed), allowed_special="all") == parsed

    def bpefst_list(validator):
        return validator.check(ids) is None and validator.tokens_seen == len(ids)

    def bpefst_decoding(validator):
        blocks = (ids[i : i + 65536] for i in range(0, len(ids), 65536))
        return validator.check_stream(blocks) is None and validator.tokens_seen == len(ids)

    def bpefst_file(validator, numpy_loaded: bool):
        validate_module._numpy = numpy_parser if numpy_loaded else lambda: None
        with open(ids_path, "rb") as f:  # lines, as the CLI reads a file (one line here)
            ok = validator.check_stream(parse_id_blocks(f), nonnegative=True) is None
        return ok and validator.tokens_seen == len(ids)

    try:
        import numpy  # noqa: F401  (loaded, as in a library user's process)
    except ImportError:
        pass
    numpy_parser = validate_module._numpy

    times: dict[str, list[float]] = {}

    def record(name: str, seconds: float, ok) -> None:
        if ok is not True:
            sys.exit(f"{name}: wrong verdict ({ok})")
        times.setdefault(name, []).append(seconds)

    print(f"validate: {args.corpus} ({len(text.encode()) / 1e6:.1f} MB), {len(ids):,} {args.encoding} ids from tiktoken; "
          f"{args.rounds} interleaved rounds, medians", flush=True)
    for _ in range(args.rounds):
        record("tiktoken", *timed(tiktoken_check))
        record("tiktoken + parse", *timed(tiktoken_file))
        validator = Validator(model, automaton)
        record("bpefst list", *timed(lambda: bpefst_list(validator)))
        for numpy_loaded, name in ((True, "bpefst file"), (False, "bpefst file json")):
            validator = Validator(model, automaton)
            record(name, *timed(lambda: bpefst_file(validator, numpy_loaded)))
        decoding = DecodingValidator(model, automaton)
        record("decoding checker", *timed(lambda: bpefst_decoding(decoding)))
        if not args.no_cli:
            seconds, line = cli([rank_file], one_path)
            record("CLI start-up", seconds, line == "canonical: 1 tokens")
            seconds, line = cli([rank_file, ids_path])
            record("CLI file", seconds, line == expected_line)
            seconds, line = cli([rank_file], ids_path)
            record("CLI stdin", seconds, line == expected_line)
    median = {name: statistics.median(values) for name, values in times.items()}
    if not args.no_cli:
        for name in ("CLI file", "CLI stdin"):
            median[f"{name} - start-up"] = median[name] - median["CLI start-up"]
    base = median["tiktoken"]
    rows = [
        ("tiktoken decode + encode + compare", "tiktoken", None),
        ("tiktoken, reading + int() + the above", "tiktoken + parse", None),
        ("bpefst Validator.check (parsed list)", "bpefst list", "tiktoken"),
        ("bpefst file: parse_id_blocks + check", "bpefst file", "tiktoken + parse"),
        ("  the same without numpy (JSON reader)", "bpefst file json", "tiktoken + parse"),
        ("before: DecodingValidator (parsed list)", "decoding checker", "tiktoken"),
    ]
    if not args.no_cli:
        rows += [
            ("bpefst CLI start-up (1-token input)", "CLI start-up", None),
            ("bpefst CLI file, start-up excluded", "CLI file - start-up", "tiktoken"),
            ("bpefst CLI stdin, start-up excluded", "CLI stdin - start-up", "tiktoken"),
            ("bpefst CLI file, whole run", "CLI file", "tiktoken"),
        ]
    print(f"{'':42} {'seconds':>8} {'M ids/s':>8} {'vs tiktoken':>12} {'vs +parse':>10}")
    for label, name, _ in rows:
        seconds = median[name]
        rate = len(ids) / seconds / 1e6 if seconds > 0 else float("inf")
        peer = not name.startswith("tiktoken") and name != "CLI start-up"
        vs = f"{base / seconds:.2f}x" if peer else ""
        vs_parse = f"{median['tiktoken + parse'] / seconds:.2f}x" if peer else ""
        print(f"{label:42} {seconds:8.3f} {rate:8.2f} {vs:>12} {vs_parse:>10}")
    print("(ratios are tiktoken's median time over bpefst's: above 1x bpefst is faster)")


if __name__ == "__main__":
    main()
