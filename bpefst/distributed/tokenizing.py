"""Tokenizing the rows of a Ray Dataset, one loaded tokenizer per worker.

:func:`tokenize_dataset` adds an ``ids`` column (a list of uint32 per row) to
a dataset with a text column.  It is a class-based ``map_batches`` UDF run by
an actor pool: each actor receives the tokenizer as the bytes of its bpefst
artifact (:func:`model_bytes`; a few MB even for o200k, sent once through the
object store) and loads it once, so its chunk cache stays warm across
batches.  Shipping bytes rather than the Python object keeps the worker's
tokenizer exactly the one the artifact describes (its fingerprint is checked
on load) and does not depend on pickling bpefst's classes.

Each row is one document, encoded on its own with the same special-token
policy as ``bpefst tokenize`` (default: special-token text is plain text), with
``bot`` before and ``eot`` after its ids.  A ``str`` value is text; a ``bytes``
value is raw input (any bytes for byte-level tokenizers, UTF-8 for
character-level ones).  A worker that dies mid-batch is restarted by Ray Data
and the batch is redone; a batch's ids depend on its rows only, so the result
is the same.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from ..artifact import artifact_bytes
from ..errors import BpefstError
from ..tokenizer import BPEModel
from ..tokenizer.formats import native
from .cluster import CrashOnce, require_ray_data


def model_bytes(model: BPEModel) -> bytes:
    """The model as a bpefst tokenizer artifact, in memory."""
    return artifact_bytes(native.KIND, native.SCHEMA, model.fingerprint, native.to_body(model))


def load_model(tokenizer: "BPEModel | str | os.PathLike") -> BPEModel:
    """A model, or any tokenizer file bpefst reads."""
    if isinstance(tokenizer, BPEModel):
        return tokenizer
    from ..tokenizer import load_tokenizer

    return load_tokenizer(os.fspath(tokenizer))


class EncodeDocuments:
    """Ray Data actor UDF: ``column`` -> ``ids`` (the tokenizer loaded once, from its artifact bytes)."""

    def __init__(self, artifact: bytes, column: str, bot: int | None = None, eot: int | None = None,
                 allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = (),
                 crash: CrashOnce | None = None):
        from ..pipeline.encoder import Tokenizer

        self.tokenizer = Tokenizer(native.read_bytes(artifact, "the shipped tokenizer"))
        self.column = column
        self.head = [bot] if bot is not None else []
        self.tail = [eot] if eot is not None else []
        self.allowed = allowed_special if allowed_special == "all" else frozenset(allowed_special)
        self.disallowed = disallowed_special if disallowed_special == "all" else frozenset(disallowed_special)
        self.crash = crash
        self.batches = 0

    def encode(self, value: str | bytes | None) -> list[int]:
        if value is None:
            raise BpefstError(f"a row has no {self.column!r} value (null)")
        policy = {"allowed_special": self.allowed, "disallowed_special": self.disallowed}
        ids = (self.tokenizer.encode_bytes(value, errors="surrogateescape", **policy) if isinstance(value, bytes)
               else self.tokenizer.encode(value, **policy))
        return self.head + ids + self.tail

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        if self.crash is not None:
            self.crash(self.batches)  # the test's injected fault: this worker's n-th batch
        self.batches += 1
        ids = [self.encode(value) for value in batch.column(self.column).to_pylist()]
        return batch.append_column("ids", pa.array(ids, type=pa.list_(pa.uint32())))


def tokenize_dataset(
    dataset: Any,
    tokenizer: "BPEModel | str | os.PathLike",
    column: str = "text",
    *,
    eot: int | str | None = None,
    bot: int | str | None = None,
    allowed_special: Iterable[str] | str = (),
    disallowed_special: Iterable[str] | str = (),
    workers: int | None = None,
    batch_size: int = 256,
    _crash: CrashOnce | None = None,
) -> Any:
    """``dataset`` with an ``ids`` column: each row's ``column`` tokenized (lazily, as Ray Data runs).

    ``eot`` / ``bot``: a special token's text, or an id.  ``workers``: actors
    in the pool (default: the cluster's CPUs).
    """
    data = require_ray_data()
    if column not in dataset.columns():
        raise BpefstError(f"the dataset has no column {column!r} (it has {', '.join(dataset.columns())})")
    if "ids" in dataset.columns():
        raise BpefstError("the dataset already has an 'ids' column")
    model = load_model(tokenizer)
    args = (model_bytes(model), column, token_id(model, bot, "bot"), token_id(model, eot, "eot"), allowed_special, disallowed_special, _crash)
    if workers is None:
        import ray

        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return dataset.map_batches(
        EncodeDocuments,
        fn_constructor_args=args,
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=data.ActorPoolStrategy(size=workers),
        num_cpus=1,
    )


def token_id(model: BPEModel, value: int | str | None, name: str) -> int | None:
    """``eot``/``bot`` given as an id or as a special token's text."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value in model.vocab or value in model.specials.values():
            return value
        raise BpefstError(f"{name} {value} is not a token id of this tokenizer")
    if isinstance(value, str) and value in model.specials:
        return model.specials[value]
    raise BpefstError(f"{name} {value!r} is not a special token of this tokenizer (give its text or its id)")
