"""Training-ready datasets: ``bpefst tokenize`` over many mixed inputs into bin / npy / shards, read back with numpy.

Oracles: tiktoken built from the shared rank file (cl100k) and HF ``tokenizers``
loading GPT-2's vocab.json + merges.txt, each document encoded on its own;
numpy reads every file (``np.fromfile``, ``np.load(mmap_mode="r")``); pyarrow
writes the Parquet input.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import re
import shlex
import shutil
import subprocess
import sys

import msgpack
import pytest

from bpefst.errors import BpefstError
from bpefst.pipeline.datasets import (DTYPES, DatasetWriter, IdWriter, ShardWriter, choose_dtype, iter_id_blocks,
                                      npy_header)
from bpefst.pipeline.documents import segments
from bpefst.pipeline.encoder import Tokenizer
from bpefst.pipeline.inputs import InputFile, expand_inputs, iter_documents, open_input
from bpefst.tokenizer import load_tokenizer
from bpefst.tokenizer.safe_cuts import cut_rule_for
from cli_runner import assert_user_error, run
from conftest import corpus_prefix, hf_gpt2_oracle, require_shared, tiktoken_oracle

np = pytest.importorskip("numpy")

EOT = "<|endoftext|>"
KINDS = {
    # kind: (tokenizer path under the shared data, dtype auto picks, oracle of one document's ids)
    "gpt2": ("gpt2/vocab.json", "uint16", lambda text: hf_gpt2_oracle().encode(text).ids),
    "cl100k": ("tiktoken/cl100k_base.tiktoken.gz", "uint32", lambda text: tiktoken_oracle("cl100k_base").encode_ordinary(text)),
}


# -- the corpus: a directory of mixed inputs -------------------------------------------------------------


def _paragraphs(name: str, size: int) -> list[str]:
    text = corpus_prefix(name, size)
    return [p for p in text.split("\n\n") if p.strip() and EOT not in p]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """``(directory, documents)``: .txt, .txt.gz, .txt.bz2, .jsonl.xz and .parquet inputs, documents in walk order."""
    require_shared()
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path_factory.mktemp("corpus")
    data = root / "data"
    (data / "sub").mkdir(parents=True)
    pydocs = corpus_prefix("pydocs", 400_000)
    fortunes = _paragraphs("fortunes", 120_000)
    docs: list[str] = []
    whole = pydocs[:150_000]
    (data / "01_plain.txt").write_bytes(whole.encode("utf-8", "surrogateescape"))
    docs.append(whole)
    zipped = pydocs[150_000:260_000] + "\n\n  trailing spaces   "
    (data / "02_zipped.txt.gz").write_bytes(gzip.compress(zipped.encode()))
    docs.append(zipped)
    records = fortunes[:60] + ["", "   ", "ünïcödé ✓ 日本語 " * 5]
    (data / "03_records.jsonl.xz").write_bytes(lzma.compress(
        "".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in enumerate(records)).encode()))
    docs.extend(records)
    rows = fortunes[60:140]
    pq.write_table(pa.table({"text": rows, "n": list(range(len(rows)))}), data / "sub" / "04_rows.parquet", row_group_size=25)
    docs.extend(rows)
    bz = pydocs[260:400]  # a small document, bzip2
    (data / "sub" / "05_small.txt.bz2").write_bytes(bz2.compress(bz.encode()))
    docs.append(bz)
    (data / ".hidden.txt").write_text("never read")
    return root, data, docs


def _tokenizer(kind: str, root) -> str:
    """The shared tokenizer, converted once to bpefst's own format (loads in a fraction of the time)."""
    target = root / f"{kind}.bpefst"
    if not target.exists():
        source = require_shared() / KINDS[kind][0]
        result = run("convert", str(source), "--format", "bpefst", "-o", str(target))
        assert result.returncode == 0, result.stderr.decode()
    return str(target)


def _expected(kind: str, docs: list[str], eot: int) -> tuple[list[int], list[int]]:
    """Oracle ids of the whole stream (each document, then EOT) and the document end offsets."""
    oracle = KINDS[kind][2]
    stream: list[int] = []
    ends = []
    for text in docs:
        stream.extend(oracle(text))
        stream.append(eot)
        ends.append(len(stream))
    return stream, ends


def _ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr.decode()


SHARD_SIZE = 20_011


