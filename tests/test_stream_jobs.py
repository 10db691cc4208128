"""``--jobs``: forked workers fed raw byte pieces (:mod:`bpefst.pipeline.stream_jobs`, :func:`~bpefst.pipeline.forking.map_ordered`).

Oracles: tiktoken (ids of the whole text), the ``regex`` module (pre-tokenization
of the whole equals that of the pieces at every byte cut), Python's UTF-8 codec
(pieces decode to the pieces of the decoded whole), the single-process stream
(byte-identical output, identical error messages) and a plain ``map``.
"""

from __future__ import annotations

import io
import json
import os
import random

import msgpack
import pytest
import regex

from bpefst.errors import BpefstError, DisallowedSpecialError
from bpefst.pipeline.documents import tokenize_documents
from bpefst.pipeline.encoder import Tokenizer
from bpefst.pipeline.forking import map_in_threads, map_ordered
from bpefst.pipeline.stream_jobs import PieceReader, StretchReader, first_byte_cut, last_byte_cut
from bpefst.pipeline.tokenize import tokenize_stream
from bpefst.tokenizer import PRESETS
from bpefst.tokenizer.safe_cuts import cut_rule_for
from conftest import bpefst_encoder, corpus_prefix, require_shared, tiktoken_oracle
from small_models import random_char_model

# pieces of text around line feeds: ASCII, non-ASCII letters and spaces (U+3000, U+00A0, U+0085), slashes
_PIECES = ["a", "Z", "7", " ", "\n", "\n", "\r\n", "\t", ".", "/", "%", "é", "日本", "\u3000", "\u00a0", "\u0085", "'s", "!"]
_BAD_BYTES = [b"\x80", b"\xe2\x82", b"\xff", b"\xc3"]  # stray continuation, truncated sequences, never-valid bytes


def _random_bytes(rng: random.Random, length: int) -> bytes:
    parts = []
    for _ in range(length):
        parts.append(rng.choice(_BAD_BYTES) if rng.random() < 0.08 else rng.choice(_PIECES).encode())
    return b"".join(parts)


class _OddReads(io.RawIOBase):
    """A stream that hands out its bytes ``size`` at a time (a pipe whose writes split characters)."""

    def __init__(self, data: bytes, size: int):
        self._data, self._size, self._at = data, size, 0

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        block = self._data[self._at : self._at + min(self._size, n if n > 0 else self._size)]
        self._at += len(block)
        return block

    read = read1


def _run(tok: Tokenizer, data: bytes, fmt: str, jobs: int, allowed=frozenset(), disallowed=frozenset(), piece=6000, read=None) -> bytes:
    out = io.BytesIO()
    stream = _OddReads(data, read) if read else io.BytesIO(data)
    tokenize_stream(tok, stream, out, fmt, allowed, disallowed, jobs=jobs, piece_size=piece)
    return out.getvalue()


@pytest.mark.parametrize("preset", ["gpt2", "cl100k", "o200k"])
def test_byte_cuts_keep_decoding_and_pretokenization(preset: str) -> None:
    """Every byte cut splits the decoded text where the preset's regex splits it too (brute force)."""
    compiled = regex.compile(PRESETS[preset])
    rule = cut_rule_for(PRESETS[preset], {})
    rng = random.Random(22)
    seen = 0
    for _ in range(1500):
        data = _random_bytes(rng, rng.randint(1, 30))
        whole = data.decode("utf-8", "surrogateescape")
        cuts = [c for c in range(len(data) + 1) if last_byte_cut(data, rule, c, c) == c]
        for c in cuts:
            left, right = data[:c].decode("utf-8", "surrogateescape"), data[c:].decode("utf-8", "surrogateescape")
            assert left + right == whole, (data, c)
            assert compiled.findall(whole) == compiled.findall(left) + compiled.findall(right), (data, c)
            seen += 1
        # the last cut in a range and the first after a position are the extremes of that list
        lo, hi = rng.randint(0, len(data)), rng.randint(0, len(data))
        inside = [c for c in cuts if lo <= c <= hi]
        assert last_byte_cut(data, rule, lo, hi) == (inside[-1] if inside else None)
        after = [c for c in cuts if c >= lo]
        assert first_byte_cut(data, rule, lo) == (after[0] if after else None)
    assert seen > 200  # the generator does produce cuts to check


