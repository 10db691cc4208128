"""Count tables (issue 19): ``bpefst count`` + ``bpefst train --from-counts``.

Oracles:

* training on the whole corpus (``train_bpe``, itself checked against the CS336
  reference merges and HF's BpeTrainer in test_train.py), merge by merge;
* HF ``tokenizers``' BpeTrainer on the whole corpus, for ``--tie-break hf``;
* the whole corpus's chunk table, for the sum of the parts' tables.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import msgpack
import pytest

from bpefst.errors import BpefstError
from bpefst.tokenizer import load_tokenizer
from bpefst.tokenizer.byte_unicode import decode_text
from bpefst.training import train_bpe
from bpefst.training.counts import (
    ChunkCounts,
    CountSettings,
    count_files,
    counts_from_bytes,
    counts_to_bytes,
    load_counts,
    save_counts,
    sum_counts,
    train_on_counts,
)
from cli_runner import assert_user_error, run
from conftest import ROOT, require_shared

EOT = "<|endoftext|>"


def halves(data: bytes, cut_at: bytes) -> tuple[bytes, bytes]:
    """The corpus cut in two at the occurrence of ``cut_at`` nearest its middle (a document boundary)."""
    middle = len(data) // 2
    after, before = data.find(cut_at, middle), data.rfind(cut_at, 0, middle)
    cut = after if after >= 0 and (before < 0 or after - middle < middle - before) else before
    assert 0 < cut < len(data)
    return data[:cut], data[cut:]


def corpus_and_cut(name: str) -> tuple[bytes, bytes]:
    if name == "cs336":
        # one sentence per line and no special tokens: cut before a newline, between two sentences
        return (require_shared() / "cs336" / "corpus.en").read_bytes(), b"\n"
    return (ROOT / "fixtures" / "corpus.txt").read_bytes(), EOT.encode()


def hf_merges(path: Path, vocab_size: int) -> list[tuple[bytes, bytes]]:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOT], initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train([str(path)], trainer)
    return [tuple(decode_text(p) for p in m) for m in json.loads(tok.to_str())["model"]["merges"]]


def merge_tokens(model) -> list[tuple]:
    return [(model.vocab[a], model.vocab[b]) for a, b in model.merges]


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
@pytest.mark.parametrize("name", ["cs336", "fixture"])
def test_two_halves_counted_apart_train_like_the_whole(tmp_path, name, tie_break):
    data, cut_at = corpus_and_cut(name)
    first, second = halves(data, cut_at)
    (tmp_path / "whole.txt").write_bytes(data)
    (tmp_path / "a.txt").write_bytes(first)
    (tmp_path / "b.txt").write_bytes(second)
    for part in ("a", "b"):
        result = run("count", str(tmp_path / f"{part}.txt"), "--special-token", EOT, "--tie-break", tie_break, "-o", str(tmp_path / f"{part}.counts"))
        assert result.returncode == 0, result.stderr
    result = run("train", "--from-counts", str(tmp_path / "a.counts"), str(tmp_path / "b.counts"), "--vocab-size", "600", "-o", str(tmp_path / "ab.bpefst"))
    assert result.returncode == 0, result.stderr
    from_counts = load_tokenizer(tmp_path / "ab.bpefst")
    whole = train_bpe([str(tmp_path / "whole.txt")], 600, special_tokens=[EOT], tie_break=tie_break)
    assert merge_tokens(from_counts) == merge_tokens(whole)
    assert from_counts == whole
    if tie_break == "hf" and name == "cs336":  # HF's trainer does not split off specials; corpus.en has none
        assert merge_tokens(from_counts) == hf_merges(tmp_path / "whole.txt", 600)


def test_parts_tables_sum_to_the_whole_table(tmp_path):
    data = (ROOT / "fixtures" / "corpus.txt").read_bytes()
    settings = CountSettings.for_training(None, [EOT])
    pieces = data.split(EOT.encode())
    paths = []
    for k, piece in enumerate(pieces):  # one file per document, the specials dropped as counting drops them
        path = tmp_path / f"{k}.txt"
        path.write_bytes(piece)
        paths.append(str(path))
    (tmp_path / "whole.txt").write_bytes(data)
    whole = count_files([str(tmp_path / "whole.txt")], settings, jobs=1)
    parts = sum_counts((p, count_files([p], settings, jobs=1)) for p in paths)
    assert parts.counts == whole.counts
    assert parts.corpus_bytes == len(data) - EOT.encode().__len__() * (len(pieces) - 1)


def test_artifact_round_trip_keeps_bytes_counts_and_settings(tmp_path):
    counts = Counter({"hello": 3, " world": 1 << 40, "\udcff\udcfe": 7, "x" * 70_000: 1, "東京": 2})
    table = ChunkCounts(CountSettings("custom|regex", (EOT, "<pad>"), "bytes", True), counts, 12345)
    save_counts(table, tmp_path / "t.counts")
    loaded = load_counts(tmp_path / "t.counts")
    assert loaded.counts == counts and loaded.settings == table.settings and loaded.corpus_bytes == 12345
    assert counts_from_bytes(counts_to_bytes(table)).counts == counts
    document = msgpack.unpackb((tmp_path / "t.counts").read_bytes())
    assert document["kind"] == "counts"
    body = document["body"]
    assert body["pattern"] == "custom|regex" and body["specials"] == [EOT, "<pad>"] and body["line_mode"] is True
    assert body["length_type"] == "I" and body["count_type"] == "Q"  # 70,000 bytes and 2**40 need them
    small = ChunkCounts(CountSettings(None), Counter({"ab": 3, "cd": 255}))
    body = msgpack.unpackb(counts_to_bytes(small))["body"]
    assert body["length_type"] == body["count_type"] == "B" and body["chunks"] == b"abcd"
    # the file depends on the counts only, not on the order they were found in
    reordered = ChunkCounts(table.settings, Counter(dict(reversed(list(counts.items())))), 12345)
    assert counts_to_bytes(reordered) == counts_to_bytes(table)


@pytest.mark.parametrize(
    "a,b,fragment",
    [
        (dict(pattern="gpt2"), dict(pattern="cl100k"), "pattern gpt2 vs cl100k"),
        (dict(special_tokens=[EOT]), dict(special_tokens=[]), "special tokens"),
        (dict(alphabet="bytes"), dict(alphabet="chars", pattern="gpt2"), "alphabet bytes vs chars"),
        (dict(tie_break="lexicographic"), dict(tie_break="hf"), "each line on its own"),
    ],
)
def test_tables_counted_differently_are_refused(tmp_path, a, b, fragment):
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text to count\n")
    tables = [(name, count_files([str(corpus)], CountSettings.for_training(**kw), jobs=1)) for name, kw in (("a", a), ("b", b))]
    with pytest.raises(BpefstError, match="cannot sum a and b"):
        sum_counts(tables)
    for name, table in tables:
        save_counts(table, tmp_path / f"{name}.counts")
    result = run("train", "--from-counts", str(tmp_path / "a.counts"), str(tmp_path / "b.counts"), "--vocab-size", "300", "-o", str(tmp_path / "t.bpefst"))
    assert_user_error(result, fragment)
    assert not (tmp_path / "t.bpefst").exists()


def test_specials_may_be_reordered_but_not_changed(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(f"alpha beta<pad>gamma{EOT}delta alpha\n" * 5)
    table = count_files([str(corpus)], CountSettings.for_training(None, [EOT, "<pad>"]), jobs=1)
    model = train_on_counts(table, 270, special_tokens=["<pad>", EOT])
    assert model.specials == {"<pad>": 0, EOT: 1}
    assert model == train_bpe([str(corpus)], 270, special_tokens=["<pad>", EOT])
    with pytest.raises(BpefstError, match="other settings than asked for"):
        train_on_counts(table, 270, special_tokens=[EOT])
    with pytest.raises(BpefstError, match="pattern gpt2 vs cl100k"):
        train_on_counts(table, 270, pattern="cl100k")


def test_character_level_from_counts(tmp_path):
    text = "the quick brown fox jumps over the lazy dog; Über naïve Grüße\n"
    (tmp_path / "a.txt").write_text(text * 3 + "the dog sleeps\n")
    (tmp_path / "b.txt").write_text("Grüße aus Köln\n" + text * 2)
    (tmp_path / "ab.txt").write_bytes((tmp_path / "a.txt").read_bytes() + (tmp_path / "b.txt").read_bytes())
    settings = CountSettings.for_training(None, ["[UNK]"], "chars", "hf")
    tables = [(p, count_files([str(tmp_path / p)], settings, jobs=1)) for p in ("a.txt", "b.txt")]
    model = train_on_counts(sum_counts(tables), 90, end_of_word_suffix="▁")
    whole = train_bpe([str(tmp_path / "ab.txt")], 90, special_tokens=["[UNK]"], alphabet="chars", tie_break="hf", end_of_word_suffix="▁")
    assert model == whole


def test_cli_bad_inputs(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text\n")
    counts = tmp_path / "c.counts"
    assert run("count", str(corpus), "-o", str(counts), "-q").returncode == 0
    info = run("info", str(counts)).stdout.decode()
    assert "kind:                       counts" in info and "distinct_chunks:            3" in info and "corpus_bytes:               10" in info
    assert run("train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "tok.bpefst"), "-q").returncode == 0
    out = str(tmp_path / "t.bpefst")
    assert_user_error(run("train", "--from-counts", str(tmp_path / "tok.bpefst"), "--vocab-size", "300", "-o", out), "expected a counts artifact, found a tokenizer artifact")
    assert_user_error(run("train", "--from-counts", str(corpus), "--vocab-size", "300", "-o", out), "not a bpefst artifact")
    truncated = tmp_path / "cut.counts"
    truncated.write_bytes(counts.read_bytes()[:-5])
    assert_user_error(run("train", "--from-counts", str(truncated), "--vocab-size", "300", "-o", out), "cut.counts")
    assert_user_error(run("train", "--from-counts", str(counts), "--jobs", "2", "--vocab-size", "300", "-o", out), "drop --engine and --jobs")
    assert_user_error(run("train", "--from-counts", str(counts), "--vocab-size", "100", "-o", out), "smaller than the initial vocabulary")
    assert_user_error(run("train", str(corpus), "--address", "auto", "--vocab-size", "300", "-o", out), "--engine ray only")
    assert_user_error(run("count", str(corpus), "--engine", "ray", "--jobs", "2", "-o", str(tmp_path / "j.counts")), "--jobs applies to --engine local")
    assert_user_error(run("count", str(corpus), "--split-size", "4096", "-o", str(tmp_path / "j.counts")), "--engine ray only")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert run("count", str(empty), "-o", str(tmp_path / "e.counts"), "-q").returncode == 0  # an empty part is a part
    assert_user_error(run("train", "--from-counts", str(tmp_path / "e.counts"), "--vocab-size", "300", "-o", out), "the counts are empty")
    assert_user_error(run("count", str(tmp_path / "missing.txt"), "-o", str(tmp_path / "m.counts")), "cannot read")
    assert_user_error(run("count", str(corpus), "-o", str(corpus)), "is also an input")
    assert not Path(out).exists() and not (tmp_path / "m.counts").exists()
    assert corpus.read_text() == "some text\n"


# -- split ranges: what each Ray worker reads -------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bpefst.distributed.counting import count_range  # noqa: E402
from bpefst.tokenizer import PRESETS  # noqa: E402
from bpefst.training.sources import BlockCutter, check_sources, iter_range_blocks, split_ranges  # noqa: E402
from test_train import text_strategy, whole_text_counts  # noqa: E402  (the whole-text oracle of the block counter)


@settings(max_examples=120, deadline=None)
@given(
    parts=st.lists(st.one_of(text_strategy, st.sampled_from([EOT, "<s>", "Ab\nCd ef"])), max_size=10),
    preset=st.sampled_from(["gpt2", "cl100k", "o200k", "whitespace", "none"]),
    line_mode=st.booleans(),
    split_size=st.integers(min_value=1, max_value=60),
    window=st.integers(min_value=1, max_value=40),
)
def test_split_ranges_read_every_byte_once_and_count_like_the_whole(tmp_path_factory, parts, preset, line_mode, split_size, window):
    text = "".join(parts)
    data = text.encode("utf-8")
    path = tmp_path_factory.mktemp("r") / "c.txt"
    path.write_bytes(data)
    specials = [EOT, "<s>"]
    pattern = PRESETS.get(preset)  # none: no pre-tokenization, the text between specials is one chunk
    cutter = BlockCutter(specials, line_mode, pattern is not None)
    # first_cut, reading small windows, agrees with judging every position on the whole file
    safe = [c for c in range(1, len(data)) if cutter._is_safe(data, c)]
    with open(path, "rb") as handle:
        for position in range(len(data) + 1):
            expected = 0 if position == 0 else min([c for c in safe if c >= position] + [len(data)])
            assert cutter.first_cut(handle, position, len(data), window=window) == expected
    ranges = split_ranges(check_sources([str(path)]), split_size)
    pieces = [b"".join(block for _, block in iter_range_blocks(part, cutter, 7)) for part in ranges]
    assert b"".join(pieces) == data
    settings_ = CountSettings(pattern, tuple(specials), "bytes", line_mode)
    total: Counter = Counter()
    for part in ranges:
        total += count_range(part, settings_, 7)[0]
    assert total == whole_text_counts(text, pattern, specials, line_mode)
    local = count_files([str(path)], settings_, jobs=1, block_size=5).counts  # one machine's blocks, cut the same way
    assert local == total
