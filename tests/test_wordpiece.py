"""WordPiece model, readers and reference MaxMatch encoder against HF ``tokenizers``.

Without ../shared: hand-made vocabularies, and HF's WordPiece model built in the
test from random vocabularies.  With it: the BERT-uncased tokenizer end to end
on the shared texts, on hypothesis strings, and on every code point.
"""

from __future__ import annotations

import json
import lzma
import unicodedata
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.errors import BpefstError
from bpefst.tokenizer.wordpiece import (
    BertNormalizer,
    BertPreTokenizer,
    WordPieceModel,
    is_wordpiece_file,
    load_wordpiece,
)
from conftest import require_shared

tokenizers = pytest.importorskip("tokenizers")


def small_model(first=(), cont=(), max_chars=100, **kw) -> WordPieceModel:
    vocab = {"[UNK]": 0}
    for piece in first:
        vocab.setdefault(piece, len(vocab))
    for piece in cont:
        vocab.setdefault("##" + piece, len(vocab))
    return WordPieceModel(vocab, max_input_chars_per_word=max_chars, **kw)


def texts(model: WordPieceModel, ids) -> list[str]:
    return [model.id_to_token[i] for i in ids]


# -- the reference encoder --------------------------------------------------------------------


def test_max_match_is_greedy_longest_first():
    m = small_model(["b", "ba", "ban", "bana", "a"], ["a", "n", "s", "na", "nas"])
    assert texts(m, m.encode_word("bananas")) == ["bana", "##nas"]
    assert texts(m, m.encode_word("banana")) == ["bana", "##na"]
    assert texts(m, m.encode_word("bans")) == ["ban", "##s"]
    # greedy, not optimal: "bana" + "##n" + ... fails at 'x' -> the whole word is [UNK]
    assert m.encode_word("banx") == [0]
    assert m.max_match("banx") is None
    assert m.encode_word("") == []


def test_first_piece_without_prefix_later_pieces_with_it():
    m = small_model(["a", "b"], ["b"])
    assert texts(m, m.encode_word("ab")) == ["a", "##b"]
    assert m.encode_word("ba") == [0]  # no "##a"
    assert texts(m, m.encode_word("b")) == ["b"]


def test_too_long_words_are_unknown():
    m = small_model(["a"], ["a"], max_chars=5)
    assert len(m.encode_word("a" * 5)) == 5
    assert m.encode_word("a" * 6) == [0]


def test_literal_first_piece_lookup_like_hf():
    m = small_model(["#", "a"], ["a", "#"])
    assert texts(m, m.encode_word("##a")) == ["##a"]  # the entry "##a" looked up literally
    assert texts(m, m.encode_word("#a")) == ["#", "##a"]


# -- normalizer and pre-tokenizer -------------------------------------------------------------


def test_bert_normalizer_steps():
    n = BertNormalizer()
    assert n.normalize("Héllo\tWörld\x00\u200b!") == "hello world!"
    assert n.normalize("中文x") == " 中  文 x"
    assert n.normalize("ΑΣ") == "ασ"  # per character: no final sigma
    assert n.normalize("a\x0bb\x85c\u00a0d") == "abc d"  # VT, NEL are controls (dropped), NBSP is a space
    assert BertNormalizer(lowercase=False).normalize("Héllo") == "Héllo"
    assert BertNormalizer(lowercase=False, strip_accents=True).normalize("Héllo") == "Hello"


def test_bert_pre_tokenizer():
    p = BertPreTokenizer()
    assert p.split("hello, world!! a$b  c") == ["hello", ",", "world", "!", "!", "a", "$", "b", "c"]
    assert p.split("\u00bfqu\u00e9?") == ["\u00bf", "qu\u00e9", "?"]
    assert p.split("a\x1cb") == ["a\x1cb"]  # U+001C is not White_Space (str.isspace says it is)


def test_added_tokens_are_split_first():
    m = small_model(["hello", "[", "]", "mask", "m"], ["ask"])
    m = WordPieceModel(dict(m.vocab, **{"[MASK]": 50}), added_tokens=(_added("[MASK]", 50),))
    assert m.encode("hello[MASK]hello") == [m.vocab["hello"], 50, m.vocab["hello"]]
    assert texts(m, m.encode("hello [mask]")) == ["hello", "[", "mask", "]"]


def _added(content, tid):
    from bpefst.tokenizer.wordpiece import AddedToken

    return AddedToken(content, tid)


# -- readers ------------------------------------------------------------------------------------


