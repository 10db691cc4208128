"""Saving and loading compiled canonical automata (artifact kind ``canonical-dfa``).

The artifact is self-contained: it embeds the tokenizer it was built from (so
``bpefst validate X.dfa`` needs nothing else) and its merge forest, plus, for
the explicit encoding, the class of every token and the zlib-compressed
fixed-width bitsets of the classes' banned sets.
"""

from __future__ import annotations

import os

from ..artifact import check_header, pack_ints, read_header_and_body, unpack_ints, write_artifact
from ..errors import ArtifactError, BpefstError
from ..tokenizer import BPEModel
from ..tokenizer.formats import native
from .canonical import CanonicalAutomaton, ExplicitCanonical, ImplicitCanonical
from .merge_forest import MergeForest

KIND = "canonical-dfa"
SCHEMA = 1


def _pack_signed(values: list[int]) -> bytes:
    return pack_ints((v + 1 for v in values), "I")  # -1 (none / base rank) -> 0


def _unpack_signed(data: bytes) -> list[int]:
    return [v - 1 for v in unpack_ints(data, "I")]


def save_canonical(automaton: CanonicalAutomaton, model: BPEModel, path: str | os.PathLike) -> None:
    forest = automaton.forest
    body = {
        "encoding": automaton.encoding,
        "tokenizer": native.to_body(model),
        "forest": {
            "size": forest.size,
            "rank": _pack_signed(forest.rank),
            "left": _pack_signed(forest.left),
            "right": _pack_signed(forest.right),
            "reachable": bytes(forest.reachable),
        },
        "stats": {k: v for k, v in automaton.stats.items() if isinstance(v, (int, float, str))},
    }
    if isinstance(automaton, ExplicitCanonical):
        body["explicit"] = {
            "token_class": _pack_signed(automaton.token_class),
            "classes": len(automaton.class_banned),
            "banned": automaton.packed_banned(),
        }
    write_artifact(path, KIND, SCHEMA, model.fingerprint, body)


def load_canonical(path: str | os.PathLike, expected_fingerprint: str | None = None) -> tuple[BPEModel, CanonicalAutomaton]:
    """Read an artifact; with ``expected_fingerprint``, insist it was built from that tokenizer."""
    name = str(path)
    document = read_header_and_body(path)
    check_header(document, name, KIND, SCHEMA, expected_fingerprint)
    body = document["body"]
    _check_body_types(body, name)
    try:
        model = native.from_body(body["tokenizer"], name)
        if model.fingerprint != document["fingerprint"]:
            raise ArtifactError(f"{name}: corrupted artifact (embedded tokenizer does not match the header fingerprint)")
        stored = body["forest"]
        size = stored["size"]
        forest = MergeForest(
            size=size,
            rank=_unpack_signed(stored["rank"]),
            left=_unpack_signed(stored["left"]),
            right=_unpack_signed(stored["right"]),
            reachable=[bool(b) for b in stored["reachable"]],
            pair_rank={pair: rank for rank, pair in enumerate(model.merges)},
        )
        _check_forest(forest, name)
        if size != max(model.vocab, default=-1) + 1:
            raise ArtifactError(f"{name}: corrupted artifact (merge forest of {size} tokens for a vocabulary of {max(model.vocab, default=-1) + 1})")
        results = model.merge_results
        if any(forest.left[t] >= 0 and results[forest.rank[t]] != t for t in range(size)):
            raise ArtifactError(f"{name}: corrupted artifact (the merge forest does not match the tokenizer's merges)")
        if body["encoding"] == "explicit":
            explicit = body["explicit"]
            token_class = _unpack_signed(explicit["token_class"])
            classes = explicit["classes"]
            if not 0 < classes <= size:
                raise ArtifactError(f"{name}: corrupted artifact ({classes} token classes for {size} tokens)")
            if len(token_class) != size or any(not -1 <= c < classes for c in token_class):
                raise ArtifactError(f"{name}: corrupted artifact (token classes out of range)")
            automaton: CanonicalAutomaton = ExplicitCanonical(forest, token_class, ExplicitCanonical.unpack_banned(explicit["banned"], classes, size))
        elif body["encoding"] == "implicit":
            automaton = ImplicitCanonical(forest)
        else:
            raise ArtifactError(f"{name}: unknown encoding {body['encoding']!r}")
        automaton.stats.update(body.get("stats") or {})
    except BpefstError:
        raise
    except Exception as exc:  # any structural surprise in a tampered file
        raise ArtifactError(f"{name}: corrupted canonical-dfa artifact ({type(exc).__name__})") from None
    return model, automaton


# Body fields and their msgpack types (None: optional); "explicit" only for the explicit encoding.
_BODY_TYPES = {"encoding": str, "tokenizer": dict, "forest": dict, "stats": (dict, type(None))}
_FOREST_TYPES = {"size": int, "rank": bytes, "left": bytes, "right": bytes, "reachable": bytes}
_EXPLICIT_TYPES = {"token_class": bytes, "classes": int, "banned": bytes}


def _check_body_types(body: dict, name: str) -> None:
    """Refuse a body whose fields are missing or of the wrong type, before anything is built from them."""
    def check(table: object, types: dict, where: str) -> None:
        if not isinstance(table, dict):
            raise ArtifactError(f"{name}: corrupted canonical-dfa artifact ({where} is not a map)")
        for field, kind in types.items():
            value = table.get(field)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ArtifactError(f"{name}: corrupted canonical-dfa artifact ({where} field {field!r} is {type(value).__name__})")

    check(body, _BODY_TYPES, "body")
    check(body["forest"], _FOREST_TYPES, "forest")
    if body["encoding"] == "explicit":
        check(body.get("explicit"), _EXPLICIT_TYPES, "explicit")
    if any(not isinstance(v, (int, float, str)) for v in (body.get("stats") or {}).values()):
        raise ArtifactError(f"{name}: corrupted canonical-dfa artifact (stats hold a value that is not a number or string)")


def _check_forest(forest: MergeForest, name: str) -> None:
    n = forest.size
    if not (len(forest.rank) == len(forest.left) == len(forest.right) == len(forest.reachable) == n):
        raise ArtifactError(f"{name}: corrupted artifact (merge forest tables differ in length)")
    merges = len(forest.pair_rank)
    for t in range(n):
        l, r, k = forest.left[t], forest.right[t], forest.rank[t]
        if (l < 0) != (r < 0) or l >= n or r >= n or k >= merges or (l >= 0 and forest.pair_rank.get((l, r)) != k):
            raise ArtifactError(f"{name}: corrupted artifact (merge forest entry {t} is inconsistent)")
