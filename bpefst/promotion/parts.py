"""What every promotion over one tokenizer starts from, kept in an explicit, size-bounded cache, and on disk.

Promoting any pattern over a tokenizer walks its **spelling trie** (the tokens
by their spellings, :class:`~.agnostic.SpellingTrie`) and asks its **A_BPE**
(the canonical automaton of seed 000 Eq. 5, used through the 1-local pair
check of Sec. 6.5) which token pairs may follow each other.  Both depend on
the tokenizer only, take seconds to build over GPT-2 or cl100k, and are
read-only once built, so one pair serves every language over that tokenizer.

:class:`PartsCache` keeps them per tokenizer fingerprint, least recently
used first out, never more than ``size`` tokenizers: a process that promotes
schema after schema over one tokenizer builds the parts once and holds
memory flat.  The cache is a value: :func:`bpefst.promote` takes one as
``parts=`` and otherwise uses :data:`DEFAULT_PARTS` (two tokenizers).

**On disk.**  Given a ``cache_dir`` (``bpefst.promote(cache_dir=...)``, as for
the per-language set-up of :mod:`.guide_cache`), the parts are read from a
file there that an earlier process wrote, else built and written there.  What
the file keeps is what costs to build: the trie with its spellings and walk
indexes (the steps, the collapsed chains, the subtree index, the compiled
walker's packed tables) and, for an explicit A_BPE (vocabularies up to 65,536
tokens), the token classes and their banned bitsets.  What is cheaper to make
again than to read is made again: the merge forest (tens of milliseconds on
the compiled core) and the implicit A_BPE's banned-set index (on the pure path
that index takes about a second over cl100k, built again all the same).
Measured in fresh processes on 2 cores, from the model loaded to the parts
warm: GPT-2 0.6 s built, 0.5 s read (a 29 MB file); cl100k 0.6 s built, 0.6 s
read (12 MB); benchmarks/bench_guided.py prints both.  (Session 40 took the
builds from 2.0 s and 1.6 s: the compiled core groups A_BPE's tokens by the
banned sets of its index of single sets, builds the trie with its steps and
packed walker in one pass, and leaves the collapsed chains and the subtree
index, which only the pure walks read, to be built on first use or when the
parts are written out.)

The file is a msgpack map with the header of bpefst's artifacts (format, kind
``tokenizer-parts``, schema version, tokenizer fingerprint) and a body packed
as bytes with its SHA-256 beside it, as :mod:`.guide_cache` writes; its name
is derived from the fingerprint and the schema version, so installs of two
schema versions sharing a directory keep a file each.  A file that cannot be
used (torn, altered, another schema, another tokenizer) is ignored with a
:class:`PartsCacheWarning` and written again from freshly built parts: it is a
cache, and a damaged entry must never answer.  Writes are atomic.
"""

from __future__ import annotations

import gc
import hashlib
import os
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgpack

from ..artifact import FORMAT_NAME, atomic_write_bytes
from ..bpe import CanonicalAutomaton, MergeForest, build_canonical
from ..bpe.canonical import AUTO_EXPLICIT_LIMIT, ExplicitCanonical, ImplicitCanonical
from ..errors import BpefstError
from ..tokenizer import BPEModel
from .agnostic import SpellingTrie

KIND = "tokenizer-parts"
SCHEMA = 1


class PartsCacheWarning(UserWarning):
    """A tokenizer-parts file in a cache directory could not be used; the parts were built again."""


