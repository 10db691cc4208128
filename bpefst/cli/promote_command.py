"""``bpefst promote``: a regular expression over text -> an automaton over tokens."""

from __future__ import annotations

import json
import random
import sys
import time
import warnings

import click

from ..artifact import atomic_write_bytes, check_writable, refuse_overwriting_inputs
from ..automata import load as load_automaton
from ..automata import distances_to_final, minimize, random_accepted, random_within_reach, to_dot
from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..errors import BpefstError
from ..promotion.language_build import MODES, Limits
from ..promotion.agnostic import LATTICE
from ..promotion.maxmatch import promote_maxmatch, wordpiece_alphabet
from ..promotion.token_automaton_io import save_token_automaton
from ..promotion.token_language import TokenLanguage
from ..regex.wordlists import read_words, words_automaton
from ..tokenizer.wordpiece import is_wordpiece_file, load_wordpiece
from ..regex import alphabet_for, compile_regex
from ..regex.json_schema import DEFAULT_MAX_DEPTH, SchemaWarning, schema_to_dfa
from ..tokenizer import ReferenceEncoder
from .automaton_commands import load_model_and_automaton
from .common import read_input, tokenizer_options, user_errors
from .limits import LimitExceeded, bounded


@click.command("promote")
@click.argument("compiled", type=click.Path())
@tokenizer_options
@click.option("--regex", "pattern_text", metavar="PATTERN", help="The pattern (whole-string match), e.g. '\\d{4}-\\d{2}-\\d{2}'.")
@click.option("--pattern-file", type=click.Path(), help="The pattern as a bpefst automaton artifact over bytes (byte-level) or code points (character-level).")
@click.option("--words", "words_file", type=click.Path(allow_dash=True), help="A literal list of strings, one per line.")
@click.option("--json-schema", "schema_file", type=click.Path(allow_dash=True),
              help="A JSON Schema file: the pattern is the JSON text of its documents (compact; members as "
                   "--member-order says).")
@click.option("--whitespace", type=click.IntRange(min=0), default=None, metavar="K",
              help="--json-schema: allow up to K whitespace characters around each structural character (default 0: compact).")
@click.option("--max-depth", type=click.IntRange(min=0, max=16), default=None, metavar="D",
              help="--json-schema: values the schema leaves open nest at most D arrays/objects, and a recursive $ref "
                   "is followed at most D times inside itself (default 2).")
@click.option("--no-strict", is_flag=True,
              help="--json-schema: drop keywords an automaton cannot honour (uniqueItems, multipleOf, not, ...) instead of "
                   "refusing the schema; a warning on stderr names them.")
@click.option("--closed-objects", is_flag=True,
              help="--json-schema: an object without additionalProperties takes only its listed properties (by default "
                   "it also takes extra members after them, as JSON Schema reads it, and where that makes the language too "
                   "large, the first of bpefst.promote's cuts that fits, said on stderr).")
@click.option("--member-order", type=click.Choice(["any", "schema"]), default=None,
              help="--json-schema: schema (default): every object's listed members in schema order, then extra ones; "
                   "any: an object with at most one required member takes its members in any order, an optional one "
                   "possibly twice (for checking documents; a decoder could loop).")
@click.option("--mode", type=click.Choice([*MODES, "maxmatch"]), default=None,
              help="agnostic: every tokenization of every match; canonical (default for BPE): only BPE's (via A_BPE, Eq. 5); canonical-direct: the same by Algorithm 2 (Eq. 4); maxmatch (WordPiece vocabularies, the default for them): MaxMatch's tokens of each matched word.")
@click.option("--unk", type=click.Choice(["exclude", "token"]), default=None,
              help="maxmatch: drop words MaxMatch maps to [UNK] (exclude, the default), or accept the single [UNK] "
                   "token for them.")
@click.option("--output", "-o", type=click.Path(), help="Where to write the token automaton (or guide).")
@click.option("--form", type=click.Choice(["dfa", "guide"]), default="dfa", show_default=True,
              help="dfa: the language written out as a minimal DFA (a token-automaton artifact); guide (canonical "
                   "BPE only): the decoding set-up of the language built on demand (a token-guide artifact, loaded "
                   "by bpefst.TokenLanguage.load(path, tokenizer=...)), for languages too large to write out, as "
                   "most real JSON Schemas are.")
