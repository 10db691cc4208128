"""bpefst as a drop-in for tiktoken: ``import bpefst as tiktoken``, checked name by name against tiktoken itself.

The module drives bpefst only through ``import bpefst as tiktoken`` (the line a
user changes) and compares, side by side with the real tiktoken built offline
from the shared rank files, every public name of tiktoken's module and
``Encoding``: ids, decoded text and bytes, offsets, single tokens, batches,
tiktoken's byte encoder, ``encode_with_unstable``, the constructor from
in-memory ranks and pickling, the model table, and the exception raised for
each kind of bad input (its type, and what its message says).  Inputs: the
shared corpora and hypothesis-generated text with surrogates, invalid UTF-8
and special tokens.

Where bpefst answers and tiktoken raises (the documented differences in the
README's "Coming from tiktoken"), the test pins bpefst's answer to tiktoken's
``encode`` of the same text.
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
import pickle
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import corpus_prefix, drop_unassigned, require_shared, tiktoken_oracle

real_tiktoken = pytest.importorskip("tiktoken")
real_model_table = pytest.importorskip("tiktoken.model")

import bpefst as tiktoken  # noqa: E402  (the one line a tiktoken script changes)
from bpefst import BpefstError  # noqa: E402

NAMES = ("cl100k_base", "o200k_base")
SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>"]


# -- the encodings: bpefst by name from BPEFST_DATA, and by tiktoken's constructor -----------

@pytest.fixture(scope="module")
def data_path():
    """BPEFST_DATA pointing at the shared rank files, for this module only."""
    old = os.environ.get("BPEFST_DATA")
    os.environ["BPEFST_DATA"] = str(require_shared() / "tiktoken")
    yield os.environ["BPEFST_DATA"]
    if old is None:
        del os.environ["BPEFST_DATA"]
    else:
        os.environ["BPEFST_DATA"] = old


@pytest.fixture(scope="module")
def by_name(data_path):
    return {name: tiktoken.get_encoding(name) for name in NAMES}


@pytest.fixture(scope="module")
def by_ranks():
    """o200k as bpefst's Encoding built with tiktoken's constructor from tiktoken's own in-memory ranks
    (cl100k is built so in the constructor tests)."""
    ref = tiktoken_oracle("o200k_base")
    return tiktoken.Encoding("o200k_base", pat_str=ref._pat_str, mergeable_ranks=ref._mergeable_ranks,
                             special_tokens=ref._special_tokens)


@pytest.fixture(scope="module", params=NAMES)
def pair(request, by_name, by_ranks):
    """(bpefst, tiktoken) for one encoding; cl100k by name, o200k from in-memory ranks (both routes are used)."""
    name = request.param
    return (by_name[name] if name == "cl100k_base" else by_ranks), tiktoken_oracle(name)


# -- the surface: every public name, with tiktoken's parameters -------------------------------------

def test_module_has_every_public_name_of_tiktoken():
    public = {n for n in dir(real_tiktoken) if not n.startswith("_")} - {"core", "registry", "model", "load"}
    assert public and public <= set(dir(tiktoken)), public - set(dir(tiktoken))
    assert tiktoken.Encoding is tiktoken.Tokenizer


def _public_members(cls) -> dict[str, object]:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_")}


def test_encoding_has_every_public_name_and_keyword_of_tiktoken(pair):
    enc, ref = pair
    for name, member in _public_members(real_tiktoken.Encoding).items():
        assert hasattr(enc, name), name
        if callable(member) and not isinstance(member, property):
            ours = inspect.signature(getattr(tiktoken.Encoding, name)).parameters
            for param in inspect.signature(member).parameters.values():  # every keyword tiktoken takes, by its name
                assert param.name in ours, (name, param.name)
                assert ours[param.name].kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY), (name, param.name)
    for attribute in ("name", "max_token_value", "n_vocab", "eot_token", "special_tokens_set",
                      "_mergeable_ranks", "_pat_str", "_special_tokens"):
        assert getattr(enc, attribute) == getattr(ref, attribute), attribute
    assert enc.token_byte_values() == ref.token_byte_values()
    for token in (0, 255, ref.eot_token, ref.max_token_value, ref.max_token_value - 1, 100_000):
        assert enc.is_special_token(token) == ref.is_special_token(token)


def test_constructor_keeps_the_callers_objects():
    ref = tiktoken_oracle("cl100k_base")
    ranks, specials = ref._mergeable_ranks, dict(ref._special_tokens)
    enc = tiktoken.Encoding(name="mine", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens=specials,
                            explicit_n_vocab=None)
    assert enc._mergeable_ranks is ranks and enc._special_tokens is specials and enc.name == "mine"
    assert repr(enc).startswith("<bpefst.Tokenizer 'mine'")


# -- ids, text, bytes, offsets on the shared corpora ------------------------------------------------

def _corpus_lines(limit: int = 600) -> list[str]:
    lines = corpus_prefix("fortunes", 150_000).splitlines(keepends=True)[:limit // 2]
    lines += corpus_prefix("pydocs", 150_000).splitlines(keepends=True)[:limit // 2]
    return lines


def test_corpora_ids_text_bytes_and_offsets(pair):
    enc, ref = pair
    lines = _corpus_lines()
    text = "".join(lines)
    assert enc.encode(text) == ref.encode(text)
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    assert enc.encode_to_numpy(text).tolist() == ref.encode_to_numpy(text).tolist()
    assert enc.encode_batch(lines) == ref.encode_batch(lines)
    assert enc.encode_batch(lines, num_threads=2, jobs=2) == ref.encode_batch(lines, num_threads=2)
    assert enc.encode_ordinary_batch(lines, num_threads=1) == ref.encode_ordinary_batch(lines, num_threads=1)
    raw = text.encode("utf-8")
    assert enc.encode_bytes(raw) == enc._encode_bytes(raw) == ref._encode_bytes(raw)
    batch = ref.encode_batch(lines)
    assert enc.decode_batch(batch) == ref.decode_batch(batch)
    assert enc.decode_bytes_batch(batch, num_threads=3) == ref.decode_bytes_batch(batch, num_threads=3)
    ids = ref.encode(text)
    assert enc.decode(ids) == ref.decode(ids) == text
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)
    assert enc.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)
    assert enc.decode_with_offsets(ids) == ref.decode_with_offsets(ids)
    for token in set(ids[:2000]) | set(ref._special_tokens.values()):
        assert enc.decode_single_token_bytes(token) == ref.decode_single_token_bytes(token)
        data = ref.decode_single_token_bytes(token)
        assert enc.encode_single_token(data) == ref.encode_single_token(data)
    for word in ("hello", " world", "<|endoftext|>", "\n\n"):
        assert enc.encode_single_token(word) == ref.encode_single_token(word)


# -- hypothesis: surrogates, invalid UTF-8, special tokens -------------------------------------------

PIECES = ["\ud83d", "\udc4d", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\udc4d", "\ufffd", " ", "\n", "\r\n", "  ",
          "'s", "123", "héllo", "日本語", "!!", *SPECIALS, "<|", "|>"]
surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])
# characters assigned after Unicode 14 are left out: the regex module's Unicode is newer than tiktoken's (drop_unassigned)
texts = st.lists(st.one_of(st.sampled_from(PIECES), surrogates, st.text(max_size=6).map(drop_unassigned)),
                 max_size=12).map("".join)
# bytes: valid UTF-8 around invalid sequences (lone continuation bytes, cut characters, 0xff)
byte_inputs = st.lists(st.one_of(
    texts.map(lambda t: t.encode("utf-8", "replace")),
    st.sampled_from([b"\xff", b"\x80", b"\xed", b"\xec\x8b", b"\xf0\x9f\x91", b"\xc3", b" \xec\x8b\xa4\xed"]),
    st.binary(max_size=5)), max_size=8).map(b"".join)
PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(text=texts)
def test_text_with_surrogates_and_specials_as_tiktoken(pair, text):
    enc, ref = pair
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert enc.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())
    allowed = {"<|endoftext|>"}
    _same_outcome(lambda e: e.encode(text, allowed_special=allowed), enc, ref)
    _same_outcome(lambda e: e.encode(text), enc, ref)
    assert enc.encode_batch([text, text[:3]], allowed_special="all") == ref.encode_batch([text, text[:3]], allowed_special="all")
    assert enc.encode_ordinary_batch([text]) == ref.encode_ordinary_batch([text])
    # where tiktoken raises UnicodeEncodeError (no surrogate fix-up there), bpefst reads the text as encode does
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert enc.encode_to_numpy(text, allowed_special="all").tolist() == ref.encode(fixed, allowed_special="all")
    # encode_iterable: pieces cut anywhere, a surrogate pair included, give encode's ids
    cuts = [text[i:i + 3] for i in range(0, len(text), 3)]
    assert list(enc.encode_iterable(cuts, allowed_special="all")) == ref.encode(text, allowed_special="all")


@PROPERTY
@given(data=byte_inputs)
def test_bytes_as_tiktokens_byte_encoder(pair, data):
    enc, ref = pair
    assert enc.encode_bytes(data) == enc._encode_bytes(data) == ref._encode_bytes(data)
    ids = ref._encode_bytes(data)
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids) == data
    assert enc.decode(ids) == ref.decode(ids)
    assert enc.decode(ids, errors="ignore") == ref.decode(ids, errors="ignore")
    _same_outcome(lambda e: e.decode(ids, errors="strict"), enc, ref)
    _same_outcome(lambda e: e.decode_with_offsets(ids), enc, ref)
    # the explicit raw-byte mode keeps every byte where it was (and round-trips)
    assert enc.decode_bytes(enc.encode_bytes(data, errors="surrogateescape")) == data


def _same_outcome(call, enc, ref) -> None:
    """The same result, or an exception of tiktoken's type (that is also a BpefstError)."""
    try:
        expected = call(ref)
    except Exception as error:  # noqa: BLE001 - any type tiktoken raises is what bpefst must raise
        with pytest.raises(type(error)) as raised:
            call(enc)
        assert isinstance(raised.value, BpefstError), raised.value
        return
    assert call(enc) == expected


