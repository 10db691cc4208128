"""MaxMatch (WordPiece) as a finite-state transducer, and MaxMatch-preserving promotion (seed 000 Sec. 6.2).

**The transducer** (:class:`MaxMatchTransducer`) is the failure-trie of Song
et al. (2021), "Fast WordPiece tokenization" (Algorithms 7 and 8 of seed 000,
Appendix C), extended with the continuation prefix:

* two tries over characters (code points): the *first* trie holds every
  vocabulary string literally (what a word may start with), the
  *continuation* trie holds the continuation pieces without their prefix
  (``"##ing"`` is the path ``i n g``).  Each trie node is a state; a node
  where a piece ends carries that piece's token id;
* every node ``v`` (spelling ``u``) has a failure link ``f(v)`` and a failure
  pop ``F(v)``: greedily cut the longest piece off the front of ``u`` (a first
  piece in the first trie, continuation pieces afterwards) until what is left,
  ``r``, is a node of the continuation trie; ``F(v)`` is the list of pieces cut
  and ``f(v)`` the node of ``r``.  ``f(v)`` is null when some cut is impossible
  (the word cannot be tokenized) and at the two roots.  For a node that is a
  piece, ``F(v) = [v]`` and ``f(v)`` is the continuation root; otherwise both
  follow from the parent's links like Aho-Corasick's (Algorithm 7);
* reading character ``c`` at node ``v``: take the trie arc if there is one
  (output nothing); otherwise follow the failure arc -- the ``φ`` arc of
  Algorithm 8, output ``F(v)``, go to ``f(v)`` -- and try again; a null
  failure link rejects the word.  At the end of the word, follow failure arcs
  until the continuation root; the outputs of that walk are
  :attr:`MaxMatchTransducer.flush` (``F`` chained), precomputed per node.

Every failure arc outputs at least one token, so a word of ``n`` characters
costs O(n) steps (amortized): adversarial words such as ``'a' * 10**6`` are
linear.  The construction is deterministic, with φ-arcs kept implicit (the
explicit Algorithm 8 arcs, with multi-token outputs, are :meth:`~MaxMatchTransducer.arcs`).

**Promotion** (:func:`promote_maxmatch`): for a pattern DFA over characters
(code points; see :func:`wordpiece_alphabet`) that describes **one word**, the
DFA over token ids accepting exactly ``{MaxMatch(w) : w matched by the pattern}``.
Instead of composing with the transducer over characters and determinizing the
ε-laden projection (whose ε-closures span whole tries), it builds the token
automaton directly, deterministically.  A state is a pair ``(p, v)``: ``p`` the
pattern state after the characters of the tokens read so far, ``v`` the
transducer state after those characters.  Invariant: the tokens read are what
the transducer has emitted so far followed by ``flush(v)`` (the pieces still
pending in ``v``).  Reading token ``t`` (a first piece at the start, a
continuation piece later) runs its characters through the pattern and the
transducer, giving ``(p', v')`` and the emitted tokens ``E``; the arc exists
iff ``E + flush(v') == flush(v) + [t]``.  A state is final iff ``p`` is.  The
tokens of a word's MaxMatch are, at every token boundary, exactly "emitted so
far + greedy pieces of the pending characters", so every MaxMatch tokenization
is accepted; conversely the invariant at a final state says the sequence is the
transducer's (= MaxMatch's) output for the word it spells.  The result is
trimmed and minimized.

Choices (documented behaviour, not accidents):

* the empty word is not a word: never accepted (HF never hands it to the model);
* words MaxMatch cannot tokenize -- some position matches no piece, or the word
  is longer than ``max_input_chars_per_word`` -- become ``[UNK]`` in HF.  With
  ``unk="exclude"`` (the default) they contribute nothing; with
  ``unk="token"`` the one-token sequence ``[unk]`` is accepted iff the pattern
  matches at least one such word;
* the pattern is matched against the word as the *model* sees it: BERT's
  normalizer (lowercasing, accent stripping) and pre-tokenizer (splitting at
  whitespace and punctuation) are not applied.  A pattern for text the model
  never receives (uppercase, ``a.b``) is promoted literally;
* the first piece is looked up literally (a vocabulary entry ``##s`` can start
  a word that begins with ``##``), as in HF's WordPiece model.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Iterator

from ..automata import DFA, intersect, minimize, trim, union
from ..automata.errors import check_limit
from ..errors import BpefstError
from ..regex import CharAlphabet
from ..tokenizer.wordpiece import WordPieceModel

PHI = -1  # the input label of failure arcs in :meth:`MaxMatchTransducer.arcs`
UNK_MODES = ("exclude", "token")


class MaxMatchTransducer:
    """The Aho-Corasick-style MaxMatch transducer of a WordPiece model (see the module docstring).

    States are trie nodes ``0 .. num_states-1``: :attr:`root` (0) starts a
    word, :attr:`cont_root` is the empty continuation.  Per node:
    ``children[v]`` (code point -> node), ``token[v]`` (the piece ending here
    or -1), ``fail[v]`` (-1 for null), ``pops[v]`` (``F(v)``), ``flush[v]``
    (the tokens emitted if the word ends in ``v``, or None if it then cannot
    be tokenized; ``flush[root] == ()``, the empty word).
    """

    def __init__(self, model: WordPieceModel) -> None:
        self.model = model
        self.unk_id = model.unk_id
        self.max_chars = model.max_input_chars_per_word
        children: list[dict[int, int]] = [{}, {}]
        token: list[int] = [-1, -1]
        self.root, self.cont_root = 0, 1
        for table, start in ((model.first_pieces, 0), (model.continuation_pieces, 1)):
            for piece, tid in table.items():
                v = start
                for ch in piece:
                    cp = ord(ch)
                    nxt = children[v].get(cp)
                    if nxt is None:
                        nxt = children[v][cp] = len(children)
                        children.append({})
                        token.append(-1)
                    v = nxt
                token[v] = tid
        n = len(children)
        fail = [-1] * n
        pops: list[tuple[int, ...]] = [()] * n
        order = [0, 1]
        queue = deque(order)
        while queue:  # breadth first: parents and everything a failure link points to come first
            cur = queue.popleft()
            for cp, v in children[cur].items():
                order.append(v)
                queue.append(v)
                if token[v] >= 0:
                    fail[v] = 1
                    pops[v] = (token[v],)
                    continue
                z = fail[cur]
                popped = pops[cur]
                while z >= 0 and cp not in children[z]:
                    popped += pops[z]
                    z = fail[z]
                if z >= 0:
                    fail[v] = children[z][cp]
                    pops[v] = popped
        flush: list[tuple[int, ...] | None] = [None] * n
        flush[0] = flush[1] = ()
        for v in order[2:]:
            f = fail[v]
            if f >= 0:
                rest = flush[f]
                flush[v] = None if rest is None else pops[v] + rest
        self.children = children
        self.token = token
        self.fail = fail
        self.pops = pops
        self.flush = flush
        self._steps: dict[int, tuple[tuple[int, ...], int] | None] = {}
        self.piece_class = self._piece_classes(order)

    def _piece_classes(self, order: list[int]) -> list[int]:
        """For a piece node, the first piece node with the same subtree (labels and piece marks); else the node.

        Two such nodes behave alike as promotion states (see :func:`_promote`).
        """
        children, token = self.children, self.token
        shapes: dict[tuple, int] = {}
        shape = [0] * len(children)
        for v in reversed(order):
            key = (token[v] >= 0, tuple(sorted((c, shape[w]) for c, w in children[v].items())))
            shape[v] = shapes.setdefault(key, len(shapes))
        first: dict[int, int] = {}
        canon = list(range(len(children)))
        for v in order:
            if token[v] >= 0 and v > 1:
                canon[v] = first.setdefault(shape[v], v)
        return canon

    # -- size ------------------------------------------------------------------------

    @property
    def num_states(self) -> int:
        """Trie nodes (the intermediate states Algorithm 8 adds for multi-token pops are not counted)."""
        return len(self.children)

    @property
    def num_arcs(self) -> int:
        """Character arcs plus failure (φ) arcs."""
        return sum(map(len, self.children)) + sum(1 for f in self.fail if f >= 0)

    def arcs(self) -> Iterator[tuple[int, int, tuple[int, ...], int]]:
        """The transducer's arcs ``(source, input, outputs, target)``; failure arcs have input :data:`PHI`."""
        for v, row in enumerate(self.children):
            for cp, w in row.items():
                yield v, cp, (), w
            if self.fail[v] >= 0:
                yield v, PHI, self.pops[v], self.fail[v]

    # -- running ---------------------------------------------------------------------

    def step(self, node: int, symbol: int) -> tuple[tuple[int, ...], int] | None:
        """Read one character (code point) at ``node``: ``(emitted tokens, next node)``, or None if the word fails."""
        key = node << 21 | symbol
        steps = self._steps
        if key in steps:
            return steps[key]
        children, fail, pops = self.children, self.fail, self.pops
        out: tuple[int, ...] = ()
        z = node
        while symbol not in children[z]:
            f = fail[z]
            if f < 0:
                steps[key] = None
                return None
            out += pops[z]
            z = f
        result = (out, children[z][symbol])
        steps[key] = result
        return result

    def match(self, word: str) -> list[int] | None:
        """MaxMatch ids of ``word`` through the transducer, or None if it cannot be tokenized (no length limit)."""
        children, fail, pops = self.children, self.fail, self.pops
        out: list[int] = []
        v = self.root
        for ch in word:
            cp = ord(ch)
            while cp not in children[v]:
                f = fail[v]
                if f < 0:
                    return None
                out.extend(pops[v])
                v = f
            v = children[v][cp]
        rest = self.flush[v]
        if rest is None:
            return None
        out.extend(rest)
        return out

    def encode_word(self, word: str) -> list[int]:
        """Like :meth:`WordPieceModel.encode_word` (``[unk]`` for failures and over-long words), in linear time."""
        if len(word) > self.max_chars:
            return [self.unk_id]
        ids = self.match(word)
        return [self.unk_id] if ids is None else ids

    def node_text(self, node: int) -> str:
        """The characters spelled from the node's root (for debugging)."""
        parents = self._parents()
        chars = []
        while node > 1:
            node, cp = parents[node]
            chars.append(chr(cp))
        return "".join(reversed(chars))

    def _parents(self) -> list[tuple[int, int]]:
        parents = getattr(self, "_parent_table", None)
        if parents is None:
            parents = [(-1, -1)] * len(self.children)
            for v, row in enumerate(self.children):
                for cp, w in row.items():
                    parents[w] = (v, cp)
            self._parent_table = parents
        return parents


