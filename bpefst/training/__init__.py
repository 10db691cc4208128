"""Layer 7: training BPE tokenizers (003; 002 Sec. 4).

:func:`train_bpe` reads a corpus, counts its pre-tokenized chunks in parallel
(:mod:`.counting`, streamed in safely cut blocks by :mod:`.sources`), and learns
merges with a heap and an inverted index (:mod:`.merging`).  :mod:`.naive` is
the recount-everything trainer the tests use as an oracle.

Two tie-breaks among pairs of equal count:

* ``lexicographic`` (default): the lexicographically greatest pair of byte
  strings, as in the CS336 reference (003);
* ``hf``: HF ``tokenizers``' ``BpeTrainer`` — the smallest ``(left id, right
  id)``, with ids in HF's order (specials, the alphabet sorted by character,
  then merged tokens in creation order), and each line pre-tokenized on its own
  as ``Tokenizer.train(files)`` does.  HF's trainer does not split off special
  tokens in the training text; bpefst always does, so the two agree on any
  corpus that does not contain the special tokens.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Mapping, Sequence

from ..errors import BpefstError
from ..tokenizer.model import BPEModel
from ..tokenizer.pretokenize import resolve_pattern
from .counting import DEFAULT_BLOCK_SIZE, ChunkCounter, count_chunks
from .merging import learn_merges
from .progress import TrainingProgress
from .sources import check_sources
from .vocabulary import (ALPHABETS, DEFAULT_PATTERNS, TIE_BREAKS, Vocabulary, byte_vocabulary, char_vocabulary, check_tie_break,
                         unique_specials)


__all__ = ["ALPHABETS", "TIE_BREAKS", "TrainingProgress", "count_corpus", "train_bpe", "train_from_counts", "words_from_counts"]


def train_bpe(
    corpus: Sequence[str],
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    pattern: str | None = None,
    alphabet: str = "bytes",
    end_of_word_suffix: str | None = None,
    min_frequency: int = 0,
    tie_break: str = "lexicographic",
    jobs: int | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: TrainingProgress | None = None,
) -> BPEModel:
    """Train a BPE tokenizer on the files in ``corpus`` (a path or a list of paths; ``-`` is stdin).

    This is the layer's own entry point, returning the :class:`BPEModel`;
    :func:`bpefst.train` wraps it for Python users (texts too, a Tokenizer back).

    ``pattern`` is a preset name (gpt2, cl100k, o200k, whitespace, none) or a
    regex; by default gpt2 for ``alphabet="bytes"`` and whitespace for
    ``"chars"``.  ``vocab_size`` counts special tokens, the base alphabet and
    merged tokens.  Raises BpefstError for bad settings or bad input.
    """
    if isinstance(corpus, (str, os.PathLike)):  # one file, not a sequence of one-letter paths
        corpus = [corpus]
    specials = _check_settings(vocab_size, special_tokens, alphabet, end_of_word_suffix, min_frequency, tie_break)
    regex_pattern = resolve_pattern(pattern if pattern is not None else DEFAULT_PATTERNS[alphabet])
    if alphabet == "bytes":
        _check_room(vocab_size, len(byte_vocabulary(specials, tie_break)))
    counts = count_corpus(
        corpus, regex_pattern, specials, alphabet=alphabet, tie_break=tie_break, jobs=jobs, block_size=block_size, progress=progress
    )
    return train_from_counts(
        counts,
        vocab_size,
        special_tokens=specials,
        pattern=regex_pattern,
        alphabet=alphabet,
        end_of_word_suffix=end_of_word_suffix,
        min_frequency=min_frequency,
        tie_break=tie_break,
        progress=progress,
    )


def count_corpus(
    corpus: Sequence[str],
    pattern: str | None,
    special_tokens: Sequence[str] = (),
    *,
    alphabet: str = "bytes",
    tie_break: str = "lexicographic",
    jobs: int | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: TrainingProgress | None = None,
) -> Counter:
    """Chunk -> count over the corpus files (``pattern`` is a regex string or None)."""
    sources = check_sources(corpus)
    counter = ChunkCounter(pattern, tuple(special_tokens), line_mode=tie_break == "hf", strict_utf8=alphabet == "chars")
    progress = progress or TrainingProgress()
    progress.counting_started(_total_size(sources))
    counts = count_chunks(sources, counter, jobs=jobs, block_size=block_size, on_bytes=progress.bytes_counted)
    progress.counting_done(len(counts))
    if not counts:
        names = ", ".join(s.name for s in sources)
        raise BpefstError(f"the corpus is empty: no text to train on in {names}")
    return counts


def train_from_counts(
    counts: Mapping[str, int],
    vocab_size: int,
    *,
    special_tokens: Sequence[str] = (),
    pattern: str | None = None,
    alphabet: str = "bytes",
    end_of_word_suffix: str | None = None,
    min_frequency: int = 0,
    tie_break: str = "lexicographic",
    progress: TrainingProgress | None = None,
) -> BPEModel:
    """Learn merges from chunk counts and build the model (``pattern`` is stored as given)."""
    specials = _check_settings(vocab_size, special_tokens, alphabet, end_of_word_suffix, min_frequency, tie_break)
    vocab = initial_vocabulary(counts, specials, alphabet, end_of_word_suffix, tie_break)
    _check_room(vocab_size, len(vocab))
    words, word_counts = words_from_counts(counts, vocab, end_of_word_suffix)
    progress = progress or TrainingProgress()
    progress.merging_started(vocab_size - len(vocab))
    tokens = vocab.tokens

    def on_merge(done: int, left: int, right: int, count: int) -> None:
        progress.merged(done, tokens[left], tokens[right], count)

    merges = learn_merges(words, word_counts, vocab, vocab_size, min_frequency=min_frequency, tie_break=tie_break, on_merge=on_merge)
    progress.merging_done(len(merges))
    return build_model(vocab, merges, pattern, end_of_word_suffix)


def initial_vocabulary(counts: Mapping[str, int], specials: Sequence[str], alphabet: str, suffix: str | None, tie_break: str) -> Vocabulary:
    if alphabet == "bytes":
        return byte_vocabulary(specials, tie_break)
    return char_vocabulary(specials, counts.keys(), suffix)


def words_from_counts(counts: Mapping[str, int], vocab: Vocabulary, suffix: str | None = None) -> tuple[list[list[int]], list[int]]:
    """Chunks as lists of base token ids, with their counts (chunks of one symbol dropped)."""
    words: list[list[int]] = []
    word_counts: list[int] = []
    ids = vocab.ids
    if vocab.level == "byte":
        table = [ids[bytes([b])] for b in range(256)]
        for chunk, count in counts.items():
            data = chunk.encode("utf-8", "surrogateescape")
            if len(data) > 1:
                words.append([table[b] for b in data])
                word_counts.append(count)
        return words, word_counts
    for chunk, count in counts.items():
        if len(chunk) > 1:
            word = [ids[c] for c in chunk]
            if suffix:
                word[-1] = ids[chunk[-1] + suffix]
            words.append(word)
            word_counts.append(count)
    return words, word_counts


def build_model(vocab: Vocabulary, merges: list[tuple[int, int]], pattern: str | None, suffix: str | None) -> BPEModel:
    return BPEModel(
        level=vocab.level,
        vocab={i: t for i, t in enumerate(vocab.tokens) if t is not None},
        merges=merges,
        specials=dict(vocab.specials),
        pattern=pattern,
        end_of_word_suffix=suffix if vocab.level == "char" else None,
    )


def _check_settings(
    vocab_size: int, special_tokens: Sequence[str], alphabet: str, suffix: str | None, min_frequency: int, tie_break: str
) -> list[str]:
    if alphabet not in ALPHABETS:
        raise BpefstError(f"unknown alphabet {alphabet!r} (expected one of {', '.join(ALPHABETS)})")
    check_tie_break(tie_break)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise BpefstError(f"the vocabulary size must be a positive integer, not {vocab_size!r}")
    if min_frequency < 0:
        raise BpefstError(f"the minimum frequency must not be negative, not {min_frequency}")
    if suffix is not None and alphabet != "chars":
        raise BpefstError("an end-of-word suffix needs character-level training (--alphabet chars; alphabet='chars' in Python)")
    if suffix == "":
        raise BpefstError("the end-of-word suffix is empty")
    return unique_specials(special_tokens)


def _check_room(vocab_size: int, initial: int) -> None:
    if vocab_size < initial:
        raise BpefstError(
            f"the vocabulary size {vocab_size} is smaller than the initial vocabulary ({initial} entries: special tokens and base alphabet)"
        )


def _total_size(sources) -> int | None:
    sizes = [s.size for s in sources]
    return None if any(size is None for size in sizes) else sum(sizes)
