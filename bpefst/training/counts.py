"""Chunk counts as a mergeable artifact (kind ``counts``).

Training is two steps: count the pre-tokenized chunks of the corpus, then
merge (003).  Only the first step reads the corpus, and its result is a table
chunk -> count that adds up: the table of a corpus is the sum of the tables of
its pieces, as long as the pieces were cut where the cut cannot change the
chunks (between documents, or at the safe cuts of :mod:`.sources`) and every
piece was counted the same way.  So a corpus can be counted anywhere, in any
number of pieces (``bpefst count`` per shard, or workers of a Ray cluster), and
the tables summed and merged once: the merges are those of training on the
whole corpus.

"The same way" is :class:`CountSettings`: the pre-tokenization pattern, the
special tokens split off before it, the alphabet (character-level counting
needs UTF-8), and whether each line is pre-tokenized on its own (HF's trainer,
``--tie-break hf``).  The artifact carries them in its body and its
fingerprint; :func:`sum_counts` refuses tables whose settings differ, naming the
setting.

The table is stored compactly: the chunks' UTF-8 bytes (``surrogateescape``,
so byte-level counts keep non-UTF-8 bytes) sorted and concatenated in one
blob, their lengths and their counts as packed arrays of the narrowest
unsigned type that holds them.  Sorting makes the file a function of the
counts alone, whatever order they were found in.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..artifact import artifact_bytes, check_header, pack_ints, parse_artifact, read_header_and_body, unpack_ints, write_artifact
from ..errors import ArtifactError, BpefstError
from ..tokenizer.pretokenize import preset_name, resolve_pattern
from ..tokenizer.model import BPEModel
from .counting import DEFAULT_BLOCK_SIZE, ChunkCounter, count_chunks
from .progress import TrainingProgress
from .vocabulary import ALPHABETS, DEFAULT_PATTERNS, unique_specials
from .sources import check_sources

KIND = "counts"
SCHEMA = 1


@dataclass(frozen=True)
class CountSettings:
    """Everything that decides which chunks a text is counted as."""

    pattern: str | None  # the regex itself (a preset resolved), None = no pre-tokenization
    specials: tuple[str, ...] = ()
    alphabet: str = "bytes"
    line_mode: bool = False

    @classmethod
    def for_training(
        cls, pattern: str | None = None, special_tokens: Sequence[str] = (), alphabet: str = "bytes", tie_break: str = "lexicographic"
    ) -> "CountSettings":
        """The settings ``train_bpe`` counts with for these options (``pattern``: preset name, regex or None)."""
        if alphabet not in ALPHABETS:
            raise BpefstError(f"unknown alphabet {alphabet!r} (expected one of {', '.join(ALPHABETS)})")
        specials = unique_specials(special_tokens)
        regex_pattern = resolve_pattern(pattern if pattern is not None else DEFAULT_PATTERNS[alphabet])
        return cls(regex_pattern, tuple(specials), alphabet, tie_break == "hf")

    def counter(self) -> ChunkCounter:
        return ChunkCounter(self.pattern, self.specials, line_mode=self.line_mode, strict_utf8=self.alphabet == "chars")

    @property
    def fingerprint(self) -> str:
        """A digest of the settings that matter for summing (special tokens as a set: their order only decides ids)."""
        text = repr((self.pattern, sorted(self.specials), self.alphabet, self.line_mode))
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def difference(self, other: "CountSettings") -> str | None:
        """What differs between two settings, in words, or None when tables counted with them can be summed."""
        if self.pattern != other.pattern:
            return f"pattern {_show_pattern(self.pattern)} vs {_show_pattern(other.pattern)}"
        if set(self.specials) != set(other.specials):
            return f"special tokens {sorted(self.specials)} vs {sorted(other.specials)}"
        if self.alphabet != other.alphabet:
            return f"alphabet {self.alphabet} vs {other.alphabet}"
        if self.line_mode != other.line_mode:
            return f"{_show_lines(self.line_mode)} vs {_show_lines(other.line_mode)}"
        return None


@dataclass
class ChunkCounts:
    """A chunk -> count table with the settings it was counted with, and how many corpus bytes it covers."""

    settings: CountSettings
    counts: Counter = field(default_factory=Counter)
    corpus_bytes: int = 0


def add_counts(total: Counter, part: Mapping[str, int]) -> None:
    """``total += part`` without Counter.update's per-key overhead on large tables."""
    get = total.get
    for chunk, count in part.items():
        total[chunk] = get(chunk, 0) + count


