"""``bpefst compile`` and ``bpefst validate``: the canonical automaton from the command line."""

from __future__ import annotations

import os
import sys
import time

import click

from ..artifact import atomic_write_bytes, check_writable, peek_kind, refuse_overwriting_inputs, same_file
from ..automata import to_dot
from ..bpe import START, CanonicalAutomaton, MergeForest, build_canonical
from ..bpe.canonical_io import KIND as DFA_KIND
from ..bpe.canonical_io import load_canonical, save_canonical
from ..errors import BpefstError
from ..pipeline.validate import Validator, parse_id_blocks, parse_json_ids, parse_words
from ..tokenizer import BPEModel
from ..tokenizer.overrides import refuse_changes_to_compiled
from .common import iter_input_lines, load_model, on_line, parse_specials, tokenizer_options, user_errors

DOT_TOKEN_LIMIT = 300


def load_model_and_automaton(path: str, pattern: str | None = None, specials: tuple[str, ...] = (), encoding: str = "auto",
                             tokenizer: str | None = None) -> tuple[BPEModel, CanonicalAutomaton]:
    """A compiled canonical-dfa artifact, or a tokenizer compiled on the fly."""
    if peek_kind(path) == DFA_KIND:
        expected = load_model(tokenizer, pattern, specials).fingerprint if tokenizer else None
        model, automaton = load_canonical(path, expected)
        if not tokenizer:
            refuse_changes_to_compiled(path, model, pattern, parse_specials(specials))
        return model, automaton
    model = load_model(path, pattern, specials)
    return model, build_canonical(MergeForest.from_model(model), "implicit" if encoding == "auto" else encoding)


@click.command("compile")
@click.argument("tokenizer", type=click.Path())
@tokenizer_options
@click.option("--kind", type=click.Choice(["dfa", "transducer"]), default="dfa", show_default=True,
              help="dfa: the canonical token automaton A_BPE; transducer: the tokenizing transducer.")
@click.option("--encoding", type=click.Choice(["auto", "explicit", "implicit"]), default="auto", show_default=True,
              help="explicit: banned-set bitsets per state (fast lookups); implicit: merge trees, arcs on demand (any size); auto: explicit up to 65,536 tokens.")
@click.option("--output", "-o", type=click.Path(), help="Artifact to write.")
@click.option("--stats", is_flag=True, help="Print states, arcs, sizes and build time (on stderr).")
@click.option("--dot", "dot_path", type=click.Path(), help="Write a Graphviz picture of the automaton (or of --dot-tokens' neighbourhood).")
@click.option("--dot-tokens", metavar="ID,ID,...", help="Draw only these tokens (for large vocabularies).")
@click.option("--budget", type=click.IntRange(min=1), help="--kind transducer: states to build eagerly (the rest are built lazily).")
@user_errors
def compile_command(tokenizer: str, pattern, specials, kind: str, encoding: str, output: str | None, stats: bool, dot_path: str | None,
                    dot_tokens: str | None, budget: int | None) -> None:
    """Compile a tokenizer into its canonical automaton (A_BPE).

    \b
    Example:
      bpefst compile ../shared/data/wikitext-bpe/tokenizer_4000.json --kind dfa --stats -o wt4k.dfa
      bpefst compile ../shared/data/tiktoken/cl100k_base.tiktoken.gz -o cl100k.dfa
      bpefst compile ../shared/data/gpt2/vocab.json --kind transducer --stats -o gpt2.fst
    """
    if dot_tokens is not None and dot_path is None:
        raise BpefstError("--dot-tokens needs --dot (the file to draw them in)")
    if budget is not None and kind != "transducer":
        raise BpefstError("--budget applies to --kind transducer only")
    if kind == "transducer":
        if dot_path is not None:
            raise BpefstError("--dot draws the canonical DFA; it does not apply to --kind transducer")
        if output is None:
            raise BpefstError("--kind transducer needs --output")
        _check_outputs(tokenizer, output, None)
        from .tokenize_command import compile_transducer_command

        compile_transducer_command(tokenizer, output, pattern, specials, budget=budget, stats=stats)
        return
    if output is None and dot_path is None and not stats:
        raise BpefstError("nothing to do: give --output, --stats or --dot")
    _check_outputs(tokenizer, output, dot_path)
    chosen = _parse_dot_tokens(dot_tokens) if dot_tokens is not None else None
    model = load_model(tokenizer, pattern, specials)
    started = time.perf_counter()
    forest = MergeForest.from_model(model)
    automaton = build_canonical(forest, encoding)
    automaton.stats["build_seconds"] = round(time.perf_counter() - started, 3)
    report = {"encoding": automaton.encoding, "tokens": len(model.vocab), "merges": len(model.merges)}
    if stats:
        counted = time.perf_counter()
        report.update(automaton.size_stats())
        report["stored_arcs"] = report["banned_per_state"] if automaton.encoding == "explicit" else 0
        report["count_seconds"] = round(time.perf_counter() - counted, 3)
    report["build_seconds"] = automaton.stats["build_seconds"]
    picture = _dot_picture(automaton, model, chosen) if dot_path is not None else None  # may fail: before writing anything
    if output is not None:
        save_canonical(automaton, model, output)
        report["artifact_bytes"] = os.path.getsize(output)
    if picture is not None:
        try:
            atomic_write_bytes(dot_path, picture)
        except BpefstError:
            if output is not None and os.path.isfile(output):
                os.unlink(output)  # all or nothing: no artifact without the picture asked for with it
            raise
    if stats:
        for key, value in report.items():
            click.echo(f"{key + ':':<20}{value:,}" if isinstance(value, int) else f"{key + ':':<20}{value}", err=True)


