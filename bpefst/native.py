"""Which engine runs the per-byte loops: the compiled core or pure Python.

bpefst's hot loops (pre-tokenizing the preset patterns, the chunk cache, BPE
of a chunk on a miss, the validator's token walk and pair test, merge recovery
from rank files, promotion's walk of the spelling trie against a pattern, the
product of a pattern with the pre-tokenizer's chunker, the liveness solve, the
canonical subsets (the shared rows), a guide's per-token calls, and the regex compiler's NFA -> minimal DFA step) run in one
compiled extension, ``bpefst._core`` (C, ``src/core``), built by the
package's own build.  It holds loops, not
concepts: this module packs the tables it walks from a :class:`BPEModel`
(merges as ``(left, right, result)`` triples in rank order, the id of each
byte, the preset's number), and the pure-Python code it replaces stays as the
reference and the fallback (``bpefst/pipeline/encoder.py`` with
``tokenizer/splitter.py`` and ``tokenizer/packed_bpe.py``; for promotion
``promotion/agnostic.py``, ``promotion/pretokenized.py``, ``promotion/on_demand.py``
and ``promotion/guided.py``; for the regex compiler ``automata/determinization.py`` and
``automata/minimization.py``).

The pure path runs where the extension was not built (no compiler at install
time), or when ``BPEFST_PURE_PYTHON=1`` is set before bpefst is imported.
:func:`engine` says which one runs; ``bpefst info`` prints it.
"""

from __future__ import annotations

import os
from array import array
from operator import itemgetter
from typing import TYPE_CHECKING

from .errors import ArgumentTypeError, BpefstError
from .tokenizer.pretokenize import PRESETS

if TYPE_CHECKING:
    from .bpe import MergeForest
    from .tokenizer import BPEModel

PURE_VARIABLE = "BPEFST_PURE_PYTHON"
CORE_MAX_ID = (1 << 26) - 1  # the largest id the core's tables take (src/core/core.c MAX_ID)
CACHE_SLOTS = 1 << 16  # chunk cache entries per thread, 64 bytes each


def _load_core():
    if os.environ.get(PURE_VARIABLE, "") not in ("", "0"):
        return None, f"pure Python ({PURE_VARIABLE} is set)"
    try:
        from . import _core
    except ImportError:
        return None, "pure Python (the compiled core was not built when bpefst was installed)"
    return _core, "compiled (C extension bpefst._core)"


core, _description = _load_core()


def engine() -> str:
    """``"compiled"`` or ``"pure"``: the engine new tokenizers use by default."""
    return "compiled" if core is not None else "pure"


def choose(engine: str | None) -> str:
    """The engine a caller's ``engine=`` selects: ``"compiled"``, ``"pure"``, or for None the default."""
    if engine not in (None, "compiled", "pure"):
        raise ArgumentTypeError(f"engine= takes 'compiled', 'pure' or None (the default engine), not {engine!r}")
    if engine == "compiled" and core is None:
        raise BpefstError(f"engine='compiled' asked for, but this install runs {engine_description()}")
    return engine if engine is not None else ("compiled" if core is not None else "pure")


def engine_description() -> str:
    """One line for ``bpefst info``: the engine and, for the pure path, why."""
    return _description


def engine_for(model: "BPEModel") -> str:
    """One line: the engine that encodes with ``model`` by default, and why when it is the pure path."""
    if core is not None and not supports(model):
        return "pure Python (the compiled core takes byte-level BPE with every byte a token, no ignore_merges)"
    return engine_description()


def preset_number(pattern: str | None) -> int | None:
    """The core's number for a pre-tokenization pattern it scans itself, else None (``regex`` does it)."""
    if core is None:
        return None
    if pattern is None:
        return core.PATTERN_NONE
    numbers = {PRESETS["gpt2"]: core.PATTERN_GPT2, PRESETS["cl100k"]: core.PATTERN_CL100K,
               PRESETS["o200k"]: core.PATTERN_O200K}
    return numbers.get(pattern)


def supports(model: "BPEModel") -> bool:
    """Whether the core can encode with ``model``: byte-level BPE with every byte a token, plain merges.

    A model that cuts its chunks at the bytes it lacks (``missing_bytes="split"``,
    from GGUF) qualifies too: the core never sees those bytes, because the
    tokenizer cuts them out of a chunk before the core's BPE and keeps texts
    that hold one from the core's own scan (``Tokenizer._barriers``).
    """
    return (core is not None and model.is_byte_level and not model.ignore_merges
            and model.max_id + bool(model.barrier_bytes) <= CORE_MAX_ID  # a barrier byte takes the id after the last
            and all(bytes([b]) in model.token_to_id or b in model.barrier_bytes for b in range(256)))


