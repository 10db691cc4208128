"""The translation's output: a small expression graph, rendered as regex text or built as an automaton.

The JSON Schema translator (:mod:`.json_schema`) describes the documents of
a schema with these nodes instead of concatenating regex text, so that one
translation has two back ends: :func:`render` writes the pattern
(``schema_to_regex``), and :mod:`.json_schema_automaton` builds the automaton
directly, without parsing the text again.  A node may be used in several
places (the translator returns the same node for the same sub-schema), so
the nodes form a DAG; neither back end copies a shared node's description,
only its result.

``size`` is an upper bound on the NFA states the node builds, computed as
the graph is made, so that a schema whose automaton would be too large is
refused before anything big is built.
"""

from __future__ import annotations

import re

__all__ = ["Node", "Leaf", "Lit", "Built", "Seq", "Alt", "Rep", "Members", "NOTHING", "render", "seq", "alt"]


class Node:
    """One sub-language; ``size`` bounds the NFA states it builds."""

    __slots__ = ("size",)


class Leaf(Node):
    """A language given as regex text in :mod:`.syntax` (numbers, string bodies, formats, patterns)."""

    __slots__ = ("text",)

    def __init__(self, text: str, size: int | None = None) -> None:
        self.text = text
        self.size = size if size is not None else 4 * len(text) + 2  # the caller may know its DFA's size


class Lit(Node):
    """Exactly the characters of ``text``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = 4 * len(text) + 1


class Built(Node):
    """A language whose automaton comes ready-made: ``make(alphabet)`` returns its minimal DFA over the
    alphabet's raw symbols, kept in a bounded cache under ``key`` (any value up to a depth, names other
    than a listed few); ``graph`` (or a function returning it, called when rendered) describes the same
    language for :func:`render`."""

    __slots__ = ("key", "make", "graph")

    def __init__(self, key, make, graph: Node, size: int) -> None:
        self.key, self.make, self.graph = key, make, graph
        self.size = size


class Seq(Node):
    """The concatenation of ``parts``."""

    __slots__ = ("parts",)

    def __init__(self, parts) -> None:
        self.parts = tuple(parts)
        self.size = sum(p.size for p in self.parts) + 1


class Alt(Node):
    """The union of ``parts`` (no part: the empty language)."""

    __slots__ = ("parts",)

    def __init__(self, parts) -> None:
        self.parts = tuple(parts)
        self.size = sum(p.size for p in self.parts) + 1


class Rep(Node):
    """``part`` repeated ``low`` to ``high`` times (``high`` None: unbounded)."""

    __slots__ = ("part", "low", "high")

    def __init__(self, part: Node, low: int, high: int | None) -> None:
        self.part, self.low, self.high = part, low, high
        copies = low + 1 if high is None else max(high, 1)
        self.size = (part.size + 1) * copies + 1


class Members(Node):
    """The members of an object between its braces.

    ``members``: ``(node, required)`` per listed property (the node spells
    name, colon and value); ``more``: one extra member, or None; ``comma``:
    the separator.  Commas go between present members only.

    In schema order (``free`` False): the listed members in order, then the
    extra ones; built as a chain (linear in the members,
    :mod:`.json_schema_automaton`); rendered as an alternation over the first
    present member.  In any order (``free``): the required members in order,
    and before, between and after them any number of the optional listed and
    the extra members (a loop per gap: an optional member may then come
    twice, which ``json.loads`` reads as its last value; ruling that out
    would take a state per subset of the members written).
    """

    __slots__ = ("members", "more", "comma", "allow_empty", "free", "anywhere")

    def __init__(self, members, more: Node | None, comma: Node, allow_empty: bool, free: bool = False) -> None:
        self.members = tuple(members)
        self.more, self.comma, self.allow_empty, self.free = more, comma, allow_empty, free
        self.size = 2 * sum(m.size for m, _ in self.members) + 4 * len(self.members) + 2 * comma.size + 2
        if more is not None:
            self.size += more.size
        # free: one member that may come anywhere (an optional listed one, or an extra one), None if there is none
        anywhere = [m for m, needed in self.members if not needed] + ([more] if more is not None else [])
        self.anywhere = (anywhere[0] if len(anywhere) == 1 else Alt(tuple(anywhere))) if free and anywhere else None
        if self.anywhere is not None:  # each gap between required members holds its own copy of it
            self.size += sum(1 for _, needed in self.members if needed) * self.anywhere.size


NOTHING = Alt(())
NOTHING_TEXT = r"[^\x00-\U0010FFFF]"  # an empty class: the pattern of no string


def seq(*parts: Node) -> Node:
    """The concatenation, flattened (empty literals dropped)."""
    flat = []
    for p in parts:
        if isinstance(p, Seq):
            flat.extend(p.parts)
        elif not (isinstance(p, Lit) and not p.text):
            flat.append(p)
    return flat[0] if len(flat) == 1 else Seq(flat)


def alt(parts) -> Node:
    """The union (one part: itself)."""
    parts = list(parts)
    return parts[0] if len(parts) == 1 else Alt(parts)


class TooLong(Exception):
    """Rendering would exceed the caller's budget of characters."""


