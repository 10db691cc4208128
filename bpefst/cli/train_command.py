"""``bpefst train``: learn a BPE tokenizer from a corpus (the algorithm is in :mod:`bpefst.training`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..artifact import check_writable, refuse_overwriting_inputs
from ..errors import BpefstError
from ..tokenizer import FORMATS, format_losses, save_tokenizer
from ..tokenizer.formats.gpt2 import sibling_merges
from ..training import TrainingProgress, train_bpe
from ..training.counts import CountSettings, load_counts, sum_counts, train_on_counts
from .common import user_errors
from .count_command import check_engine_options, count_with_engine, counting_options, engine_options


@click.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--vocab-size", required=True, type=click.IntRange(min=1), metavar="N",
              help="Entries in the vocabulary: special tokens, base alphabet and merged tokens.")
@counting_options
@click.option("--end-of-word-suffix", metavar="TEXT", help="Character-level only: mark the last character of each chunk, HF style (e.g. ▁).")
@click.option("--min-frequency", type=click.IntRange(min=0), default=0, show_default=True, metavar="K",
              help="Stop when the most frequent pair occurs fewer than K times.")
@click.option("--from-counts", is_flag=True,
              help="CORPUS names counts artifacts from `bpefst count`: sum them and merge (pattern, specials and alphabet come from them).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), metavar="J", help="Counting processes with --engine local [default: number of CPUs].")
@engine_options
@click.option("--output", "-o", required=True, type=click.Path(), help="Output file (a directory or ...vocab.json for gpt2).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="bpefst", show_default=True, help="Output format.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
@user_errors
def train(
    corpus: tuple[str, ...],
    vocab_size: int,
    special_tokens: tuple[str, ...],
    pattern: str | None,
    alphabet: str | None,
    tie_break: str | None,
    end_of_word_suffix: str | None,
    min_frequency: int,
    from_counts: bool,
    jobs: int | None,
    engine: str,
    address: str | None,
    split_size: int,
    output: str,
    fmt: str,
    quiet: bool,
) -> None:
    """Train a BPE tokenizer on CORPUS files (- for stdin).

    Byte-level by default (special tokens, then the 256 bytes, then merges),
    GPT-2 pre-tokenization, and ties broken towards the lexicographically
    greatest pair of byte strings; --tie-break hf gives the merges of HF
    tokenizers' BpeTrainer.  --engine ray counts on a Ray cluster (workers
    read the files themselves) and merges here; --from-counts merges count
    tables made by `bpefst count`.

    \b
    Examples:
      bpefst train corpus.txt --vocab-size 500 --special-token '<|endoftext|>' -o tok.bpefst
      bpefst train wiki.txt --alphabet chars --end-of-word-suffix ▁ --vocab-size 8000 --format hf -o tok.json
      bpefst train /data/shard-*.txt --engine ray --address auto --vocab-size 32000 -o tok.bpefst
      bpefst train --from-counts a.counts b.counts --vocab-size 32000 -o tok.bpefst
    """
    check_tokenizer_output(output, fmt, corpus)
    if from_counts and (engine != "local" or jobs is not None):
        raise BpefstError("--from-counts reads count tables, which need no counting: drop --engine and --jobs")
    check_engine_options(engine, address, split_size, jobs)
    progress = progress_display(quiet)
    started = time.perf_counter()
    try:
        if from_counts:
            table = sum_counts((path, load_counts(path)) for path in corpus)
            _check_format(table.settings.alphabet, fmt)
        else:
            _check_format(alphabet or "bytes", fmt)
        if engine == "ray":
            settings = CountSettings.for_training(pattern, special_tokens, alphabet or "bytes", tie_break or "lexicographic")
            table = count_with_engine(list(corpus), settings, engine=engine, address=address, split_size=split_size, jobs=jobs, progress=progress)
        if from_counts or engine == "ray":
            model = train_on_counts(
                table,
                vocab_size,
                special_tokens=special_tokens or None,
                pattern=pattern,
                alphabet=alphabet,
                tie_break=tie_break,
                end_of_word_suffix=end_of_word_suffix,
                min_frequency=min_frequency,
                progress=progress,
            )
        else:
            model = train_bpe(
                list(corpus),
                vocab_size,
                special_tokens=special_tokens,
                pattern=pattern,
                alphabet=alphabet or "bytes",
                end_of_word_suffix=end_of_word_suffix,
                min_frequency=min_frequency,
                tie_break=tie_break or "lexicographic",
                jobs=jobs,
                progress=progress,
            )
    finally:
        progress.close()
    for note in format_losses(model, fmt):
        click.echo(f"bpefst: note: {note}", err=True)
    written = save_tokenizer(model, output, fmt)
    if not quiet:
        size = model.summary()["vocab_size"]
        click.echo(f"trained {size} tokens ({len(model.merges)} merges) in {time.perf_counter() - started:.2f}s", err=True)
        for path in written:
            click.echo(f"wrote {path}", err=True)


def _check_format(alphabet: str, fmt: str) -> None:
    if alphabet == "chars" and fmt in ("gpt2", "tiktoken"):
        raise BpefstError(f"--format {fmt} holds byte-level tokenizers only; use --format hf or bpefst with --alphabet chars")


def check_tokenizer_output(output: str, fmt: str, inputs) -> None:
    """Fail before any work, and before writing anything, when the tokenizer cannot be written to ``output``.

    For gpt2 both vocab.json and merges.txt are checked, so neither is written
    when the other would fail; none of the files may be one of ``inputs``.
    """
    if not output:
        raise BpefstError("the output path is empty")
    path = Path(output)
    if fmt == "gpt2" and not path.name.endswith("vocab.json"):
        if path.exists() and not path.is_dir():
            raise BpefstError(f"{output} is a file; --format gpt2 needs a directory or a ...vocab.json path")
        if not path.exists():
            check_writable(path)  # save_tokenizer creates the directory
            return
        targets = [path / "vocab.json", path / "merges.txt"]
    else:
        targets = [path, sibling_merges(path)] if fmt == "gpt2" else [path]
    for target in targets:
        check_writable(target)
        refuse_overwriting_inputs(target, inputs)


def progress_display(quiet: bool) -> "RichProgress | TrainingProgress":
    if quiet or not sys.stderr.isatty():
        return _Silent()
    return RichProgress()


class _Silent(TrainingProgress):
    def close(self) -> None:
        pass


class RichProgress(TrainingProgress):
    """Bytes counted, then merges done with the current pair and its count, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console

        self._console = Console(stderr=True)
        self._progress = None
        self._task = None
        self._last = 0.0

    def _start(self, description: str, total: int | None, *counters) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.close()
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), *counters, TimeElapsedColumn(),
                                  TimeRemainingColumn(), console=self._console)
        self._progress.start()
        self._task = self._progress.add_task(description, total=total)

    def counting_started(self, total_bytes):
        from rich.progress import DownloadColumn, TransferSpeedColumn

        self._start("counting", total_bytes, DownloadColumn(), TransferSpeedColumn())

    def bytes_counted(self, nbytes):
        self._progress.advance(self._task, nbytes)

    def counting_done(self, distinct_chunks):
        done = self._progress.tasks[0].completed
        self._progress.update(self._task, total=done, completed=done, description=f"counted {distinct_chunks} distinct chunks")

    def merging_started(self, max_merges):
        from rich.progress import MofNCompleteColumn

        self._start("merging", max(max_merges, 0), MofNCompleteColumn())

    def merged(self, done, left, right, count):
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        self._progress.update(self._task, completed=done, description=f"merging {_show(left)} + {_show(right)} ({count}x)")

    def merging_done(self, merges):
        self._progress.update(self._task, completed=merges, total=merges, description=f"merged {merges} pairs")

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _show(token) -> str:
    from rich.markup import escape

    if isinstance(token, bytes):
        token = token.decode("utf-8", "backslashreplace")
    text = repr(token)
    return escape(text if len(text) <= 24 else text[:21] + "...")
