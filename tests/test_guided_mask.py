"""The mask API of GuidedAutomaton (fill_next_token_bitmask, allowed_token_ids, stop ids) and the
bitmask helpers, against allowed() (the automaton's own rows) and numpy's unpackbits as oracles."""

from __future__ import annotations

import random

import pytest

from bpefst.automata import DFA
from bpefst.decoding import allocate_token_bitmask, apply_token_bitmask
from bpefst.errors import BpefstError
import bpefst
from bpefst.promotion import GuidedAutomaton, TokenLanguage
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS
from small_models import random_byte_model

numpy = pytest.importorskip("numpy")


def unpacked(row) -> set[int]:
    """The ids whose bit is set in one packed int32 row (numpy's own bit unpacking, little-endian)."""
    bits = numpy.unpackbits(numpy.asarray(row, dtype=numpy.int32).view(numpy.uint8), bitorder="little")
    return set(numpy.flatnonzero(bits).tolist())


def expected(guided: GuidedAutomaton, state: int) -> set[int]:
    return set(guided.allowed(state)) | (set(guided.stop_ids) if guided.is_accepting(state) else set())


def check_state(guided: GuidedAutomaton, state: int, vocab: int, backends) -> None:
    want = expected(guided, state)
    assert guided.allowed_token_ids(state) == sorted(want)
    for backend in backends:
        bitmask = allocate_token_bitmask(3, vocab, backend)
        bitmask.fill(-1) if backend == "numpy" else bitmask.fill_(-1)  # stale content must be overwritten
        guided.fill_next_token_bitmask(state, bitmask, index=1)
        row = bitmask[1] if backend == "numpy" else bitmask[1].numpy()
        assert unpacked(row) == want
        assert unpacked(bitmask[0] if backend == "numpy" else bitmask[0].numpy()) == set(range(32 * bitmask.shape[1]))


def backends():
    found = ["numpy"]
    try:
        import torch  # noqa: F401
        found.append("torch")
    except ImportError:
        pass
    return found


@pytest.mark.parametrize("seed", range(4))
def test_small_models_every_state(seed):
    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    stop = model.max_id + 1
    pattern = compile_regex(r"(ab|b1)+( a{1,3})?", alphabet_for(model))
    for kind in ("dfa", "on-demand"):
        on_demand = kind == "on-demand"
        language = TokenLanguage(pattern, model)
        result = language.on_demand() if on_demand else language.dfa()
        guided = GuidedAutomaton(result, stop_ids=[stop])
        if on_demand:
            result.explore()
        states = range(result.num_states) if on_demand else range(len(result.transitions))
        for state in states:
            check_state(guided, state, stop + 1, backends())
        accepting = [q for q in states if guided.is_accepting(q)]
        assert accepting and all(stop in guided.allowed_token_ids(q) for q in accepting)
        assert all(stop not in guided.allowed_token_ids(q) for q in states if q not in accepting)


def test_gpt2_json_schema_random_walks(shared_data):
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(shared_data / "gpt2" / "vocab.json")
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"}}, "required": ["name"]}
    guided = bpefst.promote(model, json_schema=schema).guide()
    assert guided.stop_ids == {50256}
    rng = random.Random(0)
    for _ in range(6):
        state = guided.start
        for _ in range(12):
            check_state(guided, state, 50257, backends())
            row = guided.allowed(state)
            if not row:
                break
            state = guided.step(state, rng.choice(row))


def test_bitmask_too_small_and_apply():
    dfa = DFA([{3: 1, 40: 1}, {}], 0, {1})
    guided = GuidedAutomaton(dfa, stop_ids=7)
    with pytest.raises(BpefstError, match="holds 32 token ids"):
        guided.fill_next_token_bitmask(0, allocate_token_bitmask(1, 32))
    with pytest.raises(BpefstError, match="left the language"):
        guided.fill_next_token_bitmask(guided.step(0, 4), allocate_token_bitmask(1, 64))
    rng = numpy.random.default_rng(0)
    for backend in backends():
        bitmask = allocate_token_bitmask(2, 45, backend)
        guided.fill_next_token_bitmask(0, bitmask, 0)
        guided.fill_next_token_bitmask(1, bitmask, 1)
        logits = rng.standard_normal((2, 50)).astype(numpy.float32)
        if backend == "torch":
            import torch
            tensor = torch.from_numpy(logits.copy())
            apply_token_bitmask(tensor, bitmask)
            out = tensor.numpy()
        else:
            out = logits.copy()
            apply_token_bitmask(out, bitmask)
        assert set(numpy.flatnonzero(numpy.isfinite(out[0]))) == {3, 40}
        assert set(numpy.flatnonzero(numpy.isfinite(out[1]))) == {7}  # accepting: the stop id only
        assert (out[numpy.isfinite(out)] == logits[numpy.isfinite(out)]).all()
        # a subset of rows
        out2 = logits.copy()
        apply_token_bitmask(out2, bitmask if backend == "numpy" else bitmask.numpy(), rows=[1])
        assert (out2[0] == logits[0]).all() and set(numpy.flatnonzero(numpy.isfinite(out2[1]))) == {7}