def merge_triples(model: "BPEModel") -> bytes:
    """The model's merges as packed ``(left, right, result)`` uint32 triples in rank order (the core's merge list)."""
    merges = model.merges
    triples = array("I", bytes(12 * len(merges)))
    triples[0::3] = array("I", map(itemgetter(0), merges))
    triples[1::3] = array("I", map(itemgetter(1), merges))
    triples[2::3] = array("I", model.merge_results)
    return triples.tobytes()


def native_encoder(model: "BPEModel", cache_size: int = CACHE_SLOTS):
    """A ``bpefst._core.Encoder`` over ``model``'s tables (see :func:`supports`).

    Patterns the core does not scan get number ``PATTERN_NONE`` here; their
    callers pre-tokenize with ``regex`` and use only ``bpe_bytes``.  The chunk
    cache has ``cache_size`` entries per thread, rounded down to a power of two,
    at most :data:`CACHE_SLOTS`.
    """
    token_to_id = model.token_to_id
    # A barrier byte never reaches the core (see supports); should one leak, it would come out as an id
    # beyond the vocabulary, which decoding refuses, never as some real token.
    no_token = model.max_id + 1
    byte_ids = array("I", (token_to_id.get(bytes([b]), no_token) for b in range(256)))
    triples = merge_triples(model)
    number = preset_number(model.pattern)
    slots = 1 << max(0, min(CACHE_SLOTS, int(cache_size)).bit_length() - 1)  # a power of two, at most CACHE_SLOTS
    return core.Encoder(byte_ids.tobytes(), triples, no_token if model.barrier_bytes else model.max_id,
                        core.PATTERN_NONE if number is None else number, slots)


def _forest_tables(forest: "MergeForest") -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """rank, left, right (packed int32), the merges' (left, right) pairs and their ranks (packed uint32)."""
    pair_ranks = forest.pair_rank
    pairs = array("I", bytes(8 * len(pair_ranks)))
    pairs[0::2] = array("I", map(itemgetter(0), pair_ranks))
    pairs[1::2] = array("I", map(itemgetter(1), pair_ranks))
    return (array("i", forest.rank).tobytes(), array("i", forest.left).tobytes(), array("i", forest.right).tobytes(),
            pairs.tobytes(), array("I", pair_ranks.values()).tobytes())


def banned_index(forest: "MergeForest"):
    """A ``bpefst._core.BannedIndex`` over a merge forest: ``mask(u)`` is BANNED(u) as bitset bytes, the
    loop of :class:`bpefst.bpe.banned.SingleBanned` (its pure twin), for the implicit A_BPE's masks."""
    rank, left, right, pairs, ranks = _forest_tables(forest)
    return core.BannedIndex(rank, left, right, bytes(map(bool, forest.reachable)), pairs, ranks)


def pair_checker(forest: "MergeForest"):
    """A ``bpefst._core.PairChecker`` over a merge forest: the canonical-pair test of
    :func:`bpefst.bpe.compatibility.compatible_before` (its pure twin) with a bounded set of
    pairs already known canonical, for the validator."""
    return core.PairChecker(*_forest_tables(forest))


# ---------------------------------------------------------------- promotion (src/core/promote.h)
def trie_walker(children: list[dict[int, int]], tokens: list[list[int]], steps: list[dict[int, tuple[int, int]]]):
    """A ``bpefst._core.TrieWalker`` over a spelling trie (:class:`bpefst.promotion.agnostic.SpellingTrie`'s
    ``children``, ``tokens`` and ``steps()``), or None where the core cannot take it (no core; a symbol or
    token outside ``0 .. CORE_MAX_ID``; a token with two spellings; nodes not numbered parent first).

    Packed once per tokenizer: per node its edges in the trie's order as (symbol index, token code of
    ``steps()``, child or 0), the tokens ending at each node, and ``symbol -> symbol index``.
    """
    if core is None:
        return None
    tables = trie_walker_tables(children, tokens, steps)
    return None if tables is None else trie_walker_of(tables)


