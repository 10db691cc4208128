"""Readers and writers: lossless round trips, HF loading what we write, and bad files."""

from __future__ import annotations

import json

import msgpack
import pytest
from regex import findall as regex_findall

from bpefst.artifact import repack, write_artifact
from bpefst.errors import ArtifactError, BpefstError
from bpefst.tokenizer import PRESETS, ReferenceEncoder, format_losses, load_tokenizer, save_tokenizer
from bpefst.tokenizer.formats import native
from conftest import require_shared
from small_models import random_byte_model, random_char_model

SAMPLE = "Hello world! It's 2026, déjà vu 😀\n\n  spaces\tand <|end|> 12345 abcabc"


@pytest.mark.parametrize("fmt", ["bpefst", "hf", "gpt2"])
def test_small_byte_model_round_trips(tmp_path, fmt: str) -> None:
    model = random_byte_model(11, pattern=PRESETS["gpt2"])
    target = tmp_path / ("out" if fmt == "gpt2" else "tok")
    save_tokenizer(model, target, fmt)
    again = load_tokenizer(target)
    assert again == model
    assert again.fingerprint == model.fingerprint


@pytest.mark.parametrize("fmt", ["bpefst", "hf"])
def test_small_char_model_round_trips(tmp_path, fmt: str) -> None:
    model = random_char_model(4)
    save_tokenizer(model, tmp_path / "tok", fmt)
    assert load_tokenizer(tmp_path / "tok") == model


def test_hf_loads_what_we_write_and_agrees(tmp_path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    cases = [(random_byte_model(5, alphabet=b"abc 0123", pattern=PRESETS[p]), SAMPLE) for p in ("gpt2", "cl100k", "o200k")]
    for model, text in cases + [(random_char_model(6), "abc cab bbb a")]:
        path = tmp_path / f"{model.level}-{len(text)}-{model.fingerprint}.json"
        save_tokenizer(model, path, "hf")
        hf = tokenizers.Tokenizer.from_file(str(path))
        assert hf.encode(text).ids == ReferenceEncoder(model).encode(text, allowed_special="all")


ONIG_SAMPLES = ["pep-0626/#out 34762 999999 7", "x1234567890y", "It's  \n\n 12 déjà ١٢٣٤ vu\t\r\n", "ab 3.14159 $1,000,000"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_presets_split_in_hf_as_in_regex(preset: str) -> None:
    """The Split we write for HF's Oniguruma cuts text exactly where ``regex.findall`` does."""
    tokenizers = pytest.importorskip("tokenizers")
    import regex

    from bpefst.tokenizer.formats import hf

    split_spec = hf._split(PRESETS[preset])
    split = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(split_spec["pattern"]["Regex"]), behavior=split_spec["behavior"].lower(), invert=split_spec["invert"]
    )
    for text in ONIG_SAMPLES:
        assert [piece for piece, _ in split.pre_tokenize_str(text)] == regex.findall(PRESETS[preset], text), text
        if split_spec["behavior"] == "Isolated":  # only for patterns that leave no gaps
            assert "".join(regex.findall(PRESETS[preset], text)) == text


def test_hf_reads_possessive_intervals_as_hf_runs_them(tmp_path) -> None:
    """A tokenizer.json whose Split pattern has ``{1,3}+`` (a repeated interval for HF) encodes as HF does."""
    tokenizers = pytest.importorskip("tokenizers")
    model = random_byte_model(7, alphabet=b"0123456 ", num_merges=20, pattern=PRESETS["cl100k"])
    path = tmp_path / "tok.json"
    save_tokenizer(model, path, "hf")
    doc = json.loads(path.read_text(encoding="utf-8"))
    split = doc["pre_tokenizer"]["pretokenizers"][0]
    assert split["pattern"]["Regex"] != PRESETS["cl100k"]  # written with an atomic group
    assert load_tokenizer(path).pattern == PRESETS["cl100k"]  # and read back as the preset
    split["pattern"]["Regex"] = PRESETS["cl100k"]  # now HF repeats the interval: "0626" is one chunk
    path.write_text(json.dumps(doc), encoding="utf-8")
    ours = ReferenceEncoder(load_tokenizer(path))
    hf = tokenizers.Tokenizer.from_file(str(path))
    for text in ONIG_SAMPLES:
        assert ours.encode(text) == hf.encode(text).ids, text
    assert regex_findall(load_tokenizer(path).pattern, "0626 12345") == ["0626", " ", "12345"]


def test_hf_isolated_split_keeps_the_text_between_matches(tmp_path) -> None:
    """HF's Isolated Split keeps unmatched text as pieces; read, it encodes as HF does, and what we write reads back."""
    tokenizers = pytest.importorskip("tokenizers")
    model = random_byte_model(8, pattern=r"[a-z]+")
    path = tmp_path / "tok.json"
    save_tokenizer(model, path, "hf")
    assert load_tokenizer(path) == model
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.encode("ab, cd!").ids == ReferenceEncoder(model).encode("ab, cd!")  # "Removed" + inverted: only the words
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0].update(behavior="Isolated", invert=False)
    path.write_text(json.dumps(doc), encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = ReferenceEncoder(load_tokenizer(path))
    for text in ("ab, cd!", "  x y\n", "abc"):
        assert ours.encode(text) == hf.encode(text).ids, text
    assert ReferenceEncoder(model).encode("ab, cd!") != ours.encode("ab, cd!")


def test_real_tokenizers_round_trip(tmp_path) -> None:
    data = require_shared()
    cl100k = load_tokenizer(data / "tiktoken" / "cl100k_base.tiktoken.gz")
    save_tokenizer(cl100k, tmp_path / "cl100k_base.tiktoken", "tiktoken")
    assert load_tokenizer(tmp_path / "cl100k_base.tiktoken") == cl100k
    assert format_losses(cl100k, "gpt2") and not format_losses(cl100k, "tiktoken")
    for source in (data / "gpt2" / "vocab.json", data / "wikitext-bpe" / "tokenizer_8000.json", data / "tiktoken" / "cl100k_base.tiktoken.gz"):
        model = load_tokenizer(source)
        for fmt in ("bpefst", "hf", "gpt2"):
            if format_losses(model, fmt) or (fmt == "gpt2" and not model.is_byte_level):
                continue
            target = tmp_path / f"{source.stem}-{fmt}"
            save_tokenizer(model, target, fmt)
            assert load_tokenizer(target) == model, (source, fmt)


def test_native_artifact_is_packed(tmp_path) -> None:
    model = random_byte_model(2)
    save_tokenizer(model, tmp_path / "t", "bpefst")
    document = msgpack.unpackb((tmp_path / "t").read_bytes())
    assert document["kind"] == "tokenizer" and document["schema"] == native.SCHEMA
    assert document["fingerprint"] == model.fingerprint
    assert isinstance(document["body"]["merges"], bytes)


# -- bad files ---------------------------------------------------------------------

def _artifact(tmp_path):
    path = tmp_path / "tok.bpefst"
    save_tokenizer(random_byte_model(9), path, "bpefst")
    return path


def test_truncated_artifact(tmp_path) -> None:
    path = _artifact(tmp_path)
    raw = path.read_bytes()
    for cut in (len(raw) // 2, len(raw) - 1, 40):
        path.write_bytes(raw[:cut])
        with pytest.raises(ArtifactError):
            load_tokenizer(path)


def test_corrupted_artifact(tmp_path) -> None:
    path = _artifact(tmp_path)
    document = msgpack.unpackb(path.read_bytes())
    document["body"]["offsets"] = document["body"]["offsets"][:-4]
    path.write_bytes(repack(document))
    with pytest.raises(ArtifactError, match="corrupted"):
        load_tokenizer(path)
    document = msgpack.unpackb(_artifact(tmp_path).read_bytes())
    document["body"]["tokens"] = b"x" + document["body"]["tokens"][1:]
    path.write_bytes(repack(document))
    with pytest.raises(BpefstError):
        load_tokenizer(path)


def test_wrong_kind_and_schema(tmp_path) -> None:
    path = tmp_path / "a"
    write_artifact(path, "canonical-dfa", 1, "", {})
    with pytest.raises(ArtifactError, match="expected a tokenizer artifact, found a canonical-dfa"):
        load_tokenizer(path)
    write_artifact(path, "tokenizer", 99, "", {})
    with pytest.raises(ArtifactError, match="schema version 99"):
        load_tokenizer(path)


def test_unsupported_hf_model_type(tmp_path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}}}))
    with pytest.raises(BpefstError, match="unsupported model type 'WordPiece'"):
        load_tokenizer(path)


