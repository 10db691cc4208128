"""Bad tokenizer files: a clear BpefstError (exit 2 from the CLI), never a traceback or a wrong answer.

HF ``tokenizers`` is the oracle for what a ``tokenizer.json`` means: where it
refuses a file we refuse it too, and where both load a file both give the same
ids.  The files are tiny documents written here, edited one field at a time.
"""

from __future__ import annotations

import base64
import copy
import json

import msgpack
import pytest

from bpefst.artifact import repack
from bpefst.bpe.transducer_io import compile_transducer, read_transducer, write_transducer
from bpefst.errors import ArtifactError, BpefstError
from bpefst.tokenizer import ReferenceEncoder, load_tokenizer, save_tokenizer
from bpefst.tokenizer.byte_unicode import encode_bytes
from cli_runner import assert_user_error, run
from conftest import require_shared
from small_models import random_byte_model

tokenizers = pytest.importorskip("tokenizers")

TEXT = "abc ba a<s>b cab"


def added(token_id, content: str) -> dict:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}


# A character-level BPE: a b c -> ab, abc, ba; "<s>" is an added token also in the vocabulary
CHAR_DOC = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [added(6, "<s>")],
    "normalizer": None,
    "pre_tokenizer": {"type": "Split", "pattern": {"Regex": " ?[a-z]+| ?[^a-z\\s]+|\\s+"}, "behavior": "Isolated", "invert": False},
    "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
              "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "ba": 5, "<s>": 6, " ": 7}, "merges": ["a b", "ab c", "b a"]},
}