@click.option("--format", "fmt", type=click.Choice(["msgpack", "json", "dot"]), default="msgpack", show_default=True)
@click.option("--stats", is_flag=True, help="States, arcs and time per stage (on stderr).")
@click.option("--sample", type=click.IntRange(min=0), default=0, metavar="N", help="Print N random accepted token sequences with their text.")
@click.option("--max-states", type=click.IntRange(min=1), default=1_000_000, show_default=True, help="Give up beyond this many states.")
@click.option("--max-arcs", type=click.IntRange(min=1), default=20_000_000, show_default=True,
              help="Give up when the result, or the token lattice it starts from, would have more arcs than this (about 250 bytes of memory each while building).")
@click.option("--tokenizer", "tokenizer_path", type=click.Path(), help="Check that COMPILED was built from this tokenizer.")
@click.option("--no-pretokenize", is_flag=True,
              help="Canonical modes: treat each match as one pre-tokenization chunk (BPE canonicity only), ignoring the tokenizer's pattern.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60, show_default=True, metavar="SECONDS",
              help="Give up after this long (loading included).")
@click.option("--max-memory", type=click.IntRange(min=1), default=2000, show_default=True, metavar="MB",
              help="Give up when the process needs more resident memory than this.")
@user_errors
def promote_command(compiled, pattern, specials, pattern_text, pattern_file, words_file, schema_file, whitespace, max_depth, no_strict,
                    closed_objects, member_order,
                    mode, unk, output, form, fmt, stats,
                    sample, max_states, max_arcs, tokenizer_path, no_pretokenize, timeout, max_memory) -> None:
    """Promote a pattern over text to an automaton over tokens (for constrained decoding).

    COMPILED is a `bpefst compile` artifact or any tokenizer.  The result
    accepts token sequences spelling a whole match; with the canonical modes,
    only the tokenization the tokenizer gives that match.  For the gpt2,
    cl100k and o200k pre-tokenization patterns `canonical` follows them: no token
    spans a chunk boundary of findall(pattern, text), and only pairs inside a
    chunk must be canonical, so the result accepts exactly encode(text) for
    each match (`--no-pretokenize`: the whole match as one chunk;
    `canonical-direct` needs it when a match can be cut).  Exit 1 if the
    language is empty.  `--form guide` keeps a canonical language too large
    to write out (most real JSON Schemas over a 50k+ vocabulary) as the set-up
    of its on-demand form, which a decoder loads in milliseconds.

    \b
    Example:
      bpefst promote cl100k.dfa --regex '\\d{4}-\\d{2}-\\d{2}' --stats --sample 3 -o date.msgpack
      bpefst promote ../shared/data/gpt2/vocab.json --json-schema person.json --sample 3
      bpefst promote ../shared/data/gpt2/vocab.json --json-schema person.json --form guide -o person.guide
      bpefst promote ../shared/data/wordpiece/tokenizer.json --regex '(un)?(help|do)(ful|ing)?' --sample 3
    """
    given = [x for x in (pattern_text, pattern_file, words_file, schema_file) if x is not None]
    if len(given) != 1:
        raise BpefstError("give exactly one of --regex, --pattern-file, --words, --json-schema")
    for name, value in (("--whitespace", whitespace), ("--max-depth", max_depth), ("--no-strict", no_strict or None),
                        ("--closed-objects", closed_objects or None), ("--member-order", member_order)):
        if value is not None and schema_file is None:
            raise BpefstError(f"{name} applies to --json-schema")
    _check_output(output, fmt, [compiled, pattern_file, words_file, schema_file, tokenizer_path])
    if form == "guide" and fmt != "msgpack":
        raise BpefstError("--form guide writes a msgpack artifact: --format json and dot apply to --form dfa")
    if form == "guide" and mode not in (None, "canonical"):
        raise BpefstError(f"--form guide keeps a canonical language (--mode canonical), not --mode {mode}")
    schema = None
    if schema_file is not None:  # translated once the tokenizer's alphabet is known, as bpefst.promote does
        schema = _Schema(_read_schema(schema_file), whitespace or 0, DEFAULT_MAX_DEPTH if max_depth is None else max_depth,
                         not no_strict, False if closed_objects else None, member_order or "schema")
    try:
        with bounded(timeout, max_memory):
            _promote(compiled, pattern, specials, pattern_text, pattern_file, words_file, mode, unk, output, fmt, stats, sample,
                     max_states, max_arcs, tokenizer_path, no_pretokenize, schema, form)
    except LimitExceeded as exc:
        raise BpefstError(f"promotion {exc}; narrow the pattern or raise the limit") from None


