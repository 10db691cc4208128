"""Training (issue 3): exactness against the CS336 reference, HF's BpeTrainer and the naive trainer.

Oracles:

* ``../shared/data/cs336/train-bpe-reference-{merges.txt,vocab.json}``: the
  CS336 reference trainer's output on ``corpus.en`` (vocab 500, ``<|endoftext|>``);
* HF ``tokenizers``' ``BpeTrainer`` (ByteLevel pre-tokenizer, or Whitespace for
  character-level), for ``--tie-break hf``;
* :mod:`bpefst.training.naive`, the recount-everything trainer, merge by merge
  on random corpora (hypothesis);
* whole-text pre-tokenization with :class:`bpefst.tokenizer.Pretokenizer`, for
  the streamed, block-cut, parallel counting.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.errors import BpefstError
from bpefst.tokenizer import PRESETS, Pretokenizer, ReferenceEncoder, load_tokenizer
from bpefst.tokenizer.byte_unicode import decode_text
from bpefst.training import count_corpus, initial_vocabulary, train_bpe, train_from_counts, words_from_counts
from bpefst.training.counting import ChunkCounter, count_chunks
from bpefst.training.merging import learn_merges
from bpefst.training.naive import naive_merges
from bpefst.training.sources import check_sources
from conftest import corpus_prefix, require_shared

EOT = "<|endoftext|>"
tokenizers = pytest.importorskip("tokenizers")


def merge_tokens(model) -> list[tuple]:
    return [(model.vocab[a], model.vocab[b]) for a, b in model.merges]


def write(tmp_path: Path, name: str, data: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return str(path)


# -- the CS336 reference -----------------------------------------------------------


def test_cs336_reference_merges_and_vocab():
    data = require_shared() / "cs336"
    model = train_bpe([str(data / "corpus.en")], 500, special_tokens=[EOT])
    lines = (data / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    expected = [tuple(decode_text(part) for part in line.split(" ")) for line in lines if line]
    assert merge_tokens(model) == expected
    reference_vocab = json.loads((data / "train-bpe-reference-vocab.json").read_text(encoding="utf-8"))
    expected_set = {key.encode() if key == EOT else decode_text(key) for key in reference_vocab}
    assert set(model.vocab.values()) | {s.encode() for s in model.specials} == expected_set
    # ids as in 003: specials first, then the 256 bytes, then merges in order
    assert model.specials == {EOT: 0}
    assert [model.vocab[i] for i in range(1, 257)] == [bytes([b]) for b in range(256)]
    assert model.merge_results == list(range(257, 500))


def test_cs336_same_result_in_parallel_with_small_blocks():
    data = require_shared() / "cs336"
    whole = train_bpe([str(data / "corpus.en")], 500, special_tokens=[EOT], jobs=1)
    blocks = train_bpe([str(data / "corpus.en")], 500, special_tokens=[EOT], jobs=2, block_size=4096)
    assert blocks == whole


# -- HF tokenizers' BpeTrainer -----------------------------------------------------


def hf_byte_level_merges(path: str, vocab_size: int, specials=(EOT,)) -> list[tuple[bytes, bytes]]:
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train([path], trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(decode_text(p) for p in (m.split(" ") if isinstance(m, str) else m)) for m in merges]


@pytest.mark.parametrize("name,vocab_size", [("pydocs", 3000), ("fortunes", 2000)])
def test_hf_tie_break_matches_bpe_trainer_on_2mb(tmp_path, name, vocab_size):
    path = write(tmp_path, f"{name}.txt", corpus_prefix(name))
    model = train_bpe([path], vocab_size, special_tokens=[EOT], tie_break="hf")
    assert merge_tokens(model) == hf_byte_level_merges(path, vocab_size)


SMALL_CORPORA = [
    "hello\n\n\n" * 50,  # HF feeds line by line: two newlines are never merged
    "aaaa aaa aa a\n" * 7 + "abab ba ab\n" * 5,
    "Grüße, naïve café! 東京 東京都 Москва Москвы\n" * 9 + "  indented\n\tx\r\n" * 4,
    "x" * 300 + "\n" + "xy" * 120,
]


@pytest.mark.parametrize("corpus", SMALL_CORPORA)
def test_hf_tie_break_small_corpora(tmp_path, corpus):
    path = write(tmp_path, "c.txt", corpus)
    for vocab_size in (260, 300, 400):
        model = train_bpe([path], vocab_size, special_tokens=[EOT], tie_break="hf", jobs=1)
        assert merge_tokens(model) == hf_byte_level_merges(path, vocab_size)


def test_hf_never_merges_newlines_across_lines(tmp_path):
    path = write(tmp_path, "c.txt", "hello\n\n\n" * 50)
    hf_model = train_bpe([path], 300, tie_break="hf")
    assert (b"\n", b"\n") not in merge_tokens(hf_model)
    cs336_model = train_bpe([path], 300)
    assert (b"\n", b"\n") in merge_tokens(cs336_model)


def test_hf_min_frequency(tmp_path):
    corpus = "the cat sat on the mat with the hat\n" * 3 + "zebra\n"
    path = write(tmp_path, "c.txt", corpus)
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=1000, min_frequency=3, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train([path], trainer)
    expected = [tuple(decode_text(p) for p in m) for m in json.loads(tok.to_str())["model"]["merges"]]
    model = train_bpe([path], 1000, min_frequency=3, tie_break="hf")
    assert merge_tokens(model) == expected


def test_hf_character_level_without_suffix(tmp_path):
    corpus = "the quick brown fox jumps over the lazy dog; the dog sleeps.\n" * 5 + "Über naïve Grüße\n" * 3
    path = write(tmp_path, "c.txt", corpus)
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train([path], tokenizers.trainers.BpeTrainer(vocab_size=120, special_tokens=["[UNK]"], show_progress=False))
    doc = json.loads(tok.to_str())["model"]
    model = train_bpe([path], 120, special_tokens=["[UNK]"], alphabet="chars", tie_break="hf")
    assert [tuple(m) for m in doc["merges"]] == merge_tokens(model)
    assert doc["vocab"] == {**{t: i for i, t in model.vocab.items()}, "[UNK]": 0}


def test_trained_hf_output_loads_in_tokenizers(tmp_path):
    corpus = "Byte-level BPE, trained by bpefst; loaded by tokenizers. Ünïcödé too!\n" * 20
    path = write(tmp_path, "c.txt", corpus)
    out = tmp_path / "tok.json"
    result = CliRunner().invoke(_cli(), ["train", path, "--vocab-size", "320", "--special-token", EOT, "--format", "hf", "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    hf = tokenizers.Tokenizer.from_file(str(out))
    ours = ReferenceEncoder(load_tokenizer(out))
    for text in ["Byte-level BPE, trained", f"loaded by{EOT} tokenizers!", "Ünïcödé, too"]:
        assert hf.encode(text).ids == ours.encode(text, allowed_special="all")


def test_character_level_with_suffix_round_trips_through_hf(tmp_path):
    corpus = "= Valkyria Chronicles = \n the game 's battle system , the BliTZ system , is carried over .\n" * 10
    path = write(tmp_path, "c.txt", corpus)
    out = tmp_path / "tok.json"
    result = CliRunner().invoke(
        _cli(),
        ["train", path, "--alphabet", "chars", "--end-of-word-suffix", "▁", "--vocab-size", "90", "--format", "hf", "-o", str(out), "-q"],
    )
    assert result.exit_code == 0, result.output
    model = load_tokenizer(out)
    assert model.end_of_word_suffix == "▁" and model.level == "char"
    assert "s▁" in model.token_to_id and "the▁" in model.token_to_id
    hf = tokenizers.Tokenizer.from_file(str(out))
    ours = ReferenceEncoder(model)
    for text in ["the game 's battle system", "Valkyria Chronicles carried"]:
        assert hf.encode(text).ids == ours.encode(text)


# -- fast trainer == naive trainer, merge by merge -----------------------------------

words_strategy = st.dictionaries(
    st.text(alphabet="abcab \u00e9\u6771", min_size=1, max_size=9), st.integers(min_value=1, max_value=6), min_size=1, max_size=12
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    counts=words_strategy,
    extra=st.integers(min_value=0, max_value=40),
    tie_break=st.sampled_from(["lexicographic", "hf"]),
    alphabet=st.sampled_from(["bytes", "chars", "chars+suffix"]),
    min_frequency=st.integers(min_value=0, max_value=3),
)
def test_fast_trainer_equals_naive_trainer(counts, extra, tie_break, alphabet, min_frequency):
    suffix = "</w>" if alphabet == "chars+suffix" else None
    alphabet = alphabet.split("+")[0]
    results = []
    for learn in (learn_merges, naive_merges):
        vocab = initial_vocabulary(counts, ["<s>"], alphabet, suffix, tie_break)
        words, word_counts = words_from_counts(counts, vocab, suffix)
        merges = learn(words, word_counts, vocab, len(vocab) + extra, min_frequency=min_frequency, tie_break=tie_break)
        results.append((merges, vocab.tokens))
    assert results[0] == results[1]


def test_duplicate_tokens_reuse_ids_and_match_naive():
    # "ab"+"c" and "a"+"bc" both spell "abc"; the vocabulary keeps one entry
    counts = {"abc": 5, "xab": 4, "bcy": 4, "zabcz": 1, "bcab": 1}
    for tie_break in ("lexicographic", "hf"):
        model = train_from_counts(counts, 300, tie_break=tie_break)
        vocab = initial_vocabulary(counts, [], "bytes", None, tie_break)
        words, word_counts = words_from_counts(counts, vocab)
        assert [tuple(m) for m in model.merges] == naive_merges(words, word_counts, vocab, 300, tie_break=tie_break)
        assert len(set(model.vocab.values())) == len(model.vocab)


# -- counting: streamed, cut into blocks, in parallel == whole-text pre-tokenization ---

text_strategy = st.text(alphabet="ab Z9.'\n\t\r-" + "\u00e9\u3000\u6771\u0301\u2028\x85\x1c\u00bf", max_size=120)


def whole_text_counts(text: str, pattern: str, specials: list[str], line_mode: bool) -> Counter:
    pre = Pretokenizer(pattern, {s: i for i, s in enumerate(specials)})
    counts: Counter = Counter()
    for chunk, special in pre.split(text, allowed="all"):
        if special is None:
            counts[chunk] += 1
    if line_mode:  # each line on its own: re-split every chunk run at line ends
        counts = Counter()
        for piece in _split_specials(text, specials):
            for line in _lines(piece):
                counts.update(pre.chunks(line))
    return counts


def _split_specials(text: str, specials: list[str]) -> list[str]:
    import regex

    if not specials:
        return [text]
    return regex.split("|".join(regex.escape(s) for s in sorted(specials, key=len, reverse=True)), text)


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.one_of(text_strategy, st.sampled_from([EOT, "<s>"])), max_size=8),
    preset=st.sampled_from(["gpt2", "cl100k", "o200k", "whitespace"]),
    line_mode=st.booleans(),
    block_size=st.integers(min_value=1, max_value=40),
)
def test_block_cut_counting_equals_whole_text(tmp_path_factory, parts, preset, line_mode, block_size):
    text = "".join(parts)
    path = tmp_path_factory.mktemp("c") / "c.txt"
    path.write_bytes(text.encode("utf-8"))
    counter = ChunkCounter(PRESETS[preset], (EOT, "<s>"), line_mode=line_mode)
    got = count_chunks(check_sources([str(path)]), counter, jobs=1, block_size=block_size)
    assert got == whole_text_counts(text, PRESETS[preset], [EOT, "<s>"], line_mode)


def test_parallel_counting_equals_single_process(tmp_path):
    text = ("Some text, with words; and numbers 12345.\n" * 300 + EOT) * 20 + "tail without newline"
    path = write(tmp_path, "c.txt", text)
    pattern = PRESETS["gpt2"]
    single = count_corpus([path], pattern, [EOT], jobs=1)
    parallel = count_corpus([path], pattern, [EOT], jobs=2, block_size=1000)
    assert parallel == single == whole_text_counts(text, pattern, [EOT], False)


def test_invalid_utf8_is_trained_on_as_bytes(tmp_path):
    data = b"caf\xe9 caf\xe9 caf\xe9 \xff\xfe\xff\xfe ok\n" * 10
    path = write(tmp_path, "c.bin", data)
    model = train_bpe([path], 270, jobs=2, block_size=50)
    tokens = set(model.vocab.values())
    assert b"caf" in tokens or b" caf" in tokens
    assert any(b"\xff\xfe" in t for t in tokens)  # invalid bytes are merged like any others
    encoder = ReferenceEncoder(model)
    assert encoder.decode_bytes(encoder.encode_bytes(data)) == data


def test_stdin_and_multiple_files(tmp_path):
    a = write(tmp_path, "a.txt", "alpha beta gamma\n" * 20)
    b = write(tmp_path, "b.txt", "beta gamma delta\n" * 20)
    both = train_bpe([a, b], 300)
    concatenated = write(tmp_path, "ab.txt", "alpha beta gamma\n" * 20 + "beta gamma delta\n" * 20)
    assert both.merges == train_bpe([concatenated], 300).merges
    out = tmp_path / "stdin.bpefst"
    result = CliRunner().invoke(_cli(), ["train", "-", "--vocab-size", "300", "-o", str(out), "-q"], input=Path(concatenated).read_bytes())
    assert result.exit_code == 0, result.output
    assert load_tokenizer(out).merges == both.merges


# -- bad input: one line, exit 2, no output file ------------------------------------


def _cli():
    from bpefst.cli import cli
    from bpefst.cli.train_command import train

    if "train" not in cli.commands:
        cli.add_command(train)
    return cli


def run_train(tmp_path, *args, input=None):
    out = tmp_path / "out.bpefst"
    result = CliRunner().invoke(_cli(), ["train", *args, "-o", str(out), "-q"], input=input)
    return result, out


@pytest.mark.parametrize(
    "setup,args,message",
    [
        (lambda p: write(p, "empty.txt", ""), ["--vocab-size", "300"], "the corpus is empty"),
        (lambda p: write(p, "only.txt", EOT * 3), ["--vocab-size", "300", "--special-token", EOT], "the corpus is empty"),
        (lambda p: write(p, "c.txt", "hello"), ["--vocab-size", "200"], "smaller than the initial vocabulary"),
        (lambda p: write(p, "c.txt", "hello"), ["--vocab-size", "300", "--special-token", ""], "a special token is empty"),
        (lambda p: str(p / "missing.txt"), ["--vocab-size", "300"], "cannot read"),
        (lambda p: str(p), ["--vocab-size", "300"], "is a directory"),
        (lambda p: write(p, "c.txt", "abc"), ["--vocab-size", "2", "--alphabet", "chars"], "smaller than the initial vocabulary"),
        (lambda p: write(p, "c.txt", "abc"), ["--vocab-size", "300", "--end-of-word-suffix", "</w>"], "needs character-level"),
        (lambda p: write(p, "c.txt", "abc"), ["--vocab-size", "300", "--pattern", "(unclosed"], "invalid pre-tokenization pattern"),
    ],
)
def test_bad_input(tmp_path, setup, args, message):
    corpus = setup(tmp_path)
    result, out = run_train(tmp_path, corpus, *args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpefst: error:") and message in lines[0], result.output
    assert not out.exists()


def test_invalid_utf8_in_character_mode_names_the_offset(tmp_path):
    data = b"good text here\n" * 1000 + b"bad \xff byte\n" + b"more\n" * 10
    corpus = write(tmp_path, "c.txt", data)
    offset = data.index(b"\xff")
    for jobs in ("1", "2"):
        result, out = run_train(tmp_path, corpus, "--vocab-size", "100", "--alphabet", "chars", "--jobs", jobs)
        assert result.exit_code == 2, result.output
        assert f"invalid UTF-8 at byte offset {offset}" in result.output
        assert not out.exists()


def test_unreadable_file(tmp_path):
    import os

    corpus = Path(write(tmp_path, "c.txt", "hello"))
    corpus.chmod(0)
    if os.access(corpus, os.R_OK):
        pytest.skip("running as a user who can read any file")
    result, out = run_train(tmp_path, str(corpus), "--vocab-size", "300")
    assert result.exit_code == 2 and "cannot read" in result.output and not out.exists()


def test_library_errors_are_bpefst_errors(tmp_path):
    with pytest.raises(BpefstError, match="vocabulary size"):
        train_bpe([write(tmp_path, "c.txt", "x")], 0)
    with pytest.raises(BpefstError, match="unknown tie-break"):
        train_bpe([write(tmp_path, "c.txt", "x")], 300, tie_break="random")


def test_worker_error_stops_parallel_counting(tmp_path):
    data = b"good text here\n" * 2000 + b"bad \xff byte\n" + b"more text\n" * 2000
    corpus = write(tmp_path, "c.txt", data)
    offset = data.index(b"\xff")
    with pytest.raises(BpefstError, match=f"invalid UTF-8 at byte offset {offset}"):
        train_bpe([corpus], 100, alphabet="chars", jobs=2, block_size=1000)


def test_progress_reports_bytes_and_merges(tmp_path):
    from bpefst.training import TrainingProgress

    class Recorder(TrainingProgress):
        def __init__(self):
            self.bytes = 0
            self.total = None
            self.merges = []

        def counting_started(self, total_bytes):
            self.total = total_bytes

        def bytes_counted(self, nbytes):
            self.bytes += nbytes

        def merged(self, done, left, right, count):
            self.merges.append((done, left, right, count))

    text = "low lower lowest newer newest wider\n" * 40
    path = write(tmp_path, "c.txt", text)
    recorder = Recorder()
    model = train_bpe([path], 280, progress=recorder, jobs=2, block_size=100)
    assert recorder.total == recorder.bytes == len(text.encode())
    assert [(left, right) for _, left, right, _ in recorder.merges] == merge_tokens(model)
    assert [done for done, *_ in recorder.merges] == list(range(1, len(model.merges) + 1))
    counts = [count for *_, count in recorder.merges]
    assert counts[0] == 160 and counts == sorted(counts, reverse=True)  # "we"/"er"/... ; the best count never rises


def test_cli_quiet_and_summary(tmp_path):
    path = write(tmp_path, "c.txt", "some words and some more words\n" * 10)
    out = tmp_path / "t.bpefst"
    loud = CliRunner().invoke(_cli(), ["train", path, "--vocab-size", "270", "-o", str(out)])
    assert loud.exit_code == 0 and "trained 270 tokens (14 merges)" in loud.output and f"wrote {out}" in loud.output
    quiet = CliRunner().invoke(_cli(), ["train", path, "--vocab-size", "270", "-o", str(out), "--quiet"])
    assert quiet.exit_code == 0 and quiet.output == ""
