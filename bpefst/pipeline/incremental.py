"""Text in, ids out, piece by piece, in memory bounded independently of the text's shape.

:class:`IncrementalEncoder` holds the text not yet tokenized and hands text to
:meth:`Tokenizer._encode_policy <.encoder.Tokenizer._encode_policy>` as soon as
it can be cut without changing its tokenization.  In order of cost:

1. a line cut (:func:`~..tokenizer.safe_cuts.safe_cut`) or a cut inside a line
   (:func:`~..tokenizer.safe_cuts.inline_cut`: a space after a word, a change
   between letters, digits and punctuation) -- found by a backwards search;
2. when :data:`LONG_TEXT` characters hold neither, the end of the last match of
   the pattern that no continuation can change
   (:func:`~..tokenizer.safe_cuts.decided_end`; a megabyte of digits or of
   ``'s's's``);
3. when what is left is one chunk in progress, at least :data:`LONG_CHUNK`
   characters of which surely belong to it (a run of spaces or of one letter),
   that chunk is streamed through the transducer (:mod:`.long_chunks`) and the
   encoder holds only the text after what was fed;
4. with cl100k / o200k, when the text is whitespace after a line break and
   more than :data:`LONG_CHUNK` characters of it follow the last line break,
   whether they join the line break's chunk is decided only where the
   whitespace ends: they are held as counts (:mod:`.held_runs`) until then, and
   regenerated in pieces into the right chunks.

Special tokens (allowed or disallowed) are never cut through: cuts keep the
longest special's length minus one characters back, cuts that would split an
occurrence are skipped, and a long chunk ends where a special starts.

Gaps, where the text is still held whole: patterns other than the GPT-2,
cl100k and o200k presets (line cuts only), character-level models and models
without all 256 byte tokens (no long chunks), and whitespace after a line
break (4.) when an active special token contains whitespace (it could start
inside the run); whitespace mixed in short runs is held at about twelve bytes
per run of one character.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable

from ..tokenizer.pretokenize import compile_pattern, specials_regex
from ..tokenizer.safe_cuts import decided_end, decided_matches, inline_cut, inline_kind, safe_cut
from .held_runs import HeldRun, held_start, joins_line_break
from .long_chunks import OVERLAP, LongChunk, overlap_start, settled_end

if TYPE_CHECKING:
    from .encoder import Tokenizer

LONG_TEXT = 1 << 18  # characters held without a cheap cut before the matches are examined
LONG_CHUNK = 1 << 16  # settled characters from which a chunk in progress is streamed
HELD_PIECE = 1 << 16  # characters of held whitespace regenerated at a time
SPILL = 1 << 14  # ids handed to the sink at a time while held whitespace is regenerated


class IncrementalEncoder:
    """Text in, ids out, piece by piece: ``feed(text)`` returns the ids already decided.

    ``finish()`` returns the rest.  The concatenation of all returned lists
    equals ``encode`` of the concatenated text; see the module docstring for
    what is held meanwhile.

    Whitespace held as counts (4. in the module docstring) can be gigabytes
    long, and so can the ids of the one call that ends it.  With ``sink`` set,
    those ids go to it in batches as they are decided, before the call returns
    the rest; the order is kept.
    """

    sink: Callable[[list[int]], None] | None = None

    long_text = LONG_TEXT
    long_chunk = LONG_CHUNK
    held_piece = HELD_PIECE

    def __init__(self, tokenizer: "Tokenizer", allowed: frozenset, disallowed: frozenset):
        self.tokenizer = tokenizer
        self.allowed, self.disallowed = allowed, disallowed
        self.rule = tokenizer.cut_rule
        self.kind = inline_kind(tokenizer.model.pattern)
        active = frozenset(allowed) | frozenset(disallowed)
        self._specials = specials_regex(active)
        self._keep = max(map(len, active), default=1) - 1  # characters a special may still need
        self._active = sorted(active)
        self._buffer = ""
        self._offset = 0  # characters consumed before the buffer
        self._scanned = 0  # no safe cut ends before this buffer position
        self._examined = 0  # buffer length at the last look at its matches (see _long_text)
        self._chunk: LongChunk | None = None
        self._fed = 0  # with a chunk in progress: buffer[:_fed] was fed to it already (the overlap)
        self._held: HeldRun | None = None  # whitespace after the buffer, its chunk undecided (see _hold)

    # -- the public interface ------------------------------------------------------------

    def feed(self, text: str) -> list[int]:
        if not text:
            return []
        self.push(text)
        out: list[int] = []
        self._advance(out, final=False)
        return out

    def finish(self) -> list[int]:
        out: list[int] = []
        self._advance(out, final=True)
        return out

    @property
    def buffered(self) -> int:
        """Characters held as text (held whitespace runs are counts, not text)."""
        return len(self._buffer) + (len(self._held.after) if self._held is not None else 0)

    def push(self, text: str) -> None:
        """Append text without encoding anything (to held whitespace while it lasts)."""
        if self._held is not None:
            self._held.add(text)
        else:
            self._buffer = self._buffer + text if self._buffer else text

    # -- the machinery ---------------------------------------------------------------------

    def _advance(self, out: list[int], final: bool) -> None:
        while True:
            if self._held is not None and not self._release(out, final):
                return  # the held whitespace has not ended yet
            if self._chunk is not None:
                if not self._continue_chunk(out, final):
                    return
                continue  # the chunk ended: the rest of the buffer is ordinary text
            if final:
                self._emit(len(self._buffer), out)
                return
            cut = self._cheap_cut()
            if cut is not None:
                self._emit(cut, out)
            if len(self._buffer) < self.long_text or not self._long_text(out):
                return

    def _emit(self, cut: int, out: list[int]) -> None:
        """Tokenize ``buffer[:cut]`` into ``out``."""
        if cut <= 0:
            return
        head, self._buffer = self._buffer[:cut], self._buffer[cut:]
        self.tokenizer._encode_policy(head, self.allowed, self.disallowed, self._offset, out)
        self._offset += cut
        self._scanned = 0
        self._examined = 0

    def _limit(self) -> int:
        """Cuts end at or before this: a special starting later might not be complete yet."""
        return max(len(self._buffer) - self._keep, 0)  # not negative: a slice would count from the end

    def _cheap_cut(self) -> int | None:
        buffer = self._buffer
        lo, hi = max(self._scanned, 1), self._limit()
        while hi > lo:
            cut = max(safe_cut(buffer, self.rule, lo, hi) or 0, inline_cut(buffer, self.kind, lo, hi) or 0)
            if not cut:
                break
            if not self._splits_special(cut):
                return cut
            hi = cut
        self._scanned = max(self._limit() - 1, self._scanned, 0)
        return None

    def _splits_special(self, cut: int) -> bool:
        buffer = self._buffer
        for special in self._active:
            found = buffer.find(special, max(cut - len(special) + 1, 0), cut + len(special) - 1)
            if 0 <= found < cut:
                return True
        return False

    @cached_property
    def _pattern(self):
        return compile_pattern(self.tokenizer.model.pattern)

    def _long_text(self, out: list[int]) -> bool:
        """Long text without a cheap cut: cut after decided matches; start a long chunk. True if it started one."""
        if self.kind is None or len(self._buffer) < 2 * self._examined:
            return False  # looked at (nearly) this text already: wait until it doubles
        if self._specials is not None:  # text up to a complete special is a finished segment
            last = None
            for last in self._specials.finditer(self._buffer):
                pass
            if last is not None:
                self._emit(last.end(), out)
        self._emit_decided(out)
        self._examined = len(self._buffer)
        if not self._can_stream():  # (what is left may be shorter than long_text: it is one chunk, look at it)
            return False
        self._hold()
        buffer = self._buffer
        match = self._pattern.match(buffer)
        settled = min(settled_end(self.kind, buffer, match), self._limit()) if match is not None else 0
        keep = overlap_start(buffer, settled - OVERLAP, settled)
        if settled < self.long_chunk or keep is None:
            return False
        self._chunk = LongChunk(self.tokenizer.transducer)
        self._fed = 0
        self._feed_chunk(settled, keep, out)
        return True

    def _emit_decided(self, out: list[int]) -> None:
        """Tokenize the matches no continuation changes, chunk by chunk.

        Not through ``_encode_policy`` on the text before them: matched on its
        own, that text could end differently (``" "`` before ``"\\n"`` is
        GPT-2's ``\\s+(?!\\S)``, but ``" \\n"`` at the end of a text is one
        chunk).  The buffer holds no complete special token here.
        """
        prefix = self._buffer[: self._limit()]
        encode_chunk, end = self.tokenizer.encode_chunk, 0
        for match in decided_matches(prefix, self._pattern.finditer(prefix)):
            out.extend(encode_chunk(match.group()))
            end = match.end()
        if end:
            self._buffer = self._buffer[end:]
            self._offset += end
            self._scanned = 0

    def _can_stream(self) -> bool:
        tokenizer = self.tokenizer  # long chunks are fed as bytes, one code per byte
        return tokenizer._byte_codes and tokenizer.transducer is not None and tokenizer.transducer.byte_codes

    def _feed_chunk(self, settled: int, keep: int, out: list[int]) -> None:
        """Feed ``buffer[_fed:settled]`` to the chunk; keep the fed text from ``keep`` on as the overlap."""
        buffer = self._buffer
        out.extend(self._chunk.feed(buffer[self._fed : settled]))
        self._buffer = buffer[keep:]
        self._offset += keep
        self._fed = settled - keep

    def _continue_chunk(self, out: list[int], final: bool) -> bool:
        """More text for the chunk in progress; True when it ended (its tokens are all in ``out``)."""
        buffer = self._buffer
        ended = final
        segment = buffer
        if self._specials is not None:
            special = self._specials.search(buffer, self._fed)
            if special is not None:  # the text before a special is pre-tokenized on its own
                segment, ended = buffer[: special.start()], True
            elif not final:  # the end may be the start of a special not complete yet: it would end
                segment = buffer[: self._limit()]  # the segment there, and so the chunk differently
                if len(segment) <= self._fed:
                    return False  # nothing new before that margin
        match = self._pattern.match(segment)
        if match is None:  # the presets match every character
            raise RuntimeError("long chunk: the pattern does not match the text after it")
        if ended or decided_end(segment, iter((match,))):
            stop = match.end()
            if stop < self._fed:
                raise RuntimeError("long chunk: the chunk ended inside text fed to it")
            out.extend(self._chunk.feed(buffer[self._fed : stop]))
            out.extend(self._chunk.finish())
            self._chunk, self._fed = None, 0
            self._buffer = buffer[stop:]
            self._offset += stop
            self._scanned = self._examined = 0
            return True
        if self._hold():
            return False
        settled = min(settled_end(self.kind, segment, match), self._limit())
        keep = overlap_start(buffer, max(settled - OVERLAP, self._fed), settled)
        if settled - self._fed >= OVERLAP and keep is not None:
            self._feed_chunk(settled, keep, out)
        return False

    # -- whitespace after a line break, held as counts (see .held_runs) ---------------------

    @cached_property
    def _can_hold(self) -> bool:
        # a special token with whitespace in it could start inside the held run
        return bool(self._can_stream()) and not any(ch.isspace() for special in self._active for ch in special)

    def _hold(self) -> bool:
        """Hold the whitespace after the buffer's last line break, when long and undecided; True if so.

        The buffer starts a chunk (or a whitespace chunk in progress); see :func:`.held_runs.held_start`.
        """
        start = held_start(self._buffer, self.kind, self.long_chunk) if self._can_hold else None
        if start is None:
            return False
        self._held = HeldRun()
        self._held.add(self._buffer[start:])
        self._buffer = self._buffer[:start]
        self._scanned = self._examined = 0
        return True

    def _release(self, out: list[int], final: bool) -> bool:
        """Once the held whitespace has ended, put it in its chunks; True when it has (False: still held)."""
        held = self._held
        after = held.after
        special = self._special_at(after, final)
        if special is None or (not after and not final):
            return False
        self._held = None
        if joins_line_break(self.kind, "" if special else after[:1]):
            self._join_chunk(held, out)
        else:
            self._end_chunk(held, out)
        self._buffer += after
        self._scanned = self._examined = 0
        return True

    def _special_at(self, text: str, final: bool) -> bool | None:
        """Does a special token start ``text``?  None while its start may still become one."""
        if self._specials is None or not text:
            return False
        if self._specials.match(text) is not None:
            return True
        if not final and any(len(s) > len(text) and s.startswith(text) for s in self._active):
            return None
        return False

    def _join_chunk(self, held: HeldRun, out: list[int]) -> None:
        """The held whitespace belongs to the buffer's chunk: feed both to it, keep an overlap of the run."""
        if self._chunk is None:  # the buffer is that chunk's start (see _hold)
            self._chunk, self._fed = LongChunk(self.tokenizer.transducer), 0
        out.extend(self._chunk.feed(self._buffer[self._fed :]))
        for piece in held.pieces(self.held_piece):
            out.extend(self._chunk.feed(piece))
            self._spill(out)
        overlap = held.tail(OVERLAP)  # matched again with the text after it (see .long_chunks)
        self._offset += len(self._buffer) + held.length - len(overlap)
        self._buffer, self._fed = overlap, len(overlap)

    def _end_chunk(self, held: HeldRun, out: list[int]) -> None:
        """The buffer's chunk ends at its line break: tokenize it, then the whitespace as new text."""
        if self._chunk is not None:
            out.extend(self._chunk.feed(self._buffer[self._fed :]))
            out.extend(self._chunk.finish())
            self._chunk, self._fed = None, 0
            self._offset += len(self._buffer)
            self._buffer = ""
        else:  # the buffer ends where its last chunk ends: it tokenizes as it would in the whole text
            self._emit(len(self._buffer), out)
        for piece in held.pieces(self.held_piece):  # no line break in it: streamed as a long chunk
            self._buffer += piece
            self._advance(out, final=False)
            self._spill(out)

    def _spill(self, out: list[int]) -> None:
        if self.sink is not None and len(out) >= SPILL:
            self.sink(out[:])
            out.clear()
