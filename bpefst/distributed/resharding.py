"""Fixed-size shards cut from per-input parts (``bpefst tokenize --engine ray --shard-size N``).

A worker can tokenize input file i without knowing anything about the files
before it, so it writes *part* i: the ids of that file (``part_NNNNN.bin``)
and its document ends (``ends_NNNNN.npy``).  The parts in input order,
concatenated, are the id stream one machine writes; training loaders want
that stream in shards of a chosen size instead, numbered as one machine
numbers them.  Once every part's length is known, shard k (ids ``[kN,
(k+1)N)`` of the stream) is a list of slices of parts (:func:`plan_shards`),
so the shards are written in parallel, each by one task that only copies
bytes (:func:`write_shard_from_parts`), under a temporary name renamed into
place when complete: a shard is either done or absent.

Which shard a document is counted in follows
:class:`~bpefst.pipeline.datasets.ShardWriter`, the one-machine writer: a
document ending at stream offset e > 0 belongs to the shard holding id e - 1
(one ending exactly at a shard's end counts in that shard), one ending at 0
(empty documents before any id) to shard 0, which exists even when the stream
holds no ids at all but does hold documents.
"""

from __future__ import annotations

import os
import sys
from array import array
from dataclasses import dataclass
from typing import Iterator, Sequence

from ..errors import BpefstError
from ..pipeline.datasets import DTYPES, Dtype, IdWriter, shard_name

COPY_IDS = 1 << 20  # ids copied per read: 2-4 MB


def part_name(number: int) -> str:
    """The ids of input ``number``, raw little-endian in the run's dtype, until the shards are cut."""
    return f"part_{number:05d}.bin"


@dataclass(frozen=True)
class Slice:
    """Ids ``[begin, end)`` of part ``part``."""

    part: int
    begin: int
    end: int


@dataclass(frozen=True)
class ShardPlan:
    """Shard ``number``: ``ids`` ids, the concatenation of ``slices``."""

    number: int
    ids: int
    slices: tuple[Slice, ...]


def plan_shards(part_ids: Sequence[int], shard_size: int, documents: int) -> list[ShardPlan]:
    """The shards of the stream the parts make, in order; ``documents`` only matters when the stream is empty."""
    if shard_size < 1:
        raise BpefstError("--shard-size must be at least 1")
    total = sum(part_ids)
    count = -(-total // shard_size) if total else (1 if documents else 0)
    starts, offset = [], 0
    for ids in part_ids:
        starts.append(offset)
        offset += ids
    plans, part = [], 0
    for number in range(count):
        begin, end = number * shard_size, min((number + 1) * shard_size, total)
        slices = []
        while part < len(part_ids) and starts[part] + part_ids[part] <= begin:
            part += 1  # parts wholly before this shard (empty parts included)
        scan = part
        while scan < len(part_ids) and starts[scan] < end:
            lo, hi = max(begin, starts[scan]), min(end, starts[scan] + part_ids[scan])
            if hi > lo:
                slices.append(Slice(scan, lo - starts[scan], hi - starts[scan]))
            scan += 1
        plans.append(ShardPlan(number, end - begin, tuple(slices)))
    return plans


def count_documents(ends: Sequence[int], shard_size: int, counts: list[int]) -> None:
    """Add the documents ending at stream offsets ``ends`` to ``counts[shard]`` (the rule in the module docstring)."""
    for end in ends:
        counts[(end - 1) // shard_size if end else 0] += 1


def write_shard_from_parts(directory: str, plan: ShardPlan, dtype_name: str, file_format: str) -> dict:
    """Write shard ``plan.number`` from its slices of the part files; returns its entry (number, file, ids, bytes)."""
    dtype = DTYPES[dtype_name]
    name = shard_name(plan.number, file_format)
    writer = IdWriter(dtype, file_format, path=os.path.join(directory, name))
    try:
        for piece in plan.slices:
            for block in _read_slice(os.path.join(directory, part_name(piece.part)), piece, dtype):
                writer.write(block)
        if writer.count != plan.ids:
            raise BpefstError(f"shard {plan.number}: {writer.count:,} ids copied, {plan.ids:,} planned")
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return {"number": plan.number, "file": name, "ids": plan.ids, "bytes": os.path.getsize(os.path.join(directory, name))}


def _read_slice(path: str, piece: Slice, dtype: Dtype) -> Iterator[array]:
    """The ids of one slice of a part file, in blocks of at most COPY_IDS (native byte order)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(piece.begin * dtype.size)
            left = piece.end - piece.begin
            while left:
                data = handle.read(min(left, COPY_IDS) * dtype.size)
                if not data or len(data) % dtype.size:
                    raise BpefstError(f"{path} is shorter than its journal entry says (changed during the run?); "
                                      "remove the directory and start again")
                block = array(dtype.typecode)
                block.frombytes(data)
                if sys.byteorder == "big":
                    block.byteswap()
                left -= len(block)
                yield block
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
