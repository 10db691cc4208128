"""``bpefst tokenize``: streaming, exact, linear-time tokenization of files, directories, globs or stdin.

Options are parsed here; the work is in the library: :mod:`bpefst.pipeline.inputs`
(opening and decompressing inputs, documents), :mod:`bpefst.pipeline.documents`
(encoding documents in order, across processes), :mod:`bpefst.pipeline.datasets`
(bin / npy / index / shard writers) and :mod:`bpefst.pipeline.tokenize` (the
single-stream text formats).

Also :func:`compile_transducer_command`, the body of ``bpefst compile --kind
transducer`` (the ``compile`` command itself lives elsewhere and calls it).
"""

from __future__ import annotations

import os
import sys
import time

import click

from ..errors import BpefstError
from .common import parse_specials, tokenizer_options, user_errors
from .progress import byte_progress

FORMAT_CHOICES = ("ids", "jsonl", "tokens", "msgpack", "bin", "npy")
BINARY_FORMATS = ("bin", "npy")
DEFAULT_SHARD_SIZE = 100_000_000  # ids: 200 MB of uint16, nanoGPT's FineWeb shard size


@click.command()
@click.argument("tokenizer", metavar="TOKENIZER_OR_COMPILED", type=click.Path())
@click.argument("inputs", metavar="[INPUT]...", nargs=-1, type=click.Path(allow_dash=True))
@tokenizer_options
@click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES), default=None,
              help="ids (default): space-separated ids on one line; jsonl: one JSON array per input line (per document "
                   "with several inputs, --eot/--bot or --split-lines); tokens: one JSON string per token; msgpack: "
                   "msgpack arrays of ids, concatenated; bin: raw little-endian ids (--dtype); npy: a NumPy .npy array "
                   "(needs --output). bin is the default with --output-dir.")
@click.option("--output", "-o", type=click.Path(), help="Write the ids to this file (atomically) instead of stdout.")
@click.option("--output-dir", type=click.Path(file_okay=False),
              help="Write shards of at most --shard-size ids (bin or npy) and manifest.json + index.npy into this directory.")
@click.option("--shard-size", type=click.IntRange(1, None), default=None,
              help="Ids per shard with --output-dir.  [default: 100000000; with --engine ray: one shard per input]")
@click.option("--dtype", type=click.Choice(["auto", "uint16", "uint32"]), default="auto", show_default=True,
              help="bin/npy id type; auto: uint16 when every id of the tokenizer fits, else uint32.")
@click.option("--index", "index_path", type=click.Path(),
              help="Write a .npy of uint64 document end offsets (document k is ids[ends[k-1]:ends[k]]).")
@click.option("--eot", metavar="TOKEN|ID", help="Append this token after every document (e.g. '<|endoftext|>').")
@click.option("--bot", metavar="TOKEN|ID", help="Put this token before every document.")
@click.option("--input-format", "input_kind", type=click.Choice(["auto", "text", "jsonl", "parquet"]), default="auto",
              show_default=True, help="auto: by file name (.jsonl/.json, .parquet, after .gz/.bz2/.xz/.zst), else text.")
@click.option("--text-field", default="text", show_default=True, help="JSONL field / Parquet column holding the text.")
@click.option("--split-lines", is_flag=True, help="Text inputs: every non-empty line is a document (default: every file is one).")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=1, show_default=True,
              help="Worker processes (threads of the compiled core on the documents path); output is identical for "
                   "any number and stays in input order.")
@click.option("--allowed-special", default="none", metavar="all|none|TOK,TOK", show_default=True,
              help="Special tokens recognised in the text; with a list, any other special token in the text is an "
                   "error; with none, special-token text is ordinary text.")
@click.option("--disallowed-special", default=None, metavar="all|none|TOK,TOK",
              help="Special tokens whose appearance in the text is an error (default: the specials not allowed when "
                   "--allowed-special is a list, else none).")
@click.option("--cache-size", type=click.IntRange(1, None), default=None, help="Chunk -> ids cache entries (default 262144, about 60 MB of real text; the older half is dropped when full).")
@click.option("--max-states", type=click.IntRange(16, None), default=None, help="Transducer states kept in the lazy cache.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: Ray workers read and tokenize the input files themselves into --output-dir: one shard per "
                   "input, or with --shard-size the shards one machine writes, byte for byte (pip install 'bpefst[ray]').")