@pytest.fixture(scope="module")
def written(corpus, tmp_path_factory):
    """``written(kind)``: every format ``bpefst tokenize`` writes for the corpus directory, made once per tokenizer."""
    root, data, _ = corpus
    made = {}

    def get(kind: str) -> dict:
        if kind in made:
            return made[kind]
        out = tmp_path_factory.mktemp(f"out-{kind}")
        tok = _tokenizer(kind, root)
        dfa = out / f"{kind}.dfa"
        _ok(run("compile", tok, "--encoding", "implicit", "-o", str(dfa)))
        common = ("tokenize", tok, str(data), "--eot", EOT)
        shard_format = "bin" if kind == "gpt2" else "npy"  # bin shards for one tokenizer, npy for the other
        runs = {
            "bin": ("--format", "bin", "-o", str(out / "train.bin"), "--index", str(out / "idx.npy")),
            "npy": ("--format", "npy", "-o", str(out / "train.npy")),
            "shards": ("--output-dir", str(out / "shards"), "--shard-size", str(SHARD_SIZE), "--format", shard_format),
            "jobs2": ("--format", "bin", "-o", str(out / "jobs2.bin"), "--index", str(out / "jobs2.npy"), "--jobs", "2"),
            "ids": ("--format", "ids", "-o", str(out / "out.ids")),
            "jsonl": ("--format", "jsonl", "-o", str(out / "out.jsonl")),
            "msgpack": ("--format", "msgpack", "-o", str(out / "out.msgpack")),
        }
        for options in runs.values():
            _ok(run(*common, *options))
        made[kind] = {"dir": out, "tokenizer": tok, "dfa": str(dfa), "shard_format": shard_format}
        return made[kind]

    return get