def test_piece_reader_cuts_into_pieces_that_reassemble() -> None:
    """Odd-sized reads, pieces of about the asked size, each cut at a byte cut, together the input."""
    rng = random.Random(7)
    data = _random_bytes(rng, 40_000)
    rule = cut_rule_for(PRESETS["cl100k"], {})
    reader = PieceReader(_OddReads(data, 997), rule, piece_size=5000)
    tasks = []
    try:
        while True:
            try:
                task = reader.take()
            except StopIteration:
                break
            if task is not None:
                tasks.append(task)
    finally:
        reader.close()
    offsets = [int.from_bytes(t[:8], "little") for t in tasks]
    pieces = [t[8:] for t in tasks]
    assert b"".join(pieces) == data and len(pieces) > 10
    assert offsets == [sum(map(len, pieces[:k])) for k in range(len(pieces))]
    for offset, piece in zip(offsets[1:], pieces[1:]):
        assert last_byte_cut(data, rule, offset, offset) == offset


def _mixed_text() -> str:
    """Multilingual and English lines, specials, and lines that begin with a non-ASCII letter or space."""
    rng = random.Random(3)
    lines = (corpus_prefix("fortunes", 120_000) + corpus_prefix("pydocs", 120_000)).splitlines(keepends=True)
    out = []
    for k, line in enumerate(lines):
        out.append(line)
        if k % 97 == 0:
            out.append(rng.choice(["<|endoftext|>", "日本語\n", "\u3000x\n", "Ünïcode <|fim_prefix|>\n", "/slash\n"]))
    return "".join(out)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_jobs_output_is_tiktokens_ids_and_byte_identical_to_one_job(name: str) -> None:
    require_shared()
    tok = Tokenizer(bpefst_encoder(name).model)
    text = _mixed_text()
    data = text.encode()
    oracle = tiktoken_oracle(name)
    allowed = frozenset(tok.model.specials)
    # reads of 4099 bytes split multi-byte characters: the pieces must not
    assert any(0x80 <= data[k] < 0xC0 for k in range(4099, len(data), 4099))
    expected = oracle.encode(text, allowed_special="all")
    single = _run(tok, data, "ids", 1, allowed)
    assert list(map(int, single.split())) == expected
    for jobs in (2, 3):
        assert _run(tok, data, "ids", jobs, allowed, read=4099) == single, jobs
    assert _run(tok, data, "tokens", 2, allowed) == _run(tok, data, "tokens", 1, allowed)
    packed = _run(tok, data, "msgpack", 2, allowed)
    assert [i for array in msgpack.Unpacker(io.BytesIO(packed)) for i in array] == expected
    lines = _run(tok, data, "jsonl", 2, allowed, piece=3000)
    assert lines == _run(tok, data, "jsonl", 1, allowed)
    assert [json.loads(line) for line in lines.splitlines()] == [oracle.encode(line.decode(), allowed_special="all")
                                                                for line in data.splitlines()]


def test_jobs_carry_invalid_utf8_like_one_job() -> None:
    """Byte-level input with invalid UTF-8 next to the cuts: the same ids as one process and the reference encoder."""
    require_shared()
    enc = bpefst_encoder("cl100k_base")
    tok = Tokenizer(enc.model)
    rng = random.Random(11)
    data = b"".join(_random_bytes(rng, 40) + b"\nline\n" for _ in range(3000))
    single = _run(tok, data, "ids", 1)
    assert list(map(int, single.split())) == enc.encode(data.decode("utf-8", "surrogateescape"))
    assert _run(tok, data, "ids", 2, piece=2000, read=333) == single


