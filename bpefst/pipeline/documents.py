"""Tokenizing a corpus document by document, in input order, across processes if asked.

Each document is encoded on its own (documents never merge across their
boundary, as in GPT-2 / nanoGPT data preparation), and the caller's
:class:`~.datasets.DatasetWriter` puts the BOS/EOS ids around it.

A document arrives as a stream of text pieces (:mod:`.inputs`).  Pieces are
joined and re-cut only at positions where pre-tokenization does not depend on
the text on the other side (:func:`bpefst.tokenizer.safe_cuts.safe_cut`, the
rule the streaming encoder uses), so every *segment* can be encoded
independently and the concatenation of the segments' ids is the document's
ids.  A pattern with no known safe cut keeps a document whole.

Segments are grouped into batches of about :data:`BATCH_CHARS` characters.
With one job a batch is encoded with :meth:`Tokenizer.encode_batch`.  With
``jobs > 1`` encoding overlaps reading, cutting and writing, which this
process does in order:

* where the compiled core encodes the whole text (a preset pattern and no
  special tokens to recognise), it encodes each batch on ``jobs`` threads of
  its own (without the GIL) while this thread reads the next batch and writes
  the last (:func:`_encode_on_threads`).  Processes would cost more here:
  once encoding runs at tens of MB/s, handing text to a process and ids back
  costs as much as encoding it;
* otherwise batches stream through forked workers
  (:func:`~.forking.map_ordered`), since the pure-Python encoder holds the GIL.

The segments do not depend on ``jobs`` and each is encoded on its own, so the
output is identical for every ``jobs`` (tests check it).  Memory is bounded by
a few batches per job and their ids.
"""

from __future__ import annotations

import struct
from array import array
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ..tokenizer.safe_cuts import cut_rule_for, safe_cut
from .encoder import Tokenizer
from .forking import fork_available, map_ordered
from .inputs import Document

SEGMENT_CHARS = 1 << 18  # a long document is cut into segments of about this many characters
# Characters and segments per batch (one task for a worker): enough that handing it
# over costs little, few enough that the reader (and a progress display) stays close
# behind the encoder.
BATCH_CHARS = 1 << 20
BATCH_SEGMENTS = 2048


@dataclass(frozen=True)
class Segment:
    """A piece of one document; ``first``/``last`` say whether it begins/ends the document."""

    text: str
    first: bool
    last: bool


