"""The ``bpefst`` click group: every command, registered under one name."""

from __future__ import annotations

import click

from .. import __version__
from .automaton_commands import compile_command, validate
from .count_command import count
from .streams import Interrupted, PipeClosed
from .promote_command import promote_command
from .tokenize_command import tokenize
from .tokenizer_commands import convert, decode, encode, info
from .train_command import train


class Commands(click.Group):
    """The group; a closed pipe or Ctrl-C inside a command passes click by as an exception it does not handle
    (click would print "Aborted!" or exit 1), for :func:`bpefst.cli.main` to give its own exit status."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise PipeClosed from None
        except KeyboardInterrupt:
            raise Interrupted from None


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bpefst")
def cli() -> None:
    """bpefst: compile BPE tokenizers into automata; train, tokenize, validate.

    \b
    Example:
      bpefst info ../shared/data/gpt2/vocab.json
    """


for _command in (train, count, compile_command, tokenize, promote_command, validate, info, encode, decode, convert):
    cli.add_command(_command)
