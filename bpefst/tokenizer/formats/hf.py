"""HF ``tokenizers``' ``tokenizer.json`` for BPE models.

What we read (and refuse, with a message, when a file uses something else):

* ``model.type == "BPE"`` with ``vocab``, ``merges`` (``"a b"`` strings or
  ``[a, b]`` pairs), ``unk_token``, ``fuse_unk``, ``end_of_word_suffix``,
  ``continuing_subword_prefix``, ``ignore_merges``; no dropout, no byte fallback;
* byte-level when a ``ByteLevel`` pre-tokenizer is present (tokens are spelled
  with GPT-2's byte-to-unicode table), character-level otherwise (as for HF, a
  ``ByteLevel`` decoder alone does not change how text is looked up);
* pre-tokenizers: none, ``ByteLevel`` (GPT-2 pattern when ``use_regex``),
  ``Whitespace``, ``WhitespaceSplit``, a ``Split`` on a regex (in HF's Oniguruma
  dialect, translated by :mod:`.onig`; ``Isolated``, or ``Removed`` and inverted,
  which is what we write for patterns that leave text between matches), and a
  ``Sequence`` of a ``Split`` followed by a regex-free ``ByteLevel`` (how cl100k-
  style tokenizers are written), ``Digits`` with ``individual_digits`` followed by
  ``ByteLevel`` with its regex (SmolLM, StarCoder: the ``gpt2-digits`` preset);
  ``add_prefix_space`` must be false;
* no normalizer; added tokens are special tokens (split off before BPE),
  must not use ``lstrip``/``rstrip``/``single_word``, and must have the ids HF
  gives them (see :func:`_added_tokens`).

Every field's JSON type is checked as HF checks it, ids must fit in a u32, and
no id may name two tokens: a bad file is a message, never a guess.
"""

from __future__ import annotations

import json
import os
from typing import Any

import regex

from ...artifact import atomic_write_bytes
from ...errors import BpefstError
from ..byte_unicode import decode_text, encode_bytes
from ..model import BPEModel
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride, compile_pattern
from .common import check_id, ids_to_tokens, json_kind, parse_json, read_raw
from .onig import from_oniguruma, to_oniguruma

# Presets whose matches cover all text (no gaps between them); tests/test_formats.py checks it
_COVERING_PRESETS = (PRESETS["gpt2"], PRESETS["cl100k"], PRESETS["o200k"])


def read(path: str | os.PathLike, pattern: PatternOverride = FROM_FILE) -> BPEModel:
    doc = parse_json(read_raw(path), path)
    if not isinstance(doc.get("model"), dict):
        raise BpefstError(f"{path}: not a tokenizer.json (no 'model' object)")
    return from_document(doc, str(path), pattern)


def from_document(doc: dict[str, Any], name: str, pattern_override: PatternOverride = FROM_FILE) -> BPEModel:
    # HF checks every field's JSON type when it loads a file; so do we, so that a
    # wrong type is a message naming the field rather than a crash or a guess.
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "truncation", "padding"):
        _optional(doc, key, "an object", name)
    _optional(doc, "version", "a string", name)
    model = doc.get("model")
    if not isinstance(model, dict):
        raise BpefstError(f"{name}: model must be an object, found {json_kind(model)}")
    model_type = _optional(model, "type", "a string", name, "model.")
    model_type = model_type if model_type is not None else ("BPE" if "merges" in model else None)
    if model_type != "BPE":
        raise BpefstError(f"{name}: unsupported model type {model_type!r}; bpefst reads BPE models")
    if _optional(model, "dropout", "a number", name, "model.") not in (None, 0, 0.0):
        raise BpefstError(f"{name}: BPE dropout is not supported (tokenization would not be deterministic)")
    if _optional(model, "byte_fallback", "a boolean", name, "model."):
        raise BpefstError(f"{name}: byte_fallback BPE models are not supported yet")
    if doc.get("normalizer") is not None:
        raise BpefstError(f"{name}: normalizers are not supported yet (found {doc['normalizer'].get('type')!r})")
    # only a ByteLevel pre-tokenizer makes HF look tokens up by their byte spelling; a
    # ByteLevel decoder alone changes decoding, not which ids text gets
    byte_level, pattern = _pre_tokenizer(doc.get("pre_tokenizer"), name)
    if pattern_override is not FROM_FILE:
        pattern = pattern_override

    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise BpefstError(f"{name}: model.vocab is not an object")
    by_text = {text: check_id(token_id, f"token {text!r}", name) for text, token_id in raw_vocab.items()}
    # HF encodes two tokens sharing an id as that id and cannot decode it back; refuse
    ids_to_tokens(((text, i) for text, i in by_text.items()), name)
    specials = _added_tokens(doc.get("added_tokens", []), by_text, name)
    spell = (lambda t: decode_text(t, where=f"{name}: token")) if byte_level else (lambda t: t)
    vocab = {i: spell(text) for text, i in by_text.items() if text not in specials}

    merges = [_merge(entry, rank, by_text, name) for rank, entry in enumerate(_merge_list(model, name))]
    options = {key: _optional(model, key, kind, name, "model.") for key, kind in _MODEL_OPTIONS.items()}
    for key in ("end_of_word_suffix", "continuing_subword_prefix"):
        if byte_level and options[key]:  # HF spells them onto byte-level symbols; our byte level has none
            raise BpefstError(f"{name}: model.{key} with a ByteLevel pre-tokenizer is not supported yet")
    try:
        return BPEModel(
            level="byte" if byte_level else "char",
            vocab=vocab,
            merges=merges,
            specials=specials,
            pattern=pattern,
            end_of_word_suffix=options["end_of_word_suffix"] or None,
            continuing_subword_prefix=options["continuing_subword_prefix"] or None,
            unk_token=options["unk_token"],
            fuse_unk=bool(options["fuse_unk"]),
            ignore_merges=bool(options["ignore_merges"]),
        )
    except BpefstError as exc:  # the model's own checks do not know the file name
        raise BpefstError(f"{name}: {exc}") from None


