"""Counting chunks on a Ray cluster; the driver only sums count tables.

Two inputs:

* **files** (:func:`count_files_on_ray`, ``bpefst count/train --engine ray``):
  the driver plans byte ranges of about ``split_size`` bytes from the file
  sizes alone (:func:`~bpefst.training.sources.split_ranges`) and sends each
  worker a path and two offsets.  The worker opens the file itself, moves both
  ends to the next safe cut (:meth:`~bpefst.training.sources.BlockCutter.first_cut`,
  so neighbouring ranges share their boundary and no byte is counted twice or
  lost), streams the range in blocks as one machine does, and returns its
  table.  The files must be readable at the same path on every node (a shared
  file system).
* **a Ray Dataset** (:func:`count_dataset`): each row of ``column`` is one
  document, pre-tokenized on its own (as if documents were separated by a
  special token); each block's table comes back as a ``counts`` artifact.

Either way the tables are summed as they arrive (at most a few in flight), so
the driver holds the total table and one part: the same memory as counting
on one machine.  Ray retries a task whose worker died (``max_retries``);
a retried task recounts its whole range and the failed attempt returned
nothing, so no text is counted twice.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from ..errors import BpefstError
from ..training.counts import ChunkCounts, CountSettings, add_counts, counts_from_bytes, counts_to_bytes
from ..training.counting import DEFAULT_BLOCK_SIZE
from ..training.progress import TrainingProgress
from ..training.sources import BlockCutter, ByteRange, check_sources, iter_range_blocks, split_ranges
from .cluster import CrashOnce, connect, original_errors, require_ray_data, reraise

DEFAULT_SPLIT_SIZE = 64 << 20
MAX_RETRIES = 3


def count_range(part: ByteRange, settings: CountSettings, block_size: int = DEFAULT_BLOCK_SIZE) -> tuple[Counter, int]:
    """Chunk counts of one range of a file, and the bytes it covered (runs in a worker)."""
    counter = settings.counter()
    cutter = BlockCutter(settings.specials, settings.line_mode, settings.pattern is not None)
    counts: Counter = Counter()
    covered = 0
    for offset, data in iter_range_blocks(part, cutter, block_size):
        counter.count_into(counts, data, part.path, offset)
        covered += len(data)
    return counts, covered


def _count_range_task(part: ByteRange, settings: CountSettings, block_size: int, crash: CrashOnce | None) -> tuple[dict, int]:
    if crash is not None:
        crash(part.index)
    counts, covered = count_range(part, settings, block_size)
    return dict(counts), covered


def count_files_on_ray(
    corpus: Sequence[str],
    settings: CountSettings,
    *,
    address: str | None = None,
    split_size: int = DEFAULT_SPLIT_SIZE,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: TrainingProgress | None = None,
    _crash: CrashOnce | None = None,
) -> ChunkCounts:
    """Count the corpus files in Ray tasks of about ``split_size`` bytes each, summing on the driver."""
    sources = check_sources(corpus)
    parts = split_ranges(sources, split_size)
    ray = connect(address)
    progress = progress or TrainingProgress()
    progress.counting_started(sum(source.size or 0 for source in sources))
    total = ChunkCounts(settings)
    pending: list[Any] = []
    queue = iter(parts)
    try:
        task = ray.remote(_count_range_task).options(max_retries=MAX_RETRIES, num_cpus=1)
        in_flight = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        while True:
            for part in queue:
                pending.append(task.remote(part, settings, block_size, _crash))
                if len(pending) >= in_flight:
                    break
            if not pending:
                break
            done, pending = ray.wait(pending, num_returns=1)
            counts, covered = ray.get(done[0])
            add_counts(total.counts, counts)
            total.corpus_bytes += covered
            progress.bytes_counted(covered)
    except BaseException as exc:
        for ref in pending:
            ray.cancel(ref, force=True)
        reraise(exc, "counting")
    progress.counting_done(len(total.counts))
    return total


def _count_batch(batch: Any, settings: CountSettings, column: str) -> Any:
    """Ray Data UDF: a batch of documents -> one row holding the batch's ``counts`` artifact."""
    import pyarrow as pa

    counter = settings.counter()
    counts: Counter = Counter()
    covered = 0
    for value in batch.column(column).to_pylist():
        if value is None:
            continue
        if isinstance(value, bytes):
            covered += len(value)
            value = counter.decode(value, f"column {column!r}", 0)
        else:
            covered += len(value.encode("utf-8", "surrogatepass"))
        counter.count_text_into(counts, value)
    return pa.table({"counts": pa.array([counts_to_bytes(ChunkCounts(settings, counts, covered))], pa.binary())})


def count_dataset(dataset: Any, settings: CountSettings, column: str = "text", *, batch_size: int | None = 4096) -> ChunkCounts:
    """Sum of the chunk counts of each row of ``column`` (str or bytes), counted in Ray Data tasks."""
    require_ray_data()
    if column not in dataset.columns(fetch_if_missing=True):
        raise BpefstError(f"the dataset has no column {column!r} (it has {', '.join(dataset.columns())})")
    tables = dataset.select_columns([column]).map_batches(
        _count_batch, fn_kwargs={"settings": settings, "column": column}, batch_size=batch_size, batch_format="pyarrow"
    )
    total = ChunkCounts(settings)
    try:
        with original_errors(tables):
            for row in tables.iter_rows():
                part = counts_from_bytes(row["counts"], "a worker's counts")
                add_counts(total.counts, part.counts)
                total.corpus_bytes += part.corpus_bytes
    except Exception as exc:
        reraise(exc, "counting")
    return total