@pytest.mark.parametrize("data, expected", [
    (b" \xec\x8b\xa4\xed", [62085]),          # the issue's example: the valid piece joins the invalid tail
    (b"hello \xff world", None), (b"\n\n  \xff", None), (b"<|endoftext|>\xe2\x82", None), (b"\xff", None), (b"", None),
])
def test_byte_encoder_examples(by_name, data, expected):
    enc, ref = by_name["cl100k_base"], tiktoken_oracle("cl100k_base")
    assert enc.encode_bytes(data) == ref._encode_bytes(data)
    if expected is not None:
        assert enc.encode_bytes(data) == expected


def test_surrogate_examples_from_the_issue(by_name):
    enc, ref = by_name["cl100k_base"], tiktoken_oracle("cl100k_base")
    assert enc.encode("\ud83d\udc4d") == ref.encode("\ud83d\udc4d") == ref.encode("👍")
    assert enc.encode("a\udc80b") == ref.encode("a\udc80b") == [64, 5809, 65]
    assert enc.encode("\ud800") == ref.encode("\ud800") == ref.encode("\ufffd")


@pytest.mark.parametrize("text", ["hello fanta", "hello world ", "x!!!", "  ", "a\n", "日本", "\ud83d\udc4d", "",
                                  "abc<|endoftext|>", "tokens are fun"])