@dataclass(frozen=True)
class TokenizerParts:
    """The spelling trie (with its walk indexes) and A_BPE of one tokenizer."""

    trie: SpellingTrie
    automaton: CanonicalAutomaton

    @classmethod
    def build(cls, model: BPEModel, automaton: CanonicalAutomaton | None = None, warm: bool = True,
              forest: MergeForest | None = None) -> "TokenizerParts":
        """Build both (``automaton``: an A_BPE the caller already has; ``forest``: the model's merge forest,
        when the caller has it).

        ``warm``: also build now the indexes walks and decoding steps read
        (otherwise each is built on first use, by whatever needs it): parts
        kept in a cache serve many languages, so their indexes are built
        once, up front.
        """
        trie = SpellingTrie.from_model(model)
        if automaton is None:
            automaton = build_canonical(forest if forest is not None else MergeForest.from_model(model))
        if warm:
            if trie.native_walker() is None:  # (the compiled walks read only the packed trie; the pure ones these)
                trie.chains(), trie.subtrees()
            trie.leading_counts()  # the rows' weights that split every walk read them
            automaton.banned_mask(0)  # builds the index of one token's banned set that decoding steps read
            automaton.pair_checker()  # and the pair test the liveness solve reads
            automaton.banned_index()  # and the index the shared rows read banned sets off
        return cls(trie, automaton)

    # -- on disk ---------------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, fingerprint: str) -> None:
        """Write the parts (of the tokenizer with this ``fingerprint``) to ``path`` (module docstring)."""
        automaton = self.automaton
        if not isinstance(automaton, (ExplicitCanonical, ImplicitCanonical)):
            raise BpefstError(f"the parts cache keeps an explicit or implicit A_BPE, not {type(automaton).__name__}")
        body = msgpack.packb({
            "trie": self.trie.to_tables(),
            "automaton": {"encoding": automaton.encoding,
                          "explicit": automaton.to_tables() if isinstance(automaton, ExplicitCanonical) else None},
        }, use_bin_type=True)
        document = {"format": FORMAT_NAME, "kind": KIND, "schema": SCHEMA, "fingerprint": fingerprint,
                    "sha256": hashlib.sha256(body).hexdigest(), "body": body}
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BpefstError(f"cannot write {path}: {exc.strerror or exc}") from None
        atomic_write_bytes(path, msgpack.packb(document, use_bin_type=True))

    @classmethod
    def load(cls, path: str | os.PathLike, model: BPEModel, forest: MergeForest | None = None) -> "TokenizerParts | None":
        """The parts of ``model`` from the file at ``path``, warm as :meth:`build` makes them; None when
        there is no file, and None with a :class:`PartsCacheWarning` when the file cannot be used.

        ``forest``: the model's merge forest when the caller has it (it is built again, not stored).
        """
        try:
            data = Path(path).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            _warn(path, f"cannot be read ({exc.strerror or exc})")
            return None
        with collector_paused():
            if forest is None:
                forest = MergeForest.from_model(model)  # outside the try: its refusals are the model's, not the file's
            try:
                return cls._from_bytes(data, model, forest)
            except _Unusable as unusable:
                _warn(path, str(unusable))
            except Exception as exc:  # whatever else is wrong with the file (torn, another layout): unusable too
                detail = " ".join(str(exc).split())[:80]
                _warn(path, f"is damaged ({type(exc).__name__}{': ' + detail if detail else ''})")
        return None

    @classmethod
    def _from_bytes(cls, data: bytes, model: BPEModel, forest: MergeForest) -> "TokenizerParts":
        document = msgpack.unpackb(data, raw=False)
        if not (isinstance(document, dict) and document.get("format") == FORMAT_NAME and document.get("kind") == KIND):
            raise _Unusable("is not a bpefst tokenizer-parts file")
        if document.get("schema") != SCHEMA:
            raise _Unusable(f"has schema version {document.get('schema')!r}, this bpefst reads {SCHEMA}")
        if document.get("fingerprint") != model.fingerprint:
            raise _Unusable("was built for another tokenizer")
        body = document.get("body")
        if not isinstance(body, bytes) or hashlib.sha256(body).hexdigest() != document.get("sha256"):
            raise _Unusable("is damaged (its checksum does not match)")
        tables = msgpack.unpackb(body, raw=False, use_list=False, strict_map_key=False)
        trie = SpellingTrie.from_tables(tables["trie"])
        stored = tables["automaton"]
        encoding = "explicit" if forest.size <= AUTO_EXPLICIT_LIMIT else "implicit"  # as build_canonical chooses
        if stored["encoding"] != encoding:
            raise _Unusable(f"holds an {stored['encoding']} A_BPE where bpefst builds an {encoding} one")
        automaton = ExplicitCanonical.from_tables(forest, stored["explicit"]) if encoding == "explicit" else ImplicitCanonical(forest)
        trie.leading_counts()  # warm, as build() leaves it
        automaton.banned_mask(0)
        automaton.pair_checker()
        automaton.banned_index()
        return cls(trie, automaton)


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while parts are built or read, or a language's stage builds
    (:mod:`.token_language`), as it was after.

    Both make hundreds of thousands of lists, dicts and tuples that hold no cycles, and each burst of them
    triggers collections that re-scan every tracked object of the process (the tokenizer's trie among
    them): measured 30-50% of a JSON schema's set-up over GPT-2.  Reference counting frees everything as
    before; only cycles wait for the next collection.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Unusable(Exception):
    """Why a parts file is not read (the end of a warning's sentence)."""


def _warn(path, reason: str) -> None:
    warnings.warn(PartsCacheWarning(f"tokenizer-parts cache {path} {reason}: ignored, the parts are built again"),
                  stacklevel=4)


def cache_path(directory: str | os.PathLike, fingerprint: str) -> Path:
    """Where a cache directory keeps the parts of the tokenizer with this fingerprint (for this schema)."""
    key = hashlib.sha256(f"{fingerprint}\0tokenizer-parts\0{SCHEMA}".encode("utf-8")).hexdigest()[:40]
    return Path(directory).expanduser() / f"{key}.parts"


class PartsCache:
    """``model -> TokenizerParts``, at most ``size`` tokenizers (least recently used evicted)."""

    def __init__(self, size: int = 2):
        if size < 1:
            raise BpefstError(f"a parts cache holds at least one tokenizer (size={size})")
        self.size = size
        self._entries: OrderedDict[str, TokenizerParts] = OrderedDict()
        self._on_disk: set[tuple[str, Path]] = set()  # (fingerprint, file) known to hold the parts

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, model: BPEModel, cache_dir: str | os.PathLike | None = None) -> TokenizerParts:
        """The parts of ``model``, built on the first request for its fingerprint.

        ``cache_dir``: read them from there on that first request when an
        earlier process wrote them (module docstring), and make sure they are
        written there (once per directory).
        """
        key = model.fingerprint
        path = None if cache_dir is None else cache_path(cache_dir, key)
        parts = self._entries.get(key)
        tried = False
        if parts is None:
            with collector_paused():
                forest = None
                if path is not None:
                    forest = MergeForest.from_model(model)
                    parts, tried = TokenizerParts.load(path, model, forest), True
                if parts is None:
                    parts = TokenizerParts.build(model, forest=forest)
                elif path is not None:
                    self._on_disk.add((key, path))  # read from there: nothing to write
            self._entries[key] = parts
            while len(self._entries) > self.size:
                evicted, _ = self._entries.popitem(last=False)
                self._on_disk = {entry for entry in self._on_disk if entry[0] != evicted}
        self._entries.move_to_end(key)
        if path is not None and (key, path) not in self._on_disk:
            if tried or not path.exists():  # missing, or unusable when read just now: (re)write it
                parts.save(path, key)
            self._on_disk.add((key, path))
        return parts

    def clear(self) -> None:
        self._entries.clear()
        self._on_disk.clear()


DEFAULT_PARTS = PartsCache(size=2)
