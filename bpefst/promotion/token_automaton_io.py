"""The ``token-automaton`` artifact: what ``bpefst promote -o`` writes.

Body::

    {"mode": "canonical" | "agnostic" | "canonical-direct" | "maxmatch",
     "automaton": <the DFA body of bpefst.automata.serialize>}

The header's fingerprint names the tokenizer whose ids label the arcs.  Loading
checks every field (the DFA table as :func:`bpefst.automata.serialize.from_body`
does), so a tampered file is refused here rather than misread by a decoder.
"""

from __future__ import annotations

import os

from ..artifact import check_header, read_header_and_body, write_artifact
from ..automata import DFA
from ..automata.serialize import from_body, to_body
from ..errors import ArtifactError
from .language_build import MODES

KIND = "token-automaton"
SCHEMA = 1
ALL_MODES = (*MODES, "maxmatch")


def save_token_automaton(path: str | os.PathLike, dfa: DFA, mode: str, fingerprint: str) -> None:
    """Write a promoted automaton atomically."""
    write_artifact(path, KIND, SCHEMA, fingerprint, {"mode": mode, "automaton": to_body(dfa)})


def load_token_automaton(path: str | os.PathLike, fingerprint: str | None = None) -> tuple[str, DFA]:
    """``(mode, dfa)`` of a token-automaton artifact; with ``fingerprint``, insist it was built for that tokenizer."""
    name = str(path)
    document = read_header_and_body(path)
    check_header(document, name, KIND, SCHEMA, fingerprint)
    body = document["body"]
    mode = body.get("mode")
    if mode not in ALL_MODES:
        raise ArtifactError(f"{name}: corrupted token-automaton artifact (mode {mode!r}, expected one of {', '.join(ALL_MODES)})")
    return mode, from_body(body.get("automaton"), name)