def _gpt2_files(tmp_path, merges: list[str]):
    vocab = {c: i for i, c in enumerate("abc")} | {"ab": 3, "abc": 4}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    return tmp_path / "vocab.json"


def test_merges_naming_missing_token(tmp_path) -> None:
    with pytest.raises(BpefstError, match="'zz', which is not in"):
        load_tokenizer(_gpt2_files(tmp_path, ["a b", "ab zz"]))


def test_merges_using_token_not_yet_built(tmp_path) -> None:
    with pytest.raises(BpefstError, match="improper merge list: merge 0"):
        load_tokenizer(_gpt2_files(tmp_path, ["ab c", "a b"]))


def test_duplicate_merges(tmp_path) -> None:
    with pytest.raises(BpefstError, match="listed twice"):
        load_tokenizer(_gpt2_files(tmp_path, ["a b", "a b"]))


def test_hf_digits_then_byte_level_reads_as_gpt2_digits(tmp_path) -> None:
    """SmolLM's pre-tokenizer, Sequence[Digits(individual_digits), ByteLevel]: HF's ids on text full of numbers."""
    tokenizers = pytest.importorskip("tokenizers")
    model = random_byte_model(5, alphabet=b"ab12 .'", num_merges=30, pattern=PRESETS["gpt2"])
    path = tmp_path / "digits.json"
    save_tokenizer(model, path, "hf")
    document = json.loads(path.read_text())
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
    path.write_text(json.dumps(document))
    ours = load_tokenizer(path)
    assert ours.pattern == PRESETS["gpt2-digits"]
    theirs = tokenizers.Tokenizer.from_file(str(path))
    for text in [SAMPLE, *ONIG_SAMPLES, "a  1", "a 1", " 12 ab", "x\t\t2", "ⅻ½٣ 2²", "12'll 3's", "  \n 4\n"]:
        assert ReferenceEncoder(ours).encode(text, allowed_special="all") == theirs.encode(text).ids, text
    document["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = False
    path.write_text(json.dumps(document))
    with pytest.raises(BpefstError, match="without individual_digits"):
        load_tokenizer(path)