_MODEL_OPTIONS = {"end_of_word_suffix": "a string", "continuing_subword_prefix": "a string", "unk_token": "a string",
                  "fuse_unk": "a boolean", "ignore_merges": "a boolean"}
_JSON_TYPES: dict[str, Any] = {"a string": str, "a boolean": bool, "an object": dict, "an array": list, "a number": (int, float)}


def _optional(obj: dict, key: str, kind: str, name: str, where: str = "") -> Any:
    """``obj[key]`` if it is missing, null or of JSON type ``kind``; BpefstError naming the field otherwise."""
    value = obj.get(key)
    if value is None or (isinstance(value, _JSON_TYPES[kind]) and (kind == "a boolean" or not isinstance(value, bool))):
        return value
    raise BpefstError(f"{name}: {where}{key} must be {kind} or null, found {json_kind(value)}")


def _merge_list(model: dict, name: str) -> list:
    # HF refuses a BPE model without merges ("Missing vocab/merges") rather than reading it as merge-free
    if "merges" not in model:
        raise BpefstError(f"{name}: model.merges is missing (a BPE model without merges has \"merges\": [])")
    merges = model["merges"]
    if not isinstance(merges, list):
        raise BpefstError(f"{name}: model.merges must be an array, found {json_kind(merges)}")
    return merges


def _merge(entry: Any, rank: int, by_text: dict[str, int], name: str) -> tuple[int, int]:
    """One merge, written ``"a b"`` (older files) or ``["a", "b"]`` (newer ones), as a pair of ids."""
    parts = entry.split(" ") if isinstance(entry, str) else entry if isinstance(entry, list) else []
    if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise BpefstError(f"{name}: merge {rank} is not a pair of tokens: {entry!r}")
    for part in parts:
        if part not in by_text:
            raise BpefstError(f"{name}: merge {rank} ({parts[0]} {parts[1]}) names {part!r}, which is not in the vocabulary")
    return by_text[parts[0]], by_text[parts[1]]


