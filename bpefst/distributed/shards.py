"""Tokenizing input files into id shards on a Ray cluster, resumable (``bpefst tokenize --engine ray``).

The output is the shard directory of :mod:`bpefst.pipeline.datasets`
(``shard_NNNNN.bin``/``.npy``, ``manifest.json``, ``index.npy``), read by the
same readers.  One rule fixes the layout: **shard i holds input file i**
(inputs in the order ``expand_inputs`` gives: arguments in order, directories
walked sorted), so the output does not depend on the number of workers or on
which finished first, and the concatenated shards are the id stream one
machine writes for the same inputs and options.

Who does what:

* the driver plans (file paths and sizes, no contents), sends each input's path
  to an actor of a Ray Data actor pool, and records finished shards;
* each actor loads the tokenizer once from its artifact bytes, reads its input
  file itself (shared file system), tokenizes its documents as one machine
  does (:func:`~bpefst.pipeline.documents.tokenize_documents`) into
  ``shard_i`` and the document ends of that shard into ``ends_i.npy``, both
  written under temporary names and renamed when complete;
* at the end the driver streams the ``ends_i`` files into ``index.npy`` (adding
  each shard's offset in the stream), writes ``manifest.json`` and removes the
  ``ends`` files and the journal.

Faults and resuming: while the run lasts, finished shards are listed in the
journal ``manifest.partial.json`` (the settings of the run, and one entry per
shard written completely), rewritten atomically after each shard.
``manifest.json`` is written only once every shard is complete, so a manifest
never names a missing or partial shard.  A worker that dies is replaced by Ray
Data and its input tokenized again from the start; the dead attempt's
temporary files are never renamed into place (they are removed at the end).
Rerunning into a directory holding a journal is refused unless ``resume`` is
given: then the run's settings must equal the journal's, and the shards it lists
complete (file present with its recorded size) are skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

from ..errors import BpefstError
from ..pipeline.datasets import (
    DTYPES,
    Dtype,
    INDEX_NAME,
    MANIFEST_NAME,
    AtomicFile,
    DatasetWriter,
    IdWriter,
    iter_id_blocks,
    shard_name,
    write_manifest,
)
from ..pipeline.inputs import InputFile
from ..tokenizer import BPEModel
from .cluster import CrashOnce, connect, original_errors, require_ray_data, reraise
from .tokenizing import model_bytes

JOURNAL_NAME = "manifest.partial.json"
JOURNAL_FORMAT = "bpefst-shards-journal"


@dataclass(frozen=True)
class ShardJob:
    """What every shard is written with: the run's settings (and the journal's identity check)."""

    directory: str
    file_format: str
    dtype: str
    eot: int | None
    bot: int | None
    text_field: str
    split_lines: bool
    allowed: tuple[str, ...]
    disallowed: tuple[str, ...]

    def settings(self, model: BPEModel, inputs: Sequence[InputFile]) -> dict:
        fields = asdict(self)
        del fields["directory"]
        settings = {**fields, "tokenizer": model.fingerprint, "inputs": [[f.path, f.size, f.kind] for f in inputs]}
        return json.loads(json.dumps(settings))  # as the journal will hold them (tuples become lists)


def ends_name(number: int) -> str:
    return f"ends_{number:05d}.npy"


class WriteShards:
    """Ray Data actor UDF: rows ``(number, path, size, kind)`` -> their shards written, and manifest entries."""

    def __init__(self, artifact: list, job: ShardJob, crash: CrashOnce | None = None):
        import ray

        from ..pipeline.encoder import Tokenizer
        from ..tokenizer.formats import native

        raw = artifact[0] if isinstance(artifact[0], bytes) else ray.get(artifact[0])
        self.tokenizer = Tokenizer(native.read_bytes(raw, "the shipped tokenizer"))
        self.job = job
        self.crash = crash

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        entries = [self.write_shard(row) for row in batch.to_pylist()]
        return pa.Table.from_pylist(entries)

    def write_shard(self, row: dict) -> dict:
        from ..pipeline.documents import tokenize_documents
        from ..pipeline.inputs import iter_documents

        job, number = self.job, row["number"]
        if self.crash is not None:
            self.crash(number)
        name = shard_name(number, job.file_format)
        sink = IdWriter(DTYPES[job.dtype], job.file_format, path=os.path.join(job.directory, name))
        ends = IdWriter(DTYPES["uint64"], "npy", path=os.path.join(job.directory, ends_name(number)))
        writer = DatasetWriter(sink, bot=job.bot, eot=job.eot, index=ends)
        source = InputFile(row["path"], row["size"], row["kind"])
        byte_level = self.tokenizer.model.is_byte_level
        try:
            documents = iter_documents(source, byte_level, job.text_field, job.split_lines)
            tokenize_documents(self.tokenizer, documents, writer, 1, job.allowed, job.disallowed)
            writer.close()
        except BaseException:
            writer.abort()
            raise
        size = os.path.getsize(os.path.join(job.directory, name))
        return {"number": number, "file": name, "ids": writer.ids, "documents": writer.documents, "bytes": size}


class Journal:
    """``manifest.partial.json``: the run's settings and the shards written completely, by number."""

    def __init__(self, directory: str, settings: dict, done: dict[int, dict] | None = None):
        self.directory, self.settings, self.done = directory, settings, dict(done or {})

    @property
    def path(self) -> str:
        return os.path.join(self.directory, JOURNAL_NAME)

    def record(self, entry: dict) -> None:
        self.done[entry["number"]] = {key: entry[key] for key in ("file", "ids", "documents", "bytes")}
        self.save()

    def save(self) -> None:
        document = {"format": JOURNAL_FORMAT, "settings": self.settings, "done": {str(k): v for k, v in sorted(self.done.items())}}
        target = AtomicFile(self.path)
        target.write((json.dumps(document, indent=1) + "\n").encode("utf-8"))
        target.commit()

    @classmethod
    def load(cls, directory: str) -> "Journal":
        path = os.path.join(directory, JOURNAL_NAME)
        try:
            with open(path, "rb") as handle:
                document = json.loads(handle.read())
            if document.get("format") != JOURNAL_FORMAT:
                raise ValueError("format")
            done = {int(k): v for k, v in document["done"].items()}
            for entry in done.values():
                if not (isinstance(entry["file"], str) and all(isinstance(entry[k], int) for k in ("ids", "documents", "bytes"))):
                    raise ValueError("entry")
            return cls(directory, document["settings"], done)
        except OSError as exc:
            raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            raise BpefstError(f"{path} is not a bpefst shard journal (corrupted?); remove the directory and start again") from None

    def complete(self, number: int, file_format: str) -> bool:
        """Whether shard ``number`` is listed and still on disk as it was written."""
        entry = self.done.get(number)
        if entry is None or entry["file"] != shard_name(number, file_format):
            return False
        try:
            return os.path.getsize(os.path.join(self.directory, entry["file"])) == entry["bytes"] and os.path.isfile(
                os.path.join(self.directory, ends_name(number))
            )
        except OSError:
            return False