def _promote(compiled, pattern, specials, pattern_text, pattern_file, words_file, mode, unk, output, fmt, stats, sample, max_states,
             max_arcs, tokenizer_path, no_pretokenize, schema=None, form="dfa") -> None:
    if is_wordpiece_file(compiled):
        if form == "guide":
            raise BpefstError(f"{compiled} is a WordPiece vocabulary: --form guide keeps canonical BPE languages")
        if mode not in (None, "maxmatch"):
            raise BpefstError(f"{compiled} is a WordPiece vocabulary: only --mode maxmatch applies")
        _promote_wordpiece(compiled, pattern_text, pattern_file, words_file, unk or "exclude", output, fmt, stats, sample,
                           max_states, schema)
        return
    if mode == "maxmatch":
        raise BpefstError("--mode maxmatch needs a WordPiece vocabulary (vocab.txt or a WordPiece tokenizer.json)")
    if unk is not None:
        raise BpefstError("--unk applies to --mode maxmatch over a WordPiece vocabulary; BPE has no unknown token here")
    mode = mode or "canonical"
    started = time.perf_counter()
    model, automaton = load_model_and_automaton(compiled, pattern, specials, tokenizer=tokenizer_path)
    loaded = time.perf_counter()
    alphabet = alphabet_for(model)
    compiled_at = time.perf_counter()

    def written_out(base, _openness=None, lattice_per_arc: float = 1.0):
        limits = Limits(max_states, max_arcs, lattice_per_arc, max_lattice_arcs=max_arcs)  # one --max-arcs: all is written out
        language = TokenLanguage(base, model, mode, not no_pretokenize, limits=limits, automaton=automaton, source=source)
        return base, language, language.dfa() if form == "dfa" else language.on_demand()  # (the lattice's limit decides here)

    source = pattern_text if schema is None else schema.source()

    try:
        if schema is not None:  # open objects, else a cut of them, as bpefst.promote chooses (promotion.schema_fallback)
            base, language, dfa = schema.promoted(alphabet, max_states, max_arcs, model, written_out)
        else:
            try:
                base = _pattern_automaton(alphabet, pattern_text, pattern_file, words_file, max_states)
            except StateLimitExceeded:
                raise BpefstError(f"the pattern's automaton needs more than --max-states {max_states:,} states") from None
            compiled_at = time.perf_counter()
            base, language, dfa = written_out(base)
    except StateLimitExceeded as exc:
        raise BpefstError(f"{_where(exc)}the promoted automaton needs more than --max-states {max_states:,} states"
                          f"{_why(exc)}") from None
    except ArcLimitExceeded as exc:
        if exc.what == LATTICE:
            raise BpefstError(f"{_where(exc)}{LATTICE} needs more than --max-arcs {max_arcs:,} arcs{_why(exc)}; narrow "
                              f"the pattern or raise --max-arcs") from None
        size = f" ({exc.arcs:,})" if exc.arcs is not None else ""
        raise BpefstError(f"the promoted automaton needs more than --max-arcs {max_arcs:,} arcs{size}, too many to write out; "
                          f"--form guide keeps it as the set-up of its on-demand form, for decoding") from None
    pattern_seconds = compiled_at - loaded if schema is None else schema.seconds  # (a schema is translated inside its build)
    timings = {"load": loaded - started, "pattern": pattern_seconds, **language.timings}
    encoder = ReferenceEncoder(model)
    if form == "guide":
        _finish_guide(base, language, timings, encoder, output, stats, sample)
        return
    _finish(base, dfa, mode, timings, model.fingerprint, lambda ids: encoder.decode(ids), output, fmt, stats, sample)


