"""Counting pre-tokenized chunks, in parallel worker processes (003, "Parallelizing the counts").

The corpus is streamed in blocks cut at safe places (:mod:`.sources`).  Each
block is decoded, split at special tokens (which are dropped: they are never
merged with anything), cut into chunks by the pre-tokenization pattern
(``regex.findall``), and the chunks are counted with ``collections.Counter``.
Workers keep one counter each and send it back once, at the end, so the main
process merges ``jobs`` counters rather than one per block; a bounded task
queue keeps at most a few blocks in flight.  Memory is therefore bounded by
the number of distinct chunks, not by the size of the corpus.

Byte-level training decodes with ``surrogateescape``: bytes that are not UTF-8
become lone surrogates, which the patterns treat as punctuation, and are
turned back into the same bytes when chunks become words.  Character-level
training needs UTF-8 and reports the byte offset of the first bad byte.

With ``line_mode`` each line (up to and including its ``\\n``) is
pre-tokenized on its own, as HF ``tokenizers``' ``Tokenizer.train(files)``
feeds its trainer, so no chunk spans a line end.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from typing import Callable, Iterator, Sequence

import regex

from ..errors import BpefstError
from ..tokenizer.pretokenize import chunk_finder
from .sources import BlockCutter, Source, iter_blocks

DEFAULT_BLOCK_SIZE = 1 << 20
_LINES = regex.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True)
class ChunkCounter:
    """How a block of corpus bytes becomes chunks (picklable, sent to workers)."""

    pattern: str | None
    specials: tuple[str, ...] = ()
    line_mode: bool = False
    strict_utf8: bool = False
    _special_re: object = field(default=None, init=False, repr=False, compare=False)

    def split_specials(self, text: str) -> list[str]:
        if not self.specials:
            return [text]
        if self._special_re is None:
            names = sorted(set(self.specials), key=lambda s: (-len(s), s))
            object.__setattr__(self, "_special_re", regex.compile("|".join(regex.escape(s) for s in names)))
        return self._special_re.split(text)  # type: ignore[attr-defined]

    def decode(self, data: bytes, name: str, offset: int) -> str:
        if not self.strict_utf8:
            return data.decode("utf-8", "surrogateescape")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BpefstError(
                f"{name}: invalid UTF-8 at byte offset {offset + exc.start} (character-level training needs UTF-8 text)"
            ) from None

    def count_into(self, counter: Counter, data: bytes, name: str = "corpus", offset: int = 0) -> None:
        """Add the chunks of one block to ``counter``."""
        self.count_text_into(counter, self.decode(data, name, offset))

    def count_text_into(self, counter: Counter, text: str) -> None:
        """Add the chunks of one decoded text (a block, or a document of a dataset) to ``counter``."""
        findall = chunk_finder(self.pattern) if self.pattern is not None else None
        for piece in self.split_specials(text):
            if not piece:
                continue
            if self.line_mode:
                lines = _LINES.findall(piece)
                counter.update(lines if findall is None else chain.from_iterable(map(findall, lines)))
            elif findall is None:
                counter[piece] += 1
            else:
                counter.update(findall(piece))


def count_chunks(
    sources: Sequence[Source],
    counter: ChunkCounter,
    *,
    jobs: int | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    on_bytes: Callable[[int], None] | None = None,
) -> Counter:
    """Chunk -> number of occurrences over all sources."""
    jobs = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
    blocks = _all_blocks(sources, BlockCutter(counter.specials, counter.line_mode, counter.pattern is not None), block_size)
    first = next(blocks, None)
    second = next(blocks, None) if first is not None else None
    if second is None or jobs == 1:
        pending = [b for b in (first, second) if b is not None]
        return _count_here(counter, _chain(pending, blocks), on_bytes)
    return _count_in_workers(counter, _chain([first, second], blocks), jobs, on_bytes)


def _all_blocks(sources: Sequence[Source], cutter: BlockCutter, block_size: int) -> Iterator[tuple[str, int, bytes]]:
    for source in sources:
        for offset, data in iter_blocks(source, cutter, block_size):
            yield source.name, offset, data


def _chain(head: list, tail: Iterator) -> Iterator:
    yield from head
    yield from tail


def _count_here(counter: ChunkCounter, blocks: Iterator[tuple[str, int, bytes]], on_bytes: Callable[[int], None] | None) -> Counter:
    counts: Counter = Counter()
    for name, offset, data in blocks:
        counter.count_into(counts, data, name, offset)
        if on_bytes is not None:
            on_bytes(len(data))
    return counts


def _count_in_workers(
    counter: ChunkCounter, blocks: Iterator[tuple[str, int, bytes]], jobs: int, on_bytes: Callable[[int], None] | None
) -> Counter:
    context = _context()
    tasks = context.Queue(maxsize=2 * jobs)
    results = context.Queue()
    workers = [context.Process(target=_worker, args=(counter, tasks, results), daemon=True) for _ in range(jobs)]
    for worker in workers:
        worker.start()
    try:
        for block in blocks:
            _put(tasks, block, results, workers)
            if on_bytes is not None:
                on_bytes(len(block[2]))
        for _ in workers:
            _put(tasks, None, results, workers)
        return _collect(results, workers)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()


def _context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _put(tasks, item, results, workers) -> None:
    """Queue a task, failing fast if a worker reported an error or died."""
    while True:
        try:
            tasks.put(item, timeout=0.2)
            return
        except queue.Full:
            _check_workers(results, workers)


def _check_workers(results, workers) -> None:
    try:
        status, payload = results.get_nowait()
    except queue.Empty:
        if any(not w.is_alive() for w in workers):
            raise BpefstError("a counting worker process died unexpectedly") from None
        return
    if status == "error":
        raise BpefstError(payload)
    results.put((status, payload))  # an early result; keep it for _collect


def _collect(results, workers) -> Counter:
    totals: Counter | None = None
    for _ in workers:
        while True:
            try:
                status, payload = results.get(timeout=1.0)
                break
            except queue.Empty:
                if all(not w.is_alive() for w in workers):
                    raise BpefstError("a counting worker process died unexpectedly") from None
        if status == "error":
            raise BpefstError(payload)
        if totals is None:
            totals = Counter(payload)
            continue
        if len(payload) > len(totals):
            totals, payload = Counter(payload), totals
        get = totals.get
        for chunk, count in payload.items():
            totals[chunk] = get(chunk, 0) + count
    return totals if totals is not None else Counter()


def _worker(counter: ChunkCounter, tasks, results) -> None:
    counts: Counter = Counter()
    error = None
    while True:
        item = tasks.get()
        if item is None:
            break
        if error is not None:
            continue
        name, offset, data = item
        try:
            counter.count_into(counts, data, name, offset)
        except BpefstError as exc:
            error = str(exc)
            results.put(("error", error))
        except MemoryError:
            error = "out of memory while counting"
            results.put(("error", error))
    if error is None:
        results.put(("ok", dict(counts)))