def tokenize_files_on_ray(
    model: BPEModel,
    inputs: Sequence[InputFile],
    job: ShardJob,
    *,
    resume: bool = False,
    address: str | None = None,
    workers: int | None = None,
    on_shard: Callable[[int, dict], None] | None = None,
    _crash: CrashOnce | None = None,
) -> dict:
    """Tokenize each input file into its shard of ``job.directory`` on Ray; returns the manifest."""
    for source in inputs:
        if source.path == "-":
            raise BpefstError("stdin cannot be read by other machines; give the inputs as files")
    settings = job.settings(model, inputs)
    ray = connect(address)  # before anything is written: a missing Ray or a wrong address leaves no journal
    journal = _start(job, settings, resume)
    if journal is None:
        return _load_json(os.path.join(job.directory, MANIFEST_NAME))  # resumed a finished run
    todo = [
        {"number": n, "path": f.path, "size": f.size, "kind": f.kind}
        for n, f in enumerate(inputs)
        if not journal.complete(n, job.file_format)
    ]
    if todo:
        _run(ray, model, job, todo, journal, workers, on_shard, _crash)
    return _finish(job, journal, len(inputs), model)


def _start(job: ShardJob, settings: dict, resume: bool) -> Journal | None:
    """The journal to continue (or a new one); None when ``resume`` finds the run already finished."""
    directory = job.directory
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise BpefstError(f"--output-dir {directory} exists and is not a directory")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise BpefstError(f"cannot create {directory}: {exc.strerror or exc}") from None
    names = set(os.listdir(directory))
    if MANIFEST_NAME in names:
        if resume and JOURNAL_NAME not in names:
            manifest = _load_json(os.path.join(directory, MANIFEST_NAME))
            if manifest.get("run") != settings:
                raise BpefstError(f"--output-dir {directory} holds a finished run with other settings; choose an empty directory")
            return None
        raise BpefstError(f"--output-dir {directory} already holds a manifest; choose an empty directory")
    if JOURNAL_NAME in names:
        if not resume:
            raise BpefstError(f"--output-dir {directory} holds an unfinished run; add --resume to continue it, or choose an empty directory")
        journal = Journal.load(directory)
        difference = _difference(journal.settings, settings)
        if difference is not None:
            raise BpefstError(f"cannot resume the run in {directory}: {difference} differs from the unfinished run's")
        return journal
    if any(name.startswith(("shard_", "ends_")) for name in names):
        raise BpefstError(f"--output-dir {directory} already holds shards; choose an empty directory")
    journal = Journal(directory, settings)
    journal.save()
    return journal