class _Schema:
    """``--json-schema`` and its options, translated by :meth:`automaton` once the alphabet is known."""

    def __init__(self, schema, whitespace: int, max_depth: int, strict: bool, open_objects: bool | None,
                 member_order: str = "schema") -> None:
        self.schema, self.whitespace, self.max_depth = schema, whitespace, max_depth
        self.strict, self.open_objects, self.member_order = strict, open_objects, member_order
        self.said: set[str] = set()  # warnings on stderr so far (each schema translation repeats its own)
        self.seconds = 0.0  # spent translating, over every cut tried

    def automaton(self, alphabet, max_states: int, openness=None, closed: list | None = None):
        """The schema's automaton over ``alphabet``, by the translation ``bpefst.promote(json_schema=...)`` uses
        (``openness``: :func:`~bpefst.regex.json_schema.schema_to_dfa`'s ``open_objects``); what it ignored or
        dropped goes to stderr as one line, not as a Python warning (once, however often it is translated)."""
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SchemaWarning)
            try:
                dfa = schema_to_dfa(self.schema, alphabet, self.whitespace, max_depth=self.max_depth, strict=self.strict,
                                    open_objects=openness if openness is not None else self.open_objects is not False,
                                    max_states=max_states, closed=closed, member_order=self.member_order)
            finally:
                self.seconds += time.perf_counter() - started
        self._say(str(warning.message) for warning in caught)
        return dfa

    def promoted(self, alphabet, max_states: int, max_arcs: int | None, model, build):
        """``build(automaton, openness)`` of the schema's automaton with open objects, else of the first cut that
        fits (:func:`bpefst.promotion.schema_fallback.schema_fallback`, as ``bpefst.promote`` does), the cut said on stderr."""
        from ..promotion.schema_fallback import explainer, schema_fallback

        result, cut = schema_fallback(lambda openness, closed: self.automaton(alphabet, max_states, openness, closed),
                                      build, self.open_objects, max_depth=self.max_depth, max_arcs=max_arcs,
                                      vocabulary=model.max_id + 1, explain=explainer(self.schema, model))
        self._say([cut] if cut else [])
        return result

    def source(self) -> str:
        """The schema and its options as one line of text: what names the language in a ``token-guide``."""
        return "json-schema " + json.dumps([self.schema, self.whitespace, self.max_depth, self.strict, self.open_objects,
                                            self.member_order], sort_keys=True, default=str)

    def _say(self, messages) -> None:
        """Each warning on stderr once, as one line."""
        for message in messages:
            if message not in self.said:
                self.said.add(message)
                click.echo(f"warning: {message}", err=True)


def _read_schema(path: str):
    """The JSON document in ``path`` (``-``: stdin)."""
    data = read_input(path)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BpefstError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _check_output(output: str | None, fmt: str, inputs: list) -> None:
    """Fail before promoting (which can take long) when the result would go nowhere or somewhere it must not."""
    if output is None:
        if fmt != "msgpack":
            raise BpefstError(f"--format {fmt} needs --output (use -o /dev/stdout to print it)")
        return
    check_writable(output)
    refuse_overwriting_inputs(output, inputs)


def _promote_wordpiece(path, pattern_text, pattern_file, words_file, unk, output, fmt, stats, sample, max_states,
                       schema=None) -> None:
    """``--mode maxmatch``: MaxMatch (WordPiece) promotion of a pattern matching single words."""
    started = time.perf_counter()
    model = load_wordpiece(path)
    alphabet = wordpiece_alphabet(model)
    try:
        base = _pattern_automaton(alphabet, pattern_text, pattern_file, words_file, max_states, schema)
        timings: dict[str, float] = {"load+pattern": time.perf_counter() - started}
        dfa = promote_maxmatch(base, model, unk=unk, max_states=max_states, timings=timings)
    except StateLimitExceeded:
        raise BpefstError(f"the automaton needs more than --max-states {max_states:,} states") from None
    _finish(base, dfa, "maxmatch", timings, model.fingerprint, model.decode, output, fmt, stats, sample)


