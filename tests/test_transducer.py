"""The subsequential transducer (seed 001 Sec. 6) against the reference encoder and naive BPE."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bpefst.bpe.transducer import START, SubsequentialTransducer
from bpefst.bpe.transducer_io import compile_transducer, read_transducer, write_transducer
from bpefst.errors import ArtifactError, BpefstError
from bpefst.tokenizer import ReferenceEncoder
from conftest import bpefst_encoder, corpus_prefix, require_shared
from small_models import naive_bpe, random_byte_model, random_char_model


def unique_producers(model) -> bool:
    return len(set(model.merge_results)) == len(model.merges)


BYTE_MODELS = st.builds(random_byte_model, seed=st.integers(0, 10**9), alphabet=st.sampled_from([b"ab", b"abc ", b"aab"]),
                        num_merges=st.integers(1, 30))
CHAR_MODELS = st.builds(random_char_model, seed=st.integers(0, 10**9), alphabet=st.sampled_from(["ab", "abc"]),
                        num_merges=st.integers(1, 30), suffix=st.sampled_from([None, "▁"]))


@settings(max_examples=150, deadline=None)
@given(model=BYTE_MODELS, data=st.data())
def test_byte_models_agree_with_reference_and_naive(model, data) -> None:
    assume(unique_producers(model))
    encoder = ReferenceEncoder(model)
    transducer = SubsequentialTransducer(model, max_states=64)  # small cache: exercises clearing
    alphabet = "".join(chr(b) for b in {*b"abc "})
    for text in data.draw(st.lists(st.text(alphabet=alphabet, max_size=60), max_size=8)):
        symbols = encoder.spell(text)
        expected = encoder.bpe(symbols)
        assert expected == naive_bpe(model, symbols)
        assert transducer.bpe(symbols) == expected
        codes = transducer.encode_codes(symbols)
        assert transducer.finish_direct(transducer.start, codes) == expected
        run = transducer.run()
        pieces = []
        cut = data.draw(st.integers(0, len(codes)))
        pieces += run.feed(codes[:cut])
        pieces += run.feed(codes[cut:])
        pieces += run.finish()
        assert pieces == expected


@settings(max_examples=100, deadline=None)
@given(model=CHAR_MODELS, data=st.data())
def test_char_models_agree_with_reference(model, data) -> None:
    assume(unique_producers(model))
    encoder = ReferenceEncoder(model)
    transducer = SubsequentialTransducer(model)
    for word in data.draw(st.lists(st.text(alphabet="abc", min_size=1, max_size=40), max_size=8)):
        symbols = encoder.spell(word)
        if any(s not in transducer.code_of for s in symbols):
            continue
        assert transducer.bpe(symbols) == encoder.bpe(symbols)


def test_output_is_emitted_before_the_input_ends() -> None:
    model = random_byte_model(3, alphabet=b"abc ", num_merges=20)
    transducer = SubsequentialTransducer(model)
    run = transducer.run()
    emitted = run.feed("abc " * 50)
    assert emitted, "a subsequential transducer emits decided tokens while reading"
    assert run.pending <= transducer.counters["max_delay"]
    assert emitted + run.finish() == ReferenceEncoder(model).bpe(ReferenceEncoder(model).spell("abc " * 50))


def test_eager_build_is_complete_for_small_models_and_consistent() -> None:
    rng = random.Random(7)
    for seed in range(40):
        model = random_byte_model(seed, alphabet=b"abc", num_merges=rng.randint(1, 15))
        if not unique_producers(model):
            continue
        transducer, stats = compile_transducer(model, budget=20_000, alphabet=list("abc"))
        assert stats["complete"] and stats["states"] == len(transducer.eager_states)
        # the exact maximum output delay: no pending string of a reachable state is longer
        assert stats["max_output_delay"] == max(len(s.pend) for s in transducer.eager_states)
        encoder = ReferenceEncoder(model)
        for _ in range(30):
            text = "".join(rng.choice("abc") for _ in range(rng.randint(0, 30)))
            assert transducer.transduce(text) == encoder.bpe(encoder.spell(text))
        # a complete eager transducer never builds another state
        assert transducer.counters["states_built"] == stats["states"]


def test_artifact_round_trip_and_checks(tmp_path) -> None:
    model = random_byte_model(3, alphabet=b"abc ", num_merges=20)
    transducer, stats = compile_transducer(model, budget=60)
    path = tmp_path / "t.fst"
    write_transducer(path, model, transducer, stats)
    loaded_model, loaded = read_transducer(path)
    assert loaded_model.fingerprint == model.fingerprint
    assert len(loaded.eager_states) == stats["states"]
    encoder = ReferenceEncoder(model)
    for text in ("", "a", "abc abc cab", "ab " * 40):
        codes = text.encode().decode("latin-1")
        assert loaded.transduce(codes) == encoder.bpe(encoder.spell(text))
    raw = path.read_bytes()
    (tmp_path / "cut.fst").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ArtifactError):
        read_transducer(tmp_path / "cut.fst")


def test_duplicate_producers_are_rejected_for_compilation_and_the_pipeline_falls_back() -> None:
    from bpefst.pipeline.encoder import Tokenizer
    from bpefst.tokenizer import BPEModel

    vocab = {b: bytes([b]) for b in range(256)}
    vocab.update({256: b"bc", 257: b"ab", 258: b"abc"})
    a, b, c = ord("a"), ord("b"), ord("c")
    # "abc" has two producers: (ab, c) and (a, bc)
    model = BPEModel(level="byte", vocab=vocab, merges=[(b, c), (a, b), (257, c), (a, 256)])
    with pytest.raises(BpefstError):
        compile_transducer(model, budget=10)
    tok, ref = Tokenizer(model), ReferenceEncoder(model)
    assert tok.transducer is None
    for text in ("abc", "aabcc", "abcabc" * 30, "cab" * 50):
        assert tok.encode(text) == ref.encode(text)


@pytest.mark.parametrize("kind", ["cl100k_base", "gpt2", "wikitext8000"])
def test_real_tokenizers_every_chunk_of_a_corpus_sample(kind: str) -> None:
    require_shared()
    encoder = bpefst_encoder(kind)
    transducer = SubsequentialTransducer(encoder.model)
    text = corpus_prefix("pydocs", 150_000)
    chunks = list(dict.fromkeys(encoder.pretokenizer.chunks(text)))
    checked = 0
    for chunk in chunks:
        symbols = encoder.spell(chunk)
        if len(symbols) < 2:
            continue
        ours = transducer.bpe(symbols)
        if ours is None:  # a symbol outside the base alphabet (falls back to the reference in the pipeline)
            continue
        assert ours == encoder.bpe(symbols), chunk
        checked += 1
    assert checked > 1000


@pytest.mark.parametrize("text", ["a" * 20_000, "1" * 5_000, "_" * 20_000, " " * 20_000, "😀" * 3_000, "漢字" * 3_000])
def test_long_adversarial_chunks_on_cl100k(text: str) -> None:
    require_shared()
    encoder = bpefst_encoder("cl100k_base")
    transducer = SubsequentialTransducer(encoder.model)
    symbols = encoder.spell(text)
    assert transducer.bpe(symbols) == encoder.bpe(symbols)


def test_random_letters_take_the_direct_path_and_agree() -> None:
    require_shared()
    encoder = bpefst_encoder("cl100k_base")
    transducer = SubsequentialTransducer(encoder.model)
    rng = random.Random(5)
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20_000))
    assert transducer.bpe(encoder.spell(text)) == encoder.bpe(encoder.spell(text))
    assert transducer.start.ctx == START
