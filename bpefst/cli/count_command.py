"""``bpefst count``: count a corpus's chunks into a mergeable ``counts`` artifact (:mod:`bpefst.training.counts`).

Also the ``--engine`` / ``--address`` / ``--split-size`` options that ``count``
and ``train`` share, and :func:`count_with_engine`, which both call.
"""

from __future__ import annotations

import time
from typing import Callable

import click

from ..artifact import check_writable, refuse_overwriting_inputs
from ..errors import BpefstError
from ..distributed.counting import DEFAULT_SPLIT_SIZE  # no Ray import: Ray is imported when a task is sent
from ..training import ALPHABETS, TIE_BREAKS
from ..training.counts import ChunkCounts, CountSettings, count_files, save_counts
from ..training.progress import TrainingProgress
from .common import user_errors

ENGINES = ("local", "ray")


def engine_options(command: Callable) -> Callable:
    """``--engine``, ``--address`` and ``--split-size``."""
    command = click.option(
        "--split-size", type=click.IntRange(min=1 << 10), default=DEFAULT_SPLIT_SIZE, show_default=True, metavar="BYTES",
        help="With --engine ray: bytes of input per Ray task (each worker reads its own byte range, cut where the cut cannot change the chunks).",
    )(command)
    command = click.option(
        "--address", metavar="ADDR",
        help="With --engine ray: the cluster to join (ray://host:10001, host:6379 or auto) [default: RAY_ADDRESS, else a local cluster].",
    )(command)
    command = click.option(
        "--engine", type=click.Choice(ENGINES), default="local", show_default=True,
        help="local: --jobs processes on this machine; ray: tasks on a Ray cluster (pip install 'bpefst[ray]').",
    )(command)
    return command


def counting_options(command: Callable) -> Callable:
    """The options that decide which chunks are counted (shared by ``count`` and ``train``)."""
    for decorator in reversed(
        [
            click.option("--special-token", "special_tokens", multiple=True, metavar="TOK",
                         help="A special token (repeatable): split off before counting, never merged; ids 0, 1, ..."),
            click.option("--pattern", metavar="NAME|REGEX",
                         help="Pre-tokenization: gpt2, gpt2-digits, cl100k, o200k, whitespace, none, or a regex [default: gpt2 for bytes, whitespace for chars]."),
            click.option("--alphabet", type=click.Choice(ALPHABETS), default=None,
                         help="bytes: byte-level BPE (256 base tokens); chars: character-level BPE over the corpus's characters [default: bytes]."),
            click.option("--tie-break", type=click.Choice(TIE_BREAKS), default=None,
                         help="lexicographic: greatest pair of byte strings wins (CS336); hf: reproduce HF tokenizers' BpeTrainer, "
                              "which counts each line on its own [default: lexicographic]."),
        ]
    ):
        command = decorator(command)
    return command


def check_engine_options(engine: str, address: str | None, split_size: int, jobs: int | None) -> None:
    """Refuse engine options that the chosen engine would ignore."""
    if engine != "ray" and (address is not None or split_size != DEFAULT_SPLIT_SIZE):
        raise BpefstError("--address and --split-size apply to --engine ray only")
    if engine == "ray" and jobs is not None:
        raise BpefstError("--jobs applies to --engine local; a Ray cluster runs as many tasks as it has CPUs")


def count_with_engine(
    corpus: list[str],
    settings: CountSettings,
    *,
    engine: str,
    address: str | None,
    split_size: int,
    jobs: int | None,
    progress: TrainingProgress,
) -> ChunkCounts:
    if engine == "ray":
        from ..distributed.cluster import quiet_driver
        from ..distributed.counting import count_files_on_ray

        quiet_driver()
        return count_files_on_ray(corpus, settings, address=address, split_size=split_size, progress=progress)
    return count_files(corpus, settings, jobs=jobs, progress=progress)


@click.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path(allow_dash=True))
@counting_options
@click.option("--jobs", "-j", type=click.IntRange(min=1), metavar="J", help="Counting processes with --engine local [default: number of CPUs].")
@engine_options
@click.option("--output", "-o", required=True, type=click.Path(), help="The counts artifact to write.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display or summary.")
@user_errors
def count(
    corpus: tuple[str, ...],
    special_tokens: tuple[str, ...],
    pattern: str | None,
    alphabet: str | None,
    tie_break: str | None,
    jobs: int | None,
    engine: str,
    address: str | None,
    split_size: int,
    output: str,
    quiet: bool,
) -> None:
    """Count the pre-tokenized chunks of CORPUS files (- for stdin) into a counts artifact.

    Count tables add up: count each part of a corpus anywhere (cut between
    documents), then `bpefst train --from-counts` sums them and learns the
    merges of training on the whole corpus.  The options that decide the
    chunks (pattern, special tokens, alphabet, and --tie-break hf, which
    counts each line on its own) are stored in the artifact, and tables
    counted differently are refused.

    \b
    Examples:
      bpefst count part1.txt --special-token '<|endoftext|>' -o part1.counts
      bpefst count part2.txt --special-token '<|endoftext|>' -o part2.counts
      bpefst train --from-counts part1.counts part2.counts --vocab-size 32000 -o tok.bpefst
    """
    from .train_command import progress_display

    check_engine_options(engine, address, split_size, jobs)
    check_writable(output)
    refuse_overwriting_inputs(output, corpus)
    settings = CountSettings.for_training(pattern, special_tokens, alphabet or "bytes", tie_break or "lexicographic")
    progress = progress_display(quiet)
    started = time.perf_counter()
    try:
        table = count_with_engine(list(corpus), settings, engine=engine, address=address, split_size=split_size, jobs=jobs, progress=progress)
    finally:
        progress.close()
    save_counts(table, output)
    if not quiet:
        click.echo(
            f"counted {len(table.counts)} distinct chunks in {table.corpus_bytes} bytes in {time.perf_counter() - started:.2f}s",
            err=True,
        )
        click.echo(f"wrote {output}", err=True)