@click.option("--address", metavar="ADDR", help="With --engine ray: the cluster to join [default: RAY_ADDRESS, else a local cluster].")
@click.option("--resume", is_flag=True, help="With --engine ray: continue an unfinished run in --output-dir, skipping complete shards.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display (it is shown only when stderr is a terminal).")
@click.option("--stats", is_flag=True, help="Print a summary (documents, ids, MB/s) on stderr at the end.")
@user_errors
def tokenize(tokenizer: str, inputs: tuple[str, ...], pattern: str | None, specials: tuple[str, ...], fmt: str | None,
             output: str | None, output_dir: str | None, shard_size: int | None, dtype: str, index_path: str | None,
             eot: str | None, bot: str | None, input_kind: str, text_field: str, split_lines: bool, jobs: int,
             allowed_special: str, disallowed_special: str | None, cache_size: int | None, max_states: int | None,
             engine: str, address: str | None, resume: bool, quiet: bool, stats: bool) -> None:
    """Tokenize text exactly as tiktoken / HF tokenizers do, streaming, in linear time.

    TOKENIZER_OR_COMPILED is any tokenizer bpefst reads (tokenizer.json,
    vocab.json, tiktoken rank file, .bpefst) or a transducer artifact from
    `bpefst compile --kind transducer`.  INPUTs are files, directories (walked
    in sorted order), globs or - for stdin (the default); gzip, bzip2, xz and zstd
    input is decompressed (detected by its first bytes).  Each text file is
    one document (--split-lines: each line), each JSONL record or Parquet row
    one (--text-field); documents are encoded separately, in input order,
    with --eot / --bot ids around them.  Byte-level tokenizers accept any
    bytes; character-level ones need UTF-8.

    \b
    Example:
      cat notes.txt | bpefst tokenize ../shared/data/tiktoken/cl100k_base.tiktoken.gz
      bpefst tokenize ../shared/data/gpt2/vocab.json data/ --eot '<|endoftext|>' --format bin -o train.bin
      bpefst tokenize cl100k.fst 'docs/*.jsonl.xz' --eot '<|endoftext|>' --output-dir shards --jobs 2
      bpefst tokenize cl100k.bpefst /shared/docs/ --eot '<|endoftext|>' --engine ray --address auto --output-dir /shared/shards
    """
    from ..pipeline.encoder import Tokenizer
    from ..pipeline.inputs import expand_inputs

    began = time.perf_counter()
    if fmt is None:
        fmt = "bin" if output_dir else "ids"
    if shard_size is not None and not output_dir:
        raise BpefstError("--shard-size applies to --output-dir")
    if dtype != "auto" and fmt not in BINARY_FORMATS:
        raise BpefstError(f"--dtype applies to --format bin or npy, not {fmt}")
    sources = expand_inputs(inputs, input_kind)
    if engine == "ray" or address is not None or resume:
        from .tokenize_ray import tokenize_on_ray

        tokenize_on_ray(
            tokenizer=tokenizer, sources=sources, pattern=pattern, specials=specials, fmt=fmt, output=output,
            output_dir=output_dir, shard_size=shard_size, dtype=dtype, index_path=index_path, eot=eot, bot=bot,
            text_field=text_field, split_lines=split_lines, jobs=jobs, allowed_special=allowed_special,
            disallowed_special=disallowed_special, cache_size=cache_size, max_states=max_states, engine=engine,
            address=address, resume=resume, quiet=quiet, stats=stats, began=began)
        return
    _check_destinations(fmt, output, output_dir, index_path, sources)
    kwargs = {}
    if cache_size is not None:
        kwargs["cache_size"] = cache_size
    if max_states is not None:
        kwargs["max_states"] = max_states
    tok = Tokenizer.load(tokenizer, pattern, parse_specials(specials), **kwargs)
    loaded = time.perf_counter()
    allowed, disallowed = special_policy(allowed_special, disallowed_special, tok.model.specials)
    streaming = (len(sources) == 1 and sources[0].kind == "text" and not split_lines and eot is None and bot is None
                 and fmt not in BINARY_FORMATS and not output_dir and not index_path)
    progress = byte_progress("tokenizing", _total_size(sources), quiet)
    try:
        if streaming:
            read, documents, ids = _tokenize_stream(tok, sources[0].path, fmt, output, allowed, disallowed, jobs, progress), 1, None
        else:
            read, documents, ids = _tokenize_dataset(tok, sources, fmt, output, output_dir, shard_size, dtype, index_path,
                                                     eot, bot, text_field, split_lines, allowed, disallowed, jobs, progress)
    finally:
        progress.close()
        tok.close()
    if stats:
        seconds = time.perf_counter() - loaded
        rate = read / seconds / 1e6 if seconds > 0 else 0.0
        counted = f"{documents:,} documents, {ids:,} ids, " if ids is not None else ""
        click.echo(f"bpefst: load {loaded - began:.2f} s; {counted}{read:,} bytes in {seconds:.2f} s ({rate:.2f} MB/s); "
                   f"engine: {tok.engine}", err=True)
        transducer = vars(tok).get("transducer")  # only if a long chunk made the pure path build it
        if transducer is not None:
            for key, value in transducer.stats().items():
                click.echo(f"bpefst: transducer {key}: {value}", err=True)


