"""Constrained generation with a real transformers model (bpefst.decoding.transformers).

A tiny randomly initialized GPT-2 (seeded, no weights downloaded) over GPT-2's
real vocabulary generates under bpefst automata, greedy and sampling, two
prompts per batch.  Every sequence must end in EOS (the row stopped at
acceptance), its text must be a full match of the pattern (``regex.fullmatch``)
or a document valid under the schema (``json.loads`` + ``jsonschema``), and with
``mode="canonical"`` its ids must equal the tokenizer's own encoding of that
text (HF ``tokenizers`` loading GPT-2's vocab.json/merges.txt, and the
``PreTrainedTokenizerFast`` built from bpefst's HF export).  With
``mode="agnostic"`` the same loop is run and the non-canonical sequences are
counted: there must be some.

Size (about a minute on 2 cores, torch on one thread): 23 patterns and 3 schemas x SEEDS (5) models
x greedy/sampling x 2 prompts, max_new_tokens 48 (every pattern here matches
at most 40 bytes, so a row must reach EOS); the agnostic count runs 2 seeds.
"""

from __future__ import annotations

import json
import os

import pytest
import regex

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

from bpefst.decoding.transformers import AutomatonLogitsProcessor  # noqa: E402
import bpefst  # noqa: E402
from bpefst.regex.json_schema import schema_to_regex  # noqa: E402
from conftest import hf_gpt2_oracle, require_shared  # noqa: E402

EOS = 50256
SEEDS = range(int(os.environ.get("BPEFST_DECODING_SEEDS", "5")))
AGNOSTIC_SEEDS = range(2)
MAX_NEW_TOKENS = 48


def guide(model, regex=None, *, json_schema=None, stop_ids=None, mode="canonical"):
    """The one public way to a guide: bpefst.promote(...).guide()."""
    return bpefst.promote(model, regex, json_schema=json_schema, mode=mode).guide(stop_ids)


PROMPTS = ["Answer:", "Output="]  # two tokens each with GPT-2, so the batch needs no padding

PATTERNS = [
    r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
    r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?",
    r"(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)",
    r"(yes|no|maybe)",
    r"-?[0-9]{1,4}(\.[0-9]{1,2})?",
    r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)",
    r'\{"name": "[A-Za-z ]{1,10}", "age": [0-9]{1,3}\}',
    r"[α-ω]{1,4}",
    r"[А-Яа-я]{2,5}( [А-Яа-я]{2,5})?",
    r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
    r"#[0-9a-fA-F]{6}",
    r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    r"[0-9]{5}(-[0-9]{4})?",
    r"(the|a) (cat|dog|bird) (sat|ran|flew)",
    r"[A-Z][a-z]{1,6}( [a-z]{1,6}){0,3}\.",
    r"[0-9a-f]{8}-[0-9a-f]{4}",
    r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}",
    r"\[([0-9]{1,2}, ){0,3}[0-9]{1,2}\]",
    r"[a-z]{1,5}=[0-9]{1,3}(&[a-z]{1,5}=[0-9]{1,3}){0,2}",
    r"(true|false|null)",
    r"(?i)hello( world)?",
    r"( {1,3}[a-z]{1,4}){1,3}",
    r"[a-z]{1,4}(\n[a-z]{1,4}){0,2}",
]
# objects closed (additionalProperties: false): the languages are finite, so generation must end
SCHEMAS = [
    {"type": "object",
     "properties": {"name": {"type": "string", "pattern": "^[A-Za-z ]{1,10}$"}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
                    "member": {"type": "boolean"}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
    {"$defs": {"tag": {"type": "string", "pattern": "^[a-z]{1,5}$"}},
     "type": "object",
     "properties": {"date": {"type": "string", "format": "date"}, "score": {"type": "integer", "minimum": -5, "maximum": 10},
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 2}},
     "required": ["date"], "additionalProperties": False},
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    data = require_shared()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 64-wide model: threads only contend (6 ms a step instead of 40-60 on 2 busy cores)
    from bpefst.tokenizer import load_tokenizer
    from bpefst.tokenizer.formats import hf

    model = load_tokenizer(data / "gpt2" / "vocab.json")
    exported = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    hf.write(model, exported)
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(exported))
    lms = {}
    for seed in SEEDS:
        torch.manual_seed(seed)
        config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=50257)
        lms[seed] = transformers.GPT2LMHeadModel(config).eval()
    prompt = tokenizer(PROMPTS, return_tensors="pt")
    assert prompt.input_ids.shape == (2, 2)
    yield model, tokenizer, lms, prompt
    torch.set_num_threads(threads)


def generate(lm, prompt, guided, sampling: bool, seed: int) -> list[list[int]]:
    """The generated ids of each row, up to and without its EOS; a row without EOS fails."""
    torch.manual_seed(seed)
    processor = AutomatonLogitsProcessor(guided)
    extra = {"do_sample": True, "top_k": 0, "top_p": 1.0} if sampling else {"do_sample": False}
    with torch.no_grad():
        out = lm.generate(**prompt, logits_processor=transformers.LogitsProcessorList([processor]), max_new_tokens=MAX_NEW_TOKENS,
                          eos_token_id=EOS, pad_token_id=EOS, **extra)
    rows = []
    for row in out[:, prompt.input_ids.shape[1]:].tolist():
        assert EOS in row, f"no EOS within {MAX_NEW_TOKENS} tokens: {row}"
        rows.append(row[:row.index(EOS)])
    return rows