def _check_outputs(tokenizer: str, output: str | None, dot_path: str | None) -> None:
    """Fail before the (possibly long) build when an output cannot be written, would replace the
    tokenizer, or when the artifact and the picture would overwrite each other."""
    for path, name in ((output, "the output"), (dot_path, "--dot")):
        if path is not None:
            check_writable(path, name)
            refuse_overwriting_inputs(path, [tokenizer])
    if output is not None and dot_path is not None and same_file(output, dot_path):
        raise BpefstError(f"--dot and --output are both {output}; give the picture its own file")


def _parse_dot_tokens(text: str) -> list[int]:
    """``--dot-tokens 97,98`` -> [97, 98]; reachability is checked once the automaton is built."""
    try:
        chosen = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise BpefstError("--dot-tokens expects comma-separated token ids") from None
    if not chosen:
        raise BpefstError("--dot-tokens: no token ids given")
    return chosen


def _dot_picture(automaton: CanonicalAutomaton, model: BPEModel, chosen: list[int] | None) -> bytes:
    """Graphviz text for the whole automaton, or for the neighbourhood of the ``chosen`` tokens."""
    from ..automata import DFA

    def label(token: int) -> str:
        return model.token_bytes(token).decode("utf-8", "replace")

    if chosen is not None:
        for t in chosen:
            if not (0 <= t < automaton.forest.size and automaton.reachable[t]):
                raise BpefstError(f"--dot-tokens: {t} is not a reachable token id")
        # Neighbourhood: the start state and the states q_t of the chosen tokens, with the arcs among them.
        states = {START: 0, **{t: k + 1 for k, t in enumerate(chosen)}}
        rows = [{t: states[t] for t in chosen if automaton.allowed(u, t)} for u in states]
        dfa = DFA(rows, 0, frozenset(range(len(rows))), check=False)
    else:
        if automaton.forest.size > DOT_TOKEN_LIMIT:
            raise BpefstError(f"the automaton has {automaton.forest.size:,} tokens; draw a neighbourhood with --dot-tokens ID,ID,...")
        dfa = automaton.to_dfa()
    return to_dot(dfa, label=label, max_states=10_000).encode("utf-8")


