"""The ``bpefst`` command line: click commands that parse arguments and call the layers.

No algorithm lives here; each command is a thin shell over a library function.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from .automaton_commands import compile_command, validate
from .count_command import count
from .promote_command import promote_command
from .tokenize_command import tokenize
from .tokenizer_commands import convert, decode, encode, info
from .train_command import train


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bpefst")
def cli() -> None:
    """bpefst: compile BPE tokenizers into automata; train, tokenize, validate.

    \b
    Example:
      bpefst info ../shared/data/gpt2/vocab.json
    """


for _command in (train, count, compile_command, tokenize, promote_command, validate, info, encode, decode, convert):
    cli.add_command(_command)


def main() -> None:
    """Console entry point: run the CLI, ending quietly on a closed pipe or Ctrl-C.

    Output that cannot be written (a full disk behind stdout) ends the command
    with one line and exit 2; stdout is flushed here, not at interpreter exit,
    where a failure would print a traceback-like "Exception ignored" message.
    """
    code: int | str | None = 0
    try:
        cli.main(prog_name="bpefst", standalone_mode=True)
    except SystemExit as done:
        code = done.code
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except KeyboardInterrupt:
        _silence_stdout()
        sys.exit(130)
    except OSError as exc:
        _fail_writing(exc)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except OSError as exc:
        _fail_writing(exc)
    sys.exit(code)


def _fail_writing(exc: OSError) -> None:
    _silence_stdout()
    where = f" {exc.filename}" if exc.filename else " to stdout"
    print(f"bpefst: error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
    sys.exit(2)


def _silence_stdout() -> None:
    # Python flushes stdout at exit; on a closed pipe that flush would print a
    # second error, so point stdout at /dev/null first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
