"""zstd input (issue 30): ``.jsonl.zst`` and ``.txt.zst`` read as gzip is, bombs capped, the extra named when missing.

Oracles: the same inputs uncompressed (their ids, from ``bpefst tokenize``,
themselves checked against HF ``tokenizers`` loading GPT-2 here); the bytes
the ``zstandard`` package compressed; the gzip cap's own test in
test_hardening.py for the tokenizer-file bomb.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from bpefst.errors import BpefstError
from bpefst.pipeline.inputs import open_input
from cli_runner import assert_user_error, run
from conftest import corpus_prefix, hf_gpt2_oracle, require_shared

zstandard = pytest.importorskip("zstandard")
np = pytest.importorskip("numpy")

EOT = "<|endoftext|>"


def _compress(data: bytes, **params) -> bytes:
    return zstandard.ZstdCompressor(**params).compress(data)


def _frames(data: bytes, cut: int) -> bytes:
    """Two frames, as pzstd and appending writers make them; the first with a checksum, the second without."""
    return _compress(data[:cut], write_checksum=True) + _compress(data[cut:], write_checksum=False)


def _ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr.decode()


def _shard_bytes(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_jsonl_zst_and_txt_zst_give_the_ids_of_the_uncompressed_inputs(tmp_path) -> None:
    gpt2 = str(require_shared() / "gpt2" / "vocab.json")
    text = corpus_prefix("fortunes", 300_000)
    records = [p for p in text.split("\n\n") if p.strip() and EOT not in p][:400]
    jsonl = "".join(json.dumps({"text": r, "id": k}) + "\n" for k, r in enumerate(records)).encode()
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    for directory in (plain, packed):
        directory.mkdir()
    (plain / "a.jsonl").write_bytes(jsonl)
    (plain / "b.txt").write_text(text, encoding="utf-8")
    (packed / "a.jsonl.zst").write_bytes(_frames(jsonl, len(jsonl) // 3))
    (packed / "b.txt.zst").write_bytes(_compress(text.encode(), level=19))
    outputs = {}
    for name, directory in (("plain", plain), ("packed", packed)):
        out = tmp_path / f"{name}-shards"
        _ok(run("tokenize", gpt2, str(directory), "--eot", EOT, "--output-dir", str(out), "--shard-size", "50000", "-q"))
        outputs[name] = _shard_bytes(out)
    manifests = {name: json.loads(files.pop("manifest.json")) for name, files in outputs.items()}
    for manifest in manifests.values():
        manifest.pop("run", None)  # names the inputs, which differ
    assert manifests["packed"] == manifests["plain"]
    assert outputs["packed"] == outputs["plain"]  # shards and index, byte for byte
    manifest = manifests["packed"]
    # and those ids are the oracle's: each record, then the text file, each followed by <|endoftext|>
    oracle = hf_gpt2_oracle()
    expected = []
    for document in records + [text]:
        expected += oracle.encode(document).ids + [50256]
    ids = np.concatenate([np.fromfile(tmp_path / "packed-shards" / s["file"], dtype=np.uint16) for s in manifest["shards"]])
    assert ids.tolist() == expected and manifest["documents"] == len(records) + 1
    # one .txt.zst through the streaming path, and from stdin
    single = run("tokenize", gpt2, str(packed / "b.txt.zst"))
    _ok(single)
    assert list(map(int, single.stdout.split())) == oracle.encode(text).ids
    piped = run("tokenize", gpt2, "-", stdin=(packed / "b.txt.zst").read_bytes())
    assert piped.stdout == single.stdout


def test_train_validate_and_decode_read_zstd(tmp_path) -> None:
    gpt2 = str(require_shared() / "gpt2" / "vocab.json")
    text = corpus_prefix("pydocs", 80_000)
    plain, packed = tmp_path / "corpus.txt", tmp_path / "corpus.zst"
    plain.write_text(text, encoding="utf-8")
    packed.write_bytes(_frames(text.encode(), 1000))
    trained = {}
    for source in (plain, packed):
        out = tmp_path / f"{source.name}.json"
        _ok(run("train", str(source), "--vocab-size", "400", "--format", "hf", "-o", str(out), "--quiet"))
        trained[source] = json.loads(out.read_text())["model"]["merges"]
    assert trained[plain] == trained[packed] and len(trained[plain]) > 100
    ids = hf_gpt2_oracle().encode(text).ids
    packed_ids = tmp_path / "ids.txt.zst"
    packed_ids.write_bytes(_compress(" ".join(map(str, ids)).encode()))
    assert run("validate", gpt2, str(packed_ids)).stdout.decode() == f"canonical: {len(ids)} tokens\n"
    assert run("decode", gpt2, str(packed_ids)).stdout == text.encode()


def test_open_input_detects_zstd_by_magic_and_refuses_bad_streams(tmp_path) -> None:
    payload = ("Zeile eins\nligne deux ✓\n" * 5000).encode()
    path = tmp_path / "misleading.txt"  # no .zst suffix: detected by its first bytes
    skippable = b"\x50\x2a\x4d\x18" + (3).to_bytes(4, "little") + b"abc"  # a frame zstd -d skips
    path.write_bytes(_compress(payload[:10]) + skippable + _compress(b"") + _compress(payload[10:]))
    with open_input(str(path)) as stream:
        assert stream.compression == "zstd" and stream.read() == payload
    whole = _compress(payload, write_checksum=True)
    corrupted = bytearray(whole)
    corrupted[-2] ^= 0xFF  # the content checksum no longer matches
    for bad, why in ((whole[:-20], "ends inside a frame"), (whole + b"trailing garbage", "corrupt or truncated"),
                     (b"\x28\xb5\x2f\xfd" + random.Random(7).randbytes(200), "corrupt or truncated|ends inside a frame|window"), (bytes(corrupted), "corrupt or truncated"),
                     (whole[: len(whole) // 2], "ends inside a frame")):
        path.write_bytes(bad)
        with pytest.raises(BpefstError, match=why):
            with open_input(str(path)) as stream:
                stream.read()


def test_a_frame_asking_for_a_huge_window_is_refused_before_memory_is_reserved(tmp_path) -> None:
    """A streamed frame declares its window (here 1 GiB): the decoder would keep that much; bpefst stops at 128 MiB."""
    import io

    params = zstandard.ZstdCompressionParameters(window_log=30)
    sink = io.BytesIO()
    with zstandard.ZstdCompressor(compression_params=params).stream_writer(sink, closefd=False) as writer:
        writer.write(b"hello " * 1000)
    assert zstandard.get_frame_parameters(sink.getvalue()).window_size == 1 << 30
    corpus = tmp_path / "long.txt.zst"
    corpus.write_bytes(sink.getvalue())
    assert_user_error(run("tokenize", str(require_shared() / "gpt2" / "vocab.json"), str(corpus)),
                      "needs a decoding window larger than 128 MiB")


def test_a_zstd_bomb_is_refused_at_the_gzip_cap(tmp_path) -> None:
    """A tokenizer file is read whole, so it is capped (as gzip is: test_hardening.py); a corpus is streamed,
    so a bomb costs time, not memory: 1 GiB of zeros from 32 KiB of zstd is read in a small, bounded footprint."""
    bomb = tmp_path / "tokenizer.json.zst"
    bomb.write_bytes(_compress(b"{" + b" " * (3 << 20) + b'"model": 5}', level=19))
    assert bomb.stat().st_size < 2000
    small_cap = subprocess.run([sys.executable, "-m", "bpefst", "info", str(bomb)], capture_output=True, timeout=120,
                               env={**os.environ, "BPEFST_MAX_DECOMPRESSED_MB": "1"})
    assert_user_error(small_cap, "decompresses to more than 1 MiB")
    assert "BPEFST_MAX_DECOMPRESSED_MB" in small_cap.stderr.decode()
    raised = subprocess.run([sys.executable, "-m", "bpefst", "info", str(bomb)], capture_output=True, timeout=120,
                            env={**os.environ, "BPEFST_MAX_DECOMPRESSED_MB": "8"})
    assert_user_error(raised, "merges.txt is missing")  # read whole under the raised cap, then judged on what it holds
    stream_bomb = tmp_path / "zeros.txt.zst"
    with open(stream_bomb, "wb") as handle, zstandard.ZstdCompressor(level=19).stream_writer(handle) as writer:
        for _ in range(1024):
            writer.write(bytes(1 << 20))
    assert stream_bomb.stat().st_size < 64 << 10
    script = ("import resource, sys\nfrom bpefst.pipeline.inputs import open_input\n"
              "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "total = 0\nwith open_input(sys.argv[1]) as stream:\n"
              "    while chunk := stream.read1(1 << 20):\n        total += len(chunk)\n"
              "print(total, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n")
    result = subprocess.run([sys.executable, "-c", script, str(stream_bomb)], capture_output=True, timeout=300)
    _ok(result)
    total, grown_kib = map(int, result.stdout.split())
    assert total == 1 << 30
    assert grown_kib < 256 << 10, f"reading grew the process by {grown_kib >> 10} MiB"


def test_without_the_zstandard_package_the_error_names_the_extra(tmp_path) -> None:
    fake = tmp_path / "site" / "zstandard"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'zstandard'\")\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    corpus = tmp_path / "corpus.txt.zst"
    corpus.write_bytes(_compress(b"some text\n"))
    tokenizer = tmp_path / "tokenizer.json.zst"
    tokenizer.write_bytes(_compress((require_shared() / "gpt2" / "vocab.json").read_bytes()))
    gpt2 = str(require_shared() / "gpt2" / "vocab.json")
    for args in (["tokenize", gpt2, str(corpus)], ["tokenize", gpt2, str(corpus), "--output-dir", str(tmp_path / "out")],
                 ["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json")], ["info", str(tokenizer)]):
        result = subprocess.run([sys.executable, "-m", "bpefst", *args], capture_output=True, env=env, timeout=120)
        assert_user_error(result, "is zstd-compressed, which needs the zstandard package: pip install 'bpefst[zstd]'")
    assert not (tmp_path / "out" / "manifest.json").exists() and not (tmp_path / "t.json").exists()
    # plain and gzip input need no zstandard
    plain = subprocess.run([sys.executable, "-m", "bpefst", "tokenize", gpt2, "-"], input=b"some text\n", capture_output=True,
                           env=env, timeout=120)
    _ok(plain)
