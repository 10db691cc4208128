"""Bracket classes read directly (charsets.literal_class_ranges) against the regex module's scan, the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.regex.charsets import literal_class_ranges, scanned_ranges
from bpefst.regex.json_schema import NOTHING
from bpefst.regex.json_schema_names import other_names
from bpefst.regex.syntax import CharSet, parse

PIECES = ["a", "z", "-", "\\-", "\\]", "\\\\", "\\^", '"', "\\x00", "\\x1f", "\\t", "\\n", "\\u00e9", "\\U0001F600", "é",
          "\ud7ff", "\ue000", "\\uffff", "0-9", "a-f", "\\x00-\\x1f", " -~", "\\u0100-\\U0010FFFF", "^", ".", "|", "$", "!"]


@settings(max_examples=120, deadline=None)
@given(negated=st.booleans(), pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=5))
def test_direct_reading_agrees_with_the_scan(negated, pieces):
    source = "[" + ("^" if negated else "") + "".join(pieces) + "]"
    try:
        expected = scanned_ranges(source)
    except Exception:  # not a class the regex module reads: the direct reading must not claim it either
        assert literal_class_ranges(source) is None
        return
    direct = literal_class_ranges(source)
    assert direct is None or direct == expected, source


@pytest.mark.parametrize("source", [NOTHING, '[^"\\\\\\x00-\\x1f]', "[0-9a-fA-F]", "[ \\t\\n\\r]", "[A-Za-z0-9._%+-]"])
def test_the_classes_json_schema_writes_are_read_directly(source):
    assert literal_class_ranges(source) == scanned_ranges(source)


def _classes(node) -> set[str]:
    if isinstance(node, CharSet):
        return {node.source} if node.source.startswith("[") else set()
    children = getattr(node, "parts", None) or getattr(node, "branches", None) or ([node.child] if hasattr(node, "child") else [])
    return set().union(*[_classes(c) for c in children]) if children else set()


def test_member_name_classes_are_read_directly():
    classes = _classes(parse(other_names(["ab", "a-b", "x]y", "é", "c^", "q\\"])))
    assert len(classes) >= 5
    for source in classes:
        assert literal_class_ranges(source) == scanned_ranges(source), source