def test_jobs_errors_name_the_positions_one_job_names() -> None:
    require_shared()
    tok = Tokenizer(bpefst_encoder("cl100k_base").model)
    text = corpus_prefix("fortunes", 200_000)
    late = text + "\nok <|endoftext|> and more\n" + text[:5000]
    disallowed = frozenset(tok.model.specials)
    for content, fmt in ((late, "ids"), (late, "jsonl")):
        with pytest.raises(BpefstError) as one:
            _run(tok, content.encode(), fmt, 1, disallowed=disallowed)
        with pytest.raises(BpefstError) as two:
            _run(tok, content.encode(), fmt, 2, disallowed=disallowed, piece=4000)
        assert str(two.value) == str(one.value), fmt
    with pytest.raises(DisallowedSpecialError) as found:
        _run(tok, late.encode(), "ids", 2, disallowed=disallowed, piece=4000)
    assert found.value.position == late.index("<|endoftext|>")  # oracle: str.index
    line = late[: late.index("<|endoftext|>")].count("\n") + 1
    assert f"line {line}:" in str(two.value)


def test_jobs_invalid_utf8_for_a_character_level_model_names_its_byte_offset() -> None:
    tok = Tokenizer(random_char_model(1))
    data = b"ab c\nabc\n" * 3000 + b"ab \xff c\n" + b"abc\n" * 100
    bad = data.index(b"\xff")  # oracle: bytes.index
    for jobs in (1, 2):
        with pytest.raises(BpefstError, match=f"byte offset {bad};"):
            _run(tok, data, "ids", jobs, piece=500)


@pytest.mark.parametrize("mapper", [map_ordered, map_in_threads])
def test_map_ordered_returns_results_in_order_and_raises_in_turn(mapper) -> None:
    """Against a plain map: long results (beyond a pipe's buffer) and short, errors after the results before
    them; for threads, tasks that take different times (they finish out of order)."""
    import time

    rng = random.Random(1)
    tasks = [rng.randbytes(rng.choice([1, 100, 70_000, 3_000_000])) for _ in range(30)]

    def handler(task: bytes) -> bytes:
        time.sleep(rng.random() / 1000 if mapper is map_in_threads else 0)
        return task[::-1] * 2

    assert list(mapper(handler, tasks, 3)) == [task[::-1] * 2 for task in tasks]

    def failing(task: bytes) -> bytes:
        if task == b"bad":
            raise BpefstError("bad task")
        return task

    got = []
    with pytest.raises(BpefstError, match="bad task"):
        for result in mapper(failing, [b"a", b"b", b"bad", b"c"] + [b"d"] * 20, 2):
            got.append(result)
    assert got == [b"a", b"b"]


