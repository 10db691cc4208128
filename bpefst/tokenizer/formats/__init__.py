"""Reading and writing tokenizers in every supported format.

:func:`load_tokenizer` recognises the format from the file's content:

* a bpefst tokenizer artifact (msgpack with a ``bpefst`` header);
* an HF ``tokenizer.json`` (a JSON object with a ``model``);
* a GPT-2 ``vocab.json`` (a JSON object of token -> id), with ``merges.txt``
  beside it;
* a tiktoken rank file (``base64 rank`` lines, plain or gzip), recognised by
  its first line or by a ``.tiktoken`` name;
* a GGUF model file (llama.cpp), recognised by its magic: only the tokenizer in
  its metadata is read, never the weights;
* a directory holding ``tokenizer.json`` or ``vocab.json`` + ``merges.txt``.

Anything else is refused with a message saying what the file looks like and
which formats are read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...artifact import FORMAT_NAME
from ...errors import BpefstError
from ..model import BPEModel
from ..overrides import add_specials
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride
from . import gguf, gpt2, hf, native, tiktoken_ranks
from .common import ACCEPTED_FORMATS, json_kind, parse_json, read_raw

FORMATS = ("bpefst", "hf", "gpt2", "tiktoken")


def load_tokenizer(path: str | os.PathLike, pattern: PatternOverride = FROM_FILE, specials: dict[str, int] | None = None) -> BPEModel:
    """Load a tokenizer from any supported format (see module docstring).

    ``pattern`` overrides the pre-tokenization pattern the file implies: a regex
    string (resolve preset names with :func:`..pretokenize.resolve_pattern`) or
    None for no pre-tokenization; ``specials`` are added to the file's own
    special tokens (:func:`..overrides.add_specials`).
    """
    return add_specials(_load(Path(path), pattern), specials)


def _load(path: Path, pattern: PatternOverride) -> BPEModel:
    if path.is_dir():
        return _load_directory(path, pattern)
    if gguf.is_gguf(path):  # before reading the whole file: a model's weights are gigabytes
        return gguf.read(path, pattern)
    raw = read_raw(path)
    if not raw.strip():
        raise BpefstError(f"{path}: empty file, not a tokenizer")
    if raw[:64].lstrip().startswith(b"{"):
        return _load_json(path, raw, pattern)
    if 0x80 <= raw[0] <= 0x8F:  # a msgpack map: our artifacts (parse_artifact says if it is truncated)
        model = native.read_bytes(raw, str(path))
        return _override(model, pattern)
    # a file named as a rank file gets the rank reader's line-numbered messages
    if tiktoken_ranks.looks_like_ranks(raw) or ".tiktoken" in path.name:
        return tiktoken_ranks.read(path, pattern=pattern)
    raise BpefstError(f"{path}: not a tokenizer file bpefst reads ({_describe(raw)}); expected {ACCEPTED_FORMATS}")


def _describe(raw: bytes) -> str:
    """What a file we do not read looks like, for the error message."""
    if raw.lstrip()[:1] in (b"[", b'"') or raw.strip() in (b"null", b"true", b"false"):
        try:
            return f"it holds a JSON {json_kind(json.loads(raw)).split()[-1]}"
        except (ValueError, RecursionError):
            pass
    try:
        first = raw.decode("utf-8").strip().split("\n", 1)[0]
    except UnicodeDecodeError:
        return "binary data"
    if "\x00" in first:
        return "binary data"
    if len(first.split()) == 1:
        return f"a word list? first line {first[:40]!r}; a WordPiece vocabulary must be named vocab.txt"
    return f"text; first line {first[:40]!r} is not 'base64-token rank'"


def _load_json(path: Path, raw: bytes, pattern: PatternOverride) -> BPEModel:
    doc = parse_json(raw, path)
    if isinstance(doc.get("model"), dict):
        return hf.from_document(doc, str(path), pattern)
    if not doc:
        raise BpefstError(f"{path}: an empty JSON object, not a tokenizer")
    if "model" in doc and not isinstance(doc["model"], int):  # (GPT-2's vocab.json has a token "model")
        raise BpefstError(f"{path}: model must be an object, found {json_kind(doc['model'])}")
    merges = gpt2.sibling_merges(path) if path.name.endswith("vocab.json") else path.with_name("merges.txt")
    if not merges.exists():
        raise BpefstError(f"{path} looks like a vocab.json, but {merges} is missing")
    return gpt2.read(path, merges, pattern=pattern)


def _load_directory(path: Path, pattern: PatternOverride) -> BPEModel:
    if (path / "tokenizer.json").exists():
        return hf.read(path / "tokenizer.json", pattern=pattern)
    if (path / "vocab.json").exists() and (path / "merges.txt").exists():
        return gpt2.read(path / "vocab.json", path / "merges.txt", pattern=pattern)
    raise BpefstError(f"{path} is a directory without tokenizer.json or vocab.json + merges.txt")


def _override(model: BPEModel, pattern: PatternOverride) -> BPEModel:
    if pattern is FROM_FILE:
        return model
    from dataclasses import replace

    return replace(model, pattern=pattern)


def format_losses(model: BPEModel, fmt: str) -> list[str]:
    """What writing ``model`` in ``fmt`` would not keep (empty when lossless).

    GPT-2 files imply the GPT-2 pattern and treat orphan tokens as specials; tiktoken
    rank files hold neither pattern nor specials unless the file is named after a
    known encoding.  Callers show these notes so that nothing is lost silently.
    """
    from .tiktoken_ranks import KNOWN_ENCODINGS

    notes = []
    if fmt != "bpefst" and model.barrier_bytes:
        notes.append(f"this tokenizer cuts its chunks at the {len(model.barrier_bytes)} bytes its vocabulary lacks (llama.cpp's "
                     f"reading, from GGUF); {fmt} files cannot say so, and a reader of them drops those bytes before merging "
                     f"(HF's reading): texts holding such a byte may then encode differently")
    if fmt == "gpt2" and model.pattern != PRESETS["gpt2"]:
        notes.append(f"vocab.json + merges.txt imply the gpt2 pattern; this tokenizer's pattern ({model.pattern_name}) is not stored: pass --pattern (pattern= in Python) when reading it")
    if fmt == "tiktoken" and (model.pattern, model.specials) not in KNOWN_ENCODINGS.values():
        notes.append(f"tiktoken rank files store neither the pattern ({model.pattern_name}) nor special tokens: pass --pattern and --special (pattern= and special_tokens= in Python) when reading it")
    return notes


def save_tokenizer(model: BPEModel, path: str | os.PathLike, fmt: str = "bpefst") -> list[Path]:
    """Write ``model`` in format ``fmt``; returns the files written.

    For ``gpt2``, ``path`` is either a ``...vocab.json`` file (``merges.txt`` goes
    beside it) or a directory that receives both files.
    """
    path = Path(path)
    if fmt == "bpefst":
        native.write(model, path)
        return [path]
    if fmt == "hf":
        hf.write(model, path)
        return [path]
    if fmt == "tiktoken":
        tiktoken_ranks.write(model, path)
        return [path]
    if fmt == "gpt2":
        made_dir = False
        if path.name.endswith("vocab.json"):
            vocab_path, merges_path = path, gpt2.sibling_merges(path)
        else:
            made_dir = not path.exists()
            path.mkdir(parents=True, exist_ok=True)
            vocab_path, merges_path = path / "vocab.json", path / "merges.txt"
        had_vocab = vocab_path.exists()
        try:
            gpt2.write(model, vocab_path, merges_path)
        except BaseException:
            # Leave nothing new behind: a vocab.json without its merges.txt, or an empty directory.
            if not had_vocab and vocab_path.is_file():
                vocab_path.unlink()
            if made_dir:
                try:
                    path.rmdir()  # only if empty
                except OSError:
                    pass
            raise
        return [vocab_path, merges_path]
    raise BpefstError(f"unknown tokenizer format {fmt!r} (expected one of {', '.join(FORMATS)})")