def test_encode_with_unstable(by_name, text):
    enc, ref = by_name["cl100k_base"], tiktoken_oracle("cl100k_base")
    kwargs = {"allowed_special": "all"}
    stable, completions = enc.encode_with_unstable(text, **kwargs)
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # tiktoken raises on surrogates here
    ref_stable, ref_completions = ref.encode_with_unstable(fixed, **kwargs)
    assert stable == ref_stable
    assert sorted(map(tuple, completions)) == sorted(map(tuple, ref_completions))


# -- exceptions: tiktoken's type (and a BpefstError), a message that says what is wrong -------------

BAD_CALLS = {
    "unknown id in decode": (lambda e: e.decode([10**7]), "10000000"),
    "unknown id in decode_bytes": (lambda e: e.decode_bytes([1, 10**7]), "10000000"),
    "negative id": (lambda e: e.decode_bytes([-1]), "-1"),
    "id beyond 32 bits": (lambda e: e.decode([2**40]), str(2**40)),
    "id not an int": (lambda e: e.decode_bytes(["a"]), "'a'"),
    "unknown id in decode_single_token_bytes": (lambda e: e.decode_single_token_bytes(10**7), "10000000"),
    "negative id in decode_single_token_bytes": (lambda e: e.decode_single_token_bytes(-5), "-5"),
    "unknown id in decode_tokens_bytes": (lambda e: e.decode_tokens_bytes([10**7]), "10000000"),
    "unknown id in decode_with_offsets": (lambda e: e.decode_with_offsets([10**7]), "10000000"),
    "unknown id in decode_batch": (lambda e: e.decode_batch([[1], [10**7]]), "10000000"),
    "not UTF-8 in decode_with_offsets": (lambda e: e.decode_with_offsets([e._encode_bytes(b"\xff")[0]]), "0xff"),
    "strict decode": (lambda e: e.decode(e._encode_bytes(b"\xff"), errors="strict"), "0xff"),
    "not a single token": (lambda e: e.encode_single_token("hello world"), "hello world"),
    "single token of an int": (lambda e: e.encode_single_token(5), "int"),
    "encode an int": (lambda e: e.encode(5), "int"),
    "encode bytes": (lambda e: e.encode(b"abc"), "bytes"),
    "encode_ordinary None": (lambda e: e.encode_ordinary(None), "None"),
    "disallowed special": (lambda e: e.encode("hi <|endoftext|>"), "<|endoftext|>"),
    "disallowed special, surrogates before it": (lambda e: e.encode("\ud83d\udc4d<|endoftext|>"), "<|endoftext|>"),
    "disallowed special in a batch": (lambda e: e.encode_batch(["a", "<|fim_prefix|>"]), "<|fim_prefix|>"),
    "allowed_special a bare string": (lambda e: e.encode("a", allowed_special="<|endoftext|>"), "allowed_special"),
    "disallowed special to_numpy": (lambda e: e.encode_to_numpy("<|endoftext|>"), "<|endoftext|>"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_exceptions_have_tiktokens_types(by_name, case):
    call, mentioned = BAD_CALLS[case]
    enc, ref = by_name["cl100k_base"], tiktoken_oracle("cl100k_base")
    with pytest.raises(Exception) as expected:
        call(ref)
    with pytest.raises(type(expected.value)) as raised:
        call(enc)
    assert isinstance(raised.value, BpefstError)
    assert mentioned in str(raised.value), (str(raised.value), mentioned)
    assert "\n" not in str(raised.value)


def test_registry_errors_are_tiktokens(data_path):
    for bad in ("no_such_encoding", 5):
        with pytest.raises(ValueError):
            real_tiktoken.get_encoding(bad)
        with pytest.raises(ValueError) as raised:
            tiktoken.get_encoding(bad)
        assert isinstance(raised.value, BpefstError) and str(bad) in str(raised.value)
    with pytest.raises(KeyError):
        real_tiktoken.encoding_name_for_model("no-such-model")
    with pytest.raises(KeyError) as raised:
        tiktoken.encoding_name_for_model("no-such-model")
    assert isinstance(raised.value, BpefstError) and str(raised.value).startswith("no encoding is known for the model 'no-such-model'")


# -- the constructor from in-memory ranks, pickling ----------------------------------------------------

def test_constructor_from_in_memory_ranks_reads_no_file(monkeypatch):
    """Built from tiktoken's own ranks with BPEFST_DATA empty and the user directory elsewhere: no file is opened
    (an audit hook watches every open while the encoding is built and used)."""
    ref = tiktoken_oracle("cl100k_base")
    monkeypatch.setenv("BPEFST_DATA", "")
    monkeypatch.setenv("XDG_DATA_HOME", "/nonexistent")
    opened: list[str] = []
    watching = [True]

    def hook(event, args):
        if watching and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            name = os.fsdecode(args[0])
            if not name.endswith((".py", ".pyc", ".so")) and "__pycache__" not in name:
                opened.append(name)

    text = corpus_prefix("fortunes", 20_000)
    sys.addaudithook(hook)
    try:
        enc = tiktoken.Encoding("cl100k_copy", pat_str=ref._pat_str, mergeable_ranks=ref._mergeable_ranks,
                                special_tokens=ref._special_tokens, explicit_n_vocab=None)
        ids = enc.encode(text, allowed_special="all")
    finally:
        watching.clear()
    assert [name for name in opened if "tiktoken" in name or "bpefst" in os.path.basename(name)] == [], opened
    assert ids == ref.encode(text, allowed_special="all")


def test_explicit_n_vocab_and_bad_constructor_arguments():
    ref = tiktoken_oracle("cl100k_base")
    ranks = ref._mergeable_ranks
    dense = {"<|endoftext|>": len(ranks)}  # cl100k's ranks are 0 .. 100255: the next id makes them dense
    ok = tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens=dense,
                           explicit_n_vocab=len(ranks) + 1)
    assert ok.n_vocab == real_tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens=dense,
                                                explicit_n_vocab=len(ranks) + 1).n_vocab
    for n_vocab, specials in ((len(ranks) + 1, ref._special_tokens), (100_300, {})):
        with pytest.raises(AssertionError):
            real_tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens=specials,
                                   explicit_n_vocab=n_vocab)
        with pytest.raises(ValueError, match=f"explicit_n_vocab={n_vocab}"):  # tiktoken: a bare AssertionError
            tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens=specials,
                              explicit_n_vocab=n_vocab)
    with pytest.raises(BpefstError, match="also the rank of an ordinary token"):
        tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks=ranks, special_tokens={"<|x|>": 5})
    with pytest.raises(BpefstError, match="invalid pre-tokenization pattern"):
        tiktoken.Encoding("x", pat_str="(unclosed", mergeable_ranks=ranks, special_tokens={})
    with pytest.raises(TypeError, match="mergeable_ranks"):
        tiktoken.Encoding("x", pat_str=ref._pat_str, mergeable_ranks={"a": 1}, special_tokens={})
    with pytest.raises(TypeError, match="pat_str="):
        tiktoken.Encoding("x", mergeable_ranks=ranks, special_tokens={})