def _check_destinations(fmt: str, output: str | None, output_dir: str | None, index_path: str | None, sources) -> None:
    """Refuse impossible or dangerous output choices before any work."""
    from ..artifact import check_writable, refuse_overwriting_inputs

    if output and output_dir:
        raise BpefstError("give --output or --output-dir, not both")
    if output_dir and fmt not in BINARY_FORMATS:
        raise BpefstError(f"--output-dir writes bin or npy shards, not --format {fmt}")
    if fmt == "npy" and not output and not output_dir:
        raise BpefstError("--format npy needs --output FILE (the .npy header is written last, so stdout will not do)")
    if fmt in BINARY_FORMATS and not output and not output_dir and sys.stdout.isatty():
        raise BpefstError("refusing to write binary ids to a terminal; give --output FILE or redirect stdout")
    if index_path and output_dir:
        raise BpefstError("--output-dir writes its own index.npy; --index is for --output")
    named = [source.path for source in sources]
    for path, name in ((output, "the output"), (index_path, "--index")):
        if path:
            check_writable(path, name)
            refuse_overwriting_inputs(path, named)
    if output and index_path and os.path.realpath(output) == os.path.realpath(index_path):
        raise BpefstError("--index and --output name the same file")
    if output_dir:
        if os.path.exists(output_dir) and not os.path.isdir(output_dir):
            raise BpefstError(f"--output-dir {output_dir} exists and is not a directory")
        if os.path.isdir(output_dir) and any(name.startswith("shard_") or name == "manifest.json" for name in os.listdir(output_dir)):
            raise BpefstError(f"--output-dir {output_dir} already holds shards or a manifest; choose an empty directory")
        for source in sources:
            if source.path != "-" and os.path.realpath(os.path.dirname(os.path.abspath(source.path))) == os.path.realpath(output_dir):
                raise BpefstError(f"--output-dir {output_dir} holds the input {source.path}; write the shards elsewhere")


def _total_size(sources) -> int | None:
    sizes = [source.size for source in sources]
    return None if any(size is None for size in sizes) else sum(sizes)


def _tokenize_stream(tok, path: str, fmt: str, output: str | None, allowed, disallowed, jobs: int, progress) -> int:
    """One text input, a text format: the streaming path that writes ids as soon as they are decided."""
    from ..pipeline.datasets import AtomicFile
    from ..pipeline.inputs import open_input
    from ..pipeline.tokenize import tokenize_stream

    target = AtomicFile(output) if output else None
    out = target.handle if target is not None else sys.stdout.buffer
    try:
        with open_input(path) as stream:
            counter = _CountingReader(stream, lambda: progress.update(stream.compressed_read))
            tokenize_stream(tok, counter, out, fmt, allowed, disallowed, jobs=jobs)
        if target is not None:
            target.commit()
    except BaseException:
        if target is not None:
            target.abort()
        raise
    return counter.count


