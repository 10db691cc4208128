"""Cutting fixed-size shards from per-input parts (issue 30), without Ray.

Oracle: one machine's :class:`~bpefst.pipeline.datasets.ShardWriter` fed the
same documents in the same order: the shards cut from the parts must be its
files byte for byte, with its per-shard document counts and its index.
Hypothesis draws the inputs (empty ones, empty documents, documents ending
exactly at a shard's end) and the shard size.
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.distributed.resharding import count_documents, part_name, plan_shards, write_shard_from_parts
from bpefst.distributed.shards import ends_name, write_index
from bpefst.pipeline.datasets import DTYPES, INDEX_NAME, DatasetWriter, IdWriter, ShardWriter

documents = st.lists(st.integers(0, 65535), max_size=7)
inputs = st.lists(st.lists(documents, max_size=4), max_size=6)


def _files(directory: str) -> dict[str, bytes]:
    found = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as handle:
            found[name] = handle.read()
    return found


@settings(max_examples=150, deadline=None)
@given(inputs=inputs, shard_size=st.integers(1, 9), eot=st.sampled_from([None, 7]), file_format=st.sampled_from(["bin", "npy"]))
def test_shards_cut_from_parts_are_one_machines_shards(inputs, shard_size, eot, file_format) -> None:
    dtype = DTYPES["uint16"]
    with tempfile.TemporaryDirectory() as local, tempfile.TemporaryDirectory() as cut:
        # one machine: every document of every input, in order, through one ShardWriter
        sink = ShardWriter(local, dtype, shard_size, file_format)
        writer = DatasetWriter(sink, eot=eot, index=IdWriter(DTYPES["uint64"], "npy", path=os.path.join(local, INDEX_NAME)))
        for part in inputs:
            for document in part:
                writer.begin_document()
                writer.write(document)
                writer.end_document()
        writer.close(fingerprint="f", max_id=65535, index=INDEX_NAME)
        expected = sink.shards
        # the Ray engine's way: a part (and its ends) per input, then shards cut from the parts
        part_ids, total_documents = [], 0
        for number, part in enumerate(inputs):
            part_writer = DatasetWriter(IdWriter(dtype, "bin", path=os.path.join(cut, part_name(number))), eot=eot,
                                        index=IdWriter(DTYPES["uint64"], "npy", path=os.path.join(cut, ends_name(number))))
            for document in part:
                part_writer.begin_document()
                part_writer.write(document)
                part_writer.end_document()
            part_writer.close()
            part_ids.append(part_writer.ids)
            total_documents += part_writer.documents
        plans = plan_shards(part_ids, shard_size, total_documents)
        entries = [write_shard_from_parts(cut, plan, "uint16", file_format) for plan in plans]
        counts = [0] * len(plans)
        write_index(cut, part_ids, lambda ends: count_documents(ends, shard_size, counts))
        for number in range(len(inputs)):
            os.unlink(os.path.join(cut, part_name(number)))
            os.unlink(os.path.join(cut, ends_name(number)))
        assert [{"file": e["file"], "ids": e["ids"], "documents": n, "bytes": e["bytes"]} for e, n in zip(entries, counts)] == expected
        local_files = _files(local)
        del local_files["manifest.json"]
        assert _files(cut) == local_files  # every shard and the index, byte for byte