def segments(documents: Iterable[Document], rule: str | None, size: int = SEGMENT_CHARS) -> Iterator[Segment]:
    """Documents -> segments cut at safe positions, each at most about ``size`` characters when a cut exists.

    Every document yields at least one segment (an empty document yields an
    empty one, so that it still gets its BOS/EOS ids).
    """
    for document in documents:
        buffer = ""
        first = True
        scanned = 0  # no safe cut in buffer[:scanned] (keeps a long stretch without cuts linear)
        for piece in document:
            buffer = buffer + piece if buffer else piece
            while len(buffer) > size:
                # the last cut in [size/2, size], else the first one after size
                cut = safe_cut(buffer, rule, size // 2, size) if not scanned else None
                if cut is None:
                    cut = safe_cut(buffer, rule, max(scanned, size), len(buffer), forward=True)
                if cut is None:
                    scanned = max(len(buffer) - 1, size)
                    break
                yield Segment(buffer[:cut], first, False)
                buffer, first, scanned = buffer[cut:], False, 0
        yield Segment(buffer, first, True)


def batches(stream: Iterable[Segment], chars: int, count: int) -> Iterator[list[Segment]]:
    batch: list[Segment] = []
    total = 0
    for segment in stream:
        batch.append(segment)
        total += len(segment.text)
        if total >= chars or len(batch) >= count:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch


def tokenize_documents(tokenizer: Tokenizer, documents: Iterable[Document], writer, jobs: int = 1,
                       allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = (),
                       on_batch: Callable[[int, int], None] | None = None) -> None:
    """Encode every document into ``writer`` (a :class:`~.datasets.DatasetWriter` or anything with
    ``begin_document()``, ``write(ids)``, ``end_document()``).

    ``allowed_special`` / ``disallowed_special`` follow :meth:`Tokenizer.encode`;
    the default treats special-token text as plain text (tiktoken's
    ``encode_ordinary``).  ``on_batch(documents, ids)`` is called after each
    batch with the running totals.
    """
    model = tokenizer.model
    rule = cut_rule_for(model.pattern, model.specials)
    allowed = list(allowed_special) if allowed_special != "all" else "all"
    disallowed = list(disallowed_special) if disallowed_special != "all" else "all"
    policy = tokenizer.special_policy(allowed, disallowed)
    packed = getattr(writer, "takes_arrays", False)  # ids as array('I') from the core: no Python int per id
    if jobs > 1 and tokenizer._native_scans and not policy[0]:
        chars = max(BATCH_CHARS, 2 * jobs * SEGMENT_CHARS)  # a long document still gives every thread two segments
        encoded = _encode_on_threads(tokenizer, batches(segments(documents, rule), chars, BATCH_SEGMENTS), policy, jobs,
                                     packed)
    elif jobs > 1 and fork_available():
        encoded = _encode_in_workers(tokenizer, batches(segments(documents, rule), BATCH_CHARS, BATCH_SEGMENTS),
                                     allowed, disallowed, jobs)
    else:
        # texts carry invalid bytes as surrogates: encode_escaped_batch, without tiktoken's reading of them
        encoded = ((batch, tokenizer.encode_escaped_batch([segment.text for segment in batch], *policy, 1, packed))
                   for batch in batches(segments(documents, rule), BATCH_CHARS, BATCH_SEGMENTS))
    for batch, results in encoded:
        for segment, ids in zip(batch, results):
            if segment.first:
                writer.begin_document()
            writer.write(ids)
            if segment.last:
                writer.end_document()
        if on_batch is not None:
            on_batch(writer.documents, writer.ids)


def _encode_on_threads(tokenizer: Tokenizer, stream: Iterable[list[Segment]], policy: tuple[frozenset, frozenset],
                       jobs: int, packed: bool = False) -> Iterator[tuple[list[Segment], list]]:
    """``(batch, ids of each segment)`` for every batch, in order, encoded by the compiled core on ``jobs`` threads.

    The core spreads one batch's segments over ``jobs`` threads of its own
    (each with its own chunk cache, without the GIL); a helper thread hands it
    batch after batch while this thread reads and cuts the next batch and
    writes the ids of the last: reading, encoding and writing overlap.
    ``packed``: ids come as ``array('I')`` (the writer packs them into a file:
    no Python int per id is made, and this thread has less to do).
    """
    pending: deque = deque()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bpefst-encode")
    try:
        for batch in stream:
            texts = [segment.text for segment in batch]
            pending.append((batch, pool.submit(tokenizer.encode_escaped_batch, texts, *policy, jobs, packed)))
            if len(pending) > 2:  # one batch encoding, one cut and waiting, this thread cutting the next
                batch, future = pending.popleft()
                yield batch, future.result()
        while pending:
            batch, future = pending.popleft()
            yield batch, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _encode_in_workers(tokenizer: Tokenizer, stream: Iterable[list[Segment]], allowed, disallowed,
                       jobs: int) -> Iterator[tuple[list[Segment], list[array]]]:
    """``(batch, ids of each segment)`` for every batch, encoded in ``jobs`` forked workers (:func:`~.forking.map_ordered`).

    The parent reads, cuts and writes while the workers encode: a batch
    travels as UTF-8 (``surrogatepass``: any ``str`` round-trips) and comes
    back as packed 32-bit ids, so no Python object is pickled either way.
    """
    allowed_set, disallowed_set = tokenizer.special_policy(allowed, disallowed)
    pending: deque[list[Segment]] = deque()  # batches sent, in order; results come back in the same order

    def tasks() -> Iterator[bytes]:
        for batch in stream:
            pending.append(batch)
            yield _pack_texts([segment.text for segment in batch])

    def handle(task: bytes) -> bytes:
        texts = _unpack_texts(task)
        return _pack_ids([tokenizer._encode_policy(text, allowed_set, disallowed_set) for text in texts])

    tokenizer._build_tables()  # once, before the fork, instead of once per worker
    results = map_ordered(handle, tasks(), jobs)
    try:
        for result in results:
            yield pending.popleft(), _unpack_ids(result)
    finally:
        results.close()


_COUNT = struct.Struct("<I")


def _pack_texts(texts: list[str]) -> bytes:
    data = [text.encode("utf-8", "surrogatepass") for text in texts]
    return _COUNT.pack(len(data)) + array("Q", map(len, data)).tobytes() + b"".join(data)


def _unpack_texts(task: bytes) -> list[str]:
    count = _COUNT.unpack_from(task)[0]
    lengths = array("Q")
    at = _COUNT.size + count * lengths.itemsize
    lengths.frombytes(task[_COUNT.size : at])
    texts = []
    for length in lengths:
        texts.append(task[at : at + length].decode("utf-8", "surrogatepass"))
        at += length
    return texts


def _pack_ids(results: list[list[int]]) -> bytes:
    ids = array("I")
    for part in results:
        ids.extend(part)
    return _COUNT.pack(len(results)) + array("Q", map(len, results)).tobytes() + ids.tobytes()


def _unpack_ids(result: bytes) -> list[array]:
    count = _COUNT.unpack_from(result)[0]
    lengths = array("Q")
    at = _COUNT.size + count * lengths.itemsize
    lengths.frombytes(result[_COUNT.size : at])
    ids = array("I")
    ids.frombytes(result[at:])
    parts, begin = [], 0
    for length in lengths:
        parts.append(ids[begin : begin + length])
        begin += length
    return parts