def render(node: Node, budget: int | None = None) -> str:
    """The regex text of ``node``; :class:`TooLong` when it would pass ``budget`` characters."""
    # A rendered node is kept beside its text: a Built's graph may be made on each call and dropped after,
    # and a later node allocated at the same address must not find the first one's text under its id.
    done: dict[int, tuple[Node, str]] = {}
    total = [0]

    def text(n: Node) -> str:
        found = done.get(id(n))
        if found is not None and found[0] is n:
            return found[1]
        out = _render_one(n, text)
        total[0] += len(out)
        if budget is not None and total[0] > budget:
            raise TooLong()
        done[id(n)] = (n, out)
        return out

    return text(node)


def _render_one(n: Node, text) -> str:
    if isinstance(n, Leaf):
        return f"(?:{n.text})"
    if isinstance(n, Lit):
        return re.escape(n.text)
    if isinstance(n, Built):
        return text(n.graph() if callable(n.graph) else n.graph)
    if isinstance(n, Seq):
        return "".join(text(p) for p in n.parts)
    if isinstance(n, Alt):
        if not n.parts:
            return NOTHING_TEXT
        return "(?:" + "|".join(text(p) for p in n.parts) + ")"
    if isinstance(n, Rep):
        return f"(?:{text(n.part)})" + _quantifier(n.low, n.high)
    if isinstance(n, Members):
        return _render_members(n, text)
    raise TypeError(f"unknown node {n!r}")


def _quantifier(low: int, high: int | None) -> str:
    if high is None:
        return "*" if low == 0 else ("+" if low == 1 else f"{{{low},}}")
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _render_members(n: Members, text) -> str:
    """``after[i]``: members ``i..`` once one is written (each with its comma); one choice per first member."""
    if n.free:
        return _render_free_members(n, text)
    comma = text(n.comma)
    tail = f"(?:{comma}{text(n.more)})*" if n.more is not None else ""
    after = [""] * (len(n.members) + 1)
    after[-1] = tail
    for i in range(len(n.members) - 1, -1, -1):
        member, needed = n.members[i]
        after[i] = (f"{comma}{text(member)}" if needed else f"(?:{comma}{text(member)})?") + after[i + 1]
    choices = []
    for k, (member, needed) in enumerate(n.members):
        choices.append(text(member) + after[k + 1])
        if needed:
            break
    else:
        if n.more is not None:
            choices.append(text(n.more) + tail)
        if n.allow_empty:
            choices.append("")
    if not choices:
        return NOTHING_TEXT
    return choices[0] if len(choices) == 1 else "(?:" + "|".join(choices) + ")"


def _render_free_members(n: Members, text) -> str:
    """Any order (:class:`Members`): ``(?:O,)*R1(?:,O)*`` then ``,R(?:,O)*`` per further required member
    (``O``: a member that may come anywhere); without required members ``O(?:,O)*``, optional when the object
    may be empty."""
    comma = text(n.comma)
    required = [text(m) for m, needed in n.members if needed]
    if n.anywhere is None:
        return comma.join(required) if required else ("" if n.allow_empty else NOTHING_TEXT)
    some = text(n.anywhere)
    gap = f"(?:{comma}{some})*"
    if not required:
        return f"(?:{some}{gap})?" if n.allow_empty else some + gap
    return f"(?:{some}{comma})*" + comma.join(r + gap for r in required)