def sum_counts(tables: Iterable[tuple[str, ChunkCounts]]) -> ChunkCounts:
    """Sum named tables (consuming them: the sum reuses their dicts).

    Refuses tables counted with different settings, naming the two tables and
    the setting.  The special tokens keep the first table's order.
    """
    total: ChunkCounts | None = None
    first = ""
    for name, table in tables:
        if total is None:
            total, first = table, name
            continue
        difference = total.settings.difference(table.settings)
        if difference is not None:
            raise BpefstError(f"cannot sum {first} and {name}: they were counted with different settings ({difference})")
        if len(table.counts) > len(total.counts):  # add the smaller table into the larger
            table.counts, total.counts = total.counts, table.counts
        add_counts(total.counts, table.counts)
        total.corpus_bytes += table.corpus_bytes
    if total is None:
        raise BpefstError("no count tables given")
    return total


def count_files(
    corpus: Sequence[str],
    settings: CountSettings,
    *,
    jobs: int | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: TrainingProgress | None = None,
) -> ChunkCounts:
    """Count the chunks of the corpus files (``-`` is stdin) on this machine, in ``jobs`` processes."""
    sources = check_sources(corpus)
    progress = progress or TrainingProgress()
    sizes = [source.size for source in sources]
    progress.counting_started(None if None in sizes else sum(sizes))
    seen = 0

    def on_bytes(nbytes: int) -> None:
        nonlocal seen
        seen += nbytes
        progress.bytes_counted(nbytes)

    counts = count_chunks(sources, settings.counter(), jobs=jobs, block_size=block_size, on_bytes=on_bytes)
    progress.counting_done(len(counts))
    return ChunkCounts(settings, counts, seen)


def train_on_counts(
    table: ChunkCounts,
    vocab_size: int,
    *,
    special_tokens: Sequence[str] | None = None,
    pattern: str | None = None,
    alphabet: str | None = None,
    tie_break: str | None = None,
    end_of_word_suffix: str | None = None,
    min_frequency: int = 0,
    progress: TrainingProgress | None = None,
) -> BPEModel:
    """Learn merges from a (summed) count table: the model ``train_bpe`` gives on the counted corpus.

    Pattern, specials and alphabet come from the table; given here they must
    agree with it (``special_tokens`` may reorder the specials, which decides
    their ids).  The tie-break defaults to the one the table was counted for;
    HF's needs line-by-line counts and the default one whole-text counts.
    """
    from . import train_from_counts  # the package imports this module's siblings, not this module

    settings = table.settings
    tie_break = tie_break or ("hf" if settings.line_mode else "lexicographic")
    wanted = CountSettings.for_training(
        pattern if pattern is not None else "none" if settings.pattern is None else settings.pattern,
        special_tokens if special_tokens is not None else settings.specials,
        alphabet or settings.alphabet,
        tie_break,
    )
    difference = settings.difference(wanted)
    if difference is not None:
        raise BpefstError(f"the counts were made with other settings than asked for ({difference}); count again with these settings")
    if not table.counts:
        raise BpefstError("the counts are empty: no text to train on")
    return train_from_counts(
        table.counts,
        vocab_size,
        special_tokens=wanted.specials,
        pattern=settings.pattern,
        alphabet=settings.alphabet,
        end_of_word_suffix=end_of_word_suffix,
        min_frequency=min_frequency,
        tie_break=tie_break,
        progress=progress,
    )


# -- the artifact -------------------------------------------------------------------


