"""A_BPE against brute force: every string up to length 8, tokenized by the reference encoder."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.automata import DFA, equivalent
from bpefst.bpe import MergeForest, apply_merges, build_canonical, is_canonical_pair
from bpefst.tokenizer import BPEModel, ReferenceEncoder, load_tokenizer
from conftest import require_shared
from small_models import random_char_model


def brute_force_language(model: BPEModel, max_len: int) -> set[tuple[int, ...]]:
    """{BPE(s) : s a string of base symbols, |s| <= max_len} by the reference encoder."""
    encoder = ReferenceEncoder(model)
    base = sorted(model.base_ids)
    language = set()
    for n in range(max_len + 1):
        for symbols in itertools.product(base, repeat=n):
            language.add(tuple(encoder.bpe(list(symbols))))
    return language


def spelled_length(model: BPEModel) -> dict[int, int]:
    """Number of base symbols each token spells (for bounding enumeration by text length)."""
    length = {t: 1 for t in model.base_ids}
    for (a, b), result in zip(model.merges, model.merge_results):
        length.setdefault(result, length[a] + length[b])
    return length


def accepted_up_to(step, start, tokens: list[int], length: dict[int, int], max_len: int) -> set[tuple[int, ...]]:
    """Token sequences accepted by an automaton (given by ``step``) spelling at most max_len symbols."""
    found = set()

    def walk(state, seq, budget):
        found.add(tuple(seq))
        for t in tokens:
            if length[t] <= budget:
                nxt = step(state, t)
                if nxt is not None:
                    walk(nxt, seq + [t], budget - length[t])

    walk(start, [], max_len)
    return found


def universal_base_dfa(model: BPEModel) -> DFA:
    return DFA([{b: 0 for b in model.base_ids}], 0, {0})


def algorithm2_dfa(model: BPEModel) -> DFA:
    return apply_merges(universal_base_dfa(model), [(a, b, r) for (a, b), r in zip(model.merges, model.merge_results)])


def dfa_step(dfa: DFA):
    return lambda state, token: dfa.transitions[state].get(token)


MODELS = st.builds(
    random_char_model,
    seed=st.integers(0, 10**9),
    alphabet=st.sampled_from(["ab", "abc"]),
    num_merges=st.integers(1, 12),
    suffix=st.just(None),
)


@settings(max_examples=60, deadline=None)
@given(model=MODELS)
def test_language_equals_brute_force_for_both_encodings_and_algorithm2(model: BPEModel) -> None:
    max_len = 8 if len(model.base_ids) == 2 else 6
    expected = brute_force_language(model, max_len)
    forest = MergeForest.from_model(model)
    length = spelled_length(model)
    tokens = sorted(model.vocab)
    for encoding in ("explicit", "implicit"):
        automaton = build_canonical(forest, encoding)
        assert accepted_up_to(automaton.step, automaton.start, tokens, length, max_len) == expected, encoding
    by_merges = algorithm2_dfa(model)
    assert accepted_up_to(dfa_step(by_merges), by_merges.start, tokens, length, max_len) == expected
    assert equivalent(build_canonical(forest, "explicit").to_dfa(), by_merges)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_end_of_word_suffix_models(seed: int) -> None:
    model = random_char_model(seed, alphabet="ab", num_merges=10, suffix="▁")
    expected = brute_force_language(model, 5)
    forest = MergeForest.from_model(model)
    automaton = build_canonical(forest, "explicit")
    assert accepted_up_to(automaton.step, automaton.start, sorted(model.vocab), spelled_length(model), 5) == expected
    assert equivalent(automaton.to_dfa(), algorithm2_dfa(model))


def test_minimal_states_equal_minimized_algorithm2() -> None:
    for seed in range(30):
        model = random_char_model(seed, alphabet="abc", num_merges=15, suffix=None)
        explicit = build_canonical(MergeForest.from_model(model), "explicit")
        assert explicit.size_stats()["states"] == algorithm2_dfa(model).num_states


def _expand(model: BPEModel):
    first = {}
    for pair, result in zip(model.merges, model.merge_results):
        first.setdefault(result, pair)
    cache: dict[int, list[int]] = {}

    def expand(t: int) -> list[int]:
        if t not in cache:
            cache[t] = expand(first[t][0]) + expand(first[t][1]) if t in first else [t]
        return cache[t]

    return expand


def _check_pairs(model: BPEModel, pairs) -> int:
    forest = MergeForest.from_model(model)
    encoder = ReferenceEncoder(model)
    expand = _expand(model)
    noncanonical = 0
    for u, v in pairs:
        want = encoder.bpe(expand(u) + expand(v)) == [u, v]
        assert is_canonical_pair(forest, u, v) == want, (u, v)
        noncanonical += not want
    return noncanonical


def _interesting_pairs(model: BPEModel, forest: MergeForest, count: int, rng: random.Random):
    """Random pairs, half of them chosen so that some merge could cross their boundary."""
    ids = forest.reachable_ids
    by_right_spine, by_left_spine = {}, {}
    for t in ids:
        for x in forest.right_spine(t):
            by_right_spine.setdefault(x, []).append(t)
        for y in forest.left_spine(t):
            by_left_spine.setdefault(y, []).append(t)
    merges = [m for m in model.merges if m[0] in by_right_spine and m[1] in by_left_spine]
    for k in range(count):
        if k % 2:
            yield rng.choice(ids), rng.choice(ids)
        else:
            x, y = rng.choice(merges)
            yield rng.choice(by_right_spine[x]), rng.choice(by_left_spine[y])


def test_pair_check_on_every_pair_of_small_vocabularies() -> None:
    for seed in range(20):
        model = random_char_model(seed, alphabet="abcd", num_merges=40, suffix=None)
        _check_pairs(model, itertools.product(sorted(model.vocab), repeat=2))


@pytest.mark.parametrize("source", ["tiktoken/cl100k_base.tiktoken.gz", "gpt2/vocab.json", "wikitext-bpe/tokenizer_32000.json"])
def test_pair_check_on_random_pairs_of_real_tokenizers(source: str) -> None:
    model = load_tokenizer(require_shared() / source)
    forest = MergeForest.from_model(model)
    pairs = list(_interesting_pairs(model, forest, 100_000, random.Random(7)))
    noncanonical = _check_pairs(model, pairs)
    assert noncanonical > 5_000  # the sample does reach the interesting cases


def test_wikitext_minimal_states_match_table_2_of_seed_000() -> None:
    data = require_shared()
    expected_states = {4000: 827, 8000: 1970, 16000: 3811}  # paper: 827, 2.0k, 3.8k
    for size, states in expected_states.items():
        forest = MergeForest.from_model(load_tokenizer(data / "wikitext-bpe" / f"tokenizer_{size}.json"))
        assert build_canonical(forest, "explicit").size_stats()["states"] == states


def test_rank_inversion_follows_hf_and_is_refused_by_the_automaton(tmp_path) -> None:
    """(b,b) (b,bb) (bbb,b) (a,bbb) (bb,b): 'bbb' comes from the last merge, after which (a, bbb) still fires."""
    import json

    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"a": 0, "b": 1, "bb": 2, "bbb": 3, "bbbb": 4, "abbb": 5}
    merges = [("b", "b"), ("b", "bb"), ("bbb", "b"), ("a", "bbb"), ("bb", "b")]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("\n".join(" ".join(m) for m in merges) + "\n")
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    model = BPEModel(level="char", vocab={i: t for t, i in vocab.items()}, merges=[(vocab[a], vocab[b]) for a, b in merges])
    encoder = ReferenceEncoder(model)
    for word in ["aabbb", "abbbb", "bbbbb", "abbb"]:
        assert encoder.encode(word) == hf.encode(word).ids, word
    assert encoder.encode("aabbb") == [0, 5]  # merge 3 fires after merge 4 built 'bbb'
    from bpefst.errors import BpefstError

    with pytest.raises(BpefstError, match="rank inversion"):
        MergeForest.from_model(model)


def _check_banned_masks(forest: MergeForest, tokens) -> int:
    """The implicit encoding's one-token banned bitsets equal the explicit encoding's class bitsets."""
    explicit, implicit = build_canonical(forest, "explicit"), build_canonical(forest, "implicit")
    nonempty = 0
    for u in tokens:
        assert implicit.banned_mask(u) == explicit.banned_mask(u), u
        nonempty += explicit.banned_mask(u) != 0
    return nonempty


def test_single_token_banned_sets_on_small_vocabularies() -> None:
    nonempty = 0
    for seed in range(20):
        forest = MergeForest.from_model(random_char_model(seed, alphabet="abcd", num_merges=40, suffix=None))
        nonempty += _check_banned_masks(forest, forest.reachable_ids)
    assert nonempty > 100


def test_single_token_banned_sets_of_gpt2() -> None:
    forest = MergeForest.from_model(load_tokenizer(require_shared() / "gpt2/vocab.json"))
    tokens = random.Random(3).sample(forest.reachable_ids, 1500) + list(range(256))
    assert _check_banned_masks(forest, tokens) > 1000


def test_banned_mask_of_an_unreachable_token_bans_everything() -> None:
    """As ``allowed`` says: nothing may follow a token that BPE never produces."""
    for seed in range(40):
        model = random_char_model(seed, alphabet="abc", num_merges=12, suffix=None)
        forest = MergeForest.from_model(model)
        unreachable = [u for u in range(forest.size) if not forest.reachable[u]]
        for encoding in ("explicit", "implicit"):
            automaton = build_canonical(forest, encoding)
            for u in unreachable:
                assert all(not automaton.allowed(u, v) and automaton.banned_mask(u) >> v & 1 for v in forest.reachable_ids)
        if unreachable:
            return
    pytest.skip("no random model with an unreachable token")


def _classes_from_whole_bitsets(forest: MergeForest) -> tuple[list[int], list[int]]:
    """The grouping by whole banned bitsets, in one pass (the oracle for the windowed refinement)."""
    from bpefst.bpe.banned import banned_masks

    classes: dict[int, int] = {}
    token_class = [-1] * forest.size
    for u, mask in banned_masks(forest):
        token_class[u] = classes.setdefault(mask, len(classes))
    return token_class, list(classes)


@pytest.mark.parametrize("window", [1, 3, 8, 64, 1 << 20])
def test_token_classes_refined_by_window_equal_whole_bitsets(window: int) -> None:
    """Any window of follower ids gives the same classes, numbered alike, and the same bitsets."""
    from bpefst.bpe.canonical import CanonicalAutomaton

    distinct = 0
    for seed in range(12):
        forest = MergeForest.from_model(random_char_model(seed, alphabet="abcd", num_merges=40, suffix=None))
        expected = _classes_from_whole_bitsets(forest)
        assert CanonicalAutomaton(forest)._classes_by_windows(window) == expected
        distinct += len(expected[1])
    assert distinct > 12 * 3  # the models have several classes each, so a wrong grouping would show


def test_token_classes_read_off_single_sets_equal_whole_bitsets() -> None:
    """The compiled core's route (each token's set from the compiled index of single sets) numbers the classes
    as the pure grouping does; token_classes() takes it wherever the core runs."""
    from bpefst import native
    from bpefst.bpe.canonical import CanonicalAutomaton

    if native.core is None:
        pytest.skip("the compiled core is not in use (BPEFST_PURE_PYTHON, or no compiler): no compiled index to read")
    for seed in range(12):
        model = random_char_model(seed, alphabet="abcd", num_merges=40, suffix=None)
        forest = MergeForest.from_model(model)
        expected = _classes_from_whole_bitsets(forest)
        automaton = CanonicalAutomaton(forest)
        assert automaton._classes_by_single_sets(automaton.banned_index()) == expected
        assert automaton.token_classes() == expected


def test_token_classes_of_gpt2_by_window_equal_whole_bitsets() -> None:
    from bpefst import native
    from bpefst.bpe.canonical import CLASS_WINDOW, CanonicalAutomaton

    forest = MergeForest.from_model(load_tokenizer(require_shared() / "gpt2/vocab.json"))
    assert forest.size > CLASS_WINDOW  # more than one window
    expected = _classes_from_whole_bitsets(forest)
    automaton = CanonicalAutomaton(forest)
    assert automaton._classes_by_windows() == expected
    if native.core is not None:
        assert automaton._classes_by_single_sets(automaton.banned_index()) == expected
