"""Tokenizing input files into id shards on a Ray cluster, resumable (``bpefst tokenize --engine ray``).

The output is the shard directory of :mod:`bpefst.pipeline.datasets`
(``shard_NNNNN.bin``/``.npy``, ``manifest.json``, ``index.npy``), read by the
same readers.  Two layouts, neither depending on the number of workers or on
which finished first; in both the concatenated shards are the id stream one
machine writes for the same inputs and options (inputs in the order
``expand_inputs`` gives: arguments in order, directories walked sorted):

* by default **shard i holds input file i**;
* with ``shard_size`` N, shards of N ids (the last one shorter), byte for
  byte the directory ``bpefst tokenize --output-dir --shard-size N`` writes
  on one machine, manifest included.  Input i is tokenized into *part* i, and
  once all parts are written the shards are cut from them by parallel tasks
  (:mod:`.resharding`); the parts are removed at the end.

Who does what:

* the driver plans (file paths and sizes, no contents), sends each input's path
  to an actor of a Ray Data actor pool, and records finished shards;
* each actor loads the tokenizer once from its artifact bytes, reads its input
  file itself (shared file system), tokenizes its documents as one machine
  does (:func:`~bpefst.pipeline.documents.tokenize_documents`) into
  ``shard_i`` (or ``part_i``) and the document ends of that file into
  ``ends_i.npy``, both written under temporary names and renamed when complete;
* with ``shard_size``, one Ray task per shard copies its slices of the parts;
* at the end the driver streams the ``ends_i`` files into ``index.npy`` (adding
  each part's offset in the stream), writes ``manifest.json`` and removes the
  ``ends`` and part files and the journal.

Faults and resuming: while the run lasts, finished shards are listed in the
journal ``manifest.partial.json`` (the settings of the run, one entry per
shard or part written completely, and one per shard cut from the parts),
rewritten atomically after each.
``manifest.json`` is written only once every shard is complete, so a manifest
never names a missing or partial shard.  A worker that dies is replaced by Ray
Data and its input tokenized again from the start; the dead attempt's
temporary files are never renamed into place (they are removed at the end).
Rerunning into a directory holding a journal is refused unless ``resume`` is
given: then the run's settings must equal the journal's, and the shards and
parts it lists complete (file present with its recorded size) are skipped.
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
    run_settings,
    shard_name,
    write_manifest,
)
from ..pipeline.inputs import InputFile
from ..tokenizer import BPEModel
from .cluster import CrashOnce, connect, original_errors, require_ray_data, reraise
from .resharding import ShardPlan, count_documents, part_name, plan_shards, write_shard_from_parts
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
    shard_size: int | None = None  # None: shard i holds input i

    def settings(self, model: BPEModel, inputs: Sequence[InputFile]) -> dict:
        """The manifest's ``run`` (the same as one machine writes), which the journal also holds."""
        fields = asdict(self)
        del fields["directory"]
        return run_settings(**fields, fingerprint=model.fingerprint, inputs=inputs)

    def written_name(self, number: int) -> str:
        """What the worker given input ``number`` writes: its shard, or with ``shard_size`` its part."""
        return shard_name(number, self.file_format) if self.shard_size is None else part_name(number)


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
        name = job.written_name(number)
        file_format = job.file_format if job.shard_size is None else "bin"
        sink = IdWriter(DTYPES[job.dtype], file_format, path=os.path.join(job.directory, name))
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
    """``manifest.partial.json``: the run's settings, the shards (or parts) written completely, by number, and
    the shards cut from the parts (``cut``)."""

    def __init__(self, directory: str, settings: dict, done: dict[int, dict] | None = None, cut: dict[int, dict] | None = None):
        self.directory, self.settings, self.done, self.cut = directory, settings, dict(done or {}), dict(cut or {})

    @property
    def path(self) -> str:
        return os.path.join(self.directory, JOURNAL_NAME)

    def record(self, entry: dict) -> None:
        self.done[entry["number"]] = {key: entry[key] for key in ("file", "ids", "documents", "bytes")}
        self.save()

    def record_cut(self, entries: list[dict]) -> None:
        for entry in entries:
            self.cut[entry["number"]] = {key: entry[key] for key in ("file", "ids", "bytes")}
        self.save()

    def save(self) -> None:
        document = {"format": JOURNAL_FORMAT, "settings": self.settings, "done": {str(k): v for k, v in sorted(self.done.items())},
                    "cut": {str(k): v for k, v in sorted(self.cut.items())}}
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
            cut = {int(k): v for k, v in document.get("cut", {}).items()}
            for entry in done.values():
                if not (isinstance(entry["file"], str) and all(isinstance(entry[k], int) for k in ("ids", "documents", "bytes"))):
                    raise ValueError("entry")
            for entry in cut.values():
                if not (isinstance(entry["file"], str) and all(isinstance(entry[k], int) for k in ("ids", "bytes"))):
                    raise ValueError("entry")
            return cls(directory, document["settings"], done, cut)
        except OSError as exc:
            raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            raise BpefstError(f"{path} is not a bpefst shard journal (corrupted?); remove the directory and start again") from None

    def complete(self, number: int, name: str) -> bool:
        """Whether shard or part ``number`` (file ``name``) is listed and still on disk as it was written, with its ends."""
        entry = self.done.get(number)
        return entry is not None and entry["file"] == name and self._on_disk(entry) and os.path.isfile(
            os.path.join(self.directory, ends_name(number)))

    def cut_complete(self, plan: ShardPlan, file_format: str) -> bool:
        """Whether the shard ``plan`` describes has been cut from the parts and is still on disk as it was written."""
        entry = self.cut.get(plan.number)
        return (entry is not None and entry["file"] == shard_name(plan.number, file_format) and entry["ids"] == plan.ids
                and self._on_disk(entry))

    def _on_disk(self, entry: dict) -> bool:
        try:
            return os.path.getsize(os.path.join(self.directory, entry["file"])) == entry["bytes"]
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
    _crash_cut: CrashOnce | None = None,
) -> dict:
    """Tokenize the input files into the shards of ``job.directory`` on Ray; returns the manifest.

    ``on_shard(i, entry)`` is called as input i is done (its shard, or its part with ``job.shard_size``).
    """
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
        if not journal.complete(n, job.written_name(n))
    ]
    if todo:
        _run(ray, model, job, todo, journal, workers, on_shard, _crash)
    if job.shard_size is None:
        return _finish(job, journal, len(inputs), model)
    plans = _plan(job, journal, len(inputs))
    todo_cuts = [plan for plan in plans if not journal.cut_complete(plan, job.file_format)]
    if todo_cuts:
        _cut(ray, job, todo_cuts, journal, _crash_cut)
    return _finish_cut(job, journal, plans, len(inputs), model)


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
    if any(name.startswith(("shard_", "ends_", "part_")) for name in names):
        raise BpefstError(f"--output-dir {directory} already holds shards; choose an empty directory")
    journal = Journal(directory, settings)
    journal.save()
    return journal


