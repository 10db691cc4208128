"""``bpefst tokenize``: streaming, exact, linear-time tokenization of stdin or a file.

Also :func:`compile_transducer_command`, the body of ``bpefst compile --kind
transducer`` (the ``compile`` command itself lives elsewhere and calls it).
"""

from __future__ import annotations

import sys
import time

import click

from ..errors import BpefstError
from .common import parse_specials, tokenizer_options, user_errors

FORMAT_CHOICES = ("ids", "jsonl", "tokens", "msgpack")


@click.command()
@click.argument("tokenizer", metavar="TOKENIZER_OR_COMPILED", type=click.Path())
@click.argument("input", default="-", type=click.Path(allow_dash=True))
@tokenizer_options
@click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES), default="ids", show_default=True,
              help="ids: space-separated ids on one line; jsonl: one JSON array per input line (each line tokenized "
                   "on its own); tokens: one JSON string per token; msgpack: msgpack arrays of ids, concatenated.")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Worker processes; the text is split at safe boundaries and output stays in input order.")
@click.option("--allowed-special", default="none", metavar="all|none|TOK,TOK", show_default=True,
              help="Special tokens recognised in the text; with a list, any other special token in the text is an "
                   "error; with none, special-token text is ordinary text.")
@click.option("--disallowed-special", default=None, metavar="all|none|TOK,TOK",
              help="Special tokens whose appearance in the text is an error (default: the specials not allowed when "
                   "--allowed-special is a list, else none).")
@click.option("--cache-size", type=click.IntRange(1, None), default=None, help="Chunk -> ids cache entries (bounded memory).")
@click.option("--max-states", type=click.IntRange(16, None), default=None, help="Transducer states kept in the lazy cache.")
@click.option("--stats", is_flag=True, help="Print throughput and transducer statistics on stderr at the end.")
@user_errors
def tokenize(tokenizer: str, input: str, pattern: str | None, specials: tuple[str, ...], fmt: str, jobs: int,
             allowed_special: str, disallowed_special: str | None, cache_size: int | None, max_states: int | None,
             stats: bool) -> None:
    """Tokenize text exactly as tiktoken / HF tokenizers do, streaming, in linear time.

    TOKENIZER_OR_COMPILED is any tokenizer bpefst reads (tokenizer.json,
    vocab.json, tiktoken rank file, .bpefst) or a transducer artifact from
    `bpefst compile --kind transducer`.  INPUT is a file or - for stdin (the
    default); ids appear on stdout as soon as they are decided.  Byte-level
    tokenizers accept any bytes; character-level ones need UTF-8.

    \b
    Example:
      cat notes.txt | bpefst tokenize ../shared/data/tiktoken/cl100k_base.tiktoken.gz
      bpefst tokenize cl100k.fst big.txt --jobs 2 --format msgpack > ids.msgpack
    """
    from ..pipeline.encoder import Tokenizer
    from ..pipeline.tokenize import tokenize_stream

    began = time.perf_counter()
    kwargs = {}
    if cache_size is not None:
        kwargs["cache_size"] = cache_size
    if max_states is not None:
        kwargs["max_states"] = max_states
    tok = Tokenizer.load(tokenizer, pattern, parse_specials(specials), **kwargs)
    loaded = time.perf_counter()
    allowed, disallowed = special_policy(allowed_special, disallowed_special, tok.model.specials)
    stream, opened = _open_input(input)
    counter = _CountingReader(stream)
    try:
        tokenize_stream(tok, counter, sys.stdout.buffer, fmt, allowed, disallowed, jobs=jobs)
    finally:
        if opened:
            stream.close()
        tok.close()
    if stats:
        seconds = time.perf_counter() - loaded
        rate = counter.count / seconds / 1e6 if seconds > 0 else 0.0
        click.echo(f"bpefst: load {loaded - began:.2f} s; {counter.count} bytes in {seconds:.2f} s ({rate:.2f} MB/s)", err=True)
        if tok.transducer is not None:
            for key, value in tok.transducer.stats().items():
                click.echo(f"bpefst: transducer {key}: {value}", err=True)


def special_policy(allowed_value: str, disallowed_value: str | None, specials: dict[str, int]) -> tuple[set[str], set[str]]:
    """``--allowed-special`` / ``--disallowed-special`` -> (allowed, disallowed)."""

    def parse(value: str, option: str) -> set[str]:
        if value == "all":
            return set(specials)
        if value == "none":
            return set()
        names = {s for s in value.split(",") if s}
        unknown = names - set(specials)
        if unknown:
            raise BpefstError(f"{option} names {sorted(unknown)[0]!r}, which is not a special token of this tokenizer")
        return names

    allowed = parse(allowed_value, "--allowed-special")
    if disallowed_value is None:
        disallowed = set(specials) - allowed if allowed_value not in ("all", "none") else set()
    else:
        disallowed = parse(disallowed_value, "--disallowed-special") - allowed
    return allowed, disallowed


class _CountingReader:
    """Wraps a binary stream and counts the bytes read through ``read1``."""

    def __init__(self, stream):
        self._stream = stream
        self.count = 0

    def read1(self, size: int = -1) -> bytes:
        read = getattr(self._stream, "read1", None) or self._stream.read
        data = read(size)
        self.count += len(data)
        return data


def _open_input(path: str):
    import os

    if path == "-":
        return sys.stdin.buffer, False
    if os.path.isdir(path):
        raise BpefstError(f"{path} is a directory, not a file")
    try:
        return open(path, "rb"), True
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None


def compile_transducer_command(tokenizer: str, output: str, pattern: str | None = None, specials: tuple[str, ...] = (),
                               budget: int | None = None, max_states: int | None = None, stats: bool = False) -> dict:
    """``bpefst compile TOKENIZER --kind transducer --output X [--budget N] [--max-states M] [--stats]``.

    Builds the transducer eagerly up to ``budget`` states (breadth first from the
    start state), writes the artifact (the tokenizer embedded, the eager states,
    the lazy cache bound) and, with ``stats``, prints states, arcs, maximum output
    delay and build time on stderr.  Returns the statistics.
    """
    from ..bpe.transducer import DEFAULT_MAX_STATES
    from ..bpe.transducer_io import compile_transducer, write_transducer
    from .common import load_model

    model = load_model(tokenizer, pattern, specials)
    began = time.perf_counter()
    transducer, facts = compile_transducer(model, budget, max_states or DEFAULT_MAX_STATES)
    facts["total_seconds"] = round(time.perf_counter() - began, 3)
    write_transducer(output, model, transducer, facts)
    if stats:
        for key in ("states", "arcs", "complete", "max_output_delay", "max_tokens_per_arc", "alphabet",
                    "max_token_length", "lazy_max_states", "setup_seconds", "build_seconds", "total_seconds"):
            click.echo(f"{key + ':':<22}{facts[key]}", err=True)
    click.echo(f"wrote {output}", err=True)
    return facts
