"""Writing a tokenized Ray Dataset as id shards: shard i holds block i (``bpefst.ray.write_shards``).

The output is the shard directory of :mod:`bpefst.pipeline.datasets`
(``shard_NNNNN.bin``/``.npy``, ``manifest.json``, ``index.npy``), one row of
the ``ids`` column being one document.  The dataset is materialized with its
order preserved (``to_arrow_refs``: the blocks stay in the object store, which
spills them to disk when they do not fit), and one Ray task per block writes
shard i and the document ends of that shard; only object references and
manifest entries pass through the driver.  The order of the blocks, and so of
the shards, is the dataset's order; how Ray Data cuts a dataset into blocks
depends on its readers and block size settings, so the cut points between
shard files may differ between Ray versions, never the id stream.

Tasks are retried when their worker dies (each shard is written under a
temporary name and renamed when complete); ``manifest.json`` is written last,
after every shard, so it never names a missing or partial one.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import BpefstError
from ..pipeline.datasets import DTYPES, DatasetWriter, IdWriter, choose_dtype, shard_name
from ..tokenizer import BPEModel
from .cluster import CrashOnce, connect, reraise
from .shards import ends_name, finish_shards

MAX_RETRIES = 3


def _write_block(directory: str, number: int, block: Any, column: str, dtype: str, file_format: str,
                 crash: CrashOnce | None) -> dict:
    """A Ray task: one block (an Arrow table) -> shard ``number`` and its ends file; returns the manifest entry."""
    if crash is not None:
        crash(number)
    name = shard_name(number, file_format)
    sink = IdWriter(DTYPES[dtype], file_format, path=os.path.join(directory, name))
    ends = IdWriter(DTYPES["uint64"], "npy", path=os.path.join(directory, ends_name(number)))
    writer = DatasetWriter(sink, index=ends)
    try:
        for ids in block.column(column).to_pylist():
            writer.begin_document()
            writer.write(ids if ids is not None else ())
            writer.end_document()
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return {"number": number, "file": name, "ids": writer.ids, "documents": writer.documents,
            "bytes": os.path.getsize(os.path.join(directory, name))}


def write_dataset_shards(
    dataset: Any,
    directory: str,
    model: BPEModel,
    *,
    column: str = "ids",
    file_format: str = "bin",
    dtype: str = "auto",
    eot: int | None = None,
    bot: int | None = None,
    _crash: CrashOnce | None = None,
) -> dict:
    """Write the ``column`` of a tokenized dataset as shards of ``directory`` (which must hold none); returns the manifest.

    ``model`` is the tokenizer the ids come from (the manifest records its
    fingerprint and largest id, and ``dtype="auto"`` picks uint16 or uint32
    from it); ``eot``/``bot`` are recorded in the manifest (the ids already
    carry them).
    """
    ray = connect()
    if column not in dataset.columns():
        raise BpefstError(f"the dataset has no column {column!r} (it has {', '.join(dataset.columns())})")
    if file_format not in ("bin", "npy"):
        raise BpefstError(f"shards are bin or npy files, not {file_format!r}")
    chosen = choose_dtype(dtype, model.max_id)
    _check_empty(directory)
    context = dataset.context
    before = context.execution_options.preserve_order
    context.execution_options.preserve_order = True
    try:
        blocks = dataset.select_columns([column]).to_arrow_refs()
        task = ray.remote(_write_block).options(max_retries=MAX_RETRIES, num_cpus=1)
        entries = ray.get([task.remote(directory, n, block, column, chosen.name, file_format, _crash) for n, block in enumerate(blocks)])
    except Exception as exc:
        reraise(exc, "writing shards")
    finally:
        context.execution_options.preserve_order = before
    return finish_shards(directory, entries, chosen, file_format, model, eot=eot, bot=bot)


def _check_empty(directory: str) -> None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise BpefstError(f"{directory} exists and is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise BpefstError(f"cannot create {directory}: {exc.strerror or exc}") from None
    if any(name.startswith(("shard_", "ends_", "manifest")) for name in os.listdir(directory)):
        raise BpefstError(f"{directory} already holds shards or a manifest; choose an empty directory")
