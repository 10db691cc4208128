"""The ``bpefst`` command line: click commands that parse arguments and call the layers.

No algorithm lives here; each command is a thin shell over a library function.
"""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from .automaton_commands import compile_command, validate
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


for _command in (train, compile_command, tokenize, promote_command, validate, info, encode, decode, convert):
    cli.add_command(_command)


def main() -> None:
    """Console entry point: run the CLI, ending quietly on a closed pipe or Ctrl-C."""
    try:
        cli.main(prog_name="bpefst", standalone_mode=True)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(0)
    except KeyboardInterrupt:
        _silence_stdout()
        sys.exit(130)


def _silence_stdout() -> None:
    # Python flushes stdout at exit; on a closed pipe that flush would print a
    # second error, so point stdout at /dev/null first.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