def _finish(base, dfa, mode: str, timings: dict, fingerprint: str, decode, output, fmt: str, stats: bool, sample: int) -> None:
    """Report, reject an empty language (exit 1), write the result, print samples."""
    if stats:
        click.echo(f"pattern:   {base.num_states:,} states, {base.num_arcs:,} arcs", err=True)
        click.echo(f"promoted:  {dfa.num_states:,} states, {dfa.num_arcs:,} arcs ({mode})", err=True)
        click.echo("time:      " + ", ".join(f"{k} {v:.3f}s" for k, v in timings.items()), err=True)
    if dfa.is_empty():
        click.echo("the promoted language is empty: no token sequence spells a match")
        sys.exit(1)
    if output:
        _write(dfa, fingerprint, decode, output, fmt, mode)
    elif not (stats or sample):  # else silent: the verdict is the result, so say it, as for an empty language
        click.echo(f"the promoted language is not empty: {dfa.num_states:,} states, {dfa.num_arcs:,} arcs (give -o FILE to keep it)")
    rng = random.Random(0)
    for _ in range(sample):
        seq = random_accepted(dfa, rng, 64)
        if seq is None:
            break
        click.echo(json.dumps({"ids": list(seq), "text": decode(list(seq))}, ensure_ascii=False))


def _finish_guide(base, language: TokenLanguage, timings: dict, encoder: ReferenceEncoder, output, stats: bool,
                  sample: int) -> None:
    """``--form guide``: report, reject an empty language (exit 1), write the token-guide, print samples (random
    matches of the pattern, encoded, each checked against the language)."""
    product = language.on_demand()
    if stats:
        click.echo(f"pattern:   {base.num_states:,} states, {base.num_arcs:,} arcs", err=True)
        click.echo(f"promoted:  {len(product.cut):,} lattice states, {product.lattice_arcs:,} lattice arcs (canonical, on demand)",
                   err=True)
        click.echo("time:      " + ", ".join(f"{k} {v:.3f}s" for k, v in timings.items()), err=True)
    if language.is_empty():
        click.echo("the promoted language is empty: no token sequence spells a match")
        sys.exit(1)
    if output:
        language.save(output, form="guide")
    elif not (stats or sample):
        click.echo(f"the promoted language is not empty: {len(product.cut):,} lattice states (give -o FILE to keep its guide)")
    rng, distance = random.Random(0), distances_to_final(base)
    for _ in range(sample):
        match = encoder.decode_bytes(random_within_reach(base, rng, _SAMPLE_SYMBOLS, distance) or ())
        ids = encoder.encode_bytes(match, allowed_special=(), disallowed_special=()) if language.pretokenize \
            else list(encoder.encode_chunk(match.decode("utf-8", errors="surrogateescape")))
        if not language.accepts(ids):  # (the guide and the tokenizer disagree: a bug to report, never a silent sample)
            raise BpefstError(f"internal error: the guide refuses the tokenizer's ids of a match, {match!r}; please report it")
        click.echo(json.dumps({"ids": ids, "text": encoder.decode(ids)}, ensure_ascii=False))


_SAMPLE_SYMBOLS = 256  # --form guide --sample: the longest match drawn, in the pattern's symbols


def _where(exc: Exception) -> str:
    """The JSON pointer a schema's refusal names (promotion.schema_fallback.explained), as the message starts."""
    pointer = getattr(exc, "pointer", None)
    return "" if pointer is None else f"JSON Schema {pointer or '/'}: "


def _why(exc: Exception) -> str:
    explanation = getattr(exc, "explanation", None)
    return "" if explanation is None else f" ({explanation})"


def _pattern_automaton(alphabet, pattern_text, pattern_file, words_file, max_states, schema=None):
    """The pattern as a minimal DFA over the tokenizer's base symbols."""
    if schema is not None:
        return schema.automaton(alphabet, max_states)
    if pattern_text is not None:
        return compile_regex(pattern_text, alphabet, max_states=max_states)
    if words_file is not None:
        try:
            lines = read_input(words_file).decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise BpefstError(f"{words_file}: not UTF-8 text (bad byte at offset {exc.start})") from None
        return words_automaton(read_words(lines), alphabet)
    return alphabet.finish(minimize(load_automaton(pattern_file)))


def _write(dfa, fingerprint: str, decode, output: str, fmt: str, mode: str) -> None:
    if fmt == "msgpack":
        save_token_automaton(output, dfa, mode, fingerprint)
    elif fmt == "json":
        document = {
            "mode": mode, "tokenizer": fingerprint, "start": dfa.start, "finals": sorted(dfa.finals),
            "arcs": [[q, t, r] for q, row in enumerate(dfa.transitions) for t, r in sorted(row.items())],
        }
        atomic_write_bytes(output, json.dumps(document).encode())
    else:
        atomic_write_bytes(output, to_dot(dfa, label=lambda t: decode([t])).encode("utf-8"))
