"""The chunk-boundary automaton lifted to token ids: where a stream's pre-tokenization chunks begin,
read token by token, without decoding the stream or running the pattern.

:mod:`bpefst.promotion.chunking` gives, for the gpt2, cl100k and o200k
patterns, a DFA over character classes (*atoms*) and a ``BOUNDARY`` symbol
that accepts a text exactly when ``BOUNDARY`` sits at every chunk boundary of
``findall(pattern, text)``.  A token stream is a text with the candidate
boundaries marked: a chunk boundary may only fall *between* tokens (one inside
a token means the stream is not canonical).  So a stream is consistent with
its chunking when some choice, at each gap between tokens, of "boundary" or
"no boundary" is accepted by the chunker DFA; as the chunking of a text is
unique, so is that choice.  Which choice holds can need right context
(``\\s+(?!\\S)`` looks two characters ahead; o200k's backtracking further), so
we run the subset construction over the choices: a *state* is the set of
chunker states still possible, each tagged with whether it got there with no
boundary before the last token (then the pair of tokens around that gap lies
inside one chunk and must be canonical; :mod:`bpefst.pipeline.validate` checks
those pairs in a batch afterwards).

**Tokens as words over atoms.**  A token whose bytes are whole UTF-8
characters acts on the chunker DFA as the word of its characters' atoms; its
*action*, the tuple ``q -> state after the word`` over all chunker states, is
all the automaton needs to know of it.  Actions are built once per token by
extending the action of the word's prefix one atom at a time (memoized on
``(action, atom)``), and tokens with equal actions share one class (cl100k's
100k tokens have 33 distinct actions, o200k's 200k have 105).  The rest
(about 1,200 in cl100k) are *irregular* and are handled one token at a time: tokens that split a UTF-8 character (the state
then also holds the pending bytes, and a gap inside a character is never a
boundary), and tokens that may take part in the text of a special token (the
state then holds the longest suffix of the text that begins a special token's
text; completing one is a violation: re-encoding would produce the special).

**Rows.**  Each state is a row indexed by token id whose entries are the rows
of the successor states, so walking a stream is
``itertools.accumulate(ids, operator.getitem, initial=row)`` (a C loop); the
row also holds, after the token ids, its "pair inside a chunk" flag and its
state.  Rows of ordinary states are dense lists filled per class when the
state is first reached; entries whose target is not built yet, and those of
irregular tokens, are ``None`` and are filled when a walk first needs them
(the next step fails on ``None`` and the walk resumes).  Rare states (a
character or a special token's text in progress) have sparse dict rows filled
on demand.  ``STOP`` is absorbing: the stream cannot be canonical from there,
or (invalid UTF-8) the fast check does not decide it; either way the caller
falls back to decoding and re-running the pattern for an exact diagnostic.
"""

from __future__ import annotations

import codecs
import itertools
import operator
import re
from array import array
from typing import Sequence

from .. import native
from ..promotion.chunking import chunker_for
from ..tokenizer import BPEModel

# A state: (at the start of a segment, pending bytes of a split character, special-text prefix in progress,
#           frozenset of (chunker state, 1 if reached with no boundary before the last token else 0))
State = tuple[bool, bytes, bytes, frozenset]

_STOP_CLASS, _SPECIAL_CLASS, _IRREGULAR_CLASS, _FIRST_ACTION = 0, 1, 2, 3