def _added_tokens(entries: Any, by_text: dict[str, int], name: str) -> dict[str, int]:
    """Added tokens as specials ``text -> id``, refusing any whose id HF would not use.

    HF ignores the ``id`` written in ``added_tokens``: a token also in
    ``model.vocab`` keeps that id, any other takes the next id after the
    vocabulary (in list order).  A file whose ids say otherwise would give
    different ids here and in HF, so we refuse it rather than pick one.
    """
    if not isinstance(entries, list):
        raise BpefstError(f"{name}: added_tokens must be an array, found {json_kind(entries)}")
    specials: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise BpefstError(f"{name}: malformed entry in added_tokens: {entry!r}")
        text = entry["content"]
        token_id = check_id(entry.get("id"), f"added token {text!r}", name)
        for flag in ("lstrip", "rstrip", "single_word", "normalized", "special"):
            if flag in entry and not isinstance(entry[flag], bool):
                raise BpefstError(f"{name}: added token {text!r}: {flag} must be a boolean, found {json_kind(entry[flag])}")
        for flag in ("lstrip", "rstrip", "single_word"):
            if entry.get(flag):
                raise BpefstError(f"{name}: added token {text!r} uses {flag}, which is not supported yet")
        if text in by_text and by_text[text] != token_id:
            raise BpefstError(f"{name}: added token {text!r} has id {token_id}, but model.vocab gives it id {by_text[text]}")
        hf_id = by_text.get(text, specials.get(text, _next_added_id(specials, len(by_text))))
        if hf_id != token_id:
            raise BpefstError(f"{name}: added token {text!r} has id {token_id}, but HF tokenizers gives it id {hf_id} "
                              f"(added tokens missing from model.vocab take the ids after it, in order)")
        specials[text] = token_id
    by_id = {i: t for t, i in by_text.items()}
    # HF's next id can still be one model.vocab uses when the vocabulary has gaps
    ids_to_tokens([(by_id[i], i) for i in specials.values() if i in by_id] + list(specials.items()), name)
    return specials


def _next_added_id(specials: dict[str, int], vocab_size: int) -> int:
    """The id HF's ``AddedVocabulary`` gives a new token (its rule, as of tokenizers 0.2x)."""
    if not specials:
        return vocab_size
    top = max(specials.values())
    return top + 1 if top >= vocab_size or vocab_size == 0 else vocab_size


def _pre_tokenizer(spec: Any, name: str) -> tuple[bool, str | None]:
    """HF pre-tokenizer JSON -> (byte_level, pattern)."""
    if spec is None:
        return False, None
    if not isinstance(spec, dict):
        raise BpefstError(f"{name}: a pre-tokenizer must be an object, found {json_kind(spec)}")
    kind = spec.get("type")
    if kind == "ByteLevel":
        if _optional(spec, "add_prefix_space", "a boolean", name, "ByteLevel pre-tokenizer: "):
            raise BpefstError(f"{name}: ByteLevel add_prefix_space=true is not supported yet")
        use_regex = _optional(spec, "use_regex", "a boolean", name, "ByteLevel pre-tokenizer: ")
        return True, PRESETS["gpt2"] if use_regex in (None, True) else None
    if kind == "Whitespace":
        return False, PRESETS["whitespace"]
    if kind == "WhitespaceSplit":
        return False, r"\S+"
    if kind == "Split":
        return False, _split_pattern(spec, name)
    if kind == "Sequence":
        steps = spec.get("pretokenizers")
        if not isinstance(steps, list):
            raise BpefstError(f"{name}: Sequence pre-tokenizer: pretokenizers must be an array, found {json_kind(steps)}")
        for step in steps:
            if not isinstance(step, dict):
                raise BpefstError(f"{name}: a pre-tokenizer must be an object, found {json_kind(step)}")
        if not steps:
            return False, None  # HF: an empty sequence leaves the text whole
        if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel" and steps[1].get("use_regex") is False:
            byte_level, _ = _pre_tokenizer(steps[1], name)
            return byte_level, _split_pattern(steps[0], name)
        if len(steps) == 2 and steps[0].get("type") == "Digits" and steps[1].get("type") == "ByteLevel":
            return _digits_then_byte_level(steps, name)
        if len(steps) == 1:
            return _pre_tokenizer(steps[0], name)
    raise BpefstError(f"{name}: unsupported pre-tokenizer {json.dumps(spec)[:120]}")


def _digits_then_byte_level(steps: list[dict], name: str) -> tuple[bool, str | None]:
    """``Digits(individual_digits)`` then GPT-2's ``ByteLevel``: the ``gpt2-digits`` preset (SmolLM, StarCoder).

    HF's ``Digits`` isolates each character Rust calls numeric (categories Nd,
    Nl, No: ``\\p{N}``); GPT-2's pattern then cuts the text between them.
    """
    if _optional(steps[0], "individual_digits", "a boolean", name, "Digits pre-tokenizer: ") is not True:
        raise BpefstError(f"{name}: a Digits pre-tokenizer without individual_digits is not supported yet")
    byte_level, pattern = _pre_tokenizer(steps[1], name)
    if pattern != PRESETS["gpt2"]:
        raise BpefstError(f"{name}: Digits followed by a ByteLevel without its regex is not supported yet")
    return byte_level, PRESETS["gpt2-digits"]


