"""HF ``tokenizers``' ``tokenizer.json`` for BPE models.

What we read (and refuse, with a message, when a file uses something else):

* ``model.type == "BPE"`` with ``vocab``, ``merges`` (``"a b"`` strings or
  ``[a, b]`` pairs), ``unk_token``, ``fuse_unk``, ``end_of_word_suffix``,
  ``continuing_subword_prefix``, ``ignore_merges``; no dropout, no byte fallback;
* byte-level when a ``ByteLevel`` pre-tokenizer or decoder is present (tokens are
  spelled with GPT-2's byte-to-unicode table), character-level otherwise;
* pre-tokenizers: none, ``ByteLevel`` (GPT-2 pattern when ``use_regex``),
  ``Whitespace``, ``WhitespaceSplit``, a ``Split`` on a regex (in HF's Oniguruma
  dialect, translated by :mod:`.onig`; ``Isolated``, or ``Removed`` and inverted,
  which is what we write for patterns that leave text between matches), and a
  ``Sequence`` of a ``Split`` followed by a regex-free ``ByteLevel`` (how cl100k-
  style tokenizers are written); ``add_prefix_space`` must be false;
* no normalizer; added tokens are special tokens (split off before BPE) and
  must not use ``lstrip``/``rstrip``/``single_word``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ...artifact import atomic_write_bytes
from ...errors import BpefstError
from ..byte_unicode import decode_text, encode_bytes
from ..model import BPEModel
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride
from .common import parse_json, read_raw
from .onig import from_oniguruma, to_oniguruma

# Presets whose matches cover all text (no gaps between them); tests/test_formats.py checks it
_COVERING_PRESETS = (PRESETS["gpt2"], PRESETS["cl100k"], PRESETS["o200k"])


def read(path: str | os.PathLike, pattern: PatternOverride = FROM_FILE) -> BPEModel:
    doc = parse_json(read_raw(path), path)
    if not isinstance(doc.get("model"), dict):
        raise BpefstError(f"{path}: not a tokenizer.json (no 'model' object)")
    return from_document(doc, str(path), pattern)


def from_document(doc: dict[str, Any], name: str, pattern_override: PatternOverride = FROM_FILE) -> BPEModel:
    model = doc["model"]
    model_type = model.get("type", "BPE" if "merges" in model else None)
    if model_type != "BPE":
        raise BpefstError(f"{name}: unsupported model type {model_type!r}; bpefst reads BPE models")
    if model.get("dropout") not in (None, 0, 0.0):
        raise BpefstError(f"{name}: BPE dropout is not supported (tokenization would not be deterministic)")
    if model.get("byte_fallback"):
        raise BpefstError(f"{name}: byte_fallback BPE models are not supported yet")
    if doc.get("normalizer") is not None:
        raise BpefstError(f"{name}: normalizers are not supported yet (found {doc['normalizer'].get('type')!r})")
    byte_level, pattern = _pre_tokenizer(doc.get("pre_tokenizer"), name)
    if isinstance(doc.get("decoder"), dict) and doc["decoder"].get("type") == "ByteLevel":
        byte_level = True
    if pattern_override is not FROM_FILE:
        pattern = pattern_override

    raw_vocab = model.get("vocab")
    if not isinstance(raw_vocab, dict):
        raise BpefstError(f"{name}: model.vocab is not an object")
    spell = (lambda t: decode_text(t, where=f"{name}: token")) if byte_level else (lambda t: t)
    by_text: dict[str, int] = {}
    vocab: dict[int, Any] = {}
    for text, token_id in raw_vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise BpefstError(f"{name}: token {text!r} has id {token_id!r}, not an integer")
        by_text[text] = token_id

    specials = _added_tokens(doc.get("added_tokens") or [], name)
    for text, token_id in by_text.items():
        if specials.get(text) == token_id:
            continue  # an added token also listed in the model vocabulary
        vocab[token_id] = spell(text)

    merges = []
    for rank, entry in enumerate(model.get("merges") or []):
        if isinstance(entry, str):
            parts = entry.split(" ")
        elif isinstance(entry, list):
            parts = entry
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            raise BpefstError(f"{name}: merge {rank} is not a pair of tokens: {entry!r}")
        for part in parts:
            if part not in by_text:
                raise BpefstError(f"{name}: merge {rank} ({parts[0]} {parts[1]}) names {part!r}, which is not in the vocabulary")
        merges.append((by_text[parts[0]], by_text[parts[1]]))

    return BPEModel(
        level="byte" if byte_level else "char",
        vocab=vocab,
        merges=merges,
        specials=specials,
        pattern=pattern,
        end_of_word_suffix=model.get("end_of_word_suffix") or None,
        continuing_subword_prefix=model.get("continuing_subword_prefix") or None,
        unk_token=model.get("unk_token"),
        fuse_unk=bool(model.get("fuse_unk")),
        ignore_merges=bool(model.get("ignore_merges")),
    )


def _added_tokens(entries: list, name: str) -> dict[str, int]:
    specials = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not isinstance(entry.get("id"), int):
            raise BpefstError(f"{name}: malformed entry in added_tokens: {entry!r}")
        for flag in ("lstrip", "rstrip", "single_word"):
            if entry.get(flag):
                raise BpefstError(f"{name}: added token {entry['content']!r} uses {flag}, which is not supported yet")
        specials[entry["content"]] = entry["id"]
    return specials


def _pre_tokenizer(spec: Any, name: str) -> tuple[bool, str | None]:
    """HF pre-tokenizer JSON -> (byte_level, pattern)."""
    if spec is None:
        return False, None
    kind = spec.get("type")
    if kind == "ByteLevel":
        if spec.get("add_prefix_space"):
            raise BpefstError(f"{name}: ByteLevel add_prefix_space=true is not supported yet")
        return True, PRESETS["gpt2"] if spec.get("use_regex", True) else None
    if kind == "Whitespace":
        return False, PRESETS["whitespace"]
    if kind == "WhitespaceSplit":
        return False, r"\S+"
    if kind == "Split":
        return False, _split_pattern(spec, name)
    if kind == "Sequence":
        steps = spec.get("pretokenizers") or []
        if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel" and not steps[1].get("use_regex", True):
            byte_level, _ = _pre_tokenizer(steps[1], name)
            return byte_level, _split_pattern(steps[0], name)
        if len(steps) == 1:
            return _pre_tokenizer(steps[0], name)
    raise BpefstError(f"{name}: unsupported pre-tokenizer {json.dumps(spec)[:120]}")


def _split_pattern(spec: dict, name: str) -> str:
    """The ``findall`` pattern that cuts text as HF's ``Split`` does.

    ``Isolated`` keeps the text between matches as pieces of its own, so a pattern
    that does not cover all text gets an alternative for those gaps;
    ``Removed`` with ``invert`` keeps the matches only, which is ``findall``.
    """
    behavior, invert = spec.get("behavior"), bool(spec.get("invert"))
    if (behavior, invert) not in (("Isolated", False), ("Removed", True)):
        raise BpefstError(f"{name}: only Split pre-tokenizers with behavior Isolated, or Removed and inverted, are supported "
                          f"(found {behavior!r}{', inverted' if invert else ''})")
    pattern = spec.get("pattern") or {}
    if "Regex" in pattern:
        found = pattern["Regex"]
        for preset in _COVERING_PRESETS:
            if found == to_oniguruma(preset):
                return preset
        found = from_oniguruma(found)
    elif "String" in pattern:
        import regex

        found = regex.escape(pattern["String"])
    else:
        raise BpefstError(f"{name}: Split pre-tokenizer has no pattern")
    return found if behavior == "Removed" else f"(?:{found})|(?:(?!(?:{found}))(?s:.))+"


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