# The same merges at byte level (GPT-2 spelling): the 256 bytes are ids 0..255
BYTE_VOCAB = {encode_bytes(bytes([b])): b for b in range(256)}
BYTE_VOCAB.update({"ab": 256, "abc": 257, "ba": 258, "Ġb": 259})
BYTE_MERGES = ["a b", "ab c", "b a", "Ġ b"]
BYTE_DOC = copy.deepcopy(CHAR_DOC)
BYTE_DOC["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BYTE_DOC["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
BYTE_DOC["added_tokens"] = [added(300, "<s>")]
BYTE_DOC["model"] = dict(CHAR_DOC["model"], vocab=dict(BYTE_VOCAB, **{"<s>": 300}), merges=BYTE_MERGES)


def edited(doc: dict, edit) -> dict:
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


def write_json(tmp_path, doc, name: str = "tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, ensure_ascii=False))
    return path


def hf_ids(doc: dict, text: str = TEXT) -> list[int] | None:
    """HF's ids for ``text``, or None when HF refuses the file."""
    try:
        tokenizer = tokenizers.Tokenizer.from_str(json.dumps(doc))
    except Exception:  # HF raises plain Exception subclasses from Rust
        return None
    return tokenizer.encode(text).ids


def our_ids(path, text: str = TEXT) -> list[int]:
    """What ``bpefst encode`` prints (the reference encoder)."""
    return ReferenceEncoder(load_tokenizer(path)).encode(text, allowed_special="all")


@pytest.mark.parametrize("doc", [CHAR_DOC, BYTE_DOC], ids=["char", "byte"])
def test_the_base_documents_agree_with_hf(tmp_path, doc) -> None:
    expected = hf_ids(doc)
    assert expected is not None and our_ids(write_json(tmp_path, doc)) == expected


# -- defect 1: an id given to two tokens ---------------------------------------------------------


def test_duplicate_vocab_id_is_refused_where_hf_silently_merges_the_tokens(tmp_path) -> None:
    doc = edited(BYTE_DOC, lambda d: d["model"]["vocab"].update({"Ġb": 4}))  # id 4 is the byte \x04
    # HF loads it and then encodes the byte \x04 and " b" alike: the ids cannot be decoded
    assert hf_ids(doc, "\x04 b") == [4, 4]
    path = write_json(tmp_path, doc)
    with pytest.raises(BpefstError, match=r"id 4 is given to two tokens \('Ą' and 'Ġb'\)"):
        load_tokenizer(path)
    assert_user_error(run("encode", str(path), stdin=b"\x04 b"), "id 4 is given to two tokens")


def test_duplicate_id_in_a_real_tokenizer_json_is_refused(tmp_path) -> None:
    doc = json.loads((require_shared() / "wikitext-bpe" / "tokenizer_4000.json").read_text())
    vocab = doc["model"]["vocab"]
    a_id, the_id = hf_ids(doc, "a the")
    the = next(text for text, i in vocab.items() if i == the_id)
    vocab[the] = a_id
    assert hf_ids(doc, "a the") == [a_id, a_id]  # HF: both words become one id
    with pytest.raises(BpefstError, match=f"id {a_id} is given to two tokens"):
        load_tokenizer(write_json(tmp_path, doc))


def test_duplicate_id_in_gpt2_vocab_json_is_refused(tmp_path) -> None:
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(BYTE_MERGES) + "\n")
    write_json(tmp_path, dict(BYTE_VOCAB, **{"Ġb": 4}), "vocab.json")
    with pytest.raises(BpefstError, match="id 4 is given to two tokens"):
        load_tokenizer(tmp_path / "vocab.json")


def _vocab_gap(d: dict) -> None:  # ids 0..6 and 8: HF's next free id (the vocabulary size, 8) is taken
    d["model"]["vocab"][" "] = 8


@pytest.mark.parametrize(
    "edit, fragment, text, hf_gives",
    [
        # HF keeps model.vocab's id for "<s>" (6) and ignores the added token's id
        (lambda d: d.update(added_tokens=[added(5, "<s>")]), "added token '<s>' has id 5, but model.vocab gives it id 6", "<s>", [6]),
        # HF gives a token missing from model.vocab the next id after it (8), whatever the file says
        (lambda d: d["added_tokens"].append(added(5, "<t>")), "added token '<t>' has id 5, but HF tokenizers gives it id 8", "<t>", [8]),
        (lambda d: d["added_tokens"].append(added(100, "<t>")), "added token '<t>' has id 100, but HF tokenizers gives it id 8", "<t>", [8]),
        (lambda d: d["added_tokens"].extend([added(8, "<t>"), added(8, "<u>")]), "added token '<u>' has id 8, but HF tokenizers gives it id 9",
         "<t><u>", [8, 9]),
        (lambda d: (_vocab_gap(d), d["added_tokens"].append(added(8, "<t>"))), "id 8 is given to two tokens (' ' and '<t>')", " <t>", [8, 8]),
    ],
)
def test_added_token_ids_that_hf_would_not_use_are_refused(tmp_path, edit, fragment, text, hf_gives) -> None:
    doc = edited(CHAR_DOC, edit)
    assert hf_ids(doc, text) == hf_gives  # HF loads these files, with ids other than the file's
    with pytest.raises(BpefstError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        load_tokenizer(write_json(tmp_path, doc))


def test_added_tokens_after_the_vocabulary_agree_with_hf(tmp_path) -> None:
    doc = edited(CHAR_DOC, lambda d: d["added_tokens"].extend([added(8, "<t>"), added(9, "<u>"), added(6, "<s>")]))
    assert our_ids(write_json(tmp_path, doc), "ab<u><t><s>") == hf_ids(doc, "ab<u><t><s>") == [3, 9, 8, 6]


def test_tiktoken_rank_given_twice_names_both_lines(tmp_path) -> None:
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)] + [b"YWI= 255"]
    (tmp_path / "r.tiktoken").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(BpefstError, match=r"r.tiktoken:257: rank 255 is given to two tokens \(also on line 256\)"):
        load_tokenizer(tmp_path / "r.tiktoken", pattern=None)


