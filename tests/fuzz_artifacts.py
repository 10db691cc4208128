"""Seeded mutation fuzzing of real bpefst artifacts of every kind, through the command line.

Run by ``tests/test_fuzz_artifacts.py`` (a short run in CI) or by hand for a long one::

    python tests/fuzz_artifacts.py --cases 6000 --seed 1 --out summary.json

The artifacts are made by the real writers (``bpefst train``, ``compile`` for both
encodings and the transducer, ``promote -o``, and a pattern automaton).  Each case
mutates one of them and runs the command that reads that kind, in a forked child
(so the start-up cost is paid once) with a memory ceiling and an alarm:

* ``flip``, ``truncate``, ``huge-length`` change the file's bytes: the checksum
  must refuse them, so the only acceptable outcomes are "refused" and "same"
  (the command printed what it prints for the untouched file);
* ``retype`` and ``rebytes`` edit the decoded body -- a value replaced by one of
  another type, or a packed table's bytes scrambled -- and recompute the checksum
  (and the fingerprint, when the edited tokenizer still loads), as a forger
  would.  A value of the wrong type must be refused (or change nothing); scrambled
  table bytes must be refused or give a clean answer -- a forged table that is
  well formed (other final states, say) is simply another valid artifact, which
  no checksum can tell from a genuine one.

Every outcome is classified: ``refused`` (exit 2, one line ``bpefst: error: ...``),
``same``, ``changed`` (exit 0/1 with other output), ``messy`` (exit 2 with a
traceback or several lines), ``crash`` (another exit status or a signal),
``hang`` (the alarm), and ``rss`` is checked against the ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgpack

ROOT = Path(__file__).resolve().parents[1]
TEXT = b"The tokenizer compiles merges into automata; hello world, 12345 tokens!\n"
REGEX = "[a-z]{1,6}( [a-z]{1,4})?"
TIMEOUT = 30  # seconds per case: far above any honest run on these small artifacts
MAX_RSS_KB = 1 << 20  # 1 GiB
ADDRESS_SPACE = 3 << 30  # a runaway allocation fails here instead of taking the machine
RAW_MUTATIONS = ("flip", "truncate", "huge-length")
BODY_MUTATIONS = ("retype", "rebytes")
ALLOWED = {"flip": {"refused", "same"}, "truncate": {"refused", "same"}, "huge-length": {"refused", "same"},
           "retype": {"refused", "same"}, "rebytes": {"refused", "same", "changed"}}


def bpefst(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpefst", *args], input=stdin, capture_output=True, timeout=300, cwd=ROOT)


def make_artifacts(directory: Path) -> dict[str, Path]:
    """Real artifacts of every kind, written by bpefst itself."""
    paths = {"tokenizer": directory / "tok.bpefst", "canonical-dfa": directory / "tok.dfa",
             "canonical-dfa-implicit": directory / "tok-implicit.dfa", "transducer": directory / "tok.fst",
             "token-automaton": directory / "pattern.tokens", "token-guide": directory / "pattern.guide",
             "automaton": directory / "pattern.automaton"}
    steps = [
        ("train", str(ROOT / "fixtures" / "corpus.txt"), "--vocab-size", "400", "--special-token", "<|endoftext|>", "-q", "-o", str(paths["tokenizer"])),
        ("compile", str(paths["tokenizer"]), "--encoding", "explicit", "-o", str(paths["canonical-dfa"])),
        ("compile", str(paths["tokenizer"]), "--encoding", "implicit", "-o", str(paths["canonical-dfa-implicit"])),
        ("compile", str(paths["tokenizer"]), "--kind", "transducer", "--budget", "100", "-o", str(paths["transducer"])),
        ("promote", str(paths["canonical-dfa"]), "--regex", REGEX, "-o", str(paths["token-automaton"])),
        ("promote", str(paths["tokenizer"]), "--regex", REGEX, "--form", "guide", "-o", str(paths["token-guide"])),
    ]
    for step in steps:
        done = bpefst(*step)
        assert done.returncode == 0, (step, done.stderr)
    from bpefst.automata import save
    from bpefst.regex import alphabet_for, compile_regex
    from bpefst.tokenizer import load_tokenizer

    save(compile_regex(REGEX, alphabet_for(load_tokenizer(paths["tokenizer"]))), paths["automaton"])
    return paths


def commands(kind: str, path: Path, artifacts: dict[str, Path], ids: bytes) -> list[tuple[list[str], bytes]]:
    """The commands that read an artifact of ``kind``, with their stdin."""
    p = str(path)
    if kind == "tokenizer":
        return [(["tokenize", p], TEXT), (["validate", p], ids), (["promote", p, "--regex", REGEX], b""), (["info", p], b"")]
    if kind.startswith("canonical-dfa"):
        return [(["validate", p], ids), (["promote", p, "--regex", REGEX], b""), (["info", p], b"")]
    if kind == "transducer":
        return [(["tokenize", p], TEXT), (["info", p], b"")]
    if kind in ("token-automaton", "token-guide"):
        return [(["info", p], b"")]
    return [(["promote", str(artifacts["tokenizer"]), "--pattern-file", p, "--stats"], b"")]


# -- mutations -------------------------------------------------------------------------------------

HUGE_HEADERS = [b"\xc6\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff", b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff",
                b"\xc5\xff\xff", b"\xdc\xff\xff", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff"]
WRONG_VALUES = [5, -1, 0, 2**32, 2**63 - 1, -(2**63), 1.5, "x", "", b"", b"\x00" * 7, b"\xff" * 4, [], [1, "x"], {}, {"a": 1}, None, True]


def mutate(raw: bytes, how: str, rng: random.Random) -> bytes:
    if how == "flip":
        data = bytearray(raw)
        for _ in range(rng.choice((1, 1, 2, 3))):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    if how == "truncate":
        return raw[: rng.randrange(len(raw))]
    if how == "huge-length":
        at = rng.randrange(len(raw))
        header = rng.choice(HUGE_HEADERS)
        return raw[:at] + header + raw[at + len(header):]
    return _mutate_body(raw, how, rng)


def _mutate_body(raw: bytes, how: str, rng: random.Random) -> bytes:
    from bpefst.artifact import repack

    document = msgpack.unpackb(raw, raw=False, strict_map_key=False)
    slots = list(_slots(document["body"], ()))
    if how == "rebytes":
        slots = [s for s in slots if isinstance(s[2], bytes) and s[2]] or slots
    path, container, value = rng.choice(slots)
    if how == "retype":
        new = rng.choice([v for v in WRONG_VALUES if type(v) is not type(value) and not _same_kind(value, v)])
    else:
        new = bytes(rng.randrange(256) for _ in value) if isinstance(value, bytes) and value else rng.choice(WRONG_VALUES)
        if isinstance(value, bytes) and value and rng.random() < 0.5:  # a few entries only: values stay plausible
            data = bytearray(value)
            for _ in range(rng.choice((1, 2, 4))):
                data[rng.randrange(len(data))] = rng.randrange(256)
            new = bytes(data)
    container[path[-1]] = new
    _refingerprint(document)
    return repack(document)


def _same_kind(old, new) -> bool:
    """Replacements that are not wrong types: any scalar where stats hold scalars, str/None for optional strings."""
    return (old is None and isinstance(new, str)) or (isinstance(old, str) and new is None)


def _slots(value, path):
    """(path, container, value) for every value under the body, except the free-form stats."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "stats":
                continue
            yield (*path, key), value, item
            yield from _slots(item, (*path, key))


