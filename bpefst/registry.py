"""Finding and loading tokenizers and automata: ``bpefst.load``, ``bpefst.get_encoding``, ``bpefst.load_automaton``.

Loading is kept apart from encoding, as in tiktoken (``registry.py`` beside
``core.py``): this module knows file names, formats and where files live;
:class:`~bpefst.pipeline.encoder.Tokenizer` knows how to encode.

**Names.**  ``get_encoding(name)`` never downloads anything.  It looks, in
order, in every directory of the ``BPEFST_DATA`` environment variable (a
``os.pathsep``-separated list) and then in the per-user directory
(``$XDG_DATA_HOME/bpefst``, by default ``~/.local/share/bpefst``), for the
first of

    NAME.bpefst  NAME.fst  NAME.tiktoken  NAME.tiktoken.gz  NAME.json  NAME/

(``NAME/`` is a directory holding ``tokenizer.json`` or ``vocab.json`` +
``merges.txt``).  A ``.bpefst`` file loads fastest; make one with
``bpefst convert FILE -o ~/.local/share/bpefst/NAME.bpefst``.  The tiktoken
rank files of ``cl100k_base`` and ``o200k_base`` (and ``gpt2``/``r50k_base``)
carry their pattern and special tokens by name, so ``cl100k_base.tiktoken.gz``
dropped in a directory of the path is enough.  Encodings are cached per name
and file, so a second ``get_encoding`` returns the same object.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .artifact import peek_kind
from .errors import BpefstError, UnknownEncodingError

if TYPE_CHECKING:
    from .pipeline.encoder import Tokenizer

DATA_ENV = "BPEFST_DATA"
SUFFIXES = (".bpefst", ".fst", ".tiktoken", ".tiktoken.gz", ".json", "")

_ENCODINGS: dict[tuple[str, str], "Tokenizer"] = {}


def search_path() -> list[Path]:
    """The directories ``get_encoding`` looks in, in order."""
    dirs = [Path(d).expanduser() for d in os.environ.get(DATA_ENV, "").split(os.pathsep) if d]
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    dirs.append(Path(data_home) / "bpefst")
    return dirs


def find_encoding(name: str) -> Path | None:
    """The file (or directory) ``get_encoding(name)`` would load, or None."""
    for directory in search_path():
        for suffix in SUFFIXES:
            candidate = directory / f"{name}{suffix}"
            if suffix == "" and candidate.is_dir() and (
                    (candidate / "tokenizer.json").is_file() or (candidate / "vocab.json").is_file()):
                return candidate
            if suffix and candidate.is_file():
                return candidate
    return None


def list_encoding_names() -> list[str]:
    """Names ``get_encoding`` can load from the search path."""
    names = set()
    for directory in search_path():
        if not directory.is_dir():
            continue
        for entry in directory.iterdir():
            for suffix in SUFFIXES[:-1]:
                if entry.is_file() and entry.name.endswith(suffix):
                    names.add(entry.name[: -len(suffix)])
            if entry.is_dir() and ((entry / "tokenizer.json").is_file() or (entry / "vocab.json").is_file()):
                names.add(entry.name)
    return sorted(names)


def get_encoding(name: str) -> "Tokenizer":
    """The tokenizer called ``name`` on the search path (see the module docstring); cached.

    A name that is not found raises :class:`~bpefst.errors.UnknownEncodingError`,
    a ValueError as in tiktoken, saying where bpefst looked.
    """
    if not isinstance(name, str) or not name or os.sep in name or name.startswith("."):
        raise UnknownEncodingError(f"get_encoding() takes a tokenizer name such as 'cl100k_base', not {name!r}; "
                          f"use bpefst.load(path) for a file")
    path = find_encoding(name)
    if path is None:
        looked = ", ".join(str(d) for d in search_path())
        tried = " ".join(f"{name}{s}" if s else f"{name}/" for s in SUFFIXES)
        raise UnknownEncodingError(
            f"no tokenizer named {name!r}: looked for {tried} in {looked}. bpefst downloads nothing: put a file there "
            f"(e.g. bpefst convert path/to/tokenizer.json -o {search_path()[-1] / (name + '.bpefst')}) or add its "
            f"directory to {DATA_ENV}"
        )
    key = (name, str(path.resolve()))
    found = _ENCODINGS.get(key)
    if found is None:
        found = _ENCODINGS[key] = load(path, name=name)
    return found


def load(path: str | os.PathLike, pattern: str | None = None, special_tokens: dict[str, int] | None = None,
         name: str | None = None) -> "Tokenizer":
    """A :class:`~bpefst.Tokenizer` from any file bpefst reads.

    HF ``tokenizer.json``, GPT-2 ``vocab.json`` (+ ``merges.txt`` beside it) or
    their directory, tiktoken rank files (plain or gzip), a ``.bpefst``
    tokenizer, or a compiled artifact (canonical DFA or transducer), whose
    embedded tokenizer is used.  ``pattern`` (a preset name, ``"none"`` or a
    regex) overrides the file's pre-tokenization; ``special_tokens`` (text ->
    id) are added to the file's own.
    """
    from .pipeline.encoder import Tokenizer, tokenizer_name

    if not isinstance(path, (str, os.PathLike)):
        raise BpefstError(f"load() takes a path, not {type(path).__name__}")
    if special_tokens is not None and not isinstance(special_tokens, dict):
        raise BpefstError("special_tokens= takes a dict of text -> id, e.g. {'<|im_start|>': 100264}")
    name = name if name is not None else tokenizer_name(path)
    return Tokenizer.load(path, pattern=pattern, specials=special_tokens, name=name)


def load_automaton(path: str | os.PathLike, tokenizer=None):
    """Any automaton artifact ``bpefst compile`` or ``bpefst promote`` writes, as its value.

    * ``canonical-dfa`` -> :class:`~bpefst.bpe.compiled.CanonicalDFA`
    * ``transducer`` -> :class:`~bpefst.bpe.compiled.CompiledTransducer`
    * ``token-automaton`` -> :class:`~bpefst.promotion.token_language.TokenLanguage`
    * ``token-guide`` (``bpefst promote --form guide``) -> the same, read with the ``tokenizer`` it was
      built for (a :class:`~bpefst.Tokenizer`)
    * ``automaton`` (a pattern over bytes / code points) -> :class:`~bpefst.automata.DFA`
    """
    kind = peek_kind(path)
    if kind == "canonical-dfa":
        from .bpe.compiled import CanonicalDFA

        return CanonicalDFA.load(path)
    if kind == "transducer":
        from .bpe.compiled import CompiledTransducer

        return CompiledTransducer.load(path)
    if kind in ("token-automaton", "token-guide"):
        from .promotion.token_language import TokenLanguage

        return TokenLanguage.load(path, tokenizer=tokenizer)
    if kind == "automaton":
        from .automata import load as load_dfa

        return load_dfa(path)
    if kind == "tokenizer":
        raise BpefstError(f"{path} is a tokenizer, not an automaton: use bpefst.load()")
    if not Path(path).exists():
        raise BpefstError(f"cannot read {path}: no such file")
    raise BpefstError(f"{path} is not a bpefst automaton artifact (compile or promote write them)")