def _difference(old: dict, new: dict) -> str | None:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return {"inputs": "the list of inputs (or their sizes)", "tokenizer": "the tokenizer"}.get(key, key)
    return None


def _run(ray: Any, model: BPEModel, job: ShardJob, todo: list[dict], journal: Journal, workers, on_shard, crash) -> None:
    data = require_ray_data()
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    # The artifact goes into the object store once; the actors get a reference inside a list,
    # so their (restartable) constructor arguments stay small.
    artifact = [ray.put(model_bytes(model))]
    dataset = data.from_items(todo, override_num_blocks=len(todo))
    written = dataset.map_batches(
        WriteShards,
        fn_constructor_args=(artifact, job, crash),
        batch_size=1,
        batch_format="pyarrow",
        compute=data.ActorPoolStrategy(size=min(workers, len(todo))),
        num_cpus=1,
    )
    try:
        with original_errors(written):
            for entry in written.iter_rows():
                journal.record(entry)
                if on_shard is not None:
                    on_shard(entry["number"], entry)
    except Exception as exc:
        reraise(exc, "tokenizing")


def _finish(job: ShardJob, journal: Journal, count: int, model: BPEModel) -> dict:
    """Every shard written: index.npy and manifest.json, then the journal goes."""
    missing = [n for n in range(count) if not journal.complete(n, job.file_format)]
    if missing:
        raise BpefstError(f"shard {missing[0]} is missing after the run; rerun with --resume")
    entries = [{"number": n, **journal.done[n]} for n in range(count)]
    manifest = finish_shards(job.directory, entries, DTYPES[job.dtype], job.file_format, model, eot=job.eot, bot=job.bot,
                             extra={"run": journal.settings})
    os.unlink(journal.path)
    return manifest


def finish_shards(directory: str, entries: list[dict], dtype: Dtype, file_format: str, model: BPEModel, *,
                  eot: int | None = None, bot: int | None = None, extra: dict | None = None) -> dict:
    """The shards ``entries`` (numbered 0, 1, ...) are complete: stream their ends files into index.npy (adding each
    shard's offset in the stream), write manifest.json, remove the ends files and dead attempts' temporary files."""
    entries = sorted(entries, key=lambda entry: entry["number"])
    if [entry["number"] for entry in entries] != list(range(len(entries))):
        raise BpefstError("internal error: shard numbers are not 0, 1, 2, ...")
    index = IdWriter(DTYPES["uint64"], "npy", path=os.path.join(directory, INDEX_NAME))
    offset = 0
    try:
        for entry in entries:
            for block in iter_id_blocks(os.path.join(directory, ends_name(entry["number"])), "npy"):
                index.write([offset + end for end in block])
            offset += entry["ids"]
        index.close()
    except BaseException:
        index.abort()
        raise
    shards = [{key: entry[key] for key in ("file", "ids", "documents", "bytes")} for entry in entries]
    manifest = write_manifest(directory, shards, dtype, file_format, fingerprint=model.fingerprint, max_id=model.max_id,
                              eot=eot, bot=bot, index=INDEX_NAME, extra=extra)
    _remove_leftovers(directory)
    return manifest


def _remove_leftovers(directory: str) -> None:
    """The ends files, and temporary files of attempts that died before renaming theirs."""
    for name in os.listdir(directory):
        if name.startswith("ends_") or (name.startswith((".shard_", ".ends_", f".{JOURNAL_NAME}")) and name.endswith(".tmp")):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _load_json(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read())
    except (OSError, ValueError) as exc:
        raise BpefstError(f"cannot read {path}: {exc}") from None
