"""Small tokenizers built in code, for tests that must run without ../shared."""

from __future__ import annotations

import random

from bpefst.tokenizer import PRESETS, BPEModel


def random_byte_model(seed: int, alphabet: bytes = b"abc ", num_merges: int = 12, pattern: str | None = None) -> BPEModel:
    """A proper byte-level model: all 256 bytes, then random merges of built tokens."""
    rng = random.Random(seed)
    vocab: dict[int, bytes] = {b: bytes([b]) for b in range(256)}
    by_token = {t: i for i, t in vocab.items()}
    built = [by_token[bytes([b])] for b in alphabet]
    merges: list[tuple[int, int]] = []
    for _ in range(num_merges * 4):
        if len(merges) == num_merges:
            break
        a, b = rng.choice(built), rng.choice(built)
        if (a, b) in merges:
            continue
        token = vocab[a] + vocab[b]
        if token in by_token:
            continue  # a second merge producing a token can cause rank inversions (see merge_forest)
        by_token[token] = len(vocab)
        vocab[len(vocab)] = token
        built.append(by_token[token])
        merges.append((a, b))
    return BPEModel(level="byte", vocab=vocab, merges=merges, specials={"<|end|>": len(vocab)}, pattern=pattern)


def random_char_model(seed: int, alphabet: str = "abc", num_merges: int = 10, suffix: str | None = "▁") -> BPEModel:
    """A proper character-level model in the style of the WikiText tokenizers."""
    rng = random.Random(seed)
    symbols = list(alphabet) + ([c + suffix for c in alphabet] if suffix else [])
    vocab = dict(enumerate(symbols))
    by_token = {t: i for i, t in vocab.items()}
    built = list(vocab)
    merges: list[tuple[int, int]] = []
    for _ in range(num_merges * 4):
        if len(merges) == num_merges:
            break
        a, b = rng.choice(built), rng.choice(built)
        if (a, b) in merges or (suffix and vocab[a].endswith(suffix)):
            continue  # nothing follows an end-of-word symbol
        token = vocab[a] + vocab[b]
        if token in by_token:
            continue  # a second merge producing a token can cause rank inversions (see merge_forest)
        by_token[token] = len(vocab)
        vocab[len(vocab)] = token
        built.append(by_token[token])
        merges.append((a, b))
    return BPEModel(level="char", vocab=vocab, merges=merges, pattern=PRESETS["whitespace"], end_of_word_suffix=suffix)


def naive_bpe(model: BPEModel, symbols: list[int]) -> list[int]:
    """BPE by definition: apply each merge, in rank order, left to right over the whole sequence.

    Algorithm 1 of seed 001.  It equals the priority-queue algorithm when merges
    apply in rank order (no two merges produce the same token, as in these
    generated models), so it is an independent oracle.
    """
    seq = list(symbols)
    for (a, b), result in zip(model.merges, model.merge_results):
        out, i = [], 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                out.append(result)
                i += 2
            else:
                out.append(seq[i])
                i += 1
        seq = out
    return seq