def wordpiece_alphabet(model: WordPieceModel) -> CharAlphabet:
    """The character alphabet for compiling patterns: every character of a piece, with its code point as symbol id.

    >>> # compile_regex(r"[a-z]+ing", wordpiece_alphabet(model)) -> a DFA over code points
    """
    return CharAlphabet({c: ord(c) for c in model.characters})


def promote_maxmatch(
    pattern: DFA,
    model: WordPieceModel,
    transducer: MaxMatchTransducer | None = None,
    *,
    unk: str = "exclude",
    limit_length: bool = True,
    max_states: int | None = None,
    minimal: bool = True,
    timings: dict[str, float] | None = None,
) -> DFA:
    """The DFA over token ids accepting ``MaxMatch(w)`` for every word ``w`` the pattern matches.

    ``pattern`` is a DFA over code points describing one word (see
    :func:`wordpiece_alphabet`).  ``unk``: ``"exclude"`` drops words MaxMatch
    maps to the unknown token, ``"token"`` accepts ``[unk]`` if there is at
    least one.  ``limit_length`` applies ``max_input_chars_per_word`` (longer
    words are unknown words), exactly; turn it off to promote as if there were
    no limit.  ``max_states`` bounds the states built (StateLimitExceeded).
    ``timings``, if given, receives the time of each stage.
    """
    if unk not in UNK_MODES:
        raise BpefstError(f"unknown [UNK] handling {unk!r} (expected one of {', '.join(UNK_MODES)})")
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        if timings is not None:
            timings[name] = now - clock
        clock = now

    if transducer is None:
        transducer = MaxMatchTransducer(model)
        lap("transducer")
    elif transducer.model is not model and transducer.model.fingerprint != model.fingerprint:
        raise BpefstError("the MaxMatch transducer was built from another WordPiece model")
    words = trim(pattern)
    longest = _longest_word(words)
    bounded = words
    if limit_length and longest > transducer.max_chars:
        bounded = minimize(trim(intersect(words, _at_most(transducer.max_chars, words.alphabet()), max_states=max_states)))
        lap("length-limit")
    dfa = _promote(bounded, transducer, max_states)
    lap("promote")
    if unk == "token" and ((limit_length and longest > transducer.max_chars) or _has_failing_word(words, transducer, max_states)):
        dfa = union(dfa, DFA([{transducer.unk_id: 1}, {}], 0, (1,), check=False))
        lap("unk")
    if minimal:
        dfa = minimize(trim(dfa))
        lap("minimize")
    return dfa


