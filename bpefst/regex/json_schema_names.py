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


def other_names_dfa(names: list[str], alphabet, with_profiles: bool = False):
    """The DFA over ``alphabet``'s raw symbols of :func:`other_names`, built directly (``with_profiles``: and
    its states' arcs grouped by target, as :func:`~.json_schema_automaton.piece_profiles` gives them).

    The product of the automaton of every quoted name (spelled one way) and a
    trie of the listed spellings: while a prefix of a listed name is read, a
    state per trie node; off the trie, the name automaton's own states.  A
    listed name's closing quote leads nowhere.  Linear in the listed names'
    length (each trie state copies one row of the name automaton).
    """
    from ..automata import DFA
    from .json_schema_automaton import leaf_dfa, piece_profiles, profile_of, spell

    general = leaf_dfa('"' + NAME_CHAR + '*"', alphabet)
    trie: list[dict[int, int]] = [{}]
    ends: set[int] = set()
    for name in names:
        symbols = spell(json.dumps(name, ensure_ascii=False), alphabet)
        if symbols is None:
            continue  # a name the alphabet cannot spell is no document's name
        node = 0
        for symbol in symbols:
            child = trie[node].get(symbol)
            if child is None:
                child = trie[node][symbol] = len(trie)
                trie.append({})
            node = child
        ends.add(node)
    rows = [dict(row) for row in general.transitions]  # off the trie: the name automaton itself
    general_profiles = piece_profiles(general)
    profiles = list(general_profiles)  # each state's arcs grouped by target (for the minimization)
    finals = set(general.finals)
    pairs: dict[tuple[int, int], int] = {}

    def pair(g: int, t: int) -> int:
        found = pairs.get((g, t))
        if found is None:
            found = pairs[(g, t)] = len(rows)
            rows.append({})
            profiles.append(None)
            todo.append((g, t))
        return found

    todo: list[tuple[int, int]] = []
    start = pair(general.start, 0)
    while todo:
        g, t = todo.pop()
        state = pairs[(g, t)]
        row = dict(general.transitions[g])
        moved = {}
        for symbol, child in trie[t].items():
            target = row.get(symbol)
            if target is None:
                continue
            if child in ends and not trie[child] and target in general.finals and not general.transitions[target]:
                del row[symbol]  # the closing quote of a listed name
                moved[symbol] = None
            else:
                row[symbol] = moved[symbol] = pair(target, child)
        rows[state] = row
        if moved:
            out = frozenset(moved)
            general_profile = general_profiles[g]
            grouped = {target: _without(symbols, out)
                       for target, symbols in zip(general_profile.targets, general_profile.groups) if not symbols <= out}
            grouped.update((target, frozenset((symbol,))) for symbol, target in moved.items() if target is not None)
            profiles[state] = profile_of(row, grouped)
        else:
            profiles[state] = general_profiles[g]
        if g in general.finals and t not in ends:
            finals.add(state)
    dfa = DFA(rows, start, frozenset(finals), check=False)
    if with_profiles:
        return dfa, profiles
    return dfa


def _without(symbols: frozenset, out: frozenset) -> frozenset:
    """``symbols`` less ``out``; the same object when they do not meet (most groups: its hash is kept, and the
    minimization hashes it again and again)."""
    return symbols if symbols.isdisjoint(out) else symbols - out


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


def json_spelled(dfa):
    """The DFA of the JSON spellings (``json.dumps``'s, one per string) of the strings ``dfa`` accepts.

    ``dfa`` reads the characters of a string's *value* (over raw symbols:
    bytes or code points; the ASCII ones are their code points either way);
    the result reads the text between the quotes: every character as itself,
    except ``"``, ``\\`` and the controls, which take their escape (``\\"``,
    ``\\\\``, ``\\n``, ``\\u001f``, ...).  Each state that reads such a
    character gets, in its place, a small trie of the escapes leading where
    the character led; every escape starts with a backslash, which no
    character is written as, so the result stays deterministic.
    """
    from ..automata import DFA, minimize

    rows = [dict(row) for row in dfa.transitions]
    finals = set(dfa.finals)
    backslash = ord("\\")

    def state() -> int:
        rows.append({})
        return len(rows) - 1

    for q in range(len(dfa.transitions)):
        row = rows[q]
        special = {c: row.pop(c) for c in list(row) if c < 0x20 or c in (0x22, backslash)}
        if not special:
            continue
        escape = row[backslash] = state()
        hex_states: dict[str, int] = {}
        for c, target in special.items():
            units = _ESCAPED[chr(c)][1:]  # after the backslash: '"', 'n', 'u001f', ...
            at = escape
            for i, unit in enumerate(units[:-1]):
                key = units[:i + 1]
                nxt = hex_states.get(key)
                if nxt is None:
                    nxt = hex_states[key] = state()
                    rows[at][ord(unit)] = nxt
                at = nxt
            rows[at][ord(units[-1])] = target
    return minimize(DFA(rows, dfa.start, frozenset(finals), check=False))