class TokenChunks:
    """The lazily built token-level chunk automaton of one byte-level tokenizer (see the module docstring)."""

    def __init__(self, model: BPEModel, reachable: Sequence[bool], preset: str):
        chunker = chunker_for(preset)
        dfa = chunker.dfa
        self.chunker = chunker
        self.moves = dfa.transitions
        self.cuts = [row.get(chunker.boundary, -1) for row in dfa.transitions]
        self.finals = dfa.finals
        self.size = size = max(model.max_id + 1, 1)
        self.special_ids = frozenset(model.specials.values()) - set(model.vocab)
        self.special_texts = sorted({text.encode("utf-8") for text in model.specials}, key=len)
        self._special_prefixes = {s[:k] for s in self.special_texts for k in range(1, len(s))}
        self._longest_prefix = max(map(len, self._special_prefixes), default=0)
        self.token_bytes = [b""] * size
        for i, data in model.vocab.items():
            self.token_bytes[i] = data if isinstance(data, bytes) else data.encode("utf-8")
        self._atoms: dict[int, int] = {}
        identity = tuple(range(len(self.moves)))
        self.actions: list[tuple[int, ...]] = [identity]
        self._action_ids = {identity: 0}
        self._extend: dict[tuple[int, int], int] = {}
        self._word_actions = {b"": 0}
        self._ascii_atoms = bytes(self.chunker.atom_of(b) for b in range(128)) + bytes(128)
        self._special_firsts = re.compile(b"[" + b"".join(re.escape(s[:1]) for s in self.special_texts) + b"]" if self.special_texts else b"(?!)")
        self.first_atom = [-1] * size  # of a token made of whole characters (-1: none)
        self.last_atom = [-1] * size
        kinds = [_STOP_CLASS] * size
        continuing = self._continuations(model)
        for t in model.vocab:
            if reachable[t]:
                kinds[t] = _IRREGULAR_CLASS if t in continuing else self._classify(t)
        for t in self.special_ids:
            kinds[t] = _SPECIAL_CLASS
        # a class per action, then one per irregular token
        self.irregular = [t for t, kind in enumerate(kinds) if kind == _IRREGULAR_CLASS]
        self.classes = n = _FIRST_ACTION + len(self.actions) + len(self.irregular)
        for k, t in enumerate(self.irregular):
            kinds[t] = _FIRST_ACTION + len(self.actions) + k
        self.token_class = kinds
        self.representatives = [-1] * n  # a token of each class (which one does not matter: they act alike)
        for t, kind in enumerate(kinds):
            if self.representatives[kind] < 0:
                self.representatives[kind] = t
        self.forced = self._forced_boundaries()
        # rows are indexed by class: dense lists (ordinary states) or dicts (rare states), [n] = flag, [n + 1] = state
        self.flag_index, self.state_index = n, n + 1
        self.stop: list = [None] * (n + 2)
        self.stop[:n] = [self.stop] * n
        self.stop[n], self.stop[n + 1] = 0, None
        self._rows: dict[State, list | dict] = {}
        self._class_targets: dict[State, list[State | None]] = {}
        self.initial_state: State = (True, b"", b"", frozenset({(dfa.start, 0)}))
        self.initial = self.row(self.initial_state)
        self._boundary_rows: dict[tuple[State, int], list | dict | None] = {}
        self._packed_classes: bytes | None = None  # token_class for the compiled walk, packed on first use

    # -- tokens ---------------------------------------------------------------------------------

    def atom(self, char: str) -> int:
        code = ord(char)
        atom = self._atoms.get(code)
        if atom is None:
            atom = self._atoms[code] = self.chunker.atom_of(code)
        return atom

    def _classify(self, t: int) -> int:
        """The token's class: its action if it is made of whole characters and cannot touch a special's text."""
        data = self.token_bytes[t]
        if data.isascii():
            word = data.translate(self._ascii_atoms)
        else:
            try:
                atoms = list(map(self.atom, data.decode("utf-8")))
            except UnicodeDecodeError:
                return _IRREGULAR_CLASS
            if None in atoms:
                return _IRREGULAR_CLASS
            word = bytes(atoms)
        if not word:
            return _IRREGULAR_CLASS
        self.first_atom[t], self.last_atom[t] = word[0], word[-1]
        if self._special_firsts.search(data) and self._advance(b"", data) != b"":
            return _IRREGULAR_CLASS
        return _FIRST_ACTION + self._action_of(word)

    def _continuations(self, model: BPEModel) -> set[int]:
        """Tokens that can continue a special token's text begun before them: they start with the rest of
        a special's text after some proper prefix, or are a prefix of such a rest."""
        rests = tuple({s[k:] for s in self.special_texts for k in range(1, len(s))})
        if not rests:
            return set()
        found = {t for t, data in enumerate(self.token_bytes) if data.startswith(rests)}
        found.update(t for t in map(model.token_to_id.get, {rest[:j] for rest in rests for j in range(1, len(rest))}) if t is not None)
        return found

    def _action_of(self, word: bytes) -> int:
        """The action of a word of atoms, extending the (memoized) action of its prefix."""
        action = self._word_actions.get(word)
        if action is None:
            action = self._word_actions[word] = self._extend_action(self._action_of(word[:-1]), word[-1])
        return action

    def _extend_action(self, action: int, atom: int) -> int:
        key = (action, atom)
        known = self._extend.get(key)
        if known is None:
            moves = self.moves
            extended = tuple(-1 if q < 0 else moves[q].get(atom, -1) for q in self.actions[action])
            known = self._action_ids.get(extended)
            if known is None:
                known = self._action_ids[extended] = len(self.actions)
                self.actions.append(extended)
            self._extend[key] = known
        return known

    def _advance(self, progress: bytes, data: bytes) -> bytes | None:
        """The special-text prefix in progress after ``data``; None when a special's whole text appears."""
        if not self.special_texts:
            return b""
        text = progress + data
        if any(s in text for s in self.special_texts):
            return None
        for k in range(min(len(text), self._longest_prefix), 0, -1):
            if text[-k:] in self._special_prefixes:
                return text[-k:]
        return b""

    def _forced_boundaries(self) -> list[list[bool]]:
        """``forced[x][y]``: no chunker state reads atom x then atom y inside one chunk, so every text has
        a chunk boundary between two such characters (a safe place to restart a check)."""
        n = len(self.chunker.letters)
        forced = [[True] * n for _ in range(n)]
        for row in self.moves:
            for x, q in row.items():
                if x < n:
                    for y in self.moves[q]:
                        if y < n:
                            forced[x][y] = False
        return forced

    def is_hard_gap(self, before: int, after: int) -> bool:
        """Is the gap between these two tokens a chunk boundary of every text (or a special token's edge)?"""
        if before in self.special_ids or after in self.special_ids:
            return True
        x, y = self.last_atom[before], self.first_atom[after]
        return x >= 0 and y >= 0 and self.forced[x][y]

    # -- states ---------------------------------------------------------------------------------

    def row(self, state: State | None) -> list | dict:
        """The row of a state (built on first use); the STOP row for None."""
        if state is None:
            return self.stop
        row = self._rows.get(state)
        if row is None:
            start, pending, progress, _ = state
            if pending or progress:
                row = {self.flag_index: self._flag(state), self.state_index: state}
            else:
                row = self._dense_row(state)
            self._rows[state] = row
        return row

    @staticmethod
    def _flag(state: State) -> int:
        return int(any(inner for _, inner in state[3]))

    def _dense_row(self, state: State) -> list:
        targets = [self._step_action(state, action) for action in range(len(self.actions))]
        self._class_targets[state] = targets
        special = self._step_special(state)
        row = [self.stop, self._rows.get(special) if special is not None else self.stop, None]
        row += [self._rows.get(target) if target is not None else self.stop for target in targets]
        row += [None] * len(self.irregular)
        row += [self._flag(state), state]
        return row

    def _step_action(self, state: State, action: int, boundary_only: bool = False) -> State | None:
        """The successor of an ordinary state under a regular token with this action."""
        start, _, _, configs = state
        act = self.actions[action]
        cuts = self.cuts
        found = set()
        for q, _ in configs:
            if not start:
                c = cuts[q]
                if c >= 0 and act[c] >= 0:
                    found.add((act[c], 0))
            if not boundary_only and act[q] >= 0:
                found.add((act[q], 0 if start else 1))
        return (False, b"", b"", frozenset(found)) if found else None

    def _step_special(self, state: State) -> State | None:
        """A special token ends the segment (which must be able to end here) and starts a fresh one."""
        start, pending, _, configs = state
        if pending or not (start or any(q in self.finals for q, _ in configs)):
            return None
        return self.initial_state

    def step(self, state: State, token: int, boundary_only: bool = False) -> State | None:
        """The successor of any state under any token, from the token's bytes (the general, slow path)."""
        kind = self.token_class[token]
        if kind == _SPECIAL_CLASS:
            return None if boundary_only else self._step_special(state)
        if kind == _STOP_CLASS or state is None:
            return None
        start, pending, progress, configs = state
        data = self.token_bytes[token]
        progress = self._advance(progress, data)
        if progress is None:
            return None
        data = pending + data
        try:
            text, rest = data.decode("utf-8"), b""
        except UnicodeDecodeError:
            decoder = codecs.getincrementaldecoder("utf-8")()  # whole characters, and the start of one
            try:
                text = decoder.decode(data, False)
            except UnicodeDecodeError:
                return None  # invalid UTF-8: not decided here
            rest = decoder.getstate()[0]
        atoms = list(map(self.atom, text))
        if None in atoms:
            return None
        moves, cuts = self.moves, self.cuts
        may_cut = not start and not pending  # a gap inside a character is never a chunk boundary

        def read(q: int) -> int:
            for a in atoms:
                q = moves[q].get(a, -1)
                if q < 0:
                    break
            return q

        found = set()
        for q, _ in configs:
            if may_cut and cuts[q] >= 0:
                r = read(cuts[q])
                if r >= 0:
                    found.add((r, 0))
            if not boundary_only:
                r = read(q)
                if r >= 0:
                    found.add((r, 0 if start else 1))
        return (False, rest, progress, frozenset(found)) if found else None

    def boundary_row(self, row: list | dict, token: int) -> list | dict | None:
        """The row after ``token`` read with a chunk boundary before it (how a walk that kept both readings
        of a gap is corrected), or None where that cannot be; memoized per (state, action) for ordinary
        states and regular tokens, which is what corrections almost always meet."""
        state = row[self.state_index]
        action = self.token_class[token] - _FIRST_ACTION
        if state is None or state[1] or state[2] or not 0 <= action < len(self.actions):
            target = self.step(state, token, boundary_only=True)
            return None if target is None else self.row(target)
        key = (state, action)
        if key not in self._boundary_rows:
            target = self._step_action(state, action, boundary_only=True)
            self._boundary_rows[key] = None if target is None else self.row(target)
        return self._boundary_rows[key]

    def _fill(self, row: list | dict, kind: int) -> None:
        """Fill the missing entry ``row[kind]`` (a token class)."""
        state = row[self.state_index]
        action = kind - _FIRST_ACTION
        if kind == _STOP_CLASS:
            row[kind] = self.stop
        elif kind == _SPECIAL_CLASS:
            row[kind] = self.row(self._step_special(state))
        elif isinstance(row, list) and action < len(self.actions):
            row[kind] = self.row(self._class_targets[state][action])
        else:
            row[kind] = self.row(self.step(state, self.representatives[kind]))

    # -- walking ---------------------------------------------------------------------------------

    def walk(self, ids: Sequence[int], row: list | dict) -> list:
        """The rows after each token: ``[row, row after ids[0], ...]`` (ids must be below ``size``)."""
        kinds = self.token_class
        seq = [row]
        getitem, accumulate = operator.getitem, itertools.accumulate
        source = map(kinds.__getitem__, ids)
        taken = 0  # how many ids ``source`` has handed out
        pending: list[int] = []  # ids[len(seq) - 1 : taken], handed out but not walked
        while True:
            row = seq.pop()
            before = len(seq)  # ids[:before] are walked
            failed = False
            try:
                seq.extend(accumulate(itertools.chain(pending, source) if pending else source, getitem, initial=row))
            except (TypeError, KeyError):  # a step from a None entry, or a missing entry of a dict row
                failed = True
            taken = max(taken, before + len(seq) - before - 1 + failed)
            if seq[-1] is None:  # the entry just read is not filled yet
                seq.pop()
            done = len(seq) - 1
            if done == len(ids):
                return seq
            row, kind = seq[-1], kinds[ids[done]]
            if (kind in row) if isinstance(row, dict) else (row[kind] is not None):
                raise RuntimeError(f"token walk stopped at a filled entry (token {ids[done]})")
            self._fill(row, kind)
            pending = [kinds[t] for t in ids[done:taken]]

    def walk_compiled(self, ids: list[int], row: list | dict) -> list:
        """:meth:`walk` on the compiled core: its loop stops at an entry not built yet, Python fills it
        (IndexError for an id outside the vocabulary)."""
        if self._packed_classes is None:
            self._packed_classes = array("i", self.token_class).tobytes()
        seq = [row]
        done = 0
        while True:
            rows = native.core.walk_rows(self._packed_classes, ids, done, seq[-1])
            seq += rows
            done += len(rows)
            if done == len(ids):
                return seq
            self._fill(seq[-1], self.token_class[ids[done]])

    def advance(self, row: list | dict, token: int) -> list | dict:
        """One step of a walk."""
        kind = self.token_class[token]
        target = row.get(kind) if isinstance(row, dict) else row[kind]
        if target is None:
            self._fill(row, kind)
            target = row[kind]
        return target

    def first_stop(self, seq: list) -> int | None:
        """The index of the first STOP row in a walk (STOP is absorbing, so bisect on identity)."""
        stop = self.stop
        if seq[-1] is not stop:
            return None
        lo, hi = 0, len(seq) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if seq[mid] is stop:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def accepts_end(self, row: list | dict) -> bool:
        """May the text (or the segment since the last special token) end after this row's state?"""
        state = row[self.state_index]
        if state is None:
            return False
        start, pending, _, configs = state
        return start or (not pending and any(q in self.finals for q, _ in configs))