def spelling_trie(spellings: dict[int, tuple[int, ...]], order: list[int]):
    """``(children, tokens, steps, walker)`` of the spelling trie of the tokens ``order`` (ascending), made in one
    compiled pass (``bpefst._core.spelling_trie``, the twin of :meth:`~bpefst.promotion.agnostic.SpellingTrie.from_model`,
    its ``steps()`` and :func:`trie_walker_tables`); None on the pure path or where a token or symbol is outside
    ``0 .. CORE_MAX_ID`` (the Python loops build that trie)."""
    if core is None:
        return None
    built = core.spelling_trie(spellings, order)
    if built is None:
        return None
    children, tokens, steps, packed = built
    tables = (*(array("i", table) for table in packed[:-1]), packed[-1])
    return children, tokens, steps, trie_walker_of(tables)


def trie_walker_of(tables: tuple):
    """A ``bpefst._core.TrieWalker`` from the tables :func:`trie_walker_tables` packed (perhaps in another
    process: :mod:`bpefst.promotion.parts` keeps them on disk); the core checks them (ValueError)."""
    return core.TrieWalker(*tables)


def trie_walker_tables(children: list[dict[int, int]], tokens: list[list[int]], steps: list[dict[int, tuple[int, int]]]):
    """The arguments of ``bpefst._core.TrieWalker`` for a spelling trie (seven int32 arrays and the symbol
    count; see :func:`trie_walker`), or None where the core cannot take the trie.  Needs no core."""
    symbols = sorted({s for kids in children for s in kids})
    if symbols and (symbols[0] < 0 or symbols[-1] > CORE_MAX_ID):
        return None
    index_of = {s: k for k, s in enumerate(symbols)}
    symbol_index = array("i", [-1]) * (symbols[-1] + 1 if symbols else 0)
    for s, k in index_of.items():
        symbol_index[s] = k
    node_start, edge_symbol, edge_token, edge_child = array("i", [0]), array("i"), array("i"), array("i")
    for node, kids in enumerate(children):
        step = steps[node]
        for s, child in kids.items():
            if child <= node:
                return None
            edge_symbol.append(index_of[s])
            edge_token.append(step[s][0])
            edge_child.append(step[s][1])
        node_start.append(len(edge_symbol))
    end_start, end_token = array("i", [0]), array("i")
    for ends in tokens:
        end_token.extend(ends)
        end_start.append(len(end_token))
    if len(set(end_token)) != len(end_token) or (end_token and (min(end_token) < 0 or max(end_token) > CORE_MAX_ID)):
        return None
    return node_start, edge_symbol, edge_token, edge_child, end_start, end_token, symbol_index, len(symbols)


def chunker_tables(decoder: list[dict[int, int]] | None, chunks: list[dict[int, int]], atoms: int,
                   inside: list[list[int]] | None) -> tuple[bytes, bytes, bytes]:
    """The UTF-8 decoder (``rows[d][byte]``: next state or ``-1 - atom``; None for character-level models),
    the chunker's rows (over atoms and, last, the cut) and the chunker states kept inside a character
    (``inside[d][c]``, pretokenized.mid_character_chunks; None with no decoder) as the packed tables
    ``chunk_product`` reads."""
    packed_decoder = _dense_rows(decoder or (), 256, core.DECODER_NO_ARC)
    packed_chunks = _dense_rows(chunks, atoms + 1, -1)
    packed_inside = array("i")
    for row in inside or ():
        packed_inside.extend(row)
    return packed_decoder.tobytes(), packed_chunks.tobytes(), packed_inside.tobytes()


def _dense_rows(rows, width: int, missing: int) -> array:
    """Sparse rows (``{column: value}``) as one int32 table of ``width`` columns, ``missing`` where a row has no
    entry: each row filled from its entries only (a UTF-8 decoder's rows hold 64 of 256 bytes)."""
    table = array("i", [missing]) * (width * len(rows))
    for k, row in enumerate(rows):
        base = k * width
        for column, value in row.items():
            table[base + column] = value
    return table


def symbol_table(values: dict[int, int]) -> array | None:
    """``symbol -> value`` (a byte or an atom) as an int32 table indexed by symbol, -1 elsewhere; None when a
    symbol is outside ``0 .. CORE_MAX_ID``."""
    if values and (min(values) < 0 or max(values) > CORE_MAX_ID):
        return None
    return _dense_rows([values], max(values) + 1 if values else 0, -1)
