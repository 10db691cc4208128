"""Member names of open objects: strings other than a finite set of names, spelled one way only.

An extra member must not repeat a listed property (the parser would keep
only one of the two, and the listed property's schema would then judge a
value written for another schema).  JSON can spell one string many ways
(``"a"``, ``"\\u0061"``), so the names are written as ``json.dumps`` writes
them: every character as itself except ``"``, ``\\`` and the controls, which
take their short escape or ``\\u00XX``.  Then a string and its spelling
determine each other, and "not one of the listed names" is the complement
of a finite set of spellings, which a trie of the names turns into a pattern:
at each node, either stop (unless a name ends there), or continue with a
character no name continues with there (and then anything), or follow a child.
"""

from __future__ import annotations

import json
import re

# The spelling json.dumps(..., ensure_ascii=False) gives each character of a string.
_ESCAPED = {chr(c): json.dumps(chr(c))[1:-1] for c in range(0x20)} | {'"': '\\"', "\\": "\\\\"}
NAME_CHAR = "(?:[^\"\\\\\\x00-\\x1f]|" + "|".join(re.escape(e) for e in sorted(set(_ESCAPED.values()))) + ")"


def spelled_units(name: str) -> list[str]:
    """The characters of ``name`` as json.dumps spells them, one unit per character."""
    return [_ESCAPED.get(c, c) for c in name]


def other_names(names: list[str]) -> str:
    """The pattern of a quoted member name that is none of ``names`` (spelled as json.dumps does)."""
    trie: dict = {}
    for name in names:
        node = trie
        for unit in spelled_units(name):
            node = node.setdefault(unit, {})
        node[None] = {}  # a name ends here
    return '"' + _except(trie) + '"'


def _except(node: dict) -> str:
    """Spellings, read from this trie node on, that do not end a name at a leaf marked ``None``."""
    children = [unit for unit in node if unit is not None]
    plain = "".join(_in_class(u) for u in children if len(u) == 1)
    escapes = [e for e in sorted(set(_ESCAPED.values())) if e not in children]
    first = "[^\"\\\\\\x00-\\x1f" + plain + "]" + "".join("|" + re.escape(e) for e in escapes)
    branches = [f"(?:{first}){NAME_CHAR}*"] + [re.escape(u) + _except(node[u]) for u in children]
    group = "(?:" + "|".join(branches) + ")"
    return group if None in node else group + "?"


def _in_class(char: str) -> str:
    """``char`` written inside a character class."""
    return "\\" + char if char in "\\]^-[" else char
