"""Ray engine (issue 19): counting, training and tokenizing on a local Ray cluster.

The cluster (``ray.init(num_cpus=2)``) is started once for the module and shut
down at its end; command-line runs join it by its address.  Oracles:

* single-machine ``train_bpe`` on the same files (checked against the CS336
  reference and HF's BpeTrainer in test_train.py), merge by merge;
* HF ``tokenizers``' BpeTrainer on corpus.en for ``--tie-break hf``;
* single-machine counting of the documents joined by a special token, for
  ``bpefst.ray.count``;
* the single-machine encoder (itself checked against tiktoken / HF), per row,
  for ``bpefst.ray.tokenize``;
* ``bpefst tokenize --output-dir`` on one machine, byte for byte, for
  ``bpefst tokenize --engine ray``.

Faults: a worker exits its process (``os._exit``) on a chosen block, once (a
marker file says it happened), and Ray's retry must give identical results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bpefst.distributed.cluster import CrashOnce
from bpefst.errors import BpefstError
from bpefst.tokenizer import load_tokenizer
from bpefst.training import train_bpe
from bpefst.training.counts import CountSettings, count_files, train_on_counts
from cli_runner import assert_user_error, run
from conftest import ROOT, corpus_prefix, require_shared

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
pytest.importorskip("pyarrow")

import bpefst.ray  # noqa: E402
from bpefst.distributed.counting import count_files_on_ray  # noqa: E402
from bpefst.distributed.shards import JOURNAL_NAME, ShardJob, tokenize_files_on_ray  # noqa: E402
from bpefst.distributed.tokenizing import tokenize_dataset  # noqa: E402
from bpefst.pipeline.inputs import expand_inputs  # noqa: E402

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def cluster():
    """A local two-CPU Ray cluster for this module; yields its address for command-line runs."""
    import logging

    import ray.data

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def merge_tokens(model) -> list[tuple]:
    return [(model.vocab[a], model.vocab[b]) for a, b in model.merges]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    data = require_shared()
    directory = tmp_path_factory.mktemp("corpora")
    pydocs = directory / "pydocs-2mb.txt"
    pydocs.write_text(corpus_prefix("pydocs"), encoding="utf-8")
    return {"cs336": data / "cs336" / "corpus.en", "pydocs": pydocs}


# -- train --engine ray == train, merge by merge ------------------------------------------


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
@pytest.mark.parametrize("name,vocab_size,split_size", [("cs336", 500, 16 << 10), ("pydocs", 1000, 256 << 10)])
def test_counting_on_ray_trains_like_one_machine(cluster, corpora, name, vocab_size, split_size, tie_break):
    path = str(corpora[name])
    settings = CountSettings.for_training(None, [EOT], "bytes", tie_break)
    table = count_files_on_ray([path], settings, split_size=split_size)  # 9 and 8 tasks
    assert table.corpus_bytes == os.path.getsize(path)
    assert table.counts == count_files([path], settings, jobs=1).counts
    model = train_on_counts(table, vocab_size)
    whole = train_bpe([path], vocab_size, special_tokens=[EOT], tie_break=tie_break)
    assert merge_tokens(model) == merge_tokens(whole)
    assert model == whole


def test_cli_train_engine_ray(cluster, corpora, tmp_path):
    out = tmp_path / "ray.bpefst"
    path = str(corpora["cs336"])
    result = run("train", path, "--engine", "ray", "--address", cluster, "--split-size", "20000", "--tie-break", "hf",
                 "--special-token", EOT, "--vocab-size", "500", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr.decode()
    model = load_tokenizer(out)
    assert model == train_bpe([path], 500, special_tokens=[EOT], tie_break="hf")
    from test_counts import hf_merges  # HF's BpeTrainer itself (corpus.en holds no special tokens)

    assert merge_tokens(model) == hf_merges(Path(path), 500)
    counts = tmp_path / "c.counts"
    result = run("count", path, "--engine", "ray", "--address", cluster, "--split-size", "30000", "--special-token", EOT, "-o", str(counts))
    assert result.returncode == 0, result.stderr
    trained = tmp_path / "from-counts.bpefst"
    assert run("train", "--from-counts", str(counts), "--vocab-size", "500", "-o", str(trained)).returncode == 0
    assert load_tokenizer(trained) == train_bpe([path], 500, special_tokens=[EOT])


def test_a_worker_dying_mid_count_changes_nothing(cluster, corpora, tmp_path):
    path = str(corpora["cs336"])
    marker = tmp_path / "crashed"
    settings = CountSettings.for_training(None, [EOT])
    table = count_files_on_ray([path], settings, split_size=16 << 10, _crash=CrashOnce(str(marker), 3))
    assert marker.exists()  # the worker counting range 3 did exit
    assert table.counts == count_files([path], settings, jobs=1).counts
    assert table.corpus_bytes == os.path.getsize(path)


def test_worker_errors_are_one_line(cluster, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"good text\n" * 3000 + b"bad \xff byte\n")
    settings = CountSettings.for_training(None, (), "chars")
    with pytest.raises(BpefstError, match=r"invalid UTF-8 at byte offset 30004"):
        count_files_on_ray([str(bad)], settings, split_size=4096)
    with pytest.raises(BpefstError, match="stdin"):
        count_files_on_ray(["-"], settings)


# -- the Python API on Ray Datasets --------------------------------------------------------


def documents() -> list[str]:
    text = (ROOT / "fixtures" / "corpus.txt").read_text(encoding="utf-8")
    lines = (require_shared() / "cs336" / "corpus.en").read_text(encoding="utf-8").splitlines()[:300]
    return text.split(EOT) + lines + ["", "Grüße, naïve café! 東京\r\n  x"]


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_ray_count_of_a_dataset_equals_counting_the_joined_documents(cluster, tmp_path, tie_break):
    docs = documents()
    dataset = ray.data.from_items([{"text": d, "n": k} for k, d in enumerate(docs)], override_num_blocks=4)
    table = bpefst.ray.count(dataset, "text", special_tokens=[EOT], tie_break=tie_break, batch_size=64)
    joined = tmp_path / "joined.txt"
    joined.write_text(EOT.join(docs), encoding="utf-8")  # a special token between documents cuts like a row boundary
    assert table.counts == count_files([str(joined)], table.settings, jobs=1).counts
    model = bpefst.ray.train(table, 400)
    assert model == train_bpe([str(joined)], 400, special_tokens=[EOT], tie_break=tie_break)
    binary = ray.data.from_items([{"text": d.encode("utf-8")} for d in docs])
    assert bpefst.ray.count(binary, special_tokens=[EOT], tie_break=tie_break).counts == table.counts
    with pytest.raises(BpefstError, match="no column 'body'"):
        bpefst.ray.count(dataset, "body")


def test_ray_tokenize_equals_the_encoder_row_by_row_despite_a_dying_worker(cluster, tmp_path):
    from bpefst.pipeline.encoder import Tokenizer

    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    docs = documents()
    dataset = ray.data.from_items([{"text": d, "n": k} for k, d in enumerate(docs)], override_num_blocks=6)
    marker = tmp_path / "crashed"
    # each actor's second batch exits its process once: with more batches than actors some actor gets there
    out = tokenize_dataset(dataset, model, "text", eot=EOT, batch_size=16, workers=2, _crash=CrashOnce(str(marker), 1))
    rows = sorted(out.iter_rows(), key=lambda row: row["n"])
    assert marker.exists()
    assert [row["n"] for row in rows] == list(range(len(docs)))  # nothing lost, nothing twice
    tok = Tokenizer(model)
    eot = model.specials[EOT]
    for row in rows:
        assert list(row["ids"]) == tok.encode(row["text"], allowed_special=(), disallowed_special=()) + [eot]
    with pytest.raises(BpefstError, match="not a special token"):
        bpefst.ray.tokenize(dataset, model, eot="<|nope|>")


def test_write_shards_of_a_tokenized_dataset(cluster, tmp_path):
    from bpefst.distributed.dataset_shards import write_dataset_shards
    from bpefst.pipeline.datasets import iter_id_blocks
    from bpefst.pipeline.encoder import Tokenizer

    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    docs = documents()
    eot = model.specials[EOT]
    dataset = ray.data.from_items([{"text": d} for d in docs], override_num_blocks=5)
    tokens = bpefst.ray.tokenize(dataset, model, eot=EOT, batch_size=32)
    marker = tmp_path / "crashed"
    manifest = write_dataset_shards(tokens, str(tmp_path / "shards"), model, eot=eot, _crash=CrashOnce(str(marker), 1))
    assert marker.exists()
    tok = Tokenizer(model)
    expected, ends = [], []
    for doc in docs:  # the oracle: the encoder, document after document, in the dataset's order
        expected += tok.encode(doc, allowed_special=(), disallowed_special=()) + [eot]
        ends.append(len(expected))
    assert [i for block in iter_id_blocks(str(tmp_path / "shards"), "shards") for i in block] == expected
    assert [i for block in iter_id_blocks(str(tmp_path / "shards" / "index.npy"), "npy") for i in block] == ends
    assert manifest["documents"] == len(docs) and manifest["eot"] == eot and manifest["dtype"] == "uint16"
    assert len(manifest["shards"]) >= 2
    assert sorted(os.listdir(tmp_path / "shards")) == ["index.npy", "manifest.json"] + [s["file"] for s in manifest["shards"]]
    with pytest.raises(BpefstError, match="already holds shards"):
        bpefst.ray.write_shards(tokens, str(tmp_path / "shards"), model)


# -- bpefst tokenize --engine ray: shards == one machine's, byte for byte ----------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """A directory of inputs: text files (one document each), a JSONL file, an empty file."""
    directory = tmp_path_factory.mktemp("inputs")
    docs = documents()
    for k in range(5):
        (directory / f"doc{k}.txt").write_text("\n".join(docs[k * 60 : (k + 1) * 60]), encoding="utf-8")
    (directory / "records.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[300:]), encoding="utf-8")
    (directory / "sub").mkdir()
    (directory / "sub" / "empty.txt").write_bytes(b"")
    return directory


def shard_stream(directory: Path) -> tuple[bytes, bytes, dict]:
    manifest = json.loads((directory / "manifest.json").read_text())
    stream = b"".join((directory / shard["file"]).read_bytes() for shard in manifest["shards"])
    return stream, (directory / "index.npy").read_bytes(), manifest


@pytest.fixture(scope="module")
def local_shards(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "shards"
    tokenizer = str(require_shared() / "gpt2" / "vocab.json")
    result = run("tokenize", tokenizer, str(inputs), "--eot", EOT, "--output-dir", str(out), "-q")
    assert result.returncode == 0, result.stderr
    return out


def test_cli_tokenize_engine_ray_equals_one_machine(cluster, inputs, local_shards, tmp_path):
    out = tmp_path / "shards"
    tokenizer = str(require_shared() / "gpt2" / "vocab.json")
    result = run("tokenize", tokenizer, str(inputs), "--eot", EOT, "--output-dir", str(out), "--engine", "ray", "--address", cluster)
    assert result.returncode == 0, result.stderr
    stream, index, manifest = shard_stream(out)
    expected_stream, expected_index, expected = shard_stream(local_shards)
    assert stream == expected_stream and index == expected_index
    for key in ("ids", "documents", "dtype", "file_format", "eot", "bot", "tokenizer"):
        assert manifest[key] == expected[key]
    assert [shard["file"] for shard in manifest["shards"]] == [f"shard_{k:05d}.bin" for k in range(7)]  # shard i <- input i
    assert sorted(os.listdir(out)) == ["index.npy", "manifest.json"] + [f"shard_{k:05d}.bin" for k in range(7)]
    # the shards are read back as one stream by bpefst's own readers
    from bpefst.pipeline.datasets import iter_id_blocks

    ids = [i for block in iter_id_blocks(str(out), "shards") for i in block]
    assert len(ids) == manifest["ids"] and ids.count(50256) == manifest["documents"]
    assert_user_error(run("tokenize", tokenizer, str(inputs), "--output-dir", str(out), "--engine", "ray", "--address", cluster), "already holds a manifest")


def test_shards_survive_a_dying_worker_and_resume(cluster, inputs, local_shards, tmp_path):
    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    sources = expand_inputs([str(inputs)])
    out = tmp_path / "shards"
    job = ShardJob(str(out), "bin", "uint16", model.specials[EOT], None, "text", False, (), ())
    marker = tmp_path / "crashed"

    class Interrupted(Exception):
        pass

    def stop_after_three(number: int, entry: dict) -> None:
        done.append(number)
        if len(done) == 3:
            raise Interrupted  # the driver stops (Ctrl-C) with shards still to write

    done: list[int] = []
    with pytest.raises(Interrupted):
        tokenize_files_on_ray(model, sources, job, on_shard=stop_after_three, _crash=CrashOnce(str(marker), 2))
    assert not (out / "manifest.json").exists()  # no manifest while shards are missing
    journal = json.loads((out / JOURNAL_NAME).read_text())
    finished = sorted(int(k) for k in journal["done"])
    assert len(finished) >= 3
    for number in finished:  # every shard the journal lists is complete
        assert (out / f"shard_{number:05d}.bin").stat().st_size == journal["done"][str(number)]["bytes"]
    # rerunning without --resume refuses; with other settings refuses; --resume skips what is done
    assert_user_error(run("tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(inputs), "--eot", EOT,
                          "--output-dir", str(out), "--engine", "ray", "--address", cluster), "add --resume")
    other = ShardJob(str(out), "bin", "uint16", None, None, "text", False, (), ())
    with pytest.raises(BpefstError, match="cannot resume.*eot"):
        tokenize_files_on_ray(model, sources, other, resume=True)
    redone: list[int] = []
    manifest = tokenize_files_on_ray(model, sources, job, resume=True, on_shard=lambda n, e: redone.append(n))
    assert sorted(redone) == sorted(set(range(len(sources))) - set(finished))
    stream, index, _ = shard_stream(out)
    expected_stream, expected_index, expected = shard_stream(local_shards)
    assert stream == expected_stream and index == expected_index and manifest["ids"] == expected["ids"]
    assert marker.exists()
    assert not any(name.startswith((".", "ends_")) or name == JOURNAL_NAME for name in os.listdir(out))
    again: list[int] = []
    assert tokenize_files_on_ray(model, sources, job, resume=True, on_shard=lambda n, e: again.append(n))["ids"] == manifest["ids"]
    assert again == []  # a finished run resumed: nothing to do


# -- --shard-size N on Ray: one machine's fixed-size shards, byte for byte ---------------------------

SHARD_SIZE = 4000


@pytest.fixture(scope="module")
def uneven_inputs(tmp_path_factory) -> Path:
    """One large input (several shards' worth) and many small ones (several per shard), an empty one, a JSONL one."""
    directory = tmp_path_factory.mktemp("uneven")
    (directory / "a_large.txt").write_text(corpus_prefix("pydocs", 120_000), encoding="utf-8")
    docs = documents()
    for k in range(24):
        (directory / f"small_{k:02d}.txt").write_text(docs[k], encoding="utf-8")
    (directory / "small_empty.txt").write_bytes(b"")
    (directory / "tail.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[24:64]), encoding="utf-8")
    return directory


def directory_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def local_fixed_shards(uneven_inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local-fixed") / "shards"
    result = run("tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(uneven_inputs), "--eot", EOT, "--output-dir",
                 str(out), "--shard-size", str(SHARD_SIZE), "--format", "npy", "-q")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["shards"]) >= 8 and manifest["documents"] == 66  # 26 text files + 40 records
    return out


def test_cli_engine_ray_with_shard_size_writes_one_machines_directory(cluster, uneven_inputs, local_fixed_shards, tmp_path):
    out = tmp_path / "shards"
    result = run("tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(uneven_inputs), "--eot", EOT, "--output-dir",
                 str(out), "--shard-size", str(SHARD_SIZE), "--format", "npy", "--engine", "ray", "--address", cluster)
    assert result.returncode == 0, result.stderr
    assert directory_bytes(out) == directory_bytes(local_fixed_shards)  # shards, index.npy and manifest.json


def test_fixed_size_shards_survive_dying_workers_and_resume(cluster, uneven_inputs, local_fixed_shards, tmp_path):
    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    sources = expand_inputs([str(uneven_inputs)])
    out = tmp_path / "shards"
    job = ShardJob(str(out), "npy", "uint16", model.specials[EOT], None, "text", False, (), (), shard_size=SHARD_SIZE)

    class Interrupted(Exception):
        pass

    def stop_after_five(number: int, entry: dict) -> None:
        done.append(number)
        if len(done) == 5:
            raise Interrupted

    done: list[int] = []
    with pytest.raises(Interrupted):  # the large input's worker dies once, then the driver stops
        tokenize_files_on_ray(model, sources, job, on_shard=stop_after_five, _crash=CrashOnce(str(tmp_path / "crashed"), 0))
    assert not (out / "manifest.json").exists() and not any(name.startswith("shard_") for name in os.listdir(out))
    with pytest.raises(BpefstError, match="cannot resume.*--shard-size"):
        tokenize_files_on_ray(model, sources, ShardJob(**{**job.__dict__, "shard_size": SHARD_SIZE + 1}), resume=True)
    # resumed: the parts left to do, then the shards, one of whose tasks dies once mid-copy
    redone: list[int] = []
    manifest = tokenize_files_on_ray(model, sources, job, resume=True, on_shard=lambda n, e: redone.append(n),
                                     _crash_cut=CrashOnce(str(tmp_path / "crashed-cut"), 1))
    assert (tmp_path / "crashed").exists() and (tmp_path / "crashed-cut").exists()
    assert len(redone) < len(sources) and len(manifest["shards"]) >= 8
    assert directory_bytes(out) == directory_bytes(local_fixed_shards)
    assert bpefst.ray is not None and tokenize_files_on_ray(model, sources, job, resume=True)["ids"] == manifest["ids"]


def test_cli_worker_error_is_one_line_and_writes_no_manifest(cluster, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text('{"text": "fine"}\n')
    (inputs / "b.jsonl").write_text('{"body": "no text field"}\n')
    out = tmp_path / "out"
    result = run("tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(inputs), "--output-dir", str(out), "--engine", "ray",
                 "--address", cluster)
    assert_user_error(result, "b.jsonl: line 1: no field 'text'")
    assert not (out / "manifest.json").exists()


# -- without Ray --------------------------------------------------------------------------


def test_engine_ray_without_ray_installed_is_a_one_line_error(tmp_path):
    fake = tmp_path / "site" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    corpus = tmp_path / "c.txt"
    corpus.write_text("some text\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for args in (["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.bpefst")],
                 ["count", str(corpus), "-o", str(tmp_path / "c.counts")],
                 ["tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(corpus), "--output-dir", str(tmp_path / "o")]):
        result = subprocess.run([sys.executable, "-m", "bpefst", *args, "--engine", "ray"], capture_output=True, env=env, timeout=120)
        assert_user_error(result, "pip install 'bpefst[ray]'")
        assert not (tmp_path / "t.bpefst").exists() and not (tmp_path / "c.counts").exists()


# -- Ray's own failures, told as what they are (issue 30) ------------------------------------


def test_under_an_address_space_cap_ray_is_refused_in_one_line_naming_the_cause(tmp_path):
    """Under ``ulimit -v`` Ray's processes die in their C++ core as they start (the command used to end with no
    message, a traceback, or "cannot write to stdout: Connection reset by peer"); locally the same command works."""
    import resource

    corpus = tmp_path / "c.txt"
    corpus.write_text("some text to count, twice: some text to count\n" * 50)
    cap = 1 << 30

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))

    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    for args in (["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.bpefst"), "--engine", "ray"],
                 ["tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(corpus), "--output-dir", str(tmp_path / "out"),
                  "--engine", "ray"]):
        result = subprocess.run([sys.executable, "-m", "bpefst", *args], capture_output=True, env=env, timeout=120,
                                preexec_fn=capped)
        assert_user_error(result, "Ray cannot start workers under this process's address-space limit of 1,024 MiB (ulimit -v")
        assert "--engine local" in result.stderr.decode()
    assert not (tmp_path / "t.bpefst").exists() and not (tmp_path / "out").exists()
    local = subprocess.run([sys.executable, "-m", "bpefst", "train", str(corpus), "--vocab-size", "300", "-o",
                            str(tmp_path / "t.bpefst"), "-q"], capture_output=True, timeout=120, preexec_fn=capped)
    assert local.returncode == 0, local.stderr


def test_an_address_where_no_cluster_answers_is_one_line_at_once(tmp_path):
    """Ray itself retries an unreachable cluster for minutes; bpefst asks the port first."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
        corpus = tmp_path / "c.txt"
        corpus.write_text("some text\n")
        for args in (["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.bpefst")],
                     ["tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(corpus), "--output-dir", str(tmp_path / "o")]):
            result = run(*args, "--engine", "ray", "--address", address)
            assert_user_error(result, f"cannot join the Ray cluster at {address}: nothing answers there (Connection refused)")
    assert not (tmp_path / "o").exists()


def test_ray_failures_are_named_with_what_to_try():
    from bpefst.distributed.cluster import reraise

    def told(exc: BaseException) -> str:
        with pytest.raises(BpefstError) as caught:
            reraise(exc, "counting")
        message = str(caught.value)
        assert "\n" not in message and message.startswith("counting failed")
        return message

    assert "ran out of memory" in told(ray.exceptions.OutOfMemoryError("Task was killed due to the node running low on memory."))
    assert "a Ray worker died and its task failed after its retries" in told(
        ray.exceptions.WorkerCrashedError())
    assert "the Ray cluster failed" in told(ray.exceptions.NodeDiedError("node 3 died"))
    lost = told(ConnectionResetError(104, "Connection reset by peer"))
    assert "connection to the Ray cluster was lost (Connection reset by peer)" in lost and "stdout" not in lost
    with pytest.raises(ZeroDivisionError):  # a bug is not dressed up as a Ray failure
        reraise(ZeroDivisionError(), "counting")

