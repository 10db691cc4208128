"""The ``bpefst`` click group: every command, registered under one name and imported when it runs."""

from __future__ import annotations

import click

import importlib

from .. import __version__
from .streams import Interrupted, PipeClosed

# name -> (module, attribute): a command's module is imported when the command runs, so `bpefst tokenize`
# does not pay for importing training, promotion and the automata (about half of start-up)
COMMANDS = {
    "train": ("train_command", "train"),
    "count": ("count_command", "count"),
    "compile": ("automaton_commands", "compile_command"),
    "tokenize": ("tokenize_command", "tokenize"),
    "promote": ("promote_command", "promote_command"),
    "validate": ("automaton_commands", "validate"),
    "info": ("tokenizer_commands", "info"),
    "encode": ("tokenizer_commands", "encode"),
    "decode": ("tokenizer_commands", "decode"),
    "convert": ("tokenizer_commands", "convert"),
}


class Commands(click.Group):
    """The group; a closed pipe or Ctrl-C inside a command passes click by as an exception it does not handle
    (click would print "Aborted!" or exit 1), for :func:`bpefst.cli.main` to give its own exit status."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands or name not in COMMANDS:  # added with add_command, or unknown
            return super().get_command(ctx, name)
        module, attribute = COMMANDS[name]
        return getattr(importlib.import_module(f"{__package__}.{module}"), attribute)

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

