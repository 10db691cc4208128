"""The ``transducer`` artifact: a tokenizer plus the eagerly built part of its transducer.

Body::

    {"tokenizer": <the tokenizer body of bpefst.tokenizer.formats.native>,
     "eager": {table name: packed int32 array, ...},   # SubsequentialTransducer.export_eager
     "lazy": {"max_states": N},                          # cache bound for the states built on demand
     "stats": {...}}                                     # what `compile --stats` reported

The artifact is self-contained: loading rebuilds the model from the embedded
body, checks that its fingerprint is the one in the header, rebuilds the
transducer's tables (merge forest, token spellings) and installs the eager
states, which stay pinned in the cache; every other state is built lazily, as
for a tokenizer given directly.
"""

from __future__ import annotations

import os
import time

from ..artifact import check_header, pack_ints, read_header_and_body, unpack_ints, write_artifact
from ..errors import ArtifactError, BpefstError
from ..tokenizer import BPEModel
from ..tokenizer.formats.native import from_body, to_body
from .transducer import DEFAULT_MAX_STATES, SubsequentialTransducer

KIND = "transducer"
SCHEMA = 1
DEFAULT_EAGER_BUDGET = 2_000
DEFAULT_EAGER_ARCS = 500_000  # the default budget keeps states x alphabet under this


def compile_transducer(model: BPEModel, budget: int | None = None, max_states: int = DEFAULT_MAX_STATES,
                       alphabet: list[str] | None = None) -> tuple[SubsequentialTransducer, dict]:
    """Build the transducer eagerly up to ``budget`` states; returns it and its statistics.

    The default budget is :data:`DEFAULT_EAGER_BUDGET` states, fewer for large
    base alphabets (at most :data:`DEFAULT_EAGER_ARCS` arcs).
    """
    if len(set(model.merge_results)) != len(model.merges):
        raise BpefstError("this tokenizer has a token produced by two different merges; the transducer needs one producer per token")
    began = time.perf_counter()
    transducer = SubsequentialTransducer(model, max_states=max_states)
    setup = time.perf_counter() - began
    if budget is None:
        width = len(alphabet) if alphabet is not None else len(transducer.symbols)
        budget = max(16, min(DEFAULT_EAGER_BUDGET, DEFAULT_EAGER_ARCS // max(1, width)))
    stats = transducer.build_eager(budget, alphabet)
    stats["setup_seconds"] = round(setup, 3)
    stats["max_token_length"] = transducer.max_token_length
    stats["lazy_max_states"] = transducer.max_states
    return transducer, stats


def write_transducer(path: str | os.PathLike, model: BPEModel, transducer: SubsequentialTransducer, stats: dict) -> None:
    tables = transducer.export_eager()
    body = {
        "tokenizer": to_body(model),
        "eager": {name: pack_ints(values, "i") for name, values in tables.items()},
        "lazy": {"max_states": transducer.max_states},
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str, bool))},
    }
    write_artifact(path, KIND, SCHEMA, model.fingerprint, body)


def read_transducer(path: str | os.PathLike, max_states: int | None = None) -> tuple[BPEModel, SubsequentialTransducer]:
    name = str(path)
    document = read_header_and_body(path)
    check_header(document, name, KIND, SCHEMA)
    body = document["body"]
    _check_body_shape(body, name)
    try:
        model = from_body(body["tokenizer"], name)
        if model.fingerprint != document["fingerprint"]:
            raise ArtifactError(f"{name}: the embedded tokenizer does not match the header fingerprint "
                                f"({model.fingerprint[:16]} vs {document['fingerprint'][:16]})")
        lazy = body.get("lazy") or {}
        limit = max_states if max_states is not None else lazy.get("max_states", DEFAULT_MAX_STATES)
        transducer = SubsequentialTransducer(model, max_states=limit)
        tables = {k: unpack_ints(v, "i") for k, v in body["eager"].items()}
        transducer.import_eager(tables)
    except BpefstError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ArtifactError(f"{name}: corrupted transducer artifact ({type(exc).__name__}: {exc})") from None
    transducer.artifact_stats = dict(body.get("stats") or {})
    return model, transducer


# The body's top-level fields and the msgpack types they must have; "lazy" and
# "stats" are optional (a reader must not trust a file's shape before using it)
_BODY_FIELDS = {"tokenizer": (dict, True), "eager": (dict, True), "lazy": (dict, False), "stats": (dict, False)}


def _check_body_shape(body: dict, name: str) -> None:
    for field, (kind, required) in _BODY_FIELDS.items():
        value = body.get(field)
        if value is None and not required:
            continue
        if not isinstance(value, kind):
            raise ArtifactError(f"{name}: corrupted transducer artifact (body field {field!r} is {type(value).__name__}, expected a map)")
    cap = (body.get("lazy") or {}).get("max_states", DEFAULT_MAX_STATES)
    if not isinstance(cap, int) or isinstance(cap, bool) or not 1 <= cap <= 1 << 32:
        raise ArtifactError(f"{name}: corrupted transducer artifact (lazy max_states is {cap!r})")
    if any(not isinstance(v, bytes) for v in body["eager"].values()):
        raise ArtifactError(f"{name}: corrupted transducer artifact (an eager table is not a packed array)")
    if any(not isinstance(v, (int, float, str, bool)) for v in (body.get("stats") or {}).values()):
        raise ArtifactError(f"{name}: corrupted transducer artifact (stats hold a value that is not a number or string)")
