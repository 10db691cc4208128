"""bpefst inside Ray: count, train and tokenize Ray Datasets (``pip install 'bpefst[ray]'``).

For programs that already hold a Ray Dataset (``ray.data.read_parquet``,
``read_json``, ``read_text``, ...)::

    import ray, bpefst.ray

    docs = ray.data.read_parquet("s3://bucket/docs/")             # one document per row
    counts = bpefst.ray.count(docs, column="text", special_tokens=["<|endoftext|>"])
    model = bpefst.ray.train(counts, vocab_size=32_000)            # merges, on the driver
    tokens = bpefst.ray.tokenize(docs, model, column="text", eot="<|endoftext|>")
    bpefst.ray.write_shards(tokens, "/shared/shards", model, eot="<|endoftext|>")  # shard i <- block i

``count`` returns a :class:`~bpefst.training.counts.ChunkCounts` (save it with
``save_counts`` and merge it with tables counted elsewhere); ``tokenize`` a
lazy Dataset.  Files on a shared file system are also served by the command
line: ``bpefst train --engine ray`` and ``bpefst tokenize --engine ray``.
See :mod:`bpefst.distributed` for what runs where.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from .distributed.counting import DEFAULT_SPLIT_SIZE, count_dataset, count_files_on_ray
from .distributed.tokenizing import load_model, token_id, tokenize_dataset
from .tokenizer import BPEModel
from .training.counts import ChunkCounts, CountSettings, load_counts, save_counts, sum_counts, train_on_counts

__all__ = ["ChunkCounts", "count", "count_files", "load_counts", "save_counts", "sum_counts", "tokenize", "train", "write_shards"]


def count(
    dataset: Any,
    column: str = "text",
    *,
    pattern: str | None = None,
    special_tokens: Sequence[str] = (),
    alphabet: str = "bytes",
    tie_break: str = "lexicographic",
    batch_size: int | None = 4096,
) -> ChunkCounts:
    """Chunk counts of every row of ``column`` (each row one document), counted in Ray tasks.

    The options are ``bpefst train``'s counting options; ``tie_break="hf"``
    counts each line on its own, as HF's trainer does.
    """
    settings = CountSettings.for_training(pattern, special_tokens, alphabet, tie_break)
    return count_dataset(dataset, settings, column, batch_size=batch_size)


def count_files(
    paths: Sequence[str],
    *,
    pattern: str | None = None,
    special_tokens: Sequence[str] = (),
    alphabet: str = "bytes",
    tie_break: str = "lexicographic",
    split_size: int = DEFAULT_SPLIT_SIZE,
) -> ChunkCounts:
    """Chunk counts of text files that every node can read, split into byte ranges of about ``split_size``."""
    settings = CountSettings.for_training(pattern, special_tokens, alphabet, tie_break)
    return count_files_on_ray(paths, settings, split_size=split_size)


def train(counts: ChunkCounts, vocab_size: int, **options: Any) -> BPEModel:
    """Merges learned from ``counts`` on the driver (options: ``end_of_word_suffix``, ``min_frequency``,
    ``special_tokens`` to reorder the specials, as in :func:`~bpefst.training.counts.train_on_counts`)."""
    return train_on_counts(counts, vocab_size, **options)


def tokenize(
    dataset: Any,
    tokenizer: "BPEModel | str | os.PathLike",
    column: str = "text",
    *,
    eot: int | str | None = None,
    bot: int | str | None = None,
    allowed_special: Iterable[str] | str = (),
    workers: int | None = None,
    batch_size: int = 256,
) -> Any:
    """``dataset`` with an ``ids`` column (list of uint32): each row's ``column`` tokenized on its own,
    ``bot``/``eot`` around it, by an actor pool that loads the tokenizer once per worker."""
    return tokenize_dataset(
        dataset, tokenizer, column, eot=eot, bot=bot, allowed_special=allowed_special, workers=workers, batch_size=batch_size
    )


def write_shards(
    dataset: Any,
    directory: str,
    tokenizer: "BPEModel | str | os.PathLike",
    *,
    column: str = "ids",
    file_format: str = "bin",
    dtype: str = "auto",
    eot: int | str | None = None,
    bot: int | str | None = None,
) -> dict:
    """Write a tokenized dataset's ``ids`` as the shard directory of ``bpefst tokenize --output-dir``
    (shard i <- block i, written by Ray tasks; ``manifest.json`` last); returns the manifest.

    ``tokenizer`` is the one the ids come from (for the manifest and the
    dtype); ``eot``/``bot`` are recorded in the manifest.
    """
    from .distributed.dataset_shards import write_dataset_shards

    model = load_model(tokenizer)
    return write_dataset_shards(
        dataset, directory, model, column=column, file_format=file_format, dtype=dtype,
        eot=token_id(model, eot, "eot"), bot=token_id(model, bot, "bot"),
    )