# -- defect 3: ids outside u32 -------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [2**32, 2**40, -1])
def test_ids_outside_u32_are_refused_like_hf(tmp_path, bad_id: int) -> None:
    for doc in (edited(CHAR_DOC, lambda d: d["model"]["vocab"].update(ba=bad_id)),
                edited(CHAR_DOC, lambda d: d.update(added_tokens=[added(6, "<s>"), added(bad_id, "<t>")]))):
        assert hf_ids(doc) is None  # "expected u32"
        with pytest.raises(BpefstError, match="outside 0..4294967295"):
            load_tokenizer(write_json(tmp_path, doc))
    (tmp_path / "merges.txt").write_text("\n".join(BYTE_MERGES) + "\n")
    write_json(tmp_path, dict(BYTE_VOCAB, ba=bad_id), "vocab.json")
    with pytest.raises(BpefstError, match="outside 0..4294967295"):
        load_tokenizer(tmp_path / "vocab.json")
    ranks = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)] + [b"YWI= %d" % bad_id]
    (tmp_path / "r.tiktoken").write_bytes(b"\n".join(ranks))
    with pytest.raises(BpefstError, match=r"r.tiktoken:257: .*outside 0..4294967295"):
        load_tokenizer(tmp_path / "r.tiktoken", pattern=None)


def test_the_largest_u32_id_is_accepted_like_hf(tmp_path) -> None:
    doc = edited(CHAR_DOC, lambda d: d["model"]["vocab"].update(ba=2**32 - 1))
    assert our_ids(write_json(tmp_path, doc), "ba") == hf_ids(doc, "ba") == [2**32 - 1]


def test_huge_id_does_not_reach_the_artifact_writer(tmp_path) -> None:
    path = write_json(tmp_path, edited(CHAR_DOC, lambda d: d["model"]["vocab"].update(ba=2**40)))
    assert_user_error(run("convert", str(path), "-o", str(tmp_path / "x.bpefst")), "outside 0..4294967295")


# -- defect 4: missing merges, CRLF merges.txt, merges as pairs -----------------------------------


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: d["model"].pop("merges"), "model.merges is missing"),
    (lambda d: d["model"].update(merges=None), "model.merges must be an array, found null"),
])
def test_missing_merges_are_refused_like_hf(tmp_path, edit, fragment) -> None:
    doc = edited(CHAR_DOC, edit)
    assert hf_ids(doc) is None  # "Missing vocab/merges" / "did not match any variant of MergeType"
    with pytest.raises(BpefstError, match=fragment):
        load_tokenizer(write_json(tmp_path, doc))


@pytest.mark.parametrize("merges", [[], [["a", "b"], ["ab", "c"], ["b", "a"]]], ids=["empty", "pairs"])
def test_empty_merges_and_merges_as_pairs_agree_with_hf(tmp_path, merges) -> None:
    doc = edited(CHAR_DOC, lambda d: d["model"].update(merges=merges))
    expected = hf_ids(doc)
    assert expected is not None and our_ids(write_json(tmp_path, doc)) == expected


def test_crlf_merges_txt_reads_like_lf(tmp_path) -> None:
    write_json(tmp_path, BYTE_VOCAB, "vocab.json")
    (tmp_path / "merges.txt").write_bytes(("#version: 0.2\r\n" + "\r\n".join(BYTE_MERGES) + "\r\n").encode())
    crlf = load_tokenizer(tmp_path / "vocab.json")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(BYTE_MERGES) + "\n")
    assert crlf == load_tokenizer(tmp_path / "vocab.json") and len(crlf.merges) == 4


# -- defect 2: wrong JSON types ------------------------------------------------------------------


