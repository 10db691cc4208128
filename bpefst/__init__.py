"""bpefst: a tokenizer compiler for byte-pair encoding.

The Python API, in tiktoken's shape::

    import bpefst
    enc = bpefst.get_encoding("cl100k_base")        # or bpefst.load("path/to/tokenizer.json")
    ids = enc.encode("hello world")
    enc.decode(ids)

* loading: :func:`load`, :func:`get_encoding`, :func:`list_encoding_names`,
  :func:`load_automaton` (:mod:`bpefst.registry`);
* the tokenizer: :class:`Tokenizer` (:mod:`bpefst.pipeline.encoder`), also
  called :class:`Encoding` with tiktoken's whole surface, so that
  ``import bpefst as tiktoken`` works; :func:`encoding_for_model`,
  :func:`encoding_name_for_model` (:mod:`bpefst.models`);
* making things: :func:`train`, :func:`compile`, :func:`promote`
  (:mod:`bpefst.api`), returning values with ``save(path)``;
* :func:`engine`: ``"compiled"`` when the compiled core runs the hot loops,
  ``"pure"`` on the pure-Python path (:mod:`bpefst.native`).
"""

__version__ = "0.1.0"

from .errors import BpefstError, DisallowedSpecialError

# Everything else is imported on first use: `import bpefst` stays instant, and the command
# line (which imports this package first) ends quietly on a Ctrl-C during its own imports.
_LAZY = {
    "Tokenizer": ".pipeline.encoder", "Encoding": ".pipeline.encoder",
    "encoding_for_model": ".models", "encoding_name_for_model": ".models",
    "get_encoding": ".registry", "list_encoding_names": ".registry", "load": ".registry", "load_automaton": ".registry",
    "compile": ".api", "promote": ".api", "train": ".api",
    "TokenLanguage": ".promotion.token_language",
    "engine": ".native",
}

__all__ = ["BpefstError", "DisallowedSpecialError", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bpefst' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
