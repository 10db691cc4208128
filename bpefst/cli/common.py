"""What every command shares: error handling, reading inputs, loading tokenizers.

Conventions (DESIGN.md): results on stdout, diagnostics on stderr; exit 0 on
success, 1 for a negative verdict, 2 for bad usage or bad input; no traceback
for user errors; a closed stdout pipe (``| head``) ends the command quietly.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator

import click

from ..artifact import note_input
from ..errors import BpefstError, DisallowedSpecialError
from ..tokenizer import BPEModel, load_tokenizer, pattern_override
from ..tokenizer.overrides import check_special_ids


class Failure(click.ClickException):
    """A BpefstError on its way out: one line on stderr, the error's exit code."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"bpefst: error: {self.format_message()}", err=True)


def user_errors(command: Callable) -> Callable:
    """Decorator: turn BpefstError into a one-line message and exit status 2."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except DisallowedSpecialError as exc:
            raise Failure(exc.cli_message(), exc.exit_code) from None
        except BpefstError as exc:
            raise Failure(str(exc), exc.exit_code) from None
        except MemoryError:
            raise Failure("out of memory", 2) from None

    return wrapper


@contextlib.contextmanager
def on_line(line_no: int) -> Iterator[None]:
    """Prefix an error raised while handling one input line with that line's number."""
    try:
        yield
    except BpefstError as exc:
        if str(exc).startswith(f"line {line_no}:"):
            raise
        raise BpefstError(f"line {line_no}: {exc}") from None


def read_input(path: str) -> bytes:
    """All bytes of a file, or of stdin for ``-``; gzip/bzip2/xz/zstd input is decompressed (by its magic bytes)."""
    from ..pipeline.inputs import read_all

    note_input(path)
    return read_all(path)


def iter_input_lines(path: str) -> Iterator[bytes]:
    """Lines of a file or stdin, streamed (and decompressed, see :func:`read_input`)."""
    from ..pipeline.inputs import iter_lines

    note_input(path)
    yield from iter_lines(path)


def parse_specials(values: tuple[str, ...]) -> dict[str, int] | None:
    """``--special TEXT=ID`` options -> dict (None when none given)."""
    if not values:
        return None
    specials: dict[str, int] = {}
    for value in values:
        text, sep, number = value.rpartition("=")
        if not sep or not text or not number.isdigit():
            raise BpefstError(f"--special expects TEXT=ID, found {value!r}")
        if len(number) > 20:
            raise BpefstError(f"--special {text!r}: an id of {len(number):,} digits is far too large (ids are below 2**32)")
        if text in specials and specials[text] != int(number):
            raise BpefstError(f"--special gives {text!r} two ids ({specials[text]} and {int(number)})")
        specials[text] = int(number)
    check_special_ids(specials)
    return specials


def load_model(path: str, pattern: str | None = None, specials: tuple[str, ...] = ()) -> BPEModel:
    """A tokenizer file with ``--pattern`` applied and ``--special`` tokens added."""
    return load_tokenizer(path, pattern=pattern_override(pattern), specials=parse_specials(specials))


def tokenizer_options(command: Callable) -> Callable:
    """``--pattern`` and ``--special`` for formats that do not carry them (tiktoken rank files)."""
    command = click.option(
        "--special",
        "specials",
        multiple=True,
        metavar="TEXT=ID",
        help="Add a special token (repeatable), e.g. for a tiktoken rank file; the file's own specials are kept.",
    )(command)
    command = click.option(
        "--pattern",
        metavar="NAME|REGEX",
        help="Pre-tokenization pattern: gpt2, gpt2-digits, cl100k, o200k, whitespace, none, or a regex (overrides the file's).",
    )(command)
    return command
