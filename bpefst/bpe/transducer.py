"""The subsequential tokenizing transducer (seed 001 Sec. 6), built lazily.

Seed 001 Sec. 6 turns the canonical automaton A_BPE into a transducer T
(Observation 3: spell each token arc out symbol by symbol, emitting the token on
its last symbol).  T is functional but not input-deterministic; since BPE has
bounded variation (Lemma 7) T has a subsequential equivalent T' (Theorem 4),
which tokenizes in linear time (Corollary 3).  This module constructs T'
directly, state by state, from the merge forest and the pair check of
:mod:`.compatibility`; it never materialises A_BPE or T.

**Prefix tokenizations.**  For a symbol string ``x`` write ``last(i)`` for the
last token of ``BPE(x[:i])``.  A_BPE is 1-local (seed 001 Sec. 5, Corollary 2;
Observation 2): a token sequence is canonical iff every token is reachable and
every adjacent pair is canonical.  Canonical tokenizations are unique, so
``last(i)`` is *the only* reachable token ``t`` that spells a suffix of
``x[:i]`` such that ``(last(i - |t|), t)`` is a canonical pair (or ``i = |t|``):
``BPE(x[:i-|t|]) + [t]`` is then canonical and spells ``x[:i]``.  Following
``i -> i - |last(i)|`` from ``i`` back to 0 reads ``BPE(x[:i])`` backwards, so
the positions form a tree rooted at 0 whose root paths are the tokenizations of
all prefixes.  ``last(i)`` depends only on ``x[:i]``.

**What is decided.**  After reading ``x``, every future tokenization
``BPE(x w)`` is a root path of a position ``k >= |x|``; walking back from
``k`` it first enters ``[0, |x|]`` at some position ``j`` where a token starts
that is longer than ``x[j:]`` and begins with it (or at ``j = |x|``).  So
``BPE(x w)`` starts with ``BPE(x[:j])`` for a ``j`` in the set ``E`` of such
*entry points*, and the longest common prefix of the root paths of ``E`` --
the path to their lowest common ancestor ``g`` in the tree -- is a prefix of
every continuation's tokenization.  The transducer emits it as soon as it is
known.  (Lemma 7's bounded variation, with ``k`` = the longest token, bounds how
far ``g`` can lag behind ``|x|``: the output delay is bounded.)

**States.**  Once a prefix ``phi`` ending at ``g`` is emitted, every future path
runs through ``g``, so the rest depends only on ``c = last(phi)`` and the
pending symbols ``p = x[g:]``: the future tokenization is the unique canonical
sequence spelling ``p w`` whose first token may follow ``c``.  A state is the
pair ``(c, p)`` (``c`` = :data:`START` before any output), the subsequential
state of the construction; with it we keep, as functions of ``(c, p)``, the
``last`` table of the positions of ``p`` whose path runs through ``g`` (the
others are *dead*: no future path can use them, and the uniqueness argument
shows the pair check never accepts them) and the live entry points.  A
transition on symbol ``a`` appends ``a``, finds ``last`` of the new position by
extending the live partial token matches (a dictionary of every prefix of
every token spelling), recomputes ``g`` and emits the tokens between the old
and the new ``g``.  The final output ``F(c, p)`` is the root path of ``|p|``.
Each transition costs a bounded amount of work (bounded by the longest token,
the tree depth and the delay bound), so a string of ``n`` symbols is tokenized
in ``O(n)``: cached arcs cost one dictionary lookup.

**Eager and lazy.**  The state space is finite but, for real vocabularies,
astronomically large, so states are built on demand (like a lazy DFA in a
regular-expression engine) and kept in a cache that is cleared when it holds
more than ``max_states`` states (memory stays bounded; the states built up front
by :meth:`SubsequentialTransducer.build_eager` are pinned).  ``build_eager``
explores breadth first from the start state up to a state budget; for small
tokenizers that is the whole transducer (``complete``), whose largest pending
string is the exact maximum output delay.
"""

from __future__ import annotations

import time
from array import array
from collections import deque
from typing import Iterable, Sequence

from ..tokenizer import BPEModel
from .compatibility import compatible_before
from .merge_forest import BASE_RANK, MergeForest

START = -1
DEAD = -2
DEFAULT_MAX_STATES = 50_000
_COMPAT_LIMIT = 1 << 20
_PROBE = 4096