def _split(pattern) -> dict:
    return {"type": "Split", "pattern": pattern, "behavior": "Isolated", "invert": False}


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: d.update(pre_tokenizer="abc"), "pre_tokenizer must be an object or null, found a string"),
    (lambda d: d.update(pre_tokenizer=[1]), "pre_tokenizer must be an object or null, found an array"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": "x"}), "pretokenizers must be an array, found a string"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": 5}), "pretokenizers must be an array, found an integer"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [5]}), "a pre-tokenizer must be an object, found an integer"),
    (lambda d: d.update(pre_tokenizer=_split(5)), "Split pre-tokenizer pattern must be"),
    (lambda d: d.update(pre_tokenizer=_split({"Regex": None})), "Split pre-tokenizer pattern must be"),
    (lambda d: d.update(pre_tokenizer=_split({"Regex": 5})), "Split pre-tokenizer pattern must be"),
    (lambda d: d.update(pre_tokenizer=_split({"Regex": "("})), "Split pre-tokenizer: invalid pre-tokenization pattern"),
    (lambda d: d.update(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": "x"}), "add_prefix_space must be a boolean"),
    (lambda d: d.update(normalizer="x"), "normalizer must be an object or null, found a string"),
    (lambda d: d.update(decoder=5), "decoder must be an object or null, found an integer"),
    (lambda d: d.update(added_tokens=5), "added_tokens must be an array, found an integer"),
    (lambda d: d.update(added_tokens=None), "added_tokens must be an array, found null"),
    (lambda d: d["added_tokens"][0].update(special="x"), "special must be a boolean, found a string"),
    (lambda d: d.update(model=None), "model must be an object, found null"),
    (lambda d: d["model"].update(merges=5), "model.merges must be an array, found an integer"),
    (lambda d: d["model"].update(unk_token=[]), "model.unk_token must be a string or null, found an array"),
    (lambda d: d["model"].update(end_of_word_suffix=5), "model.end_of_word_suffix must be a string or null, found an integer"),
    (lambda d: d["model"].update(continuing_subword_prefix=5), "model.continuing_subword_prefix must be a string or null"),
    (lambda d: d["model"].update(fuse_unk=5), "model.fuse_unk must be a boolean or null, found an integer"),
    (lambda d: d["model"].update(dropout="x"), "model.dropout must be a number or null, found a string"),
])
def test_wrong_json_types_are_refused_like_hf_naming_the_field(tmp_path, edit, fragment) -> None:
    doc = edited(CHAR_DOC, edit)
    assert hf_ids(doc) is None
    path = write_json(tmp_path, doc)
    with pytest.raises(BpefstError, match=f"^{path}: .*" + fragment.replace("(", r"\(")):
        load_tokenizer(path)


WRONG_VALUES = [None, 5, "x", [], {}, True, -1, 2**32, [5], {"x": 5}]