def to_body(table: ChunkCounts) -> dict:
    settings = table.settings
    chunks = sorted((chunk.encode("utf-8", "surrogateescape"), count) for chunk, count in table.counts.items())
    lengths = [len(chunk) for chunk, _ in chunks]
    counts = [count for _, count in chunks]
    length_code, count_code = _narrowest(lengths), _narrowest(counts)
    return {
        "pattern": settings.pattern,
        "specials": list(settings.specials),
        "alphabet": settings.alphabet,
        "line_mode": settings.line_mode,
        "corpus_bytes": table.corpus_bytes,
        "chunks": b"".join(chunk for chunk, _ in chunks),
        "length_type": length_code,
        "lengths": pack_ints(lengths, length_code),
        "count_type": count_code,
        "counts": pack_ints(counts, count_code),
        # for `bpefst info`
        "stats": {
            "distinct_chunks": len(chunks),
            "chunks": sum(counts),
            "corpus_bytes": table.corpus_bytes,
            "pattern": _show_pattern(settings.pattern),
            "specials": ", ".join(settings.specials) or "none",
            "alphabet": settings.alphabet,
            "lines_on_their_own": settings.line_mode,
        },
    }


def from_body(body: dict, name: str) -> ChunkCounts:
    try:
        settings = CountSettings(body["pattern"], tuple(body["specials"]), body["alphabet"], bool(body["line_mode"]))
        if settings.alphabet not in ALPHABETS or not all(isinstance(s, str) and s for s in settings.specials):
            raise ValueError("bad settings")
        if settings.pattern is not None and not isinstance(settings.pattern, str):
            raise ValueError("bad pattern")
        lengths = unpack_ints(body["lengths"], _typecode(body["length_type"]))
        counts = unpack_ints(body["counts"], _typecode(body["count_type"]))
        blob = body["chunks"]
        if len(lengths) != len(counts) or sum(lengths) != len(blob) or not isinstance(blob, bytes):
            raise ValueError("inconsistent tables")
        table: Counter = Counter()
        position = 0
        for length, count in zip(lengths, counts):
            table[blob[position : position + length].decode("utf-8", "surrogateescape")] = count
            position += length
        if len(table) != len(lengths):
            raise ValueError("a chunk appears twice")
        corpus_bytes = int(body["corpus_bytes"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ArtifactError(f"{name}: corrupted counts artifact ({exc})") from None
    return ChunkCounts(settings, table, corpus_bytes)


def save_counts(table: ChunkCounts, path: str | os.PathLike) -> None:
    """Write ``table`` atomically as a ``counts`` artifact."""
    write_artifact(path, KIND, SCHEMA, table.settings.fingerprint, to_body(table))


def load_counts(path: str | os.PathLike) -> ChunkCounts:
    document = read_header_and_body(path)
    return _checked(document, str(path))


def counts_from_bytes(raw: bytes, name: str = "counts") -> ChunkCounts:
    """A ``counts`` artifact held in memory (what Ray workers send back)."""
    return _checked(parse_artifact(raw, name), name)


def counts_to_bytes(table: ChunkCounts) -> bytes:
    """The artifact's bytes, for sending a table from a worker rather than writing it."""
    return artifact_bytes(KIND, SCHEMA, table.settings.fingerprint, to_body(table))


def _checked(document: dict, name: str) -> ChunkCounts:
    check_header(document, name, KIND, SCHEMA)
    table = from_body(document["body"], name)
    if table.settings.fingerprint != document["fingerprint"]:
        raise ArtifactError(f"{name}: corrupted counts artifact (settings do not match its fingerprint)")
    return table


_TYPECODES = ("B", "H", "I", "Q")


def _narrowest(values: Sequence[int]) -> str:
    largest = max(values, default=0)
    for code, limit in zip(_TYPECODES, (1 << 8, 1 << 16, 1 << 32, 1 << 64)):
        if largest < limit:
            return code
    raise BpefstError(f"a count of {largest} does not fit in 64 bits")


def _typecode(code: object) -> str:
    if code not in _TYPECODES:
        raise ValueError(f"unknown packed type {code!r}")
    return code  # type: ignore[return-value]


def _show_pattern(pattern: str | None) -> str:
    name = preset_name(pattern)
    return name if name != "custom" else repr(pattern if len(pattern) <= 40 else pattern[:37] + "...")


def _show_lines(line_mode: bool) -> str:
    return "each line on its own (--tie-break hf)" if line_mode else "whole text (--tie-break lexicographic)"