@pytest.mark.parametrize("kind", ["gpt2", "cl100k"])
def test_mixed_inputs_to_bin_npy_and_shards_equal_the_oracle(kind: str, corpus, written) -> None:
    _, _, docs = corpus
    made = written(kind)
    out, tok = made["dir"], made["tokenizer"]
    eot = 50256 if kind == "gpt2" else 100257
    dtype = KINDS[kind][1]
    expected, ends = _expected(kind, docs, eot)

    # bin + index
    ids = np.fromfile(out / "train.bin", dtype=dtype)
    assert ids.tolist() == expected
    index = np.load(out / "idx.npy")
    assert index.dtype == np.uint64 and index.tolist() == ends
    starts = [0, *ends[:-1]]
    for k, text in enumerate(docs):  # the index finds every document: its ids, then the EOT
        assert ids[starts[k] : ends[k]].tolist() == KINDS[kind][2](text) + [eot]

    # npy, opened as a memory map
    array = np.load(out / "train.npy", mmap_mode="r")
    assert array.dtype == np.dtype(dtype) and array.shape == (len(expected),)
    assert array.tolist() == expected

    # shards of at most N ids, with their manifest
    size, shard_format = SHARD_SIZE, made["shard_format"]
    manifest = json.loads((out / "shards" / "manifest.json").read_text())
    assert manifest["format"] == "bpefst-shards" and manifest["dtype"] == dtype and manifest["eot"] == eot
    assert manifest["ids"] == len(expected) and manifest["documents"] == len(docs)
    assert manifest["file_format"] == shard_format
    assert manifest["tokenizer"]["fingerprint"] == load_tokenizer(tok).fingerprint
    parts = []
    for shard in manifest["shards"]:
        path = out / "shards" / shard["file"]
        part = np.fromfile(path, dtype=dtype) if shard_format == "bin" else np.load(path, mmap_mode="r")
        assert len(part) == shard["ids"] <= size
        parts.append(np.asarray(part))
    assert len(parts) == -(-len(expected) // size)
    assert np.concatenate(parts).tolist() == expected
    assert np.load(out / "shards" / "index.npy").tolist() == ends
    ends_by_shard = [sum(1 for e in ends if k * size < e <= (k + 1) * size) for k in range(len(parts))]
    assert [s["documents"] for s in manifest["shards"]] == ends_by_shard

    # --jobs 2: byte-identical files
    assert (out / "jobs2.bin").read_bytes() == (out / "train.bin").read_bytes()
    assert (out / "jobs2.npy").read_bytes() == (out / "idx.npy").read_bytes()

    # the text formats: the same stream; jsonl one array per document
    assert list(map(int, (out / "out.ids").read_text().split())) == expected
    unpacked = [x for block in msgpack.Unpacker(io.BytesIO((out / "out.msgpack").read_bytes())) for x in block]
    assert unpacked == expected
    lines = (out / "out.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [expected[b:e] for b, e in zip(starts, ends)]


def _broken_pair(model, stream: list[int], eot: int) -> tuple[int, int, int]:
    """A position ``i`` and the parts ``(u, v)`` of the merge that made ``stream[i]``: writing ``u, v`` over
    ``stream[i], stream[i+1]`` puts a pair BPE would have merged inside one chunk."""
    parts = {result: pair for pair, result in zip(model.merges, model.merge_results)}
    for i in range(25_000, len(stream) - 2):  # past the first shard
        token, after = stream[i], stream[i + 1]
        text = model.token_bytes(token)
        if token in parts and after != eot and text.isalpha() and len(text) >= 4:
            u, v = parts[token]
            return i, u, v
    raise AssertionError("no merged token found")


@pytest.mark.parametrize("kind", ["gpt2", "cl100k"])
def test_validate_reads_every_output_format_and_flags_an_injected_pair(kind: str, corpus, written, tmp_path) -> None:
    _, _, docs = corpus
    made = written(kind)
    out, dfa = made["dir"], made["dfa"]
    eot = 50256 if kind == "gpt2" else 100257
    dtype = KINDS[kind][1]
    expected, _ = _expected(kind, docs, eot)
    model = load_tokenizer(made["tokenizer"])
    i, u, v = _broken_pair(model, expected, eot)
    bad = list(expected)
    bad[i : i + 2] = [u, v]
    # each written format, and the same format holding the injected pair (written with numpy / msgpack)
    broken = {
        "ids": lambda p: p.write_text(" ".join(map(str, bad)) + "\n"),
        "msgpack": lambda p: p.write_bytes(msgpack.packb(bad[:5000]) + msgpack.packb(bad[5000:])),
        "bin": lambda p: np.asarray(bad, dtype=dtype).tofile(p),
        "npy": lambda p: np.save(p, np.asarray(bad, dtype=dtype)),
    }
    files = {"ids": "out.ids", "msgpack": "out.msgpack", "bin": "train.bin", "npy": "train.npy", "shards": "shards"}
    for fmt, name in files.items():
        good = run("validate", dfa, str(out / name))
        assert good.returncode == 0 and good.stdout.decode() == f"canonical: {len(expected)} tokens\n", (fmt, good.stderr)
        if fmt == "shards":
            target = tmp_path / "bad_shards"
            shutil.copytree(out / name, target)
            manifest = json.loads((target / "manifest.json").read_text())
            for position, value in ((i, u), (i + 1, v)):
                shard = target / manifest["shards"][position // SHARD_SIZE]["file"]
                part = np.load(shard) if shard.suffix == ".npy" else np.fromfile(shard, dtype=dtype)
                part[position % SHARD_SIZE] = value
                np.save(shard, part) if shard.suffix == ".npy" else part.tofile(shard)
        else:
            target = tmp_path / f"bad.{fmt}"
            broken[fmt](target)
        flagged = run("validate", dfa, str(target))
        assert flagged.returncode == 1, (fmt, flagged.stdout, flagged.stderr)
        found = re.match(r"not canonical at token (\d+): ", flagged.stdout.decode())
        assert found and int(found.group(1)) in (i + 1, i + 2), (fmt, i, flagged.stdout)
    # jsonl: one array per document, each checked on its own
    assert run("validate", dfa, str(out / "out.jsonl")).stdout.decode() == f"canonical: {len(docs)} sequences\n"
    wrong = tmp_path / "bad.jsonl"
    wrong.write_text(json.dumps([1, 2, u, v, eot]) + "\n")
    assert run("validate", dfa, str(wrong)).returncode == 1


def test_uint16_is_refused_for_o200k(tmp_path) -> None:
    data = require_shared()
    text = tmp_path / "t.txt"
    text.write_text("hello")
    out = tmp_path / "o.bin"
    result = run("tokenize", str(data / "tiktoken" / "o200k_base.tiktoken.gz"), str(text), "--format", "bin", "--dtype", "uint16",
                 "-o", str(out))
    assert_user_error(result, "uint16 holds ids below 65,536")
    assert not out.exists() and os.listdir(tmp_path) == ["t.txt"]
    assert choose_dtype("auto", 200_018).name == "uint32" and choose_dtype("auto", 50_256).name == "uint16"


def test_bad_inputs_leave_no_output(tmp_path) -> None:
    data = require_shared()
    gpt2 = str(data / "gpt2" / "vocab.json")
    good = tmp_path / "a.jsonl"
    good.write_text('{"text": "fine"}\n' * 3 + '{"body": "no text field"}\n')
    out = tmp_path / "out"
    out.mkdir()
    for options, fragment in [
        (("--format", "npy", "-o", str(out / "x.npy")), "no field 'text'"),
        (("--output-dir", str(out / "shards"), "--shard-size", "1"), "no field 'text'"),
        (("--format", "jsonl", "-o", str(out / "x.jsonl")), "no field 'text'"),
    ]:
        assert_user_error(run("tokenize", gpt2, str(good), *options), fragment)
    leftovers = [name for _, _, names in os.walk(out) for name in names]
    assert leftovers == []
    assert_user_error(run("tokenize", gpt2, str(tmp_path / "nothing*.txt")), "no file matches")
    assert_user_error(run("tokenize", gpt2, str(good), "--format", "npy"), "needs --output")
    assert_user_error(run("tokenize", gpt2, str(good), "--eot", "<|nope|>", "--format", "jsonl"), "--eot '<|nope|>'")
    assert_user_error(run("tokenize", gpt2, str(good), "--eot", "99999999", "--format", "jsonl"), "not a token id")


# -- the library pieces -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["gpt2/vocab.json", "tiktoken/cl100k_base.tiktoken.gz"])
def test_segments_of_a_long_document_encode_to_the_whole_document(path: str) -> None:
    """Cutting a document at safe positions into many small segments changes no id (oracle: encode of the whole)."""
    model = load_tokenizer(require_shared() / path)
    tok = Tokenizer(model)
    text = corpus_prefix("pydocs", 300_000) + "\n\n   \n" + corpus_prefix("fortunes", 50_000)
    pieces = [text[k : k + 777] for k in range(0, len(text), 777)]
    cut = list(segments([iter(pieces), iter(()), iter(["x"])], cut_rule_for(model.pattern, model.specials), size=2000))
    first_doc = [s for s in cut[:-2]]
    assert len(first_doc) > 50 and all(len(s.text) < 20_000 for s in first_doc)
    assert "".join(s.text for s in first_doc) == text
    assert [(s.first, s.last) for s in cut[-2:]] == [(True, True), (True, True)] and cut[-2].text == ""
    ids = [i for s in first_doc for i in tok.encode(s.text)]
    assert ids == tok.encode(text)


def test_npy_header_is_what_numpy_reads(tmp_path) -> None:
    for length in (0, 1, 65_535, 10**12):
        for name in ("uint16", "uint32", "uint64"):
            header = npy_header(DTYPES[name], length)
            assert len(header) % 64 == 0 and len(header) == len(npy_header(DTYPES[name], 0))
            buffer = io.BytesIO(header)
            assert np.lib.format.read_magic(buffer) == (1, 0)
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buffer)
            assert (shape, fortran, dtype) == ((length,), False, np.dtype(name))
    path = tmp_path / "ids.npy"
    writer = IdWriter(DTYPES["uint32"], "npy", path=str(path))
    writer.write(list(range(70_000)))
    writer.write([4_000_000_000])
    writer.close()
    assert np.load(path).tolist() == [*range(70_000), 4_000_000_000]
    assert [x for block in iter_id_blocks(str(path), "npy") for x in block] == [*range(70_000), 4_000_000_000]


def test_shard_writer_counts_documents_per_shard(tmp_path) -> None:
    """Documents ending exactly on a shard boundary, empty documents, one id per shard."""
    lengths = [3, 2, 0, 5, 1, 0, 4]
    for size in (1, 2, 3, 5, 100):
        directory = tmp_path / f"s{size}"
        directory.mkdir()
        writer = DatasetWriter(ShardWriter(str(directory), DTYPES["uint16"], size),
                               index=IdWriter(DTYPES["uint64"], "npy", path=str(directory / "index.npy")))
        stream = []
        for n in lengths:
            writer.begin_document()
            writer.write(list(range(len(stream), len(stream) + n)))
            stream.extend(range(len(stream), len(stream) + n))
            writer.end_document()
        writer.close(fingerprint="x", max_id=100)
        manifest = json.loads((directory / "manifest.json").read_text())
        ends = np.load(directory / "index.npy").tolist()
        assert ends == list(np.cumsum(lengths))
        assert [x for block in iter_id_blocks(str(directory), "shards") for x in block] == stream
        assert sum(s["documents"] for s in manifest["shards"]) == len(lengths) == manifest["documents"]
        for k, shard in enumerate(manifest["shards"]):
            # a document ending at offset e (e > 0) is counted in the shard holding id e-1
            assert shard["documents"] == sum(1 for e in ends if (max(e, 1) - 1) // size == k), (size, manifest)


def test_inputs_expand_dirs_and_globs_in_order(corpus) -> None:
    _, data, _ = corpus
    found = expand_inputs([str(data), str(data / "sub" / "*.parquet")])
    names = [os.path.relpath(f.path, data) for f in found]
    assert names == ["01_plain.txt", "02_zipped.txt.gz", "03_records.jsonl.xz", "sub/04_rows.parquet", "sub/05_small.txt.bz2",
                     "sub/04_rows.parquet"]
    assert [f.kind for f in found] == ["text", "text", "jsonl", "parquet", "text", "parquet"]


def test_parquet_without_the_column_is_refused(corpus) -> None:
    _, data, _ = corpus
    source = InputFile(str(data / "sub" / "04_rows.parquet"), 1, "parquet")
    with pytest.raises(BpefstError, match="no column 'body'"):
        list(iter_documents(source, True, "body"))


# -- compressed input everywhere (#16 item 15) ---------------------------------------------------------------


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_open_input_decompresses_by_magic_bytes_not_by_name(suffix: str, tmp_path) -> None:
    payload = ("Zeile eins\nligne deux ✓\n" * 5000).encode()
    named = tmp_path / "misleading.txt"  # no compression suffix: detected by its first bytes
    named.write_bytes(COMPRESSORS[suffix](payload))
    with open_input(str(named)) as stream:
        assert stream.compression and stream.read() == payload
    if suffix == "gz":  # concatenated members are one stream, as gzip -dc reads them
        named.write_bytes(gzip.compress(payload[:100]) + gzip.compress(payload[100:]))
        with open_input(str(named)) as stream:
            assert stream.read() == payload
    named.write_bytes(COMPRESSORS[suffix](payload)[:-20])
    with pytest.raises(BpefstError, match="corrupt or truncated"):
        with open_input(str(named)) as stream:
            stream.read()


def test_compressed_input_is_read_as_text_by_every_command(tmp_path) -> None:
    """Regression (#16 item 15): ``train``, ``tokenize``, ``encode``, ``decode``, ``validate`` of a .xz/.gz file
    give what they give for the plain file, never the tokens of the compressed bytes."""
    data = require_shared()
    gpt2 = str(data / "gpt2" / "vocab.json")
    text = corpus_prefix("fortunes", 60_000)
    plain = tmp_path / "corpus.txt"
    plain.write_text(text)
    packed = tmp_path / "corpus.txt.xz"
    packed.write_bytes(lzma.compress(text.encode()))
    oracle = hf_gpt2_oracle().encode(text).ids
    for command in ("tokenize", "encode"):
        result = run(command, gpt2, str(packed))
        _ok(result)
        assert list(map(int, result.stdout.split())) == oracle, command
    # stdin too
    result = run("tokenize", gpt2, "-", stdin=gzip.compress(text.encode()))
    assert list(map(int, result.stdout.split())) == oracle
    ids = tmp_path / "ids.txt.gz"
    ids.write_bytes(gzip.compress(" ".join(map(str, oracle)).encode()))
    assert run("validate", gpt2, str(ids)).stdout.decode() == f"canonical: {len(oracle)} tokens\n"
    assert run("decode", gpt2, str(ids)).stdout == text.encode()
    trained = {}
    for source in (plain, packed):
        out = tmp_path / f"{source.name}.json"
        _ok(run("train", str(source), "--vocab-size", "400", "--format", "hf", "-o", str(out), "--quiet"))
        trained[source] = json.loads(out.read_text())["model"]["merges"]
    assert trained[plain] == trained[packed] and len(trained[plain]) > 100


# -- progress --------------------------------------------------------------------------------------------------


def test_progress_bar_on_a_terminal_and_silence_otherwise(tmp_path) -> None:
    data = require_shared()
    gpt2 = str(data / "gpt2" / "vocab.json")
    big = tmp_path / "big.txt"
    big.write_text(corpus_prefix("pydocs", 3_000_000))
    out = tmp_path / "o.bin"
    args = ["tokenize", gpt2, str(big), "--format", "bin", "-o", str(out), "--eot", EOT]
    silent = run(*args)
    assert silent.returncode == 0 and silent.stderr == b""
    script = shutil.which("script")
    if script is None:
        pytest.skip("util-linux `script` is not installed: cannot run the command on a terminal")
    command = shlex.join([sys.executable, "-m", "bpefst", *args])
    shown = subprocess.run([script, "-qc", command, "/dev/null"], capture_output=True, timeout=120,
                           env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.stdout.decode("utf-8", "replace"))  # colours, cursor moves
    assert shown.returncode == 0, screen
    # The rate's unit depends on the machine's speed (kB/s on a loaded one), so any unit is accepted.
    assert "tokenizing" in screen and re.search(r"[\d.]+\s?[kMG]?B/s", screen), screen  # rate
    assert "3.0/3.0 MB" in screen, screen  # bytes read / total at the end
    assert re.search(r"[kMG]?B/s\s+(\d:\d\d:\d\d|-:--:--)", screen), screen  # the rate, then the time left
    quiet = subprocess.run([script, "-qc", command + " --quiet", "/dev/null"], capture_output=True, timeout=120)
    assert "tokenizing" not in quiet.stdout.decode("utf-8", "replace")


def test_split_lines_bot_and_stdin_among_inputs(tmp_path) -> None:
    """``--split-lines``: one document per non-empty line (\\n, \\r\\n, \\r); ``--bot`` before each; ``-`` in order."""
    data = require_shared()
    gpt2 = str(data / "gpt2" / "vocab.json")
    lines = ["first line ✓", "", "  second, indented", "third\r", "fourth"]
    first = tmp_path / "a.txt"
    first.write_bytes("\n".join(lines).encode() + b"\r\nlast one\n\n")
    stdin_text = "from stdin\nand more"
    result = run("tokenize", gpt2, str(first), "-", "--split-lines", "--bot", "50256", "--eot", "0", "--format", "jsonl",
                 stdin=stdin_text.encode())
    _ok(result)
    documents = ["first line ✓", "  second, indented", "third", "fourth", "last one", "from stdin", "and more"]
    oracle = hf_gpt2_oracle()
    assert [json.loads(line) for line in result.stdout.decode().splitlines()] == [
        [50256, *oracle.encode(d).ids, 0] for d in documents]


def test_a_fifo_and_process_substitution_are_read_once(tmp_path) -> None:
    """A named pipe among the inputs is opened once (its writer sees no early close) and not sniffed for Parquet."""
    data = require_shared()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = "streamed through a pipe, compressed"
    writer = subprocess.Popen([sys.executable, "-c", f"import gzip; open({str(fifo)!r}, 'wb').write(gzip.compress({text!r}.encode()))"])
    result = run("tokenize", str(data / "gpt2" / "vocab.json"), str(fifo), "--eot", "50256", "--format", "jsonl")
    assert writer.wait(timeout=60) == 0
    _ok(result)
    assert json.loads(result.stdout) == hf_gpt2_oracle().encode(text).ids + [50256]


def test_text_that_starts_like_a_magic_number_stays_text(tmp_path) -> None:
    for text in (b"BZh91 is not bzip2", b"BZh", b"\x1f", b"", b"7z is short for seven zip"):
        path = tmp_path / "t.txt"
        path.write_bytes(text)
        with open_input(str(path)) as stream:
            assert stream.compression is None and stream.read() == text
    empty = tmp_path / "empty.bz2"
    empty.write_bytes(bz2.compress(b""))
    with open_input(str(empty)) as stream:
        assert stream.compression == "bzip2" and stream.read() == b""


@pytest.mark.parametrize("values", [[], [0, 1, 65535, 300], [7, 65536], [2**32 - 1]])
def test_pack_ids_from_packed_arrays_equals_packing_ints(values) -> None:
    """The core hands writers array('I'); narrowing them to uint16 must give what packing the ints gives
    (and refuse an id that does not fit)."""
    from array import array

    from bpefst.pipeline.datasets import pack_ids

    for name in ("uint16", "uint32"):
        dtype = DTYPES[name]
        try:
            expected = pack_ids(list(values), dtype)
        except OverflowError:
            with pytest.raises(OverflowError):
                pack_ids(array("I", values), dtype)
        else:
            assert pack_ids(array("I", values), dtype) == expected