def _refingerprint(document: dict) -> None:
    """As a forger would: make the header's fingerprint match the (edited) tokenizer when it still loads."""
    from bpefst.errors import BpefstError
    from bpefst.tokenizer.formats.native import from_body

    body = document["body"]
    tokenizer = body if document["kind"] == "tokenizer" else body.get("tokenizer")
    try:
        document["fingerprint"] = from_body(tokenizer, "fuzz").fingerprint
    except (BpefstError, Exception):
        pass


# -- running one case ---------------------------------------------------------------------------------


def run_case(argv: list[str], stdin: bytes, workdir: Path) -> tuple[int | None, int | None, bytes, bytes, int]:
    """(exit status or None, signal or None, stdout, stderr, max RSS in KB) of ``bpefst argv`` in a forked child."""
    (workdir / "in").write_bytes(stdin)
    out_path, err_path = workdir / "out", workdir / "err"
    pid = os.fork()
    if pid == 0:  # the child: become ``bpefst argv`` and never return
        code = 97
        try:
            resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
            signal.alarm(TIMEOUT)
            for fd, path, flags in ((0, workdir / "in", os.O_RDONLY), (1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                opened = os.open(path, flags, 0o644)
                os.dup2(opened, fd)
                os.close(opened)
            sys.stdin, sys.stdout, sys.stderr = open(0, "r", closefd=False), open(1, "w", closefd=False), open(2, "w", closefd=False)
            sys.argv = ["bpefst", *argv]
            from bpefst.cli import main

            try:
                main()
                code = 0
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            except BaseException:  # anything escaping main is a bug: show it as Python would
                import traceback

                traceback.print_exc()
                code = 98
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return code, killed, out_path.read_bytes(), err_path.read_bytes(), usage.ru_maxrss


def classify(code, killed, out: bytes, err: bytes, baseline: tuple[int, bytes]) -> str:
    if killed == signal.SIGALRM:
        return "hang"
    if killed is not None:
        return "crash"
    text = err.decode("utf-8", "replace")
    if code == 2:
        clean = "Traceback" not in text and text.count("\n") == 1 and text.startswith("bpefst: error: ")
        return "refused" if clean else "messy"
    if code in (0, 1) and "Traceback" not in text:
        return "same" if (code, out) == baseline else "changed"
    return "crash"


def fuzz(cases: int, seed: int, workdir: Path, log=None) -> dict:
    """Run ``cases`` mutations; returns counts per mutation and outcome, and the failing cases."""
    artifacts = make_artifacts(workdir)
    from bpefst.tokenizer import ReferenceEncoder, load_tokenizer

    ids = " ".join(map(str, ReferenceEncoder(load_tokenizer(artifacts["tokenizer"])).encode(TEXT.decode()))).encode()
    originals = {kind: path.read_bytes() for kind, path in artifacts.items()}
    scratch = workdir / "scratch"
    scratch.mkdir()
    baselines: dict[tuple, tuple[int, bytes]] = {}
    for kind, path in artifacts.items():
        for argv, stdin in commands(kind, path, artifacts, ids):
            code, killed, out, err, _ = run_case(argv, stdin, scratch)
            assert code in (0, 1) and killed is None, (argv, err)
            baselines[tuple(argv)] = (code, out)
    rng = random.Random(seed)
    counts: dict[str, dict[str, int]] = {}
    failures: list[dict] = []
    max_rss = 0
    started = time.perf_counter()
    for case in range(cases):
        kind = rng.choice(sorted(artifacts))
        how = rng.choice(RAW_MUTATIONS + BODY_MUTATIONS)
        target = scratch / f"mutated{artifacts[kind].suffix}"
        try:
            mutated = mutate(originals[kind], how, rng)
        except (ValueError, IndexError):  # nothing of that sort to mutate in this kind
            continue
        target.write_bytes(mutated)
        argv, stdin = rng.choice(commands(kind, target, artifacts, ids))
        baseline = baselines[tuple(str(artifacts[kind]) if a == str(target) else a for a in argv)]
        code, killed, out, err, rss = run_case(argv, stdin, scratch)
        outcome = classify(code, killed, out, err, baseline)
        if rss > MAX_RSS_KB:
            outcome = "rss"
        max_rss = max(max_rss, rss)
        counts.setdefault(how, {}).setdefault(outcome, 0)
        counts[how][outcome] += 1
        if outcome not in ALLOWED[how]:
            keep = workdir / f"failure-{case}{artifacts[kind].suffix}"
            keep.write_bytes(mutated)
            failures.append({"case": case, "kind": kind, "mutation": how, "outcome": outcome, "argv": argv[:1],
                             "file": str(keep), "exit": code, "signal": killed, "stderr": err.decode("utf-8", "replace")[-400:]})
        if log is not None and (case + 1) % 500 == 0:
            print(f"{case + 1} cases, {time.perf_counter() - started:.0f} s, {len(failures)} failures", file=log, flush=True)
    return {"cases": cases, "seed": seed, "seconds": round(time.perf_counter() - started, 1), "max_rss_kb": max_rss,
            "counts": counts, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        summary = fuzz(args.cases, args.seed, Path(tmp), log=sys.stderr)
        text = json.dumps(summary, indent=1)
        if args.out:
            args.out.write_text(text)
        print(text)


if __name__ == "__main__":
    main()
