"""The one error the automata toolkit raises for over-large results.

Subset construction, products and lazy exploration can blow up
exponentially on hostile input (``(a|b)*a(a|b){30}`` has a 2^31-state DFA).
Every construction that can grow takes an optional ``max_states`` budget and
raises :class:`StateLimitExceeded` when the budget is spent, so that a caller
(ultimately the CLI) can report it as bad input instead of hanging.
"""

from __future__ import annotations

from ..errors import BpefstError


class StateLimitExceeded(BpefstError):
    """A construction needed more states than the caller allowed."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} needs more than {limit} states (state limit exceeded)")
        self.limit = limit


class ArcLimitExceeded(BpefstError):
    """A construction would write out (or, ``written_out=False``, walk) more arcs than the caller allowed."""

    def __init__(self, what: str, limit: int, arcs: int | None = None, written_out: bool = True) -> None:
        size = f" ({arcs:,} arcs)" if arcs is not None else ""
        super().__init__(f"{what} needs more than {limit:,} arcs{' written out' if written_out else ''}{size} "
                         f"(arc limit exceeded)")
        self.what = what
        self.limit = limit
        self.arcs = arcs


def check_limit(count: int, max_states: int | None, what: str) -> None:
    """Raise :class:`StateLimitExceeded` if ``count`` exceeds ``max_states``."""
    if max_states is not None and count > max_states:
        raise StateLimitExceeded(what, max_states)