def _promote(pattern: DFA, transducer: MaxMatchTransducer, max_states: int | None) -> DFA:
    """The token automaton over states ``(p, v)`` (see the module docstring); not minimized.

    Two savings keep it small and fast:

    * a state whose ``v`` is a piece node is identified with the state of any
      other piece node with the same subtree (same extension strings below it,
      :attr:`MaxMatchTransducer.piece_class`): once the pending piece is popped
      both continue from the same continuation node, and a longer piece on the
      path rejects both alike (27k of BERT's 36k piece nodes are leaves, all in
      one class);
    * once the pending pieces are emitted, the transducer walks the piece trie in
      lockstep (it is at the trie node of the characters read since), so every
      piece below that node is a valid next token: those arcs are the
      tokenization-agnostic ones, memoized per (trie node, pattern state) and
      copied into each row that reaches them.
    """
    prows = pattern.transitions
    pfinals = pattern.finals
    children, token, flush = transducer.children, transducer.token, transducer.flush
    canon = transducer.piece_class
    step = transducer.step
    root, cont_root = transducer.root, transducer.cont_root
    width = len(children)
    start = pattern.start * width + root
    index = {start: 0}
    todo = [start]
    rows: list[dict[int, int]] = [{}]
    finals: list[int] = []
    memo: dict[int, dict[int, int]] = {}

    def state(q: int, v: int) -> int:
        key = q * width + canon[v]
        target = index.get(key)
        if target is None:
            target = index[key] = len(rows)
            rows.append({})
            todo.append(key)
            check_limit(len(rows), max_states, "the MaxMatch promotion")
        return target

    def aligned(m: int, q: int) -> dict[int, int]:
        """token -> state for every piece in the subtree of trie node ``m`` readable from pattern state ``q``."""
        key = q * width + m
        arcs = memo.get(key)
        if arcs is None:
            arcs = {}
            t = token[m]
            if t >= 0:
                arcs[t] = state(q, m)
            prow = prows[q]
            for c, m2 in children[m].items():
                q2 = prow.get(c)
                if q2 is not None:
                    arcs.update(aligned(m2, q2))
            memo[key] = arcs
        return arcs

    while todo:
        key = todo.pop()
        p, v = divmod(key, width)
        me = index[key]
        if p in pfinals and v != root:
            finals.append(me)
        row = rows[me]
        pending = flush[v]
        if pending is None:  # cannot happen: every state reached keeps the invariant
            continue
        if not pending:  # the start: nothing pending, the transducer is the first-piece trie
            for c, m in children[root].items():
                q2 = prows[p].get(c)
                if q2 is not None:
                    row.update(aligned(m, q2))
            continue
        npending = len(pending)
        # walk the continuation trie jointly with the pattern and the transducer until the
        # transducer has emitted all pending tokens (k = how many so far), then switch to `aligned`
        stack = [(cont_root, p, v, 0)]
        while stack:
            n, q, x, k = stack.pop()
            prow = prows[q]
            for c, m in children[n].items():
                q2 = prow.get(c)
                if q2 is None:
                    continue
                moved = step(x, c)
                if moved is None:
                    continue
                out, x2 = moved
                k2 = k
                if out:
                    k2 = k + len(out)
                    if k2 > npending or pending[k:k2] != out:
                        continue
                    if k2 == npending:  # now x2 spells what m spells: they are the same node
                        row.update(aligned(m, q2))
                        continue
                t = token[m]
                if t >= 0 and flush[x2] == pending[k2:] + (t,):
                    row[t] = state(q2, x2)
                if children[m]:
                    stack.append((m, q2, x2, k2))
    return DFA(rows, 0, frozenset(finals), check=False)