def _field_paths(value, prefix=()):
    """Every (nested) key or index of a JSON document."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield prefix + (key,)
        yield from _field_paths(child, prefix + (key,))


def _replace(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize("base", [CHAR_DOC, BYTE_DOC], ids=["char", "byte"])
def test_any_field_with_a_wrong_type_is_a_clear_error_or_means_what_hf_says(tmp_path, base) -> None:
    """Each field (up to 120 of them) replaced by values of each wrong JSON type."""
    path = tmp_path / "tokenizer.json"
    for field in list(_field_paths(base))[:120]:
        for value in WRONG_VALUES:
            doc = copy.deepcopy(base)
            _replace(doc, field, value)
            path.write_text(json.dumps(doc))
            try:
                ours = our_ids(path)
            except BpefstError as exc:
                assert str(exc).startswith(f"{path}"), (field, value, exc)
                continue
            expected = hf_ids(doc)
            assert expected is None or ours == expected, (field, value, ours, expected)


# -- defect 5: files that are not tokenizers -----------------------------------------------------


ACCEPTED = "expected a bpefst artifact, an HF tokenizer.json, a GPT-2 vocab.json + merges.txt, a tiktoken rank file or a GGUF model"


@pytest.mark.parametrize("content, fragment", [
    (b"null", "it holds a JSON null"),
    (b"[1]", "it holds a JSON array"),
    (b'"abc"', "it holds a JSON string"),
    (b"[PAD]\n[UNK]\nhello\n", "a WordPiece vocabulary must be named vocab.txt"),
    (b"hello world\n", "first line 'hello world' is not 'base64-token rank'"),
    (b"\x00\x01\x02binary", "binary data"),
])
def test_content_of_no_known_format_says_what_is_accepted(tmp_path, content, fragment) -> None:
    path = tmp_path / "thing.txt"
    path.write_bytes(content)
    with pytest.raises(BpefstError, match="not a tokenizer file bpefst reads") as caught:
        load_tokenizer(path)
    assert fragment in str(caught.value) and ACCEPTED in str(caught.value)
    assert_user_error(run("info", str(path)), fragment)


def test_truncated_artifact_is_reported_as_one(tmp_path) -> None:
    save_tokenizer(random_byte_model(3), tmp_path / "tok.bpefst")
    (tmp_path / "one.dfa").write_bytes((tmp_path / "tok.bpefst").read_bytes()[:1])
    assert_user_error(run("info", str(tmp_path / "one.dfa")), "not a bpefst artifact (truncated or corrupted")


def test_a_rank_file_with_one_bad_line_still_gets_the_line_number(tmp_path) -> None:
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
    lines[7] = b"@@@! 7"
    (tmp_path / "ranks.txt").write_bytes(b"\n".join(lines))
    with pytest.raises(BpefstError, match=r"ranks.txt:8: expected 'base64-token rank'"):
        load_tokenizer(tmp_path / "ranks.txt", pattern=None)
    (tmp_path / "x.tiktoken").write_bytes(b"garbage\n")  # named as a rank file: read as one
    with pytest.raises(BpefstError, match=r"x.tiktoken:1: expected 'base64-token rank'"):
        load_tokenizer(tmp_path / "x.tiktoken", pattern=None)


def test_gpt2_vocab_json_with_a_model_token_still_reads() -> None:
    data = require_shared()
    model = load_tokenizer(data / "gpt2" / "vocab.json")  # "model" is one of GPT-2's tokens
    assert len(model.merges) == 50000


# -- defect 6: transducer artifact body shape ----------------------------------------------------


@pytest.mark.parametrize("field, value", [("stats", 5), ("stats", [1]), ("lazy", "x"), ("eager", None), ("tokenizer", 5)])
def test_transducer_body_of_the_wrong_shape_is_an_artifact_error(tmp_path, field, value) -> None:
    model = random_byte_model(3, alphabet=b"abc ", num_merges=10)
    transducer, stats = compile_transducer(model, budget=20)
    path = tmp_path / "t.fst"
    write_transducer(path, model, transducer, stats)
    document = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
    document["body"][field] = value
    path.write_bytes(repack(document))
    with pytest.raises(ArtifactError, match=f"body field '{field}'"):
        read_transducer(path)
    if field == "stats":
        assert_user_error(run("tokenize", str(path), stdin=b"abc"), "corrupted transducer artifact")


# -- an unknown token named but missing from the vocabulary ------------------------------------


@pytest.mark.parametrize("unk", [None, "[UNK]", "<s>"])
@pytest.mark.parametrize("text", ["abc ba", "abz ba", "zz"])
def test_a_missing_unknown_token_refuses_unknown_symbols_like_hf(tmp_path, unk, text) -> None:
    """``unk_token`` absent from the vocabulary: HF errors on a symbol it cannot spell; dropping it would lose text."""
    doc = edited(CHAR_DOC, lambda d: d["model"].update(unk_token=unk))
    path = write_json(tmp_path, doc)
    try:
        expected = tokenizers.Tokenizer.from_str(json.dumps(doc)).encode(text).ids
    except Exception:  # HF: "Unk token `[UNK]` not found in the vocabulary"
        expected = None
    if expected is None:
        with pytest.raises(BpefstError, match="neither is the unknown token"):
            our_ids(path, text)
    else:
        assert our_ids(path, text) == expected
    assert (expected is None) == (unk == "[UNK]" and "z" in text)  # the case this test is about happens