def test_a_token_bpe_cannot_build_is_still_found_whole_as_in_tiktoken():
    """tiktoken looks a whole chunk up before BPE: a rank-table token that BPE cannot build comes out whole."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"abc": 256, b"xy": 257, b"xyz": 258})
    ref = real_tiktoken.Encoding("t", pat_str=r"\w+|\s+|[^\w\s]+", mergeable_ranks=ranks, special_tokens={})
    enc = tiktoken.Encoding("t", pat_str=r"\w+|\s+|[^\w\s]+", mergeable_ranks=ranks, special_tokens={})
    for text in ("abc", "abc abcd xyz xyzabc", "ab c", "aabc"):
        assert enc.encode(text) == ref.encode(text), text
    assert enc.encode("abc") == [256]


def _encode_in_child(enc, text):
    return enc.encode(text, allowed_special="all"), enc.name


def test_pickles_and_unpickles_also_through_a_spawn_pool(by_ranks):
    enc, ref = by_ranks, tiktoken_oracle("o200k_base")
    text = corpus_prefix("fortunes", 30_000) + "<|endoftext|>"
    again = pickle.loads(pickle.dumps(enc))
    assert again.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert again._mergeable_ranks == ref._mergeable_ranks and again._special_tokens == ref._special_tokens
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        ids, name = pool.apply(_encode_in_child, (enc, text))
    assert ids == ref.encode(text, allowed_special="all") and name == "o200k_base"


# -- the model table ---------------------------------------------------------------------------------------

def test_model_table_is_tiktokens(data_path):
    ours = sys.modules["bpefst.models"] if "bpefst.models" in sys.modules else __import__("bpefst.models").models
    assert list(ours.MODEL_TO_ENCODING.items()) == list(real_model_table.MODEL_TO_ENCODING.items())
    assert list(ours.MODEL_PREFIX_TO_ENCODING.items()) == list(real_model_table.MODEL_PREFIX_TO_ENCODING.items())
    models = list(real_model_table.MODEL_TO_ENCODING)
    models += [prefix + "2025-01-01" for prefix in real_model_table.MODEL_PREFIX_TO_ENCODING]
    models += ["ft:gpt-4o:org::abc", "gpt-4o-mini", "gpt-4-32k", "gpt-5-nano"]
    available = set(NAMES)
    for model in models:
        name = real_tiktoken.encoding_name_for_model(model)
        assert tiktoken.encoding_name_for_model(model) == name, model
        if name in available:
            enc = tiktoken.encoding_for_model(model)
            assert enc.name == name and enc is tiktoken.get_encoding(name)
        else:  # not installed: the error says where bpefst looked and how to add the file
            with pytest.raises(ValueError) as raised:
                tiktoken.encoding_for_model(model)
            message = str(raised.value)
            assert f"no tokenizer named {name!r}" in message and data_path in message and "bpefst convert" in message
    sample = "Coming from tiktoken: the same ids."
    for name in available:
        ref = tiktoken_oracle(name)
        model = next(m for m in real_model_table.MODEL_TO_ENCODING if real_model_table.MODEL_TO_ENCODING[m] == name)
        assert tiktoken.encoding_for_model(model).encode(sample) == ref.encode(sample)


def test_list_encoding_names_lists_what_is_installed(data_path):
    names = tiktoken.list_encoding_names()
    assert set(NAMES) <= set(names) <= set(real_tiktoken.list_encoding_names()) | set(names)
    for name in NAMES:
        assert name in real_tiktoken.list_encoding_names()


# -- the documented differences (README, "Coming from tiktoken"): each pinned ------------------------

def test_documented_differences(by_name):
    enc, ref = by_name["cl100k_base"], tiktoken_oracle("cl100k_base")
    # surrogates where tiktoken has no fix-up (it raises UnicodeEncodeError): read as encode reads them
    for call in (lambda e: e.encode_single_token(" \ud83d\ude00"), lambda e: e._encode_single_piece("a\ud83d\udc4d"),
                 lambda e: e.encode_to_numpy("\ud83d\udc4d")):
        with pytest.raises(UnicodeEncodeError):
            call(ref)
    assert enc.encode_single_token(" \ud83d\ude00") == ref.encode_single_token(" 😀")  # one token in cl100k
    assert enc._encode_single_piece("a\ud83d\udc4d") == ref._encode_single_piece("a👍")
    assert enc.encode_to_numpy("\ud83d\udc4d").tolist() == ref.encode("👍")
    # a bare string where a set of specials belongs: tiktoken reads it as a set of characters
    with pytest.raises(ValueError, match="disallowed special token '<'"):
        ref.encode("<|endoftext|>", disallowed_special="<|endoftext|>")
    with pytest.raises(ValueError, match="disallowed_special= takes"):
        enc.encode("<|endoftext|>", disallowed_special="<|endoftext|>")
    # is_special_token of a non-int: tiktoken asserts, bpefst raises TypeError
    with pytest.raises(AssertionError):
        ref.is_special_token("a")
    with pytest.raises(TypeError, match="token id"):
        enc.is_special_token("a")
    # eot_token without <|endoftext|>: tiktoken raises KeyError, bpefst gives None
    ranks = {bytes([b]): b for b in range(256)}
    plain_ref = real_tiktoken.Encoding("plain", pat_str=r"\w+|\s+", mergeable_ranks=ranks, special_tokens={})
    plain = tiktoken.Encoding("plain", pat_str=r"\w+|\s+", mergeable_ranks=ranks, special_tokens={})
    with pytest.raises(KeyError):
        plain_ref.eot_token
    assert plain.eot_token is None
    # num_threads: the compiled core's threads (the pure path ignores it); the ids are the same either way
    assert enc.encode_batch(["a b", "c"], num_threads=64) == ref.encode_batch(["a b", "c"], num_threads=64)
    with pytest.raises(ValueError):
        enc.encode_batch(["a"], num_threads=0)


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_surrogates_are_read_as_utf16_reads_them(text):
    """The boundary function against Python's own UTF-16 codec (what tiktoken's fix-up uses)."""
    from bpefst.tokenizer.surrogates import as_text

    assert as_text(text) == text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
