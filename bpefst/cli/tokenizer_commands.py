"""``bpefst info``, ``encode``, ``decode`` and ``convert``: the tokenizer model from the command line."""

from __future__ import annotations

import json
import sys

import click

from .. import native
from ..artifact import peek_kind, read_header_and_body, recorded_inputs
from ..errors import BpefstError
from ..pipeline.validate import parse_json_ids, parse_words
from ..tokenizer.wordpiece import is_wordpiece_file, load_wordpiece
from ..tokenizer import FORMATS, ReferenceEncoder, format_losses, save_tokenizer
from ..pipeline.encoder import Tokenizer
from .common import load_model, on_line, parse_specials, read_input, tokenizer_options, user_errors
from .train_command import check_tokenizer_output


@click.command()
@click.argument("tokenizer", type=click.Path())
@tokenizer_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@user_errors
def info(tokenizer: str, pattern: str | None, specials: tuple[str, ...], as_json: bool) -> None:
    """Describe a tokenizer or a bpefst artifact: kind, sizes, pattern, specials, fingerprint.

    \b
    Example:
      bpefst info ../shared/data/gpt2/vocab.json
    """
    summary = _artifact_summary(tokenizer)
    if summary is None and is_wordpiece_file(tokenizer):
        summary = load_wordpiece(tokenizer).summary()
    if summary is None:
        model = load_model(tokenizer, pattern, specials)
        summary = model.summary()
        summary["engine"] = native.engine_for(model)
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k!r}={v}" for k, v in value.items()) or "none"
        click.echo(f"{key + ':':<28}{value}")


def _artifact_summary(path: str) -> dict | None:
    """Header facts of a non-tokenizer artifact (compiled automata), else None."""
    kind = peek_kind(path)
    if kind is None or kind == "tokenizer":
        return None
    _load_artifact(path, kind)  # describe only what loads: a tampered file is refused here too
    document = read_header_and_body(path)
    body = document["body"]
    facts = {"kind": kind, "schema": document["schema"], "fingerprint": document["fingerprint"]}
    for key in ("encoding", "mode"):
        if isinstance(body.get(key), str):
            facts[key] = body[key]
    if kind == "token-guide" and body["source"]:  # (what the guide was promoted from: its regex, or its schema)
        source = body["source"]
        facts["source"] = source if len(source) <= _SOURCE_SHOWN else source[:_SOURCE_SHOWN] + "..."
    stats = body.get("stats")
    if isinstance(stats, dict):
        facts.update({str(k): v for k, v in stats.items() if isinstance(v, (int, float, str, bool))})
    return facts


_SOURCE_SHOWN = 200  # characters of a token guide's source that `info` prints


def _load_artifact(path: str, kind: str) -> None:
    """Load (and so validate) a compiled artifact of any kind."""
    from ..automata.serialize import load as load_automaton
    from ..bpe.canonical_io import load_canonical
    from ..bpe.transducer_io import read_transducer
    from ..promotion.token_automaton_io import load_token_automaton
    from ..promotion.token_guide_io import read_token_guide
    from ..training.counts import load_counts

    loaders = {"canonical-dfa": load_canonical, "transducer": read_transducer, "automaton": load_automaton,
               "token-automaton": load_token_automaton, "token-guide": read_token_guide, "counts": load_counts}
    if kind not in loaders:
        raise BpefstError(f"{path}: unknown artifact kind {kind!r}")
    loaders[kind](path)


@click.command()
@click.argument("tokenizer", type=click.Path())
@click.argument("input", default="-", type=click.Path(allow_dash=True))
@tokenizer_options
@click.option("--allowed-special", default="none", metavar="all|none|TOK,TOK", show_default=True,
              help="Special tokens recognised in the text; any other special token in the text is an error unless --allowed-special none.")
@click.option("--format", "fmt", type=click.Choice(["ids", "jsonl", "tokens"]), default="ids", show_default=True,
              help="ids: space-separated ids on one line; jsonl: one JSON array per input line; tokens: token texts.")
@click.option("--reference", is_flag=True,
              help="Use the reference encoder (textbook priority-queue BPE, the oracle the fast pipeline is tested against).")