def text_of(model, ids: list[int]) -> str:
    return b"".join(model.token_bytes(t) for t in ids).decode("utf-8")  # strict: a match is whole characters


def run_constraint(setup, guided, check, seeds, canonical: bool) -> tuple[int, int]:
    """(sequences, non-canonical sequences) over seeds x greedy/sampling x prompts; ``check(text)`` each."""
    model, tokenizer, lms, prompt = setup
    total = non_canonical = 0
    for seed in seeds:
        for sampling in (False, True):
            for ids in generate(lms[seed % len(lms)], prompt, guided, sampling, seed):
                text = text_of(model, ids)
                check(text)
                own = hf_gpt2_oracle().encode(text).ids
                assert tokenizer(text).input_ids == own  # bpefst's HF export agrees with HF on vocab/merges
                total += 1
                if ids != own:
                    non_canonical += 1
                    assert not canonical, (text, ids, own)
    return total, non_canonical


def schema_check(schema):
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def check(text):
        errors = list(validator.iter_errors(json.loads(text)))
        assert not errors, (text, errors[0].message)
    return check


def pattern_check(pattern):
    compiled = regex.compile(pattern)

    def check(text):
        assert compiled.fullmatch(text), (pattern, text)
    return check


@pytest.mark.parametrize("pattern", PATTERNS)
def test_canonical_patterns(setup, pattern):
    guided = guide(setup[0], regex=pattern, stop_ids=[EOS])
    total, _ = run_constraint(setup, guided, pattern_check(pattern), SEEDS, canonical=True)
    assert total == len(SEEDS) * 2 * len(PROMPTS)


@pytest.mark.parametrize("schema", SCHEMAS, ids=["person", "colors", "dated"])
def test_canonical_schemas(setup, schema):
    guided = guide(setup[0], json_schema=schema)  # stop ids: the tokenizer's <|endoftext|>
    assert guided.stop_ids == {EOS}
    total, _ = run_constraint(setup, guided, schema_check(schema), SEEDS, canonical=True)
    assert total == len(SEEDS) * 2 * len(PROMPTS)


def test_agnostic_mode_generates_non_canonical_sequences(setup):
    """The same loop over every pattern and schema, tokenization-agnostic: count what canonical promotion prevents."""
    counts = {}
    for i, pattern in enumerate(PATTERNS):
        guided = guide(setup[0], regex=pattern, stop_ids=[EOS], mode="agnostic")
        counts[f"pattern {i}"] = run_constraint(setup, guided, pattern_check(pattern), AGNOSTIC_SEEDS, canonical=False)
    for i, schema in enumerate(SCHEMAS):
        guided = guide(setup[0], regex=schema_to_regex(schema), stop_ids=[EOS], mode="agnostic")
        counts[f"schema {i}"] = run_constraint(setup, guided, schema_check(schema), AGNOSTIC_SEEDS, canonical=False)
    total = sum(t for t, _ in counts.values())
    bad = sum(n for _, n in counts.values())
    print(f"\nagnostic: {bad} of {total} generated sequences are not the tokenizer's encoding of their text; "
          + ", ".join(f"{k}: {n}/{t}" for k, (t, n) in counts.items() if n))
    assert bad >= 1


def test_processor_refuses_a_guide_without_stop_ids(setup):
    from bpefst.errors import BpefstError

    with pytest.raises(BpefstError, match="no stop ids"):
        AutomatonLogitsProcessor(guide(setup[0], regex="(yes|no)", stop_ids=[]))


def test_left_padded_prompts_and_several_returns(setup):
    """Prompts of different lengths (left-padded) and num_return_sequences: one state per row still."""
    model, tokenizer, lms, _ = setup
    saved = tokenizer.pad_token, tokenizer.padding_side
    tokenizer.pad_token, tokenizer.padding_side = "<|endoftext|>", "left"
    try:
        prompt = tokenizer(["Q:", "A much longer question here:"], return_tensors="pt", padding=True)
    finally:
        tokenizer.pad_token, tokenizer.padding_side = saved
    assert (prompt.attention_mask == 0).any()  # really padded
    pattern = PATTERNS[0]
    guided = guide(model, regex=pattern, stop_ids=[EOS])
    torch.manual_seed(7)
    with torch.no_grad():
        out = lms[0].generate(**prompt, logits_processor=transformers.LogitsProcessorList([AutomatonLogitsProcessor(guided)]),
                              do_sample=True, top_k=0, num_return_sequences=3, max_new_tokens=MAX_NEW_TOKENS,
                              eos_token_id=EOS, pad_token_id=EOS)
    assert out.shape[0] == 6
    texts = set()
    for row in out[:, prompt.input_ids.shape[1]:].tolist():
        assert EOS in row
        ids = row[:row.index(EOS)]
        text = text_of(model, ids)
        assert regex.fullmatch(pattern, text) and ids == hf_gpt2_oracle().encode(text).ids
        texts.add(text)
    assert len(texts) > 1  # sampled rows went their own ways