@click.command()
@click.argument("compiled", type=click.Path())
@click.argument("input", default="-", type=click.Path(allow_dash=True))
@tokenizer_options
@click.option("--tokenizer", "tokenizer_path", type=click.Path(), help="Check that COMPILED was built from this tokenizer.")
@click.option("--format", "fmt", type=click.Choice(["auto", "ids", "jsonl", "msgpack", "bin", "npy", "shards"]), default="auto",
              show_default=True,
              help="What `bpefst tokenize` wrote. ids: one stream of whitespace-separated ids; jsonl: one JSON array per "
                   "line, each checked on its own; msgpack: concatenated msgpack arrays; bin: raw little-endian ids "
                   "(--dtype); npy: a .npy array; shards: a --output-dir manifest (or its directory). auto: npy by its "
                   "header, shards for a directory or .json, bin/msgpack/jsonl by extension, else ids.")
@click.option("--dtype", type=click.Choice(["auto", "uint16", "uint32"]), default="auto", show_default=True,
              help="--format bin: the id type; auto: the one `tokenize --dtype auto` picks for this tokenizer.")
@click.option("--no-pretokenize", is_flag=True, help="Check BPE canonicity only (ignore the pre-tokenization pattern).")
@user_errors
def validate(compiled: str, input: str, pattern, specials, tokenizer_path: str | None, fmt: str, dtype: str,
             no_pretokenize: bool) -> None:
    """Check that token ids are exactly what the tokenizer produces (exit 0 yes, 1 no).

    Equivalent to decoding the ids, re-encoding the text with all special
    tokens allowed and comparing, in one streaming pass.  COMPILED is a
    `bpefst compile` artifact or any tokenizer.  INPUT may be compressed
    (gzip, bzip2, xz, zstd).

    \b
    Example:
      echo '9906 1917' | bpefst validate cl100k.dfa
      bpefst validate ../shared/data/gpt2/vocab.json train.bin
    """
    from ..pipeline.datasets import choose_dtype, detect_id_format, iter_id_blocks, load_manifest

    if fmt == "auto":
        fmt = detect_id_format(input)
    model, automaton = load_model_and_automaton(compiled, pattern, specials, tokenizer=tokenizer_path)
    validator = Validator(model, automaton, pretokenize=not no_pretokenize)
    if fmt in ("bin", "npy", "msgpack", "shards"):
        if fmt == "shards":
            manifest, _ = load_manifest(input)
            written_by = manifest.get("tokenizer", {}).get("fingerprint") if isinstance(manifest.get("tokenizer"), dict) else None
            if written_by != model.fingerprint:
                raise BpefstError(f"{input} was written with tokenizer {str(written_by)[:16]}..., not this one ({model.fingerprint[:16]}...)")
        blocks = iter_id_blocks(input, fmt, choose_dtype(dtype, model.max_id).name if fmt == "bin" else None)
        violation = validator.check_stream(block if isinstance(block, list) else block.tolist() for block in blocks)
        if violation:
            click.echo(violation.describe(model))
            sys.exit(1)
        click.echo(f"canonical: {validator.tokens_seen} tokens")
        return
    if fmt == "jsonl":
        checked = 0
        for line_no, line in enumerate(iter_input_lines(input), start=1):
            if not line.strip():
                continue
            with on_line(line_no):
                violation = validator.check(_json_ids(line, line_no))
            checked += 1
            if violation:
                click.echo(f"line {line_no}: {violation.describe(model)}")
                sys.exit(1)
        click.echo(f"canonical: {checked} sequences")
        return
    violation = validator.check_stream(parse_id_blocks(_read_blocks(input)), nonnegative=True)
    if violation:
        click.echo(violation.describe(model))
        sys.exit(1)
    click.echo(f"canonical: {validator.tokens_seen} tokens")


def _read_blocks(path: str, size: int = 1 << 20):
    if path == "-":
        from ..pipeline.inputs import open_input

        with open_input(path, "ids") as stream:  # decompressed if compressed
            while True:
                data = stream.read1(size)
                if not data:
                    return
                yield data
    else:
        yield from iter_input_lines(path)


def _json_ids(line: bytes, line_no: int) -> list[int]:
    with on_line(line_no):
        return parse_json_ids(line)
