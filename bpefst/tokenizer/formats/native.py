"""bpefst's own tokenizer artifact (msgpack, kind ``tokenizer``).

The body stores the vocabulary as one blob of token bytes with packed uint32
ids and offsets, and the merges as packed uint32 pairs, so a 200k-token
tokenizer loads in milliseconds.  Loading re-validates the model, so a
tampered artifact cannot produce an improper tokenizer; for byte-level models
the compiled core runs those checks over the packed tables (``src/core/vocab.h``)
where it is built, and :class:`BPEModel`'s own checks are the pure twin.
"""

from __future__ import annotations

import os
import sys
from itertools import islice
from operator import lt

import msgpack

from ...artifact import pack_ints, parse_artifact, check_header, unpack_ints, write_artifact
from ...errors import ArtifactError, BpefstError
from ..model import BPEModel

KIND = "tokenizer"
SCHEMA = 1


def to_body(model: BPEModel) -> dict:
    """The model as a msgpack map; ``missing_bytes`` only when not HF's ``"drop"`` (older bodies lack it)."""
    ids = sorted(model.vocab)
    blobs = [model.token_bytes(i) for i in ids]
    offsets = [0]
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    return {
        "level": model.level,
        "ids": pack_ints(ids),
        "offsets": pack_ints(offsets),
        "tokens": b"".join(blobs),
        "merges": pack_ints(x for pair in model.merges for x in pair),
        "specials": dict(model.specials),
        "pattern": model.pattern,
        "end_of_word_suffix": model.end_of_word_suffix,
        "continuing_subword_prefix": model.continuing_subword_prefix,
        "unk_token": model.unk_token,
        "fuse_unk": model.fuse_unk,
        "ignore_merges": model.ignore_merges,
        **({"missing_bytes": model.missing_bytes} if model.missing_bytes != "drop" else {}),
    }


# Every body field and the msgpack types it may hold: a tampered file must be refused on load,
# not fail later with a TypeError deep inside tokenization.
_FIELD_TYPES = {
    "level": (str,), "ids": (bytes,), "offsets": (bytes,), "tokens": (bytes,), "merges": (bytes,), "specials": (dict,),
    "pattern": (str, type(None)), "end_of_word_suffix": (str, type(None)), "continuing_subword_prefix": (str, type(None)),
    "unk_token": (str, type(None)), "fuse_unk": (bool,), "ignore_merges": (bool,),
}
_OPTIONAL_FIELD_TYPES = {"missing_bytes": (str,)}  # absent means the default (bodies written before the field)


def check_body_types(body: object, name: str) -> None:
    """Raise ArtifactError unless ``body`` has every field, each of its expected type."""
    if not isinstance(body, dict):
        raise ArtifactError(f"{name}: corrupted tokenizer artifact (the tokenizer body is not a map)")
    for field, types in {**_FIELD_TYPES, **_OPTIONAL_FIELD_TYPES}.items():
        if field not in body:
            if field in _OPTIONAL_FIELD_TYPES:
                continue
            raise ArtifactError(f"{name}: corrupted tokenizer artifact (field {field!r} is missing)")
        value = body[field]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ArtifactError(f"{name}: corrupted tokenizer artifact (field {field!r} is {type(value).__name__})")
    for text, token_id in body["specials"].items():
        if not isinstance(text, str) or not isinstance(token_id, int) or isinstance(token_id, bool):
            raise ArtifactError(f"{name}: corrupted tokenizer artifact (special token {text!r}: {token_id!r})")


