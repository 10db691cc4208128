"""Streaming memory independent of line length (issue 16, item 11): cuts inside lines, long chunks.

Oracles: ``regex.findall`` with the published patterns (the cut rules), the
reference encoder (small models, every cut and limit), tiktoken and HF
``tokenizers`` (real tokenizers on long lines and megabyte chunks).  The memory
bound itself is asserted on what the encoder holds (``buffered``), and end to
end on the peak memory of ``bpefst tokenize`` on 12 MB of spaces, and on 12 MB
of spaces after a line break (on the code before each change that peak grew
with the line: about 250 MB there).
"""

from __future__ import annotations

import io
import itertools
import json
import os
import random
import subprocess
import sys

import msgpack
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpefst.pipeline import encoder as encoder_module
from bpefst.pipeline.encoder import IncrementalEncoder, Tokenizer
from bpefst.pipeline.tokenize import tokenize_stream
from bpefst.tokenizer import PRESETS, ReferenceEncoder, save_tokenizer
from bpefst.tokenizer.safe_cuts import decided_end, inline_cut
from conftest import TIKTOKEN_SPECS, corpus_prefix, hf_gpt2_oracle, require_shared, tiktoken_oracle
from small_models import random_byte_model

# Written out from GPT-2's encoder.py, independently of bpefst's presets.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": TIKTOKEN_SPECS["cl100k_base"][0], "o200k": TIKTOKEN_SPECS["o200k_base"][0]}

# One representative of each character class the three patterns tell apart (letters of
# either case, a contraction letter, a modifier letter, CJK, a mark, digits, the
# apostrophe, punctuation, slash, and five kinds of whitespace).
CLASS_MEMBERS = ["a", "A", "s", "ʰ", "中", "\u0301", "1", "'", "!", "/", " ", "\t", "\n", "\r", "\u00a0"]


def _strings(length: int):
    for n in range(1, length + 1):
        for chars in itertools.product(CLASS_MEMBERS, repeat=n):
            yield "".join(chars)


@pytest.mark.parametrize("kind", ["gpt2", "cl100k", "o200k"])
def test_cuts_inside_lines_and_decided_matches_agree_with_findall(kind: str) -> None:
    """Every string of class members up to length 4 and 4,000 random ones up to length 14,
    every position: a cut inside a line pre-tokenizes like the whole text, and the
    matches called decided on a prefix are the whole text's first matches."""
    compiled = regex.compile(PATTERNS[kind])
    findall, finditer = compiled.findall, compiled.finditer
    rng = random.Random(kind)
    randoms = ("".join(rng.choice(CLASS_MEMBERS) for _ in range(rng.randint(5, 14))) for _ in range(4000))
    cuts = decided = 0
    for text in itertools.chain(_strings(4), randoms):
        whole = findall(text)
        for c in range(1, len(text)):
            if inline_cut(text, kind, c, c + 1) == c:
                cuts += 1
                assert findall(text[:c]) + findall(text[c:]) == whole, (text, c)
            prefix = text[:c]
            end = decided_end(prefix, finditer(prefix))
            if end:
                decided += 1
                kept = [m.group() for m in finditer(prefix) if m.end() <= end]
                assert whole[: len(kept)] == kept and sum(map(len, kept)) == end, (text, c)
    assert cuts > 10_000 and decided > 1000  # the rules do apply


PIECES = ["a", "b", "A", "1", " ", "  ", "\n", "\r\n", "\t", "!", "'s", "'", "/", "\u0301", "中", "ʰ", "Aa", "\u00a0",
          "<|end|>", "<|en", "d|>"]


@st.composite
def stream_cases(draw):
    """Text of short pieces and long runs, where to cut it into feeds, and tiny limits."""
    parts = draw(st.lists(st.tuples(st.sampled_from(PIECES), st.integers(1, 40)), max_size=14))
    text = "".join(piece * count if len(piece) <= 2 else piece for piece, count in parts)
    feeds = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
    return text, feeds, draw(st.integers(2, 16)), draw(st.integers(1, 12))