def _has_failing_word(pattern: DFA, transducer: MaxMatchTransducer, max_states: int | None) -> bool:
    """Whether the (trimmed) pattern matches a non-empty word MaxMatch cannot tokenize (length aside)."""
    prows, pfinals = pattern.transitions, pattern.finals
    step, flush, root = transducer.step, transducer.flush, transducer.root
    start = (pattern.start, root)
    seen = {start}
    todo = [start]
    while todo:
        p, x = todo.pop()
        if p in pfinals and x != root and flush[x] is None:
            return True
        for c, p2 in prows[p].items():
            moved = step(x, c)
            if moved is None:
                return True  # every state of a trimmed DFA leads to a match
            key = (p2, moved[1])
            if key not in seen:
                seen.add(key)
                todo.append(key)
                check_limit(len(seen), max_states, "the [UNK] check of the MaxMatch promotion")
    return False


def _longest_word(dfa: DFA) -> float:
    """The length of the longest accepted word of a trimmed DFA (``inf`` if the language is infinite)."""
    if dfa.is_empty():
        return 0
    rows = dfa.transitions
    indegree = [0] * len(rows)
    for row in rows:
        for r in row.values():
            indegree[r] += 1
    order = [q for q in range(len(rows)) if indegree[q] == 0]
    for q in order:  # Kahn's algorithm; order grows while iterating
        for r in rows[q].values():
            indegree[r] -= 1
            if indegree[r] == 0:
                order.append(r)
    if len(order) < len(rows):
        return float("inf")
    longest = [-1] * len(rows)
    longest[dfa.start] = 0
    for q in order:
        if longest[q] >= 0:
            for r in rows[q].values():
                longest[r] = max(longest[r], longest[q] + 1)
    return max(longest[q] for q in dfa.finals)


def _at_most(bound: int, alphabet) -> DFA:
    """Every string of length <= ``bound`` over ``alphabet``."""
    symbols = sorted(alphabet)
    rows = [{a: i + 1 for a in symbols} for i in range(bound)] + [{}]
    return DFA(rows, 0, frozenset(range(bound + 1)), check=False)