def from_body(body: dict, name: str, trusted: bool = False) -> BPEModel:
    """The model a body describes; checked unless ``trusted`` (see :meth:`BPEModel.unchecked`)."""
    check_body_types(body, name)
    try:
        level = body["level"]
        ids = unpack_ints(body["ids"])
        offsets = unpack_ints(body["offsets"])
        blob = body["tokens"]
        flat = unpack_ints(body["merges"])
        if len(offsets) != len(ids) + 1 or offsets[0] != 0 or offsets[-1] != len(blob) or len(flat) % 2:
            raise ArtifactError(f"{name}: corrupted tokenizer artifact (inconsistent tables)")
        tokens = _split_tokens(blob, body["offsets"], offsets)
        if level == "char":
            tokens = [t.decode("utf-8") for t in tokens]
        fields = dict(
            level=level,
            vocab=dict(zip(ids, tokens)),
            merges=list(zip(flat[0::2], flat[1::2])),
            specials={str(k): int(v) for k, v in body["specials"].items()},
            pattern=body["pattern"],
            end_of_word_suffix=body["end_of_word_suffix"],
            continuing_subword_prefix=body["continuing_subword_prefix"],
            unk_token=body["unk_token"],
            fuse_unk=body["fuse_unk"],
            ignore_merges=body["ignore_merges"],
            missing_bytes=body.get("missing_bytes", "drop"),
        )
        results = None if trusted or level != "byte" or fields["continuing_subword_prefix"] else _checked_results(body)
        if trusted:
            model = BPEModel.unchecked(**fields)
        elif results is not None:
            model = BPEModel.with_checked_tables(results, **fields)
            _fingerprint_from_tables(model, body, ids)
        else:
            model = BPEModel(**fields)
    except BpefstError as exc:  # the model's own checks do not know the file name
        if str(exc).startswith(name):
            raise
        raise type(exc)(f"{name}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{name}: corrupted tokenizer artifact ({type(exc).__name__}: {exc})") from None
    return model


def _split_tokens(blob: bytes, packed_offsets: bytes, offsets) -> list[bytes]:
    """The blob cut at the offsets (checked consistent by the caller): in the compiled core where it is built."""
    from ... import native

    if native.core is not None and sys.byteorder == "little":
        return native.core.split_tokens(blob, packed_offsets)
    return [blob[offsets[k] : offsets[k + 1]] for k in range(len(offsets) - 1)]


def _checked_results(body: dict) -> list[int] | None:
    """The merge results of a byte-level body whose tables the compiled core found proper (ids and
    tokens unique, every merge's concatenation a token, each side built before it), else None: then
    :class:`BPEModel` checks in Python and names what is wrong."""
    from ... import native

    if native.core is None or sys.byteorder != "little":
        return None
    results = native.core.checked_merge_results(body["ids"], body["offsets"], body["tokens"], body["merges"])
    return None if results is None else unpack_ints(results).tolist()


def _fingerprint_from_tables(model: BPEModel, body: dict, ids) -> None:
    """The model's fingerprint from the body's packed tables by the compiled core (the ids must ascend, as
    :func:`to_body` writes them, so that the table is the sorted vocabulary)."""
    from ... import native

    if native.core is not None and all(map(lt, ids, islice(ids, 1, None))):
        model.__dict__["fingerprint"] = model.fingerprint_of(
            native.core.msgpack_vocab(body["ids"], body["offsets"], body["tokens"]), native.core.msgpack_pairs(body["merges"]))


def write(model: BPEModel, path: str | os.PathLike) -> None:
    write_artifact(path, KIND, SCHEMA, model.fingerprint, to_body(model))


def read_bytes(raw: bytes, name: str) -> BPEModel:
    document = parse_artifact(raw, name)
    check_header(document, name, KIND, SCHEMA)
    model = from_body(document["body"], name)
    if model.fingerprint != document["fingerprint"]:
        raise ArtifactError(f"{name}: corrupted tokenizer artifact (content does not match its fingerprint)")
    return model


def model_to_bytes(model: BPEModel) -> bytes:
    """The model as msgpack bytes: the artifact's body, without its header (what a pickled Tokenizer carries)."""
    return msgpack.packb(to_body(model), use_bin_type=True)


def model_from_bytes(data: bytes) -> BPEModel:
    """The inverse of :func:`model_to_bytes`, for bytes this process family wrote (unpickling): not re-checked."""
    return from_body(msgpack.unpackb(data, raw=False, strict_map_key=False), "pickled tokenizer", trusted=True)