@pytest.mark.parametrize("kind", ["gpt2", "cl100k", "o200k"])
def test_incremental_encoder_with_tiny_limits_equals_reference(kind: str) -> None:
    """With limits of a few characters every path runs (cuts inside lines, decided matches,
    long chunks started, continued, ended by text, by a special token or by the end), fed
    in arbitrary pieces; the ids are the reference encoder's for every special-token policy."""
    models = [random_byte_model(seed, alphabet=b"ab !\n' A", num_merges=30, pattern=PRESETS[kind]) for seed in range(3)]
    tokenizers = [(Tokenizer(model), ReferenceEncoder(model)) for model in models]

    @settings(max_examples=150, deadline=None)
    @given(case=stream_cases(), which=st.integers(0, 2), policy=st.sampled_from(["plain", "allowed", "disallowed"]))
    # found by CI: a long chunk of spaces ended early while "<|e" could still become a special
    @example(case=("a" * 27 + " " * 8 + "<|end|>", [35, 38], 2, 1), which=0, policy="allowed")
    def check(case, which, policy) -> None:
        text, feeds, long_text, long_chunk = case
        tok, ref = tokenizers[which]
        args = {"plain": ((), ()), "allowed": ({"<|end|>"}, ()), "disallowed": ((), "all")}[policy]
        try:
            expected = ref.encode(text, allowed_special=args[0], disallowed_special=args[1])
        except Exception as exc:  # a disallowed special: both must refuse
            expected = type(exc).__name__
        inc = tok.incremental(*args)
        inc.long_text, inc.long_chunk, inc.held_piece = long_text, long_chunk, 3
        got, last = [], 0
        try:
            for cut in feeds + [len(text)]:
                got += inc.feed(text[last:cut])
                last = cut
            got += inc.finish()
        except Exception as exc:
            got = type(exc).__name__
        assert got == expected

    check()


BLOCK = 1 << 16
# The most text the encoder may hold after a feed of at most BLOCK characters: its
# limit (IncrementalEncoder.long_text, 256K characters) and one block.  Every long input
# below is longer, so an encoder that holds a whole line fails.
HELD = (1 << 18) + BLOCK


