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

Segments are grouped into batches of about ``batch_chars`` characters; a batch
is encoded with :meth:`Tokenizer.encode_batch`, which with ``jobs > 1`` spreads
it over worker processes and returns the results in order.  The segments do
not depend on ``jobs`` and each is encoded on its own, so the output is
identical for every ``jobs`` (a test checks it).  Memory is bounded by a batch and its ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ..tokenizer.safe_cuts import cut_rule_for, safe_cut
from .encoder import Tokenizer
from .inputs import Document

SEGMENT_CHARS = 1 << 20  # a long document is cut into segments of about this many characters
BATCH_CHARS = 1 << 22  # characters per batch handed to encode_batch (per job)
BATCH_SEGMENTS = 4096  # segments per batch (many short documents)


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
                cut = safe_cut(buffer, rule, max(scanned, size // 2, 1), len(buffer))
                if cut is None:
                    scanned = max(len(buffer) - 1, 0)
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
    for batch in batches(segments(documents, rule), BATCH_CHARS * max(1, jobs), BATCH_SEGMENTS * max(1, jobs)):
        texts = [segment.text for segment in batch]
        results = tokenizer.encode_batch(texts, allowed_special=allowed, disallowed_special=disallowed, jobs=jobs)
        for segment, ids in zip(batch, results):
            if segment.first:
                writer.begin_document()
            writer.write(ids)
            if segment.last:
                writer.end_document()
        if on_batch is not None:
            on_batch(writer.documents, writer.ids)
