"""``bpefst tokenize --engine ray``: the options checked, then :mod:`bpefst.distributed.shards` does the work."""

from __future__ import annotations

import time

import click

from ..errors import BpefstError


def tokenize_on_ray(*, tokenizer: str, sources, pattern, specials, fmt: str, output, output_dir, shard_size: int, dtype: str,
                    index_path, eot, bot, text_field: str, split_lines: bool, jobs: int, allowed_special: str,
                    disallowed_special, cache_size, max_states, engine: str, address, resume: bool, quiet: bool,
                    stats: bool, began: float) -> None:
    from ..distributed.cluster import quiet_driver
    from ..distributed.shards import ShardJob, tokenize_files_on_ray
    from ..pipeline.datasets import choose_dtype
    from ..pipeline.encoder import Tokenizer
    from .common import parse_specials
    from .progress import byte_progress
    from .tokenize_command import resolve_token, special_policy

    if engine != "ray":
        raise BpefstError("--address and --resume apply to --engine ray only")
    if not output_dir:
        raise BpefstError("--engine ray writes shards: give --output-dir DIR (a directory every worker can write)")
    ignored = [name for name, given in (("--output", output), ("--index", index_path), ("--jobs", jobs != 1),
                                        ("--cache-size", cache_size), ("--max-states", max_states)) if given]
    if ignored:
        raise BpefstError(f"{ignored[0]} does not apply to --engine ray (it writes shards with --output-dir; "
                          "workers use one process per CPU)")
    if fmt not in ("bin", "npy"):
        raise BpefstError(f"--output-dir writes bin or npy shards, not --format {fmt}")
    tok = Tokenizer.load(tokenizer, pattern, parse_specials(specials))
    model = tok.model
    tok.close()
    allowed, disallowed = special_policy(allowed_special, disallowed_special, model.specials)
    job = ShardJob(
        directory=output_dir, file_format=fmt, dtype=choose_dtype(dtype, model.max_id).name,
        eot=resolve_token(model, eot, "--eot") if eot is not None else None,
        bot=resolve_token(model, bot, "--bot") if bot is not None else None,
        text_field=text_field, split_lines=split_lines, allowed=tuple(sorted(allowed)), disallowed=tuple(sorted(disallowed)),
        shard_size=shard_size,
    )
    total = sum(source.size or 0 for source in sources)
    progress = byte_progress("tokenizing on ray", total, quiet)
    done = {"bytes": 0, "documents": 0, "ids": 0}

    def on_shard(number: int, entry: dict) -> None:
        done["bytes"] += sources[number].size or 0
        done["documents"] += entry["documents"]
        done["ids"] += entry["ids"]
        progress.update(done["bytes"], done["documents"], done["ids"])

    quiet_driver()
    loaded = time.perf_counter()
    try:
        manifest = tokenize_files_on_ray(model, sources, job, resume=resume, address=address, on_shard=on_shard)
    finally:
        progress.close()
    if stats:
        seconds = time.perf_counter() - loaded
        rate = total / seconds / 1e6 if seconds > 0 else 0.0
        click.echo(f"bpefst: load {loaded - began:.2f} s; {len(manifest['shards'])} shards, {manifest['documents']:,} documents, "
                   f"{manifest['ids']:,} ids, {total:,} bytes in {seconds:.2f} s ({rate:.2f} MB/s)", err=True)