def _tokenize_dataset(tok, sources, fmt: str, output, output_dir, shard_size: int, dtype_name: str, index_path, eot, bot,
                      text_field: str, split_lines: bool, allowed, disallowed, jobs: int, progress) -> tuple[int, int, int]:
    """Many inputs as documents into a dataset writer: returns (bytes of text read, documents, ids)."""
    from ..pipeline.datasets import (DTYPES, INDEX_NAME, AtomicFile, DatasetWriter, IdWriter, ShardWriter, choose_dtype,
                                     run_settings)
    from ..pipeline.documents import tokenize_documents
    from ..pipeline.inputs import iter_documents
    from ..pipeline.tokenize import FormattedIdSink

    model = tok.model
    eot_id = resolve_token(model, eot, "--eot") if eot is not None else None
    bot_id = resolve_token(model, bot, "--bot") if bot is not None else None
    binary = fmt in BINARY_FORMATS
    dtype = choose_dtype(dtype_name, model.max_id) if binary else None
    target = None
    created = None
    if output_dir:
        created = output_dir if not os.path.exists(output_dir) else None
        try:
            os.makedirs(output_dir, exist_ok=True)
        except OSError as exc:
            raise BpefstError(f"cannot create {output_dir}: {exc.strerror or exc}") from None
        sink = ShardWriter(output_dir, dtype, shard_size or DEFAULT_SHARD_SIZE, fmt)
        index_path = os.path.join(output_dir, INDEX_NAME)
    elif binary:
        sink = IdWriter(dtype, fmt, path=output) if output else IdWriter(dtype, fmt, stream=sys.stdout.buffer)
    else:
        target = AtomicFile(output) if output else None
        sink = FormattedIdSink(tok, target.handle if target is not None else sys.stdout.buffer, fmt)
    index = IdWriter(DTYPES["uint64"], "npy", path=index_path) if index_path else None
    writer = DatasetWriter(sink, bot=bot_id, eot=eot_id, index=index)
    done_before = [0, 0]  # bytes of the finished files: as stored, after decompression
    read_now = [0, 0]  # the same for the file being read

    def on_read(stored: int, content: int) -> None:
        read_now[:] = stored, content

    def on_batch(documents: int, ids: int) -> None:  # input read ahead of the encoder by at most one batch
        progress.update(done_before[0] + read_now[0], documents, ids)

    def documents():
        for source in sources:
            yield from iter_documents(source, model.is_byte_level, text_field, split_lines, on_read)
            done_before[0] += read_now[0]
            done_before[1] += read_now[1]
            read_now[:] = 0, 0

    try:
        tokenize_documents(tok, documents(), writer, jobs, allowed, disallowed, on_batch)
        manifest = {}
        if output_dir:
            run = run_settings(file_format=fmt, dtype=dtype.name, eot=eot_id, bot=bot_id, text_field=text_field,
                               split_lines=split_lines, allowed=allowed, disallowed=disallowed, shard_size=sink.shard_size,
                               fingerprint=model.fingerprint, inputs=sources)
            manifest = {"fingerprint": model.fingerprint, "max_id": model.max_id, "index": INDEX_NAME, "extra": {"run": run}}
        writer.close(**manifest)
        if target is not None:
            target.commit()
    except BaseException:
        writer.abort()
        if target is not None:
            target.abort()
        if created is not None and not os.listdir(created):
            os.rmdir(created)
        raise
    return done_before[1], writer.documents, writer.ids


def resolve_token(model, value: str, option: str) -> int:
    """``--eot`` / ``--bot``: a special token's text, an ordinary token's text, or an id of this tokenizer."""
    if value in model.specials:
        return model.specials[value]
    if value.isdigit():
        token = int(value)
        if token in model.vocab or token in model.specials.values():
            return token
        raise BpefstError(f"{option} {token} is not a token id of this tokenizer (ids go up to {model.max_id:,})")
    wanted = value.encode("utf-8")
    for token in model.vocab:
        if model.token_bytes(token) == wanted:
            return token
    names = ", ".join(sorted(model.specials)[:4]) or "none"
    raise BpefstError(f"{option} {value!r} is neither a token nor an id of this tokenizer (special tokens: {names})")


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
    """Wraps a binary stream: counts the bytes read through ``read1`` and calls ``on_read()`` after each read."""

    def __init__(self, stream, on_read=lambda: None):
        self._stream = stream
        self._on_read = on_read
        self.count = 0

    def read1(self, size: int = -1) -> bytes:
        read = getattr(self._stream, "read1", None) or self._stream.read
        data = read(size)
        self.count += len(data)
        self._on_read()
        return data


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