def _prose_line(size: int) -> str:
    text = corpus_prefix("pydocs", 400_000).replace("\r", " ").replace("\n", " ")
    return (text * (size // len(text) + 1))[:size]


LONG_INPUTS = {
    "prose line": lambda: _prose_line(400_000),
    "spaces": lambda: " " * 400_000,
    "one letter": lambda: "a" * 400_000,
    "letters then spaces": lambda: "b" * 200_000 + " " * 200_000 + "x",
    "spaces, line break, spaces": lambda: " " * 200_000 + "\n" + " " * 30_000 + "\n" + " " * 200_000 + "word",
    "punctuation": lambda: "!" * 350_000 + "\n\n" + "?" * 3,
    "digits": lambda: "1234567" * 50_000,
    "contractions": lambda: "'s" * 175_000,
    "line break, spaces, word": lambda: "a\n" + " " * 400_000 + "b",
    "line break, spaces, line break": lambda: "a\r\n" + " " * 400_000 + "\nb",
}


class _Watched(IncrementalEncoder):
    """The encoder ``tokenize_stream`` makes, recording the most text it held after a feed."""

    held = 0

    def feed(self, text: str) -> list[int]:
        ids = super().feed(text)
        _Watched.held = max(_Watched.held, self.buffered)
        return ids


def _ids_of_stream(tok: Tokenizer, text: str, block: int, monkeypatch) -> tuple[list[int], int]:
    """``tokenize_stream`` (one process) of ``text``: the ids and the most text the encoder held."""
    monkeypatch.setattr(encoder_module, "IncrementalEncoder", _Watched)
    _Watched.held = 0
    out = io.BytesIO()
    tokenize_stream(tok, io.BytesIO(text.encode()), out, "msgpack", set(), set(), block_size=block)
    return [i for arr in msgpack.Unpacker(io.BytesIO(out.getvalue())) for i in arr], _Watched.held


@pytest.mark.parametrize("name", list(LONG_INPUTS))
@pytest.mark.parametrize("kind", ["cl100k_base", "gpt2"])
def test_long_lines_and_huge_chunks_match_tiktoken_and_hf(name: str, kind: str, monkeypatch) -> None:
    """Lines of 350-430 KB without a line break, streamed in 64 KB blocks: the ids are
    tiktoken's (cl100k) or HF tokenizers' (GPT-2), and the encoder never holds more than
    its limit plus one block (before this change: the whole line)."""
    shared = require_shared()
    text = LONG_INPUTS[name]()
    path = shared / ("tiktoken/cl100k_base.tiktoken.gz" if kind == "cl100k_base" else "gpt2/vocab.json")
    tok = Tokenizer.load(path)
    expected = tiktoken_oracle(kind).encode_ordinary(text) if kind == "cl100k_base" else hf_gpt2_oracle().encode(text).ids
    got, held = _ids_of_stream(tok, text, BLOCK, monkeypatch)
    assert got == expected
    assert held <= HELD, held


def test_o200k_long_chunks_match_tiktoken(monkeypatch) -> None:
    require_shared()
    tok = Tokenizer.load(require_shared() / "tiktoken" / "o200k_base.tiktoken.gz")
    for text in (" " * 350_000, "AAAA" * 90_000 + "bcd", _prose_line(350_000)):
        got, held = _ids_of_stream(tok, text, BLOCK, monkeypatch)
        assert got == tiktoken_oracle("o200k_base").encode_ordinary(text)
        assert held <= HELD


def test_encoder_holds_bounded_text_on_a_small_model() -> None:
    """No shared data needed: 1.5 MB of spaces, of one letter, of a line of words, fed in
    64 KB pieces, never make the encoder hold more than its limit plus a piece, and give
    the ids of encoding the whole text at once (itself checked against the reference
    encoder by test_tokenize.py)."""
    for kind in ("gpt2", "cl100k"):
        tok = Tokenizer(random_byte_model(5, alphabet=b"ab !", num_merges=30, pattern=PRESETS[kind]))
        rng = random.Random(3)
        words = " ".join("".join(rng.choice("ab!") for _ in range(rng.randint(1, 9))) for _ in range(250_000))
        for text in (" " * 1_500_000, "a" * 1_500_000, words[:1_500_000]):
            inc = tok.incremental()
            ids, held = [], 0
            for at in range(0, len(text), BLOCK):
                ids += inc.feed(text[at : at + BLOCK])
                held = max(held, inc.buffered)
            ids += inc.finish()
            assert held <= HELD, (kind, text[:5], held)
            assert ids == tok.encode(text)


# The peak resident memory of this process image (VmHWM; getrusage's ru_maxrss would
# also count the pytest process it was forked from, which Linux carries across exec).
RSS_SCRIPT = (
    "import sys\n"
    "from bpefst.cli.tokenize_command import tokenize\n"
    "try:\n"
    "    tokenize.main(sys.argv[1:], standalone_mode=False)\n"
    "finally:\n"
    "    peak = [line for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
    "    print(peak[0].split()[1] if peak else 0, file=sys.stderr)\n"
)


def test_tokenize_command_peak_memory_does_not_grow_with_the_line(tmp_path) -> None:
    """End to end: ``bpefst tokenize`` of 12 MB of spaces (one line, one chunk) stays far
    below what holding the line takes (about 250 MB before this change; now about 60 MB).
    The ids equal those of ``Tokenizer.encode`` on the whole text."""
    model = random_byte_model(21, alphabet=b"ab !", num_merges=30, pattern=PRESETS["gpt2"])
    save_tokenizer(model, tmp_path / "small.bpefst")
    (tmp_path / "spaces.txt").write_bytes(b" " * 12_000_000)
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc/self/status (Linux) to read the peak memory")
    result = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(tmp_path / "small.bpefst"), str(tmp_path / "spaces.txt"),
                             "--format", "msgpack", "-o", str(tmp_path / "out.msgpack")], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    peak_mb = int(result.stderr.decode().split()[-1]) / 1024
    assert peak_mb < 150, peak_mb
    ids = [i for arr in msgpack.Unpacker(open(tmp_path / "out.msgpack", "rb")) for i in arr]
    assert ids == Tokenizer(model).encode(" " * 12_000_000)


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"b", b" ", b"ab", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b"\xff", b"aaaa", b"<|end|>"]),
                     max_size=40).map(b"".join),
       block=st.integers(1, 9), policy=st.sampled_from(["none", "all"]))
def test_jsonl_lines_streamed_in_one_process_equal_the_reference_per_line(data: bytes, block: int, policy: str) -> None:
    """``--format jsonl`` with one process: blocks of a few bytes make most lines longer
    than a block (streamed) and split ``\\r\\n`` and UTF-8 characters; every line of
    ``bytes.splitlines`` must give the reference encoder's ids for that line alone."""
    from bpefst.tokenizer.reference import decode_input

    model = random_byte_model(4, alphabet=b"ab ", num_merges=12, pattern=PRESETS["gpt2"])
    tok, ref = Tokenizer(model), ReferenceEncoder(model)
    allowed = set() if policy == "none" else {"<|end|>"}
    out = io.BytesIO()
    tokenize_stream(tok, io.BytesIO(data), out, "jsonl", allowed, set(), block_size=block)
    expected = [ref.encode(decode_input(line, True), allowed_special=allowed, disallowed_special=()) for line in data.splitlines()]
    assert [json.loads(line) for line in out.getvalue().splitlines()] == expected


