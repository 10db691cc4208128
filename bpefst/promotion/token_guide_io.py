"""The ``token-guide`` artifact: a canonical language's decoding set-up, what ``bpefst promote --form guide`` writes.

A real-world JSON Schema's canonical language is far too large to write out
as a DFA (tens of millions of arcs over GPT-2), but a decoder only needs the
lazy product's set-up: the chunked pattern's start, finals and cuts, the
token groups filed per lattice state and the good set of each
(:meth:`~.on_demand.OnDemandCanonical.liveness`: seed 000's promotion, Eq. 3
and Eq. 5, as the lazy product of :mod:`.on_demand`).  That is what this artifact holds, in the
layout of the guide cache (:func:`.guide_cache.setup_fields`), under the
header of bpefst's artifacts (kind, schema version, tokenizer fingerprint,
checksum).  Read back with the tokenizer it was built for, it gives the same
guide as promoting again, in a fraction of the time (the median
JSONSchemaBench schema over GPT-2, 7.1 MB: 40-70 ms, every number checked,
instead of about 140 ms).

Body::

    {"mode": "canonical", "pretokenize": bool, "source": the regex text or the schema and its options,
     "fingerprint": the header's (so that the checksum covers it too),
     "stats": {"lattice states": n, "token groups": g}, <the fields of guide_cache.setup_fields>}

Loading checks every number against what it numbers and every token against
the tokenizer's vocabulary, so a tampered file is refused here rather than
misread by a decoder.
"""

from __future__ import annotations

import os

from ..artifact import check_header, read_header_and_body, write_artifact
from ..errors import ArtifactError
from .guide_cache import check_filed, liveness_of, setup_fields
from .on_demand import OnDemandCanonical

KIND = "token-guide"
SCHEMA = 1


def save_token_guide(path: str | os.PathLike, lazy: OnDemandCanonical, fingerprint: str, source: str | None,
                     pretokenize: bool) -> None:
    """Write the set-up of ``lazy`` (solved whole first, if it was not) atomically."""
    fields = setup_fields(lazy)
    write_artifact(path, KIND, SCHEMA, fingerprint, {"mode": "canonical", "pretokenize": pretokenize, "source": source or "",
                                                     "fingerprint": fingerprint, "stats": _stats(fields), **fields})


def read_token_guide(path: str | os.PathLike, fingerprint: str | None = None,
                     vocabulary: int | None = None) -> tuple[dict, dict]:
    """``(body, liveness)`` of a token-guide artifact, every field checked (with ``vocabulary``, every token
    below it too: :func:`.guide_cache.check_filed`); with ``fingerprint``, insist it was built for that tokenizer."""
    name = str(path)
    document = read_header_and_body(path)
    check_header(document, name, KIND, SCHEMA, fingerprint)
    body = document["body"]
    if body.get("mode") != "canonical" or not isinstance(body.get("pretokenize"), bool) \
            or not isinstance(body.get("source"), str) or body.get("fingerprint") != document["fingerprint"]:
        raise ArtifactError(f"{name}: corrupted token-guide artifact (its mode, pretokenize, source or fingerprint field)")
    try:
        liveness = liveness_of(body)
        check_filed(liveness, vocabulary)
        if body.get("stats") != _stats(body):  # (what bpefst info prints: it must say what the file holds)
            raise ValueError("its stats do not describe its tables")
    except Exception as exc:  # (a field missing, of another type, or numbering nothing)
        detail = str(exc) if isinstance(exc, ValueError) else f"a field is missing or malformed: {type(exc).__name__}"
        raise ArtifactError(f"{name}: corrupted token-guide artifact ({detail})") from None
    return body, liveness


def _stats(fields: dict) -> dict:
    return {"lattice states": len(fields["filed"]), "token groups": len(fields["groups"])}