def test_map_ordered_reports_a_worker_that_died() -> None:
    with pytest.raises(BpefstError, match="worker process died"):
        list(map_ordered(lambda task: os._exit(3), [b"x", b"y"], 2))
    try:  # every worker was reaped
        assert os.waitpid(-1, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        pass


class _Collect:
    def __init__(self):
        self.documents, self.ids, self.out = 0, 0, []

    def begin_document(self):
        self.out.append([])

    def write(self, ids):
        self.out[-1].extend(ids)
        self.ids += len(ids)

    def end_document(self):
        self.documents += 1


def test_documents_in_workers_equal_tiktoken_per_document(monkeypatch) -> None:
    """Many documents, one long enough to be cut into segments, batches small enough to need many tasks."""
    require_shared()
    import bpefst.pipeline.documents as documents

    monkeypatch.setattr(documents, "BATCH_CHARS", 20_000)
    tok = Tokenizer(bpefst_encoder("cl100k_base").model)
    oracle = tiktoken_oracle("cl100k_base")
    text = corpus_prefix("fortunes", 300_000)
    docs = [text[k : k + 700] for k in range(0, 60_000, 700)] + ["", text, "\udce2 lone \udc80"]
    results = {}
    # with the compiled core, jobs > 1 encodes on threads; the pure engine (and allowed specials) on forked workers
    pure = Tokenizer(tok.model, engine="pure")
    for jobs, encoder in ((1, tok), (2, tok), (3, tok), ("pure 2", pure)):
        sink = _Collect()
        tokenize_documents(encoder, ([d[k : k + 999] for k in range(0, len(d), 999)] or [""] for d in docs), sink,
                           jobs if isinstance(jobs, int) else 2)
        results[jobs] = sink.out
    assert results[2] == results[1] == results[3] == results["pure 2"]
    assert results[2][:-1] == [oracle.encode_ordinary(d) for d in docs[:-1]]
    # a document read from bytes carries invalid UTF-8 as lone surrogates, which stay bytes (the raw-byte mode;
    # the public encode_ordinary reads lone surrogates as tiktoken does, as U+FFFD)
    assert results[2][-1] == tok.encode_bytes(docs[-1].encode("utf-8", "surrogateescape"), errors="surrogateescape")
    assert results[2][-1] == bpefst_encoder("cl100k_base").encode_ordinary(docs[-1])


def test_tokens_format_names_each_tokenizers_own_tokens() -> None:
    """Two tokenizers in one process whose id 256 means different tokens (the token-text cache was once per process)."""
    data = b"ab cd\n" * 50
    for pair in ((b"a", b"b"), (b"c", b"d")):
        vocab = {b: bytes([b]) for b in range(256)} | {256: pair[0] + pair[1]}
        tok = Tokenizer.from_vocab_merges(vocab, [pair])
        ids = tok.encode(data.decode())
        assert 256 in ids
        for jobs in (1, 2):
            lines = _run(tok, data, "tokens", jobs, piece=100).decode().splitlines()
            assert [json.loads(line) for line in lines] == [tok.decode_bytes([i]).decode() for i in ids], (pair, jobs)


@pytest.mark.parametrize("mapper", [map_ordered, map_in_threads])
def test_map_ordered_raises_a_source_error_after_the_results_before_it(mapper) -> None:
    def tasks():
        yield from (b"a", b"b", b"c")
        raise BpefstError("cannot read on")

    got = []
    with pytest.raises(BpefstError, match="cannot read on"):
        for result in mapper(lambda task: task * 2, tasks(), 2):
            got.append(result)
    assert got == [b"aa", b"bb", b"cc"]



def test_jobs_write_a_slow_producers_lines_before_the_input_ends(tmp_path) -> None:
    """A pipe that stays open: the workers' ids come out as lines arrive (the reader never waits for a full piece)."""
    import select
    import subprocess
    import sys

    from bpefst.tokenizer import save_tokenizer
    from small_models import random_byte_model

    path = tmp_path / "small.bpefst"
    model = random_byte_model(3, alphabet=b"abc \n", num_merges=20, pattern=PRESETS["gpt2"])
    save_tokenizer(model, str(path), "bpefst")
    proc = subprocess.Popen([sys.executable, "-m", "bpefst", "tokenize", str(path), "--jobs", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        proc.stdin.write(b"abc cab\nbca abc\n")  # the second line makes the first one's end a cut
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no output while the input is still open"
        first = os.read(proc.stdout.fileno(), 1000)
        assert list(map(int, first.split())) == Tokenizer(model).encode("abc cab\n")
    finally:
        proc.stdin.close()
        proc.wait(60)
    assert proc.returncode == 0


# -- long stretches without a byte cut: tokenized by the parent, as one process does ----------------------

STRETCH = 4096  # the tests' limit (the default is megabytes): every stretch below is several times longer


class _Spy:
    """Records, in the parent, the largest piece handed to the workers and how many stretches it tokenized itself."""

    def __init__(self, monkeypatch):
        import bpefst.pipeline.stream_jobs as stream_jobs

        self.largest, self.stretches = 0, 0
        take, in_this_process = stream_jobs.PieceReader.take, stream_jobs._in_this_process

        def spied_take(reader):
            task = take(reader)
            if task is not None:
                self.largest = max(self.largest, len(task) - 8)
            return task

        def spied_in_this_process(*args):
            self.stretches += 1
            return in_this_process(*args)

        monkeypatch.setattr(stream_jobs.PieceReader, "take", spied_take)
        monkeypatch.setattr(stream_jobs, "_in_this_process", spied_in_this_process)


def _run_stretched(tok: Tokenizer, data: bytes, fmt: str, jobs: int, allowed=frozenset(), disallowed=frozenset(),
                   read: int = 997) -> bytes:
    out = io.BytesIO()
    tokenize_stream(tok, _OddReads(data, read), out, fmt, allowed, disallowed, jobs=jobs, piece_size=1000,
                    stretch_size=STRETCH)
    return out.getvalue()


def _stretchy_text() -> str:
    """Ordinary lines around stretches without a byte cut: a line of prose at the start and at the end (no
    line feed after it), spaces, lines that begin with a space, lines that begin with non-ASCII letters,
    a special token inside a stretch."""
    prose = corpus_prefix("pydocs", 60_000).replace("\r", " ").replace("\n", " ")
    lines = corpus_prefix("fortunes", 40_000).splitlines(keepends=True)
    return "".join([
        prose[:12_000], "\n", *lines[:60], " " * 20_000, "x\n", *lines[60:120],
        " ", " ".join(lines[120:300]),  # every line feed followed by a space
        "日本語 " * 2000, "\n", *lines[300:330],
        prose[12_000:20_000], "<|endoftext|>", prose[20_000:28_000], "\n",
        "\u3000" * 6000, "\n\u3000" * 3000, "\n", *lines[330:360], prose[28_000:40_000],
    ])


def test_stretch_reader_stops_at_the_first_byte_cut_whatever_the_reads() -> None:
    """Random bytes split into a head and odd-sized reads: the blocks are the input up to its first byte
    cut after the start (brute force: ``last_byte_cut`` at every position of the whole input), ``rest``
    and what the stream still holds are the input after it, ``offset`` is the cut's."""
    rng = random.Random(9)
    for rule in ("single-newline", "newline", "newline-not-slash", "line"):
        for _ in range(300):
            data = _random_bytes(rng, rng.randint(1, 60))
            cuts = [c for c in range(1, len(data)) if last_byte_cut(data, rule, c, c) == c]
            split = rng.randint(1, len(data))
            stream = _OddReads(data[split:], rng.randint(1, 5))
            reader = StretchReader(bytearray(data[:split]), stream, False, rule, 100, block=rng.randint(1, 7))
            blocks = list(reader)
            assert all(0 < len(b) <= reader.block for b in blocks)
            end = cuts[0] if cuts else len(data)
            assert b"".join(blocks) == data[:end], (rule, data, split)
            assert reader.offset == 100 + end
            if cuts:
                assert reader.rest + b"".join(iter(stream.read1, b"")) == data[end:]
            else:
                assert reader.rest is None and reader.eof


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_long_stretches_without_a_cut_give_one_jobs_output_in_every_format(name: str, monkeypatch) -> None:
    """Stretches longer than the limit go to the parent (the spy sees them, and no piece beyond the limit
    and one read); the output is byte for byte one process's (msgpack: the same ids), the ids tiktoken's,
    per line for jsonl."""
    require_shared()
    tok = Tokenizer(bpefst_encoder(name).model)
    oracle = tiktoken_oracle(name)
    text = _stretchy_text()
    data = text.encode()
    allowed = frozenset(tok.model.specials)
    spy = _Spy(monkeypatch)
    single = _run_stretched(tok, data, "ids", 1, allowed)
    assert list(map(int, single.split())) == oracle.encode(text, allowed_special="all")
    assert _run_stretched(tok, data, "ids", 2, allowed) == single
    assert spy.stretches == 5 and 0 < spy.largest <= STRETCH + 997, (spy.stretches, spy.largest)
    for read in (4096, 1 << 20):  # reads that end on cuts and reads beyond the limit
        assert _run_stretched(tok, data, "ids", 3, allowed, read=read) == single, read
    assert _run_stretched(tok, data, "tokens", 2, allowed) == _run_stretched(tok, data, "tokens", 1, allowed)
    packed = _run_stretched(tok, data, "msgpack", 2, allowed)  # arrays cut elsewhere than one process's, as before
    assert [i for array in msgpack.Unpacker(io.BytesIO(packed)) for i in array] == list(map(int, single.split()))
    lines = _run_stretched(tok, data, "jsonl", 2, allowed)
    assert lines == _run_stretched(tok, data, "jsonl", 1, allowed)
    assert [json.loads(line) for line in lines.splitlines()] == [oracle.encode(line.decode(), allowed_special="all")
                                                                for line in data.splitlines()]


def test_long_stretches_on_small_models_equal_the_reference_encoder() -> None:
    """No shared data: random text with long runs (spaces, one letter, line feeds before spaces, \\r-only
    lines, invalid UTF-8), every preset's cut rule, jobs 2 with a tiny limit: the reference encoder's ids."""
    from bpefst.tokenizer import ReferenceEncoder
    from small_models import random_byte_model

    rng = random.Random(5)
    runs = [b" ", b"a", b"\n ", b"ab\r", b"\xff", "é".encode(), b"a b "]
    for preset in ("gpt2", "cl100k", "o200k"):
        model = random_byte_model(7, alphabet=b"ab \n", num_merges=20, pattern=PRESETS[preset])
        tok, ref = Tokenizer(model), ReferenceEncoder(model)
        parts = []
        for _ in range(12):
            parts.append(_random_bytes(rng, rng.randint(0, 400)))
            parts.append(rng.choice(runs) * rng.randint(1, 6000))
        data = b"".join(parts)
        whole = data.decode("utf-8", "surrogateescape")
        got = _run_stretched(tok, data, "ids", 2, read=rng.choice([333, 4096, 5000]))
        assert list(map(int, got.split())) == ref.encode(whole), preset
        lines = _run_stretched(tok, data, "jsonl", 2)
        assert [json.loads(line) for line in lines.splitlines()] == [
            ref.encode(line.decode("utf-8", "surrogateescape")) for line in data.splitlines()], preset


def test_errors_inside_a_long_stretch_name_the_positions_one_job_names() -> None:
    """A disallowed special token inside a stretch, and after one (character position: str.index; jsonl line
    number: counted lines), and invalid UTF-8 inside a stretch for a character-level model (bytes.index)."""
    require_shared()
    tok = Tokenizer(bpefst_encoder("cl100k_base").model)
    disallowed = frozenset(tok.model.specials)
    text = corpus_prefix("fortunes", 30_000)
    prose = corpus_prefix("pydocs", 30_000).replace("\n", " ")
    inside = text + "\n" + prose[:15_000] + " <|endoftext|> " + prose[15_000:] + "\n" + text
    after = text + " " * 9000 + "\nplain line\n" + prose + "\nok <|endoftext|>\n" + text
    for content in (inside, after):
        for fmt in ("ids", "jsonl"):
            with pytest.raises(BpefstError) as one:
                _run_stretched(tok, content.encode(), fmt, 1, disallowed=disallowed)
            with pytest.raises(BpefstError) as two:
                _run_stretched(tok, content.encode(), fmt, 2, disallowed=disallowed)
            assert str(two.value) == str(one.value), fmt
            if fmt == "ids":
                assert two.value.position == content.index("<|endoftext|>")
            else:
                assert f"line {content[: content.index('<|endoftext|>')].count(chr(10)) + 1}:" in str(two.value)
    char_tok = Tokenizer(random_char_model(1))
    for data in (b"abc\n" * 2000 + b"a b c " * 3000 + b"\xff" + b"a b c " * 1000 + b"\nabc\n",
                 b"abc\n" * 2000 + b"\n " * 5000 + b"\n" + b"ab \xe2\x82 c\n" + b"abc\n" * 10):
        bad = data.index(b"\xff") if b"\xff" in data else data.index(b"\xe2")
        for jobs in (1, 2):
            with pytest.raises(BpefstError, match=f"byte offset {bad};"):
                _run_stretched(char_tok, data, "ids", jobs)