def test_jsonl_long_line_holds_bounded_text(monkeypatch) -> None:
    """A 1 MB line in ``--format jsonl`` goes through the incremental encoder in blocks
    (before this change the line was held and encoded whole)."""
    model = random_byte_model(4, alphabet=b"ab ", num_merges=12, pattern=PRESETS["cl100k"])
    tok = Tokenizer(model)
    text = ("ab " * 350_000).encode() + b"\nshort\r\n" + b" " * 400_000
    monkeypatch.setattr(encoder_module, "IncrementalEncoder", _Watched)
    _Watched.held = 0
    out = io.BytesIO()
    tokenize_stream(tok, io.BytesIO(text), out, "jsonl", set(), set(), block_size=BLOCK)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [tok.encode(line.decode()) for line in text.splitlines()]
    assert 0 < _Watched.held <= HELD


# The same, with the largest worker's peak too (getrusage of the children: the workers are reaped by then).
JOBS_RSS_SCRIPT = RSS_SCRIPT.replace(
    "    print(peak[0].split()[1] if peak else 0, file=sys.stderr)\n",
    "    import resource\n"
    "    print(peak[0].split()[1] if peak else 0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n")


def test_tokenize_jobs_peak_memory_does_not_grow_with_a_stretch_without_cuts(tmp_path) -> None:
    """``bpefst tokenize --jobs 2`` of ordinary lines around 12 MB of spaces (no byte cut for 12 MB): the
    parent and every worker stay far below what holding the stretch takes (before this change the
    parent buffered it and one worker encoded it whole: about 260 MB in that worker; now under 60 MB).
    The ids equal those of ``Tokenizer.encode`` on the whole text."""
    model = random_byte_model(21, alphabet=b"ab !", num_merges=30, pattern=PRESETS["gpt2"])
    save_tokenizer(model, tmp_path / "small.bpefst")
    data = b"ab ba! a\n" * 250_000 + b" " * 12_000_000 + b"\n" + b"b ab a!\n" * 250_000
    (tmp_path / "input.txt").write_bytes(data)
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc/self/status (Linux) to read the peak memory")
    result = subprocess.run([sys.executable, "-c", JOBS_RSS_SCRIPT, str(tmp_path / "small.bpefst"), str(tmp_path / "input.txt"),
                             "--format", "msgpack", "-o", str(tmp_path / "out.msgpack"), "--jobs", "2"],
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    parent_mb, worker_mb = (int(kb) / 1024 for kb in result.stderr.decode().split()[-2:])
    assert parent_mb < 150 and worker_mb < 150, (parent_mb, worker_mb)
    ids = [i for arr in msgpack.Unpacker(open(tmp_path / "out.msgpack", "rb")) for i in arr]
    assert ids == Tokenizer(model).encode(data.decode())


# -- whitespace after a line break (cl100k, o200k): held as counts until it ends -------------


def _line_break_then_spaces(n: int) -> list[str]:
    """A line break and ``n`` spaces, ended in each way the cl100k and o200k patterns tell apart:
    a word, a line break, the end, a special token, a digit, punctuation; ``\\r\\n``; tabs."""
    s = " " * n
    return ["a\n" + s + "b", "a\n" + s + "\nb", "a\n" + s, "a\n" + s + "<|endoftext|>b", "a\n" + s + "\r",
            "a\r\n" + s + "b", "a\r\n" + s + "\r\nb", "a\n\t\t" + s + "\t b", "a\n" + s + "\t" * n + "\n" + s + "!",
            "a\n" + " \t" * n + "1", "a\n\n" + s + "\n\n" + s + "\n" + s, "x!\n" + s + "b", s + "\nb"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_spaces_after_a_line_break_match_tiktoken_and_are_not_held_as_text(name: str) -> None:
    """Whether spaces after a line break join its chunk is decided where they end (another line
    break, the end, a special token: cl100k yes; a word: no).  Fed in pieces of 1, 7 and 64
    characters with limits of a few dozen, so the run is held and released on every path
    (joined to a chunk started or in progress, ended before new text): the ids are
    tiktoken's, and the encoder never holds the 300-character runs as text (on the code
    before this change it held them whole)."""
    tok = Tokenizer.load(require_shared() / "tiktoken" / f"{name}.tiktoken.gz")
    oracle = tiktoken_oracle(name)
    for text in _line_break_then_spaces(300):
        expected = oracle.encode(text, allowed_special="all")
        for step in (1, 7, 64):
            inc = tok.incremental(allowed_special="all")
            inc.long_text, inc.long_chunk, inc.held_piece = 32, 8, 5
            got, held = [], 0
            for at in range(0, len(text), step):
                got += inc.feed(text[at : at + step])
                held = max(held, inc.buffered)
            got += inc.finish()
            assert got == expected, (text[:6], step)
            assert held < 150, (text[:6], step, held)


@pytest.mark.parametrize("tail", [b"b", b"\nb"])
def test_tokenize_command_peak_memory_with_spaces_after_a_line_break(tmp_path, tail: bytes) -> None:
    """End to end: ``bpefst tokenize`` of ``"a\\n"``, 12 MB of spaces and ``tail`` with a
    cl100k-pattern model: about 55 MB (the code before this change held the spaces as
    text: about 250 MB).  The ids equal ``Tokenizer.encode`` on the whole text."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs /proc/self/status (Linux) to read the peak memory")
    model = random_byte_model(21, alphabet=b"ab !\n", num_merges=30, pattern=PRESETS["cl100k"])
    save_tokenizer(model, tmp_path / "small.bpefst")
    data = b"a\n" + b" " * 12_000_000 + tail
    (tmp_path / "in.txt").write_bytes(data)
    result = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(tmp_path / "small.bpefst"), str(tmp_path / "in.txt"),
                             "--format", "msgpack", "-o", str(tmp_path / "out.msgpack")], capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    peak_mb = int(result.stderr.decode().split()[-1]) / 1024
    assert peak_mb < 150, peak_mb
    ids = [i for arr in msgpack.Unpacker(open(tmp_path / "out.msgpack", "rb"), max_array_len=1 << 30) for i in arr]
    assert ids == Tokenizer(model).encode(data.decode())


def test_held_run_gives_back_the_text_it_counted() -> None:
    """HeldRun against the text itself: random whitespace (runs of one character and mixes,
    no line breaks) added in random pieces comes back whole from ``pieces`` (each at most
    ``size``) and ``tail``; what follows the first other character is kept in ``after``."""
    from bpefst.pipeline.held_runs import HeldRun

    rng = random.Random(7)
    for _ in range(300):
        runs = rng.randint(1, 12)
        text = "".join(rng.choice([" ", "\t", "\u00a0", "\u3000"]) * rng.choice([1, 2, 5, 40]) for _ in range(runs))
        rest = rng.choice(["", "b", "\n ", "\r\n", "<|e"])
        run, at = HeldRun(), 0
        while at < len(text + rest):
            step = rng.randint(1, 9)
            run.add((text + rest)[at : at + step])
            at += step
        size = rng.randint(1, 30)
        pieces = list(run.pieces(size))
        assert "".join(pieces) == text and run.length == len(text) and run.after == rest
        assert all(0 < len(p) <= size for p in pieces) and all(len(p) == size for p in pieces[:-1])
        assert run.tail(size) == text[-size:]


@pytest.mark.parametrize("fmt", ["ids", "msgpack"])
def test_ids_of_released_whitespace_reach_the_writer_in_order(fmt: str, monkeypatch) -> None:
    """``tokenize_stream`` hands the ids of a released run to its writer in batches (the
    encoder's ``sink``) between the ids returned by ``feed``: with limits and batches of a
    few, in both output formats, the output is the reference encoder's ids, in order."""
    from bpefst.pipeline import incremental

    model = random_byte_model(8, alphabet=b"ab !\n", num_merges=20, pattern=PRESETS["cl100k"])
    monkeypatch.setattr(IncrementalEncoder, "long_text", 16)
    monkeypatch.setattr(IncrementalEncoder, "long_chunk", 4)
    monkeypatch.setattr(IncrementalEncoder, "held_piece", 3)
    monkeypatch.setattr(incremental, "SPILL", 5)
    for text in ("ab\n" + " " * 300 + "b a", "a!\n" + " " * 200 + "\n\n" + " " * 100 + "ab", "b\n" + " " * 250):
        out = io.BytesIO()
        tokenize_stream(Tokenizer(model), io.BytesIO(text.encode()), out, fmt, set(), set(), block_size=7)
        if fmt == "ids":
            got = [int(i) for i in out.getvalue().split()]
        else:
            got = [i for arr in msgpack.Unpacker(io.BytesIO(out.getvalue())) for i in arr]
        assert got == ReferenceEncoder(model).encode(text), text[:4]