def test_guide_cache_and_arguments(shared_data):
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(shared_data / "gpt2" / "vocab.json")
    language = bpefst.promote(model, r"(yes|no)")
    first = language.guide()
    assert language.guide() is first
    assert language.guide(stop_ids=[1]) is not first
    with pytest.raises(BpefstError, match="exactly one"):
        bpefst.promote(model)
    with pytest.raises(BpefstError, match="mode"):
        bpefst.promote(model, regex="a", mode="maxmatch")


def test_framework_free_loop_example(shared_data):
    """The loop in bpefst.decoding's docstring runs, and produces GPT-2's own encoding of a full match."""
    import textwrap

    import bpefst.decoding
    from conftest import hf_gpt2_oracle

    code = textwrap.dedent(bpefst.decoding.__doc__.split("::", 1)[1]).replace("../shared/data", str(shared_data))
    scope: dict = {}
    exec(compile(code, "bpefst.decoding example", "exec"), scope)
    ids = scope["out"]
    text = b"".join(scope["model"].token_bytes(t) for t in ids).decode()
    assert text in ("yes", "no", "maybe")
    assert ids == hf_gpt2_oracle().encode(text).ids


# -- the on-disk cache ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_cache_round_trip_small_models(tmp_path, seed):
    """An automaton read back from the cache expands to exactly the automaton built fresh."""
    from bpefst.bpe import MergeForest, build_canonical
    from bpefst.promotion import guide_cache

    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    regex_text = r"(ab|b1)+( a{1,3})?"
    fresh = TokenLanguage(compile_regex(regex_text, alphabet_for(model)), model).on_demand()
    path = guide_cache.cache_path(tmp_path, model.fingerprint, regex_text)
    guide_cache.save(path, fresh, model.fingerprint, regex_text)
    automaton = build_canonical(MergeForest.from_model(model))
    loaded = guide_cache.load(path, automaton, model.fingerprint, regex_text)
    assert loaded is not None
    a, b = fresh.to_dfa(), loaded.to_dfa()
    assert (a.transitions, a.start, a.finals) == (b.transitions, b.start, b.finals)
    # another pattern or tokenizer, or a damaged file, is a miss
    assert guide_cache.load(path, automaton, model.fingerprint, regex_text + "?") is None
    assert guide_cache.load(path, automaton, "0" * 64, regex_text) is None
    data = bytearray(path.read_bytes())
    data[-5] ^= 1
    path.write_bytes(bytes(data))
    assert guide_cache.load(path, automaton, model.fingerprint, regex_text) is None
    path.write_bytes(b"")
    assert guide_cache.load(path, automaton, model.fingerprint, regex_text) is None


def test_guide_cache_dir_gpt2(shared_data, tmp_path):
    """promote(cache_dir=...) writes the set-up once; the next process reads it instead of promoting, same masks."""
    from bpefst.promotion import guide_cache
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(shared_data / "gpt2" / "vocab.json")
    schema = {"type": "object", "properties": {"mail": {"type": "string", "format": "email"}, "n": {"type": "integer"}}}
    built = bpefst.promote(model, json_schema=schema, cache_dir=tmp_path).guide()
    files = list(tmp_path.iterdir())
    assert sorted(f.suffix for f in files) == [".guide", ".parts"]  # the language's set-up, the tokenizer's parts
    language = bpefst.promote(model, json_schema=schema, cache_dir=tmp_path)  # as a new process would: nothing in memory
    assert language.built["product"] == 0, "promoted again instead of reading the cache"
    read = language.guide()
    assert read is not built and isinstance(read.automaton, guide_cache.OnDemandCanonical)
    rng = random.Random(3)
    for _ in range(8):
        a = b = built.start
        assert a == b
        for _ in range(15):
            assert read.allowed_token_ids(b) == built.allowed_token_ids(a)
            assert read.is_accepting(b) == built.is_accepting(a)
            row = built.allowed(a)
            if not row:
                break
            token = rng.choice(row)
            a, b = built.step(a, token), read.step(b, token)


@pytest.mark.parametrize("seed", range(3))
def test_batch_fill_and_advance_agree_with_one_state_at_a_time(seed):
    """fill_next_token_bitmasks writes each row as fill_next_token_bitmask does (None rows untouched);
    advance() is step() repeated, None once a token leaves the language."""
    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    stop = model.max_id + 1
    language = bpefst.promote(model, r"(ab|b1)+( a{1,3})?")
    guided = language.guide(stop_ids=[stop])
    rng = random.Random(seed)
    states, walks = [], []
    for _ in range(12):  # states reached by random walks, with the tokens that reached them
        state, tokens = guided.start, []
        for _ in range(rng.randrange(5)):
            row = guided.allowed(state)
            if not row:
                break
            tokens.append(rng.choice(row))
            state = guided.step(state, tokens[-1])
        states.append(state)
        walks.append(tokens)
    for backend in backends():
        batch = [*states, None]
        bitmask = allocate_token_bitmask(len(batch), stop + 1, backend)
        bitmask.fill(-1) if backend == "numpy" else bitmask.fill_(-1)
        guided.fill_next_token_bitmasks(batch, bitmask)
        for i, state in enumerate(states):
            row = bitmask[i] if backend == "numpy" else bitmask[i].numpy()
            assert unpacked(row) == expected(guided, state)
        last = bitmask[-1] if backend == "numpy" else bitmask[-1].numpy()
        assert unpacked(last) == set(range(32 * bitmask.shape[1]))  # the finished row is left alone
        with pytest.raises(BpefstError, match="a batch of 13 states"):
            guided.fill_next_token_bitmasks(batch, allocate_token_bitmask(2, stop + 1, backend))
    for state, tokens in zip(states, walks):
        assert guided.advance(guided.start, tokens) == state
    outside = next(t for t in range(model.max_id + 1) if t not in guided.allowed(guided.start))
    assert guided.advance(guided.start, [outside, *walks[0]]) is None