def _difference(old: dict, new: dict) -> str | None:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return {"inputs": "the list of inputs (or their sizes)", "tokenizer": "the tokenizer",
                    "shard_size": "--shard-size"}.get(key, key)
    return None


def _run(ray: Any, model: BPEModel, job: ShardJob, todo: list[dict], journal: Journal, workers, on_shard, crash) -> None:
    data = require_ray_data()
    try:
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
        with original_errors(written):
            for entry in written.iter_rows():
                journal.record(entry)
                if on_shard is not None:
                    on_shard(entry["number"], entry)
    except Exception as exc:
        reraise(exc, "tokenizing")


def _plan(job: ShardJob, journal: Journal, count: int) -> list[ShardPlan]:
    """Every part written: the shards to cut from them."""
    _check_written(job, journal, count)
    parts = [journal.done[n] for n in range(count)]
    return plan_shards([part["ids"] for part in parts], job.shard_size, sum(part["documents"] for part in parts))


def _cut(ray: Any, job: ShardJob, plans: list[ShardPlan], journal: Journal, crash: CrashOnce | None) -> None:
    """One task per shard copies its slices of the parts; each finished shard is journaled as it comes back.

    A task whose worker dies is run again by Ray (``max_retries``); a shard is
    renamed into place only when complete, so a dead attempt leaves at most a
    temporary file.
    """
    pending: list[Any] = []
    try:
        task = ray.remote(num_cpus=1, max_retries=3)(_cut_task)
        pending = [task.remote(job.directory, plan, job.dtype, job.file_format, crash) for plan in plans]
        while pending:
            # whatever finished within a second, journaled together (the journal is rewritten whole each time)
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=1.0)
            if ready:
                journal.record_cut(ray.get(ready))
    except Exception as exc:
        for ref in pending:
            ray.cancel(ref)
        reraise(exc, "writing shards")