@user_errors
def encode(tokenizer: str, input: str, pattern: str | None, specials: tuple[str, ...], allowed_special: str, fmt: str,
           reference: bool) -> None:
    """Tokenize a text: the ids tiktoken / HF tokenizers give.

    INPUT is a file or - for stdin, read whole (`bpefst tokenize` streams
    large inputs).  With --allowed-special none (the default), special tokens
    in the text are tokenized as plain text.

    \b
    Example:
      echo 'Hello world' | bpefst encode ../shared/data/gpt2/vocab.json
      echo 'Hello world' | bpefst encode ../shared/data/gpt2/vocab.json --reference
    """
    if reference:
        encoder = ReferenceEncoder(load_model(tokenizer, pattern, specials))
    else:
        encoder = Tokenizer.load(tokenizer, pattern=pattern, specials=parse_specials(specials))
    allowed, disallowed = _special_policy(allowed_special, encoder.model.specials)
    data = read_input(input)
    if fmt == "jsonl":
        for line in data.splitlines():
            ids = encoder.encode_bytes(line, allowed_special=allowed, disallowed_special=disallowed, errors="surrogateescape")
            sys.stdout.write(json.dumps(ids) + "\n")
        return
    ids = encoder.encode_bytes(data, allowed_special=allowed, disallowed_special=disallowed, errors="surrogateescape")
    if fmt == "tokens":
        for token_id in ids:
            sys.stdout.write(json.dumps(encoder.decode_bytes([token_id]).decode("utf-8", errors="replace"), ensure_ascii=False) + "\n")
    elif ids:
        sys.stdout.write(" ".join(map(str, ids)) + "\n")


def _special_policy(value: str, specials: dict[str, int]) -> tuple[set[str], set[str]]:
    """``--allowed-special`` -> (allowed, disallowed) in tiktoken's sense."""
    if value == "all":
        return set(specials), set()
    if value == "none":
        return set(), set()
    allowed = {s for s in value.split(",") if s}
    unknown = allowed - set(specials)
    if unknown:
        raise BpefstError(f"--allowed-special names {sorted(unknown)[0]!r}, which is not a special token of this tokenizer")
    return allowed, set(specials) - allowed


@click.command()
@click.argument("tokenizer", type=click.Path())
@click.argument("input", default="-", type=click.Path(allow_dash=True))
@tokenizer_options
@click.option("--format", "fmt", type=click.Choice(["ids", "jsonl"]), default="ids", show_default=True,
              help="ids: whitespace-separated ids; jsonl: one JSON array of ids per line (one output line each).")
@user_errors
def decode(tokenizer: str, input: str, pattern: str | None, specials: tuple[str, ...], fmt: str) -> None:
    """Turn token ids back into text (raw bytes for byte-level tokenizers).

    \b
    Example:
      echo '15496 995' | bpefst decode ../shared/data/gpt2/vocab.json
    """
    encoder = Tokenizer.load(tokenizer, pattern=pattern, specials=parse_specials(specials))
    data = read_input(input)
    out = sys.stdout.buffer
    if fmt == "jsonl":
        for line_no, line in enumerate(data.splitlines(), start=1):
            if line.strip():
                with on_line(line_no):
                    out.write(_decode_ids(encoder, _parse_json_ids(line, line_no)) + b"\n")
        return
    out.write(_decode_ids(encoder, _parse_ids(data)))


def _decode_ids(encoder: Tokenizer, ids: list[int]) -> bytes:
    if encoder.model.is_byte_level:
        return encoder.decode_bytes(ids)
    return encoder.decode(ids).encode("utf-8")


def _parse_ids(data: bytes) -> list[int]:
    return parse_words(data.split())


def _parse_json_ids(line: bytes, line_no: int) -> list[int]:
    with on_line(line_no):
        return parse_json_ids(line)


@click.command()
@click.argument("tokenizer", type=click.Path())
@tokenizer_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="bpefst", show_default=True, help="Output format.")
@click.option("--output", "-o", required=True, type=click.Path(), help="Output file (a directory or ...vocab.json for gpt2).")
@user_errors
def convert(tokenizer: str, pattern: str | None, specials: tuple[str, ...], fmt: str, output: str) -> None:
    """Convert a tokenizer between formats (bpefst, HF tokenizer.json, GPT-2, tiktoken).

    \b
    Example:
      bpefst convert ../shared/data/tiktoken/cl100k_base.tiktoken.gz -o cl100k.bpefst
    """
    check_tokenizer_output(output, fmt, [tokenizer])
    model = load_model(tokenizer, pattern, specials)
    check_tokenizer_output(output, fmt, recorded_inputs())  # and every file the reader opened (vocab.json's merges.txt)
    if fmt in ("gpt2", "tiktoken") and not model.is_byte_level:  # before the notes, which would not apply
        raise BpefstError(f"--format {fmt} holds byte-level tokenizers only and {tokenizer} is character-level; use --format hf or bpefst")
    for note in format_losses(model, fmt):
        click.echo(f"bpefst: note: {note}", err=True)
    for path in save_tokenizer(model, output, fmt):
        click.echo(f"wrote {path}", err=True)