def _split_pattern(spec: dict, name: str) -> str:
    """The ``findall`` pattern that cuts text as HF's ``Split`` does.

    ``Isolated`` keeps the text between matches as pieces of its own, so a pattern
    that does not cover all text gets an alternative for those gaps;
    ``Removed`` with ``invert`` keeps the matches only, which is ``findall``.
    """
    behavior = spec.get("behavior")
    invert = bool(_optional(spec, "invert", "a boolean", name, "Split pre-tokenizer: "))
    if (behavior, invert) not in (("Isolated", False), ("Removed", True)):
        raise BpefstError(f"{name}: only Split pre-tokenizers with behavior Isolated, or Removed and inverted, are supported "
                          f"(found {behavior!r}{', inverted' if invert else ''})")
    pattern = spec.get("pattern")
    if pattern is None:
        raise BpefstError(f"{name}: Split pre-tokenizer has no pattern")
    # HF's pattern is {"Regex": "..."} or {"String": "..."}, exactly one of them
    if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str):
        raise BpefstError(f"{name}: Split pre-tokenizer pattern must be {{\"Regex\": string}} or {{\"String\": string}}, found {json.dumps(pattern)[:80]}")
    if "Regex" in pattern:
        found = pattern["Regex"]
        for preset in _COVERING_PRESETS:
            if found == to_oniguruma(preset):
                return preset
        found = from_oniguruma(found)
    elif "String" in pattern:
        found = regex.escape(pattern["String"])
    else:
        raise BpefstError(f"{name}: Split pre-tokenizer pattern must be {{\"Regex\": string}} or {{\"String\": string}}, found {json.dumps(pattern)[:80]}")
    found = found if behavior == "Removed" else f"(?:{found})|(?:(?!(?:{found}))(?s:.))+"
    try:
        compile_pattern(found)
    except BpefstError as exc:
        raise BpefstError(f"{name}: Split pre-tokenizer: {exc}") from None
    return found


def to_document(model: BPEModel) -> dict[str, Any]:
    """A ``tokenizer.json`` document that HF ``tokenizers`` loads and that reads back identically."""
    spell = encode_bytes if model.is_byte_level else (lambda t: t)
    vocab = {spell(t): i for i, t in sorted(model.vocab.items())}
    for text, i in model.specials.items():
        vocab.setdefault(text, i)
    if model.is_byte_level:
        byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
        if model.pattern == PRESETS["gpt2"]:
            pre = dict(byte_level, use_regex=True)
        elif model.pattern is None:
            pre = byte_level
        else:
            pre = {"type": "Sequence", "pretokenizers": [_split(model.pattern), byte_level]}
        decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    else:
        if model.pattern is None:
            pre = None
        elif model.pattern == PRESETS["whitespace"]:
            pre = {"type": "Whitespace"}
        else:
            pre = _split(model.pattern)
        decoder = {"type": "BPEDecoder", "suffix": model.end_of_word_suffix} if model.end_of_word_suffix else None
    added = [
        {"id": i, "content": text, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for text, i in sorted(model.specials.items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": decoder,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": model.unk_token,
            "continuing_subword_prefix": model.continuing_subword_prefix,
            "end_of_word_suffix": model.end_of_word_suffix,
            "fuse_unk": model.fuse_unk,
            "byte_fallback": False,
            "ignore_merges": model.ignore_merges,
            "vocab": vocab,
            "merges": [[spell(model.vocab[a]), spell(model.vocab[b])] for a, b in model.merges],
        },
    }


def _split(pattern: str) -> dict:
    """HF's ``Split`` for ``findall(pattern)``.

    The GPT-style presets match every character, so they are written the usual
    way (``Isolated``); any other pattern might leave gaps, which ``Isolated``
    would keep as pieces, so it is written ``Removed`` and inverted.
    """
    if pattern in _COVERING_PRESETS:
        return {"type": "Split", "pattern": {"Regex": to_oniguruma(pattern)}, "behavior": "Isolated", "invert": False}
    return {"type": "Split", "pattern": {"Regex": to_oniguruma(pattern)}, "behavior": "Removed", "invert": True}


def write(model: BPEModel, path: str | os.PathLike) -> None:
    text = json.dumps(to_document(model), ensure_ascii=False, indent=2)
    atomic_write_bytes(path, text.encode("utf-8"))