def _cut_task(directory: str, plan: ShardPlan, dtype: str, file_format: str, crash: CrashOnce | None) -> dict:
    if crash is not None:
        crash(plan.number)
    return write_shard_from_parts(directory, plan, dtype, file_format)


def _finish_cut(job: ShardJob, journal: Journal, plans: list[ShardPlan], count: int, model: BPEModel) -> dict:
    """Every shard cut: index.npy (counting each shard's documents on the way) and manifest.json; then the parts,
    their ends files and the journal go."""
    missing = [plan.number for plan in plans if not journal.cut_complete(plan, job.file_format)]
    if missing:
        raise BpefstError(f"shard {missing[0]} is missing after the run; rerun with --resume")
    documents = [0] * len(plans)
    write_index(job.directory, [journal.done[n]["ids"] for n in range(count)],
                lambda ends: count_documents(ends, job.shard_size, documents))
    shards = [{**journal.cut[plan.number], "documents": documents[plan.number]} for plan in plans]
    shards = [{key: shard[key] for key in ("file", "ids", "documents", "bytes")} for shard in shards]
    manifest = write_manifest(job.directory, shards, DTYPES[job.dtype], job.file_format, fingerprint=model.fingerprint,
                              max_id=model.max_id, eot=job.eot, bot=job.bot, index=INDEX_NAME, extra={"run": journal.settings})
    _remove_leftovers(job.directory)
    os.unlink(journal.path)
    return manifest


def _check_written(job: ShardJob, journal: Journal, count: int) -> None:
    missing = [n for n in range(count) if not journal.complete(n, job.written_name(n))]
    if missing:
        raise BpefstError(f"{'shard' if job.shard_size is None else 'part'} {missing[0]} is missing after the run; "
                          "rerun with --resume")


def _finish(job: ShardJob, journal: Journal, count: int, model: BPEModel) -> dict:
    """Every shard written: index.npy and manifest.json, then the journal goes."""
    _check_written(job, journal, count)
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
    write_index(directory, [entry["ids"] for entry in entries])
    shards = [{key: entry[key] for key in ("file", "ids", "documents", "bytes")} for entry in entries]
    manifest = write_manifest(directory, shards, dtype, file_format, fingerprint=model.fingerprint, max_id=model.max_id,
                              eot=eot, bot=bot, index=INDEX_NAME, extra=extra)
    _remove_leftovers(directory)
    return manifest


def write_index(directory: str, ids: Sequence[int], on_ends: Callable[[list[int]], None] | None = None) -> None:
    """index.npy of the stream made by files 0, 1, ... holding ``ids[k]`` ids each: their ends files, each shifted
    by the ids before it.  ``on_ends`` sees every block of stream offsets written."""
    index = IdWriter(DTYPES["uint64"], "npy", path=os.path.join(directory, INDEX_NAME))
    offset = 0
    try:
        for number, count in enumerate(ids):
            for block in iter_id_blocks(os.path.join(directory, ends_name(number)), "npy"):
                ends = [offset + end for end in block]
                index.write(ends)
                if on_ends is not None:
                    on_ends(ends)
            offset += count
        index.close()
    except BaseException:
        index.abort()
        raise


def _remove_leftovers(directory: str) -> None:
    """The ends and part files, and temporary files of attempts that died before renaming theirs."""
    for name in os.listdir(directory):
        if name.startswith(("ends_", "part_")) or (
                name.startswith((".shard_", ".ends_", ".part_", f".{JOURNAL_NAME}")) and name.endswith(".tmp")):
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