@pytest.mark.parametrize("engine", ["compiled", "pure"])
@pytest.mark.parametrize("seed", range(3))
def test_masks_over_the_implicit_a_bpe_on_both_engines(seed, engine):
    """Over the implicit A_BPE (what vocabularies past 65,536 tokens get) the compiled core writes a new
    state's mask as bytes (good[q] without the previous token's banned set, per configuration, OR-ed);
    every state's mask, stop ids included, is its row's tokens on both engines."""
    from bpefst import native
    from bpefst.bpe import MergeForest, build_canonical
    from bpefst.bpe.canonical import ImplicitCanonical
    from bpefst.promotion import TokenLanguage

    if engine == "compiled" and native.core is None:
        pytest.skip(f"the compiled core is not in use here: {native.engine_description()}")
    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    stop = model.max_id + 1
    automaton = ImplicitCanonical(MergeForest.from_model(model), engine)
    pattern = compile_regex(r"(ab|b1)+( a{1,3})?", alphabet_for(model))
    guided = TokenLanguage(pattern, model, automaton=automaton).guide(stop_ids=[stop])
    explicit = TokenLanguage(pattern, model, automaton=build_canonical(MergeForest.from_model(model), "explicit")).guide(
        stop_ids=[stop])
    lazy = guided.automaton
    queue, seen = [lazy.start], {lazy.start}
    while queue:  # masks first, rows afterwards: the bytes path is what a decoder meets on a new state
        state = queue.pop()
        bitmask = allocate_token_bitmask(1, stop + 1)
        guided.fill_next_token_bitmask(state, bitmask)
        assert unpacked(bitmask[0]) == expected(guided, state)
        assert guided.allowed_token_ids(state) == sorted(expected(guided, state))
        for token in guided.allowed(state):
            target = guided.step(state, token)
            if target not in seen:
                seen.add(target)
                queue.append(target)
    if engine == "compiled":
        assert any(lazy.packed_mask(state, 8) is not None for state in seen)
    assert guided_language(guided) == guided_language(explicit)


def guided_language(guided: GuidedAutomaton, depth: int = 6) -> set[tuple[int, ...]]:
    found = set()

    def walk(state, seq):
        if guided.is_accepting(state):
            found.add(tuple(seq))
        if len(seq) < depth:
            for token in guided.allowed(state):
                walk(guided.step(state, token), [*seq, token])

    walk(guided.start, [])
    return found


def test_kept_masks_are_bounded_and_made_again():
    """A guide keeps at most masks_kept states' masks; a mask dropped is made again, the same."""
    model = random_byte_model(1, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    stop = model.max_id + 1
    guided = bpefst.promote(model, r"(ab|b1)+( a{1,3})?").guide(stop_ids=[stop])
    small = GuidedAutomaton(guided.automaton, stop_ids=[stop], masks_kept=2)
    states = [guided.start]
    for state in states:  # every state, breadth first
        for token in guided.allowed(state):
            target = guided.step(state, token)
            if target not in states:
                states.append(target)
    assert len(states) > 4
    for _ in range(2):
        for state in states:
            bitmask = allocate_token_bitmask(1, stop + 1)
            small.fill_next_token_bitmask(state, bitmask)
            assert unpacked(bitmask[0]) == expected(guided, state)
            assert small.next_token_mask(state) == guided.next_token_mask(state)
            assert len(small._packed) <= 2 and len(small._masks) <= 2 and len(small._next) <= 2


@pytest.mark.parametrize("seed", range(3))
def test_allowed_on_demand_is_the_rows_tokens(seed):
    """allowed() over the lazy product reads the mask instead of building the row's targets: the same tokens
    as the row, in every state a random walk reaches (and the steps of the row lead where step() does)."""
    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    guided = bpefst.promote(model, r"(ab|b1)+( a{1,3})?[ab ]{0,4}").guide()
    lazy = guided.automaton
    rng = random.Random(seed)
    for _ in range(20):
        state = guided.start
        for _ in range(30):
            row = lazy.row(state)
            assert guided.allowed(state) == sorted(row)
            if not row:
                break
            token = rng.choice(sorted(row))
            assert guided.step(state, token) == row[token]
            state = row[token]
