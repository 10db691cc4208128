"""What ``--pattern`` and ``--special`` do to a tokenizer that has been read.

A pattern override replaces the file's pre-tokenization pattern (see
:func:`.pretokenize.pattern_override`).  Special tokens given by the user are
added to the file's own, as tiktoken users extend an encoding
(``{**enc._special_tokens, "<|im_start|>": 100264}``); giving a special the
file already has, with another id, moves it.

A compiled artifact (canonical DFA, transducer) was built for the tokenizer it
embeds, and its fingerprint names that tokenizer with its pattern and
specials; changing them would describe a tokenizer the artifact was not built
from, so :func:`refuse_changes_to_compiled` turns such a request into an error
that says what to do instead.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import BpefstError
from .model import MAX_ID, BPEModel
from .pretokenize import preset_name, resolve_pattern


def check_special_ids(specials: dict[str, int]) -> None:
    """Raise BpefstError unless every id is in range and no two specials share one."""
    owner: dict[int, str] = {}
    for text, sid in specials.items():
        if not 0 <= sid <= MAX_ID:
            raise BpefstError(f"special token {text!r} has id {sid}; ids go from 0 to {MAX_ID}")
        if sid in owner:
            raise BpefstError(f"special tokens {owner[sid]!r} and {text!r} both have id {sid}")
        owner[sid] = text


def add_specials(model: BPEModel, extra: dict[str, int] | None) -> BPEModel:
    """``model`` with the special tokens ``extra`` added (an existing one given again takes the new id)."""
    if not extra:
        return model
    merged = {**model.specials, **extra}
    check_special_ids(merged)
    return replace(model, specials=merged)  # BPEModel.validate checks the ids against the vocabulary


def refuse_changes_to_compiled(path: str, model: BPEModel, pattern: str | None, extra: dict[str, int] | None) -> None:
    """Raise BpefstError if ``--pattern`` / ``--special`` ask a compiled artifact for another tokenizer."""
    if pattern is not None and resolve_pattern(pattern) != model.pattern:
        raise BpefstError(
            f"{path} was compiled with the {preset_name(model.pattern)} pre-tokenization pattern and --pattern cannot "
            f"change it; pass the tokenizer file itself, or recompile it with --pattern"
        )
    for text, sid in (extra or {}).items():
        if model.specials.get(text) != sid:
            raise BpefstError(
                f"{path} was compiled without the special token {text!r}={sid} and --special cannot add it; pass the "
                f"tokenizer file itself, or recompile it with --special"
            )