class State:
    """One state ``(ctx, pend)`` of the subsequential transducer, with its derived tables."""

    __slots__ = ("ctx", "pend", "last", "starts", "arcs", "final", "pinned", "number")

    def __init__(self, ctx: int, pend: str, last: list[int], starts: tuple[int, ...]):
        self.ctx = ctx  # last emitted token, or START
        self.pend = pend  # pending (undecided) symbols, one code character each
        self.last = last  # last[k] for k in 0..len(pend): token ending at k on its live path, DEAD, last[0] = ctx
        self.starts = starts  # live positions j < len(pend) where pend[j:] is a proper prefix of a token
        self.arcs: dict[str, tuple[tuple[int, ...], "State"]] = {}
        self.final: tuple[int, ...] | None = None
        self.pinned = False
        self.number = -1


class SubsequentialTransducer:
    """Tokenizes base-symbol strings of one BPE model; see the module docstring.

    Symbols are written as one character each (a *code*): for byte-level models
    whose 256 byte tokens all exist, the code of byte ``b`` is ``chr(b)`` (so a
    chunk's bytes decoded as Latin-1 are its code string); otherwise the codes
    number the base symbols in id order.
    """

    def __init__(self, model: BPEModel, forest: MergeForest | None = None, max_states: int = DEFAULT_MAX_STATES):
        self.model = model
        self.forest = forest if forest is not None else MergeForest.from_model(model)
        self.max_states = max(16, int(max_states))
        f = self.forest
        base = sorted(t for t in range(f.size) if f.reachable[t] and f.rank[t] == BASE_RANK)
        self.byte_codes = False
        if model.is_byte_level:
            byte_id = {model.vocab[t][0]: t for t in base if len(model.vocab[t]) == 1}
            if len(byte_id) == 256:
                self.byte_codes = True
                base = [byte_id[b] for b in range(256)]
        self.symbols: list[int] = base  # code index -> base symbol id
        self.code_of: dict[int, str] = {sym: chr(k) for k, sym in enumerate(base)}
        self._build_spellings()
        # (u << shift | v) -> whether v may follow u; an int key costs less memory and
        # hashing than a tuple, which counts on text that keeps meeting new pairs
        self._compat: dict[int, bool] = {}
        self._pair_shift = max(f.size, 2).bit_length()
        self.states: dict[tuple[int, str], State] = {}
        self.counters = {"states_built": 0, "arcs_built": 0, "cache_clears": 0, "max_delay": 0}
        self.start = self._intern(State(START, "", [START], ()))
        self.start.pinned = True

    # -- tables ----------------------------------------------------------------------

    def _build_spellings(self) -> None:
        f = self.forest
        spelling: list[str | None] = [None] * f.size
        for sym, code in self.code_of.items():
            spelling[sym] = code
        merged = sorted((f.rank[t], t) for t in range(f.size) if f.reachable[t] and f.rank[t] != BASE_RANK)
        for _, t in merged:
            spelling[t] = spelling[f.left[t]] + spelling[f.right[t]]
        self.spelled = spelling  # token id -> its code string (None if unreachable)
        self.length = [len(s) if s is not None else 0 for s in spelling]
        # Every prefix of every reachable token spelling -> 2 * token + extendable,
        # token = -1 when the prefix is not itself a token.
        trie: dict[str, int] = {}
        for t, s in enumerate(spelling):
            if s is None:
                continue
            trie[s] = (t << 1) | (trie.get(s, -2) & 1)
            for i in range(1, len(s)):
                prefix = s[:i]
                trie[prefix] = trie.get(prefix, -2) | 1
        self.trie = trie
        self.max_token_length = max(self.length, default=0)

    def token_of(self, codes: str) -> int:
        """The reachable token spelled by ``codes``, or -1."""
        return self.trie.get(codes, -2) >> 1

    def encode_codes(self, symbol_ids: Iterable[int]) -> str | None:
        """Base symbol ids -> code string (None if a symbol is not a base symbol)."""
        code_of = self.code_of
        try:
            return "".join([code_of[s] for s in symbol_ids])
        except KeyError:
            return None

    def compatible(self, u: int, v: int) -> bool:
        if u == START:
            return True
        key = (u << self._pair_shift) | v
        ok = self._compat.get(key)
        if ok is None:
            ok = compatible_before(self.forest, u, v)
            if len(self._compat) >= _COMPAT_LIMIT:
                self._compat.clear()
            self._compat[key] = ok
        return ok

    # -- the construction --------------------------------------------------------------

    def _intern(self, state: State) -> State:
        key = (state.ctx, state.pend)
        found = self.states.get(key)
        if found is not None:
            return found
        if len(self.states) >= self.max_states:
            self._clear_cache()
        self.states[key] = state
        counters = self.counters
        counters["states_built"] += 1
        if len(state.pend) > counters["max_delay"]:
            counters["max_delay"] = len(state.pend)
        return state

    def _clear_cache(self) -> None:
        """Forget every lazily built state (pinned ones stay, minus their arcs to the forgotten)."""
        kept = {}
        for key, state in self.states.items():
            if state.pinned:
                state.arcs = {c: arc for c, arc in state.arcs.items() if arc[1].pinned}
                kept[key] = state
            else:
                state.arcs = {}
        self.states = kept
        self.counters["cache_clears"] += 1

    def step(self, state: State, code: str) -> tuple[tuple[int, ...], State]:
        """The arc of ``state`` on ``code``: (tokens emitted, next state); built on demand."""
        arc = state.arcs.get(code)
        if arc is None:
            arc = self._build_arc(state, code)
        return arc

    def _build_arc(self, state: State, code: str) -> tuple[tuple[int, ...], State]:
        trie, length = self.trie, self.length
        pend = state.pend + code
        n = len(pend)
        last = state.last
        ext_starts: list[int] = []
        found = DEAD
        for j in (*state.starts, n - 1):
            v = trie.get(pend[j:])
            if v is None:
                continue
            if v & 1:
                ext_starts.append(j)
            t = v >> 1
            if t >= 0 and found == DEAD and self.compatible(last[j], t):
                found = t
        if found == DEAD:  # impossible for a proper merge list (see module docstring)
            raise RuntimeError(f"transducer: no canonical last token after {pend!r} (context {state.ctx})")
        last = last + [found]
        # Lowest common ancestor of the entry points in the prefix tree.
        frontier = set(ext_starts)
        frontier.add(n)
        while len(frontier) > 1:
            k = max(frontier)
            frontier.discard(k)
            frontier.add(k - length[last[k]])
        g = frontier.pop()
        if g == 0:
            out: tuple[int, ...] = ()
            nxt = State(state.ctx, pend, last, tuple(ext_starts))
        else:
            emitted = []
            k = g
            while k > 0:
                t = last[k]
                emitted.append(t)
                k -= length[t]
            emitted.reverse()
            out = tuple(emitted)
            shifted = [last[g]]
            for k in range(g + 1, n + 1):
                t = last[k]
                if t != DEAD:
                    p = k - length[t]
                    if p < g or shifted[p - g] == DEAD:
                        t = DEAD
                shifted.append(t)
            starts = tuple(j - g for j in ext_starts if j >= g and shifted[j - g] != DEAD)
            nxt = State(last[g], pend[g:], shifted, starts)
        nxt = self._intern(nxt)
        arc = (out, nxt)
        state.arcs[code] = arc
        self.counters["arcs_built"] += 1
        return arc

    def final_output(self, state: State) -> tuple[int, ...]:
        """``F(state)``: the tokens still owed when the input ends in ``state``."""
        final = state.final
        if final is None:
            out = []
            k = len(state.pend)
            last, length = state.last, self.length
            while k > 0:
                t = last[k]
                out.append(t)
                k -= length[t]
            out.reverse()
            final = state.final = tuple(out)
        return final

    # -- running it ----------------------------------------------------------------------

    def transduce(self, codes: str) -> list[int]:
        """Tokenize a whole code string in O(len(codes)).

        Cached arcs cost a dictionary lookup each.  When most arcs have to be
        built (text that never repeats a state, e.g. random letters), building
        and caching states is wasted work: when more than half of the arcs of a
        window of :data:`_PROBE` symbols were missing, the rest of the string is finished by
        :meth:`finish_direct`, the same prefix-tree recurrence without states
        (also linear, about three times cheaper per symbol).
        """
        state = self.start
        out: list[int] = []
        extend = out.extend
        build = self._build_arc
        misses = 0
        window_end = _PROBE
        for i, code in enumerate(codes):
            if i == window_end:
                if misses * 2 > _PROBE:
                    extend(self.finish_direct(state, codes[i:]))
                    return out
                misses = 0
                window_end += _PROBE
            arc = state.arcs.get(code)
            if arc is None:
                misses += 1
                arc = build(state, code)
            if arc[0]:
                extend(arc[0])
            state = arc[1]
        extend(self.final_output(state))
        return out

    def finish_direct(self, state: State, rest: str) -> list[int]:
        """The tokens still owed from ``state`` after reading ``rest`` and the end of input.

        Runs the recurrence of the module docstring over positions of
        ``state.pend + rest`` (``last`` of each new position from the live
        partial matches and the pair check), then reads the root path back.
        """
        trie, length, compatible = self.trie, self.length, self.compatible
        text = state.pend + rest
        last = array("i", state.last)
        starts = list(state.starts)
        for i in range(len(state.pend), len(text)):
            new_starts = []
            found = DEAD
            starts.append(i)
            for j in starts:
                v = trie.get(text[j : i + 1])
                if v is None:
                    continue
                if v & 1:
                    new_starts.append(j)
                if found == DEAD:
                    t = v >> 1
                    if t >= 0 and compatible(last[j], t):
                        found = t
            last.append(found)
            if found == DEAD:
                raise RuntimeError(f"transducer: no canonical last token at symbol {i} (context {state.ctx})")
            starts = [j for j in new_starts if last[j] != DEAD] if state.ctx != START else new_starts
        out = []
        k = len(text)
        while k > 0:
            t = last[k]
            out.append(t)
            k -= length[t]
        out.reverse()
        return out

    def bpe(self, symbol_ids: Sequence[int]) -> list[int] | None:
        """BPE of a base-symbol sequence, or None if it holds a symbol outside the base alphabet."""
        codes = self.encode_codes(symbol_ids)
        if codes is None:
            return None
        return self.transduce(codes)

    def run(self) -> "TransducerRun":
        return TransducerRun(self)

    # -- eager construction and statistics ---------------------------------------------

    def build_eager(self, budget: int, alphabet: Iterable[str] | None = None) -> dict[str, object]:
        """Breadth-first construction from the start state, up to ``budget`` states.

        Returns the statistics (states, arcs, maximum output delay in symbols,
        whether the whole transducer was built, build time).  The states built
        are pinned: the lazy cache never evicts them.
        """
        began = time.perf_counter()
        codes = list(alphabet) if alphabet is not None else [chr(k) for k in range(len(self.symbols))]
        saved_limit = self.max_states
        self.max_states = 1 << 62  # no clearing while the eager part is built
        seen = {id(self.start): self.start}
        order = [self.start]
        queue = deque([self.start])
        arcs = 0
        complete = True
        max_delay = 0
        max_out = 0
        while queue:
            state = queue.popleft()
            for code in codes:
                out, nxt = self.step(state, code)
                arcs += 1
                max_out = max(max_out, len(out))
                if id(nxt) not in seen:
                    if len(order) >= budget:
                        complete = False
                        del state.arcs[code]  # beyond the budget: left to the lazy construction
                        if not nxt.pinned and nxt is not self.start:
                            self.states.pop((nxt.ctx, nxt.pend), None)
                        continue
                    seen[id(nxt)] = nxt
                    order.append(nxt)
                    queue.append(nxt)
                    max_delay = max(max_delay, len(nxt.pend))
        for state in order:
            state.pinned = True
        for state in order:  # arcs out of the budget point at unpinned states: drop them
            state.arcs = {c: arc for c, arc in state.arcs.items() if arc[1].pinned}
        self.max_states = saved_limit
        self.eager_states = order
        return {
            "states": len(order),
            "arcs": sum(len(s.arcs) for s in order),
            "arcs_explored": arcs,
            "complete": complete,
            "max_output_delay": max_delay,
            "max_tokens_per_arc": max_out,
            "alphabet": len(codes),
            "build_seconds": round(time.perf_counter() - began, 3),
        }

    def stats(self) -> dict[str, object]:
        return {
            "cached_states": len(self.states),
            "pinned_states": sum(1 for s in self.states.values() if s.pinned),
            "max_states": self.max_states,
            "max_token_length": self.max_token_length,
            **self.counters,
        }

    # -- (de)serialization of the eager part ------------------------------------------

    def export_eager(self) -> dict[str, list]:
        """The pinned states and their arcs as flat integer lists (for an artifact)."""
        order = getattr(self, "eager_states", [self.start])
        for k, state in enumerate(order):
            state.number = k
        ctx, pend_off, pend, last, starts_off, starts = [], [0], [], [], [0], []
        arc_off, arc_code, arc_dst, out_off, out = [0], [], [], [0], []
        for state in order:
            ctx.append(state.ctx)
            pend.extend(ord(c) for c in state.pend)
            pend_off.append(len(pend))
            last.extend(state.last)
            starts.extend(state.starts)
            starts_off.append(len(starts))
            for code, (o, nxt) in sorted(state.arcs.items()):
                if not nxt.pinned or nxt.number < 0:
                    continue
                arc_code.append(ord(code))
                arc_dst.append(nxt.number)
                out.extend(o)
                out_off.append(len(out))
            arc_off.append(len(arc_code))
        return {
            "ctx": ctx, "pend_off": pend_off, "pend": pend, "last": last, "starts_off": starts_off, "starts": starts,
            "arc_off": arc_off, "arc_code": arc_code, "arc_dst": arc_dst, "out_off": out_off, "out": out,
        }

    def import_eager(self, tables: dict[str, Sequence[int]]) -> None:
        """Install states exported by :meth:`export_eager` (checked for consistency)."""
        ctx, pend_off, pend = tables["ctx"], tables["pend_off"], tables["pend"]
        last, starts_off, starts = tables["last"], tables["starts_off"], tables["starts"]
        count = len(ctx)
        if count == 0 or len(pend_off) != count + 1 or len(starts_off) != count + 1 or len(tables["arc_off"]) != count + 1:
            raise ValueError("inconsistent transducer tables")
        order: list[State] = []
        last_pos = 0
        for k in range(count):
            p = "".join(chr(c) for c in pend[pend_off[k] : pend_off[k + 1]])
            lt = list(last[last_pos : last_pos + len(p) + 1])
            last_pos += len(p) + 1
            st = tuple(starts[starts_off[k] : starts_off[k + 1]])
            if len(lt) != len(p) + 1 or lt[0] != ctx[k] or any(not 0 <= j < len(p) for j in st):
                raise ValueError("inconsistent transducer state")
            state = State(ctx[k], p, lt, st)
            state.pinned = True
            state.number = k
            order.append(state)
        if order[0].ctx != START or order[0].pend:
            raise ValueError("the first state is not the start state")
        spelled, length = self.spelled, self.length
        for state in order:  # every recorded last token must spell what it claims to
            for k in range(1, len(state.pend) + 1):
                t = state.last[k]
                if t != DEAD and (not 0 <= t < len(spelled) or spelled[t] is None or not state.pend[:k].endswith(spelled[t])):
                    raise ValueError("transducer state does not match the tokenizer")
        arc_off, arc_code, arc_dst, out_off, out = tables["arc_off"], tables["arc_code"], tables["arc_dst"], tables["out_off"], tables["out"]
        alphabet = len(self.symbols)
        for k, state in enumerate(order):
            for a in range(arc_off[k], arc_off[k + 1]):
                if not 0 <= arc_code[a] < alphabet or not 0 <= arc_dst[a] < count:
                    raise ValueError("transducer arc out of range")
                code, emitted, nxt = chr(arc_code[a]), tuple(out[out_off[a] : out_off[a + 1]]), order[arc_dst[a]]
                if any(not 0 <= t < len(spelled) or spelled[t] is None for t in emitted) or \
                        "".join(spelled[t] for t in emitted) + nxt.pend != state.pend + code:
                    raise ValueError("transducer arc does not spell its input")
                state.arcs[code] = (emitted, nxt)
        self.states = {(s.ctx, s.pend): s for s in order}
        self.start = order[0]
        self.eager_states = order
        self.max_states = max(self.max_states, count + 16)


class TransducerRun:
    """Feed a code string piece by piece; get each token as soon as it is decided."""

    def __init__(self, transducer: SubsequentialTransducer):
        self.transducer = transducer
        self.state = transducer.start

    def feed(self, codes: str) -> list[int]:
        t = self.transducer
        state = self.state
        out: list[int] = []
        for code in codes:
            arc = state.arcs.get(code)
            if arc is None:
                arc = t._build_arc(state, code)
            if arc[0]:
                out.extend(arc[0])
            state = arc[1]
        self.state = state
        return out

    @property
    def pending(self) -> int:
        """Symbols read but not yet decided (the current output delay)."""
        return len(self.state.pend)

    def finish(self) -> list[int]:
        out = list(self.transducer.final_output(self.state))
        self.state = self.transducer.start
        return out