def test_vocab_txt_reader(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nhello\n##s\n##s  \n[CLS]\n", encoding="utf-8")
    m = load_wordpiece(path)
    assert m.vocab == {"[PAD]": 0, "[UNK]": 1, "hello": 2, "##s": 4, "[CLS]": 5}  # trimmed, last line wins
    assert m.encode("Hellos [CLS]") == [2, 4, 5]
    assert is_wordpiece_file(path)


def test_tokenizer_json_reader(tmp_path):
    doc = {
        "added_tokens": [{"id": 0, "content": "[UNK]", "special": True, "normalized": False}],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": False},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "@@", "max_input_chars_per_word": 7,
                  "vocab": {"[UNK]": 0, "Ab": 1, "@@c": 2}},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    m = load_wordpiece(path)
    assert (m.continuing_subword_prefix, m.max_input_chars_per_word, m.normalizer.lowercase) == ("@@", 7, False)
    assert m.encode("Abc abc Abcccccc") == [1, 2, 0, 0]
    assert is_wordpiece_file(path) and is_wordpiece_file(tmp_path)
    assert m.decode([1, 2, 1]) == "Abc Ab"


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"model": {"type": "BPE", "vocab": {}, "merges": []}}, "not WordPiece"),
        ({"model": {"type": "WordPiece", "vocab": {"a": 0}}}, "unknown token"),
        ({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 0}}}, "share the id"),
        ({"model": {"type": "WordPiece", "vocab": {"[UNK]": -1}}}, "bad vocabulary entry"),
        ({"model": {"type": "WordPiece", "vocab": ["[UNK]"]}}, "must be an object"),
        ({"normalizer": {"type": "NFC"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}, "unsupported normalizer"),
        ({"pre_tokenizer": {"type": "Metaspace"}, "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}, "unsupported pre-tokenizer"),
    ],
)
def test_reader_errors(tmp_path, doc, message):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(BpefstError, match=message):
        load_wordpiece(path)


def test_reader_rejects_garbage(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"\xff\xfe[UNK]\n")
    with pytest.raises(BpefstError, match="UTF-8"):
        load_wordpiece(path)
    with pytest.raises(BpefstError):
        load_wordpiece(tmp_path / "missing.json")
    path.write_text("a\nb\n")
    with pytest.raises(BpefstError, match="unknown token"):
        load_wordpiece(path)


# -- against HF's WordPiece model on random vocabularies (no shared data needed) --------------------

pieces = st.text(alphabet="abc#", min_size=1, max_size=4)


@st.composite
def random_vocab(draw):
    first = draw(st.lists(pieces, min_size=1, max_size=12))
    cont = draw(st.lists(pieces, max_size=12))
    return first, cont, draw(st.integers(min_value=1, max_value=12))


@settings(max_examples=300, deadline=None)
@given(random_vocab(), st.lists(st.text(alphabet="abc#", min_size=1, max_size=14), min_size=1, max_size=10))
def test_encode_word_matches_hf_wordpiece_model(spec, words):
    first, cont, max_chars = spec
    m = small_model(first, cont, max_chars)
    hf = tokenizers.models.WordPiece(vocab=m.vocab, unk_token="[UNK]", max_input_chars_per_word=max_chars, continuing_subword_prefix="##")
    for word in words:
        assert m.encode_word(word) == [t.id for t in hf.tokenize(word)], word


# -- the real BERT tokenizer ------------------------------------------------------------------------


@lru_cache(maxsize=None)
def bert(kind: str = "tokenizer.json") -> WordPieceModel:
    return load_wordpiece(require_shared() / "wordpiece" / kind)


@lru_cache(maxsize=None)
def hf_bert():
    tok = tokenizers.Tokenizer.from_file(str(require_shared() / "wordpiece" / "tokenizer.json"))
    tok.no_truncation()  # the file truncates and pads to 128 tokens
    tok.no_padding()
    return tok


def hf_ids(text: str) -> list[int]:
    return hf_bert().encode(text, add_special_tokens=False).ids


def shared_texts():
    data = require_shared()
    out = {p.name: p.read_text(encoding="utf-8") for p in sorted((data / "cs336").iterdir()) if p.suffix in (".txt", ".en")}
    for path in sorted((data / "corpora").glob("*.xz")):
        out[path.name] = lzma.open(path).read(200_000).decode("utf-8", errors="ignore")
    return out


def test_both_readers_give_the_same_model():
    a, b = bert("tokenizer.json"), bert("vocab.txt")
    assert a.vocab == b.vocab and len(a.vocab) == 30522
    assert (a.unk_token, a.continuing_subword_prefix, a.max_input_chars_per_word) == ("[UNK]", "##", 100)
    assert a.normalizer == b.normalizer
    assert {x.content for x in a.added_tokens} == {x.content for x in b.added_tokens}


@pytest.mark.parametrize("kind", ["tokenizer.json", "vocab.txt"])
def test_shared_texts_like_hf(kind):
    model = bert(kind)
    for name, text in shared_texts().items():
        ours, theirs = model.encode(text), hf_ids(text)
        assert len(ours) == len(theirs), name
        assert ours == theirs, name


bert_fragment = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),  # any code point but surrogates
    st.text(st.sampled_from("abcdefghij ABCÉ éèñü,.!?#'-_\t\n\u00a0\u3000中文字ΣΑß\u0301\u200b"), max_size=12),
    st.sampled_from(["[MASK]", "[CLS]", "##", "unaffable", "running", "Ünïcödé", "don't"]),
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(bert_fragment, min_size=1, max_size=6).map("".join))
def test_hypothesis_strings_like_hf(text):
    assert bert().encode(text) == hf_ids(text), repr(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x61, max_codepoint=0x7A), min_size=95, max_size=105))
def test_long_words_like_hf(word):
    assert bert().encode(word) == hf_ids(word)


def test_every_code_point_like_hf():
    """The normalizer and pre-tokenizer agree with HF on each code point (in context 'a?b')."""
    model, tok = bert(), hf_bert()
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    batch = 4096
    bad = []
    for i in range(0, len(cps), batch):
        chunk = cps[i:i + batch]
        text = "".join(f"a{chr(cp)}b " for cp in chunk)
        theirs = [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text))]
        if model.pre_tokenize(text) != theirs:
            for cp in chunk:
                one = f"a{chr(cp)}b"
                if model.pre_tokenize(one) != [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(one))]:
                    bad.append(f"U+{cp:04X} ({unicodedata.category(chr(cp))})")
    assert not bad, f"{len(bad)} code points differ: {bad[:20]}"
