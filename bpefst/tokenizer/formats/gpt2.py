"""GPT-2's ``vocab.json`` + ``merges.txt`` (byte-level, GPT-2 byte-to-unicode spelling).

``merges.txt`` holds one merge per line, ``left right``, after an optional
``#version`` line.  Vocabulary entries that are neither single bytes nor the
result of a merge (GPT-2's ``<|endoftext|>``) can never come out of BPE, so they
are read as special tokens.  The pre-tokenization pattern is GPT-2's unless
the caller names another.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...artifact import atomic_write_bytes
from ...errors import BpefstError
from ..byte_unicode import decode_text, encode_bytes
from ..model import BPEModel
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride
from .common import check_id, ids_to_tokens, parse_json, read_raw, read_text


def read(vocab_path: str | os.PathLike, merges_path: str | os.PathLike, pattern: PatternOverride = FROM_FILE) -> BPEModel:
    raw_vocab = parse_json(read_raw(vocab_path), vocab_path)
    by_text = {text: check_id(token_id, f"token {text!r}", vocab_path) for text, token_id in raw_vocab.items()}
    # two tokens under one id would encode alike and decode ambiguously (HF accepts it; we refuse)
    spelled = ids_to_tokens(((text, i) for text, i in by_text.items()), vocab_path)
    vocab = {i: decode_text(text, where=f"{vocab_path}: token") for i, text in spelled.items()}
    merges = []
    for line_no, line in enumerate(read_text(merges_path).split("\n"), start=1):
        line = line.removesuffix("\r")  # CRLF files (HF reads them too)
        if not line.strip() or (line_no == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            raise BpefstError(f"{merges_path}:{line_no}: expected two tokens separated by one space, found {line!r}")
        ids = []
        for part in parts:
            if part not in by_text:
                raise BpefstError(f"{merges_path}:{line_no}: merge names token {part!r}, which is not in {vocab_path}")
            ids.append(by_text[part])
        merges.append((ids[0], ids[1]))
    try:
        return _with_orphans_as_specials(vocab, merges, PRESETS["gpt2"] if pattern is FROM_FILE else pattern)
    except BpefstError as exc:
        raise BpefstError(f"{vocab_path} + {Path(merges_path).name}: {exc}") from None


def _with_orphans_as_specials(vocab: dict[int, bytes], merges: list[tuple[int, int]], pattern: str | None) -> BPEModel:
    plain = BPEModel(level="byte", vocab=vocab, merges=merges, pattern=pattern)
    reachable = plain.base_ids | set(plain.merge_results)
    orphans = {i: t for i, t in vocab.items() if i not in reachable}
    specials = {}
    for i, token in orphans.items():
        try:
            specials[token.decode("utf-8")] = i
        except UnicodeDecodeError:
            continue
    if not specials:
        return plain
    return BPEModel(level="byte", vocab={i: t for i, t in vocab.items() if i not in specials.values()}, merges=merges, specials=specials, pattern=pattern)


def write(model: BPEModel, vocab_path: str | os.PathLike, merges_path: str | os.PathLike) -> None:
    if not model.is_byte_level:
        raise BpefstError("the vocab.json + merges.txt format holds byte-level tokenizers only; use --format hf (format=\"hf\" in Python)")
    vocab = {encode_bytes(t): i for i, t in sorted(model.vocab.items())}
    for text, i in model.specials.items():
        vocab[text] = i
    lines = ["#version: 0.2"]
    lines += [f"{encode_bytes(model.vocab[a])} {encode_bytes(model.vocab[b])}" for a, b in model.merges]
    atomic_write_bytes(vocab_path, json.dumps(vocab, ensure_ascii=False).encode("utf-8"))
    atomic_write_bytes(merges_path, ("\n".join(lines) + "\n").encode("utf-8"))




def sibling_merges(vocab_path: Path) -> Path:
    """``.../vocab.json`` -> ``.../merges.txt`` (``foo-vocab.json`` -> ``foo-merges.txt``)."""
    name = vocab_path.name
    return vocab_path.with_name(name[: -len("vocab.json")] + "merges.txt")
