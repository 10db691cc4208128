"""Where results go: -o writes into devices, FIFOs and symlink targets, never over an input,
never leaves a partial result behind, and refuses options that would be silently ignored."""

from __future__ import annotations

import os
import stat
import subprocess
import threading

import pytest

from bpefst.errors import BpefstError
from bpefst.tokenizer import PRESETS, save_tokenizer
from cli_runner import assert_user_error, run
from small_models import random_byte_model, random_char_model


@pytest.fixture()
def tok(tmp_path):
    path = tmp_path / "tok.bpefst"
    save_tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]), path)
    return path


@pytest.fixture()
def dfa(tmp_path, tok):
    path = tmp_path / "tok.dfa"
    assert run("compile", str(tok), "-o", str(path)).returncode == 0
    return path


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("abc cab bca abc\n" * 50)
    return path


def read_fifo_while(fifo, *args: str) -> tuple[subprocess.CompletedProcess, bytes]:
    """Run the CLI writing to ``fifo`` while a thread drains it."""
    received = []
    # A daemon: when the command replaces the FIFO instead of writing into it, the reader waits forever.
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    result = run(*args)
    reader.join(10)
    return result, received[0] if received else b""


# 1. -o writes into what the path names instead of replacing it.

@pytest.mark.parametrize("command", ["compile", "convert", "promote-json", "promote-dot", "dot", "train"])
def test_output_to_a_fifo_is_written_through_it(tmp_path, tok, dfa, corpus, command) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    args = {
        "compile": ["compile", str(tok), "-o", str(fifo)],
        "convert": ["convert", str(tok), "--format", "hf", "-o", str(fifo)],
        "promote-json": ["promote", str(dfa), "--regex", "abc", "--format", "json", "-o", str(fifo)],
        "promote-dot": ["promote", str(dfa), "--regex", "abc", "--format", "dot", "-o", str(fifo)],
        "dot": ["compile", str(tok), "--dot", str(fifo), "--dot-tokens", "97,98"],
        "train": ["train", str(corpus), "--vocab-size", "260", "-q", "-o", str(fifo)],
    }[command]
    result, data = read_fifo_while(fifo, *args)
    assert result.returncode == 0, result.stderr.decode()
    assert data, "nothing came through the FIFO"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_promote_json_through_a_fifo_is_the_document(tmp_path, dfa) -> None:
    import json

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    result, data = read_fifo_while(fifo, "promote", str(dfa), "--regex", "abc", "--format", "json", "-o", str(fifo))
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(data)["mode"] == "canonical"


def device_link(tmp_path, device: str):
    """A symlink to ``device``: the same write path, but a build that renames over its
    output replaces only this link, never the machine's device."""
    if not (os.path.exists(device) and stat.S_ISCHR(os.lstat(device).st_mode)):
        pytest.skip(f"no {device} character device")
    link = tmp_path / os.path.basename(device)
    link.symlink_to(device)
    return link


def test_output_to_dev_null(tmp_path, dfa) -> None:
    link = device_link(tmp_path, "/dev/null")
    result = run("promote", str(dfa), "--regex", "abc", "--format", "json", "-o", str(link))
    assert result.returncode == 0, result.stderr.decode()
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)


def test_full_device_is_an_error(tmp_path, dfa) -> None:
    link = device_link(tmp_path, "/dev/full")
    result = run("promote", str(dfa), "--regex", "abc", "-o", str(link))
    assert_user_error(result, f"cannot write {link}: No space left on device")
    assert link.is_symlink() and stat.S_ISCHR(os.stat(link).st_mode)


@pytest.mark.parametrize("dangling", [False, True])
def test_symlink_output_writes_its_target(tmp_path, tok, dangling) -> None:
    target = tmp_path / "sub" / "real.dfa"
    target.parent.mkdir()
    if not dangling:
        target.write_bytes(b"old")
    link = tmp_path / "link.dfa"
    link.symlink_to(target)
    result = run("compile", str(tok), "-o", str(link))
    assert result.returncode == 0, result.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert run("info", str(target)).stdout.startswith(b"kind:")


# 2. An output that is also an input is refused, the input left intact.

def _link(tmp_path, source, how: str):
    if how == "same":
        return source
    alias = tmp_path / f"alias-{how}"
    os.link(source, alias) if how == "hard" else alias.symlink_to(source)
    return alias


@pytest.mark.parametrize("how", ["same", "hard", "symlink"])
@pytest.mark.parametrize("command", ["train", "compile", "transducer", "convert", "promote", "promote-words"])
def test_output_that_is_an_input_is_refused(tmp_path, tok, dfa, corpus, command, how) -> None:
    words = tmp_path / "words.txt"
    words.write_text("abc\nab\n")
    source = {"train": corpus, "compile": tok, "transducer": tok, "convert": tok, "promote": dfa, "promote-words": words}[command]
    before = source.read_bytes()
    out = str(_link(tmp_path, source, how))
    args = {
        "train": ["train", str(corpus), "--vocab-size", "260", "-q", "-o", out],
        "compile": ["compile", str(tok), "-o", out],
        "transducer": ["compile", str(tok), "--kind", "transducer", "-o", out],
        "convert": ["convert", str(tok), "--format", "hf", "-o", out],
        "promote": ["promote", str(dfa), "--regex", "ab", "-o", out],
        "promote-words": ["promote", str(dfa), "--words", str(words), "-o", out],
    }[command]
    assert_user_error(run(*args), "is also an input")
    assert source.read_bytes() == before


def test_gpt2_output_over_the_input_is_refused(tmp_path) -> None:
    save_tokenizer(random_byte_model(3), tmp_path / "vocab.json", "gpt2")
    before = (tmp_path / "merges.txt").read_bytes()
    result = run("convert", str(tmp_path / "vocab.json"), "--format", "gpt2", "-o", str(tmp_path / "x"))
    assert result.returncode == 0, result.stderr.decode()
    result = run("convert", str(tmp_path / "x" / "vocab.json"), "--format", "gpt2", "-o", str(tmp_path))
    assert result.returncode == 0  # a different pair of files: fine
    result = run("convert", str(tmp_path / "vocab.json"), "--format", "gpt2", "-o", str(tmp_path))
    assert_user_error(result, "is also an input")
    assert (tmp_path / "merges.txt").read_bytes() == before


def test_dot_over_the_artifact_is_refused(tmp_path, tok) -> None:
    out = tmp_path / "o.dfa"
    assert_user_error(run("compile", str(tok), "-o", str(out), "--dot", str(out), "--dot-tokens", "97"), "--dot and --output")
    assert not out.exists()


# 3. A failure leaves no output behind.

@pytest.mark.parametrize("dot,tokens,message", [
    ("x.dot", "99999", "not a reachable token id"),
    ("nodir/x.dot", "97", "does not exist"),
    ("somedir", "97", "is a directory"),
])
def test_failed_dot_leaves_no_artifact(tmp_path, tok, dot, tokens, message) -> None:
    (tmp_path / "somedir").mkdir()
    out = tmp_path / "o.dfa"
    assert_user_error(run("compile", str(tok), "-o", str(out), "--dot", str(tmp_path / dot), "--dot-tokens", tokens), message)
    assert not out.exists() and not (tmp_path / "x.dot").exists()


@pytest.mark.parametrize("command", ["convert", "train"])
def test_gpt2_writes_both_files_or_neither(tmp_path, tok, corpus, command) -> None:
    (tmp_path / "g" / "merges.txt").mkdir(parents=True)
    out = str(tmp_path / "g" / "vocab.json")
    args = ["convert", str(tok)] if command == "convert" else ["train", str(corpus), "--vocab-size", "260", "-q"]
    assert_user_error(run(*args, "--format", "gpt2", "-o", out), "merges.txt is a directory")
    assert os.listdir(tmp_path / "g") == ["merges.txt"]


def test_failed_gpt2_conversion_leaves_no_directory(tmp_path) -> None:
    source = tmp_path / "char.bpefst"
    save_tokenizer(random_char_model(8), source)
    assert_user_error(run("convert", str(source), "--format", "gpt2", "-o", str(tmp_path / "newdir")), "byte-level")
    assert not (tmp_path / "newdir").exists()
    with pytest.raises(BpefstError, match="byte-level"):
        save_tokenizer(random_char_model(8), tmp_path / "newdir", "gpt2")
    assert not (tmp_path / "newdir").exists()


# 4. Options that would be ignored, or do nothing, are refused.

def test_promote_without_output_says_its_verdict(dfa) -> None:
    result = run("promote", str(dfa), "--regex", "abc")
    assert result.returncode == 0 and result.stdout.startswith(b"the promoted language is not empty: "), result.stderr


@pytest.mark.parametrize("args,message", [
    (["--regex", "abc", "--format", "dot"], "needs --output"),
    (["--regex", "abc", "--format", "json", "--stats"], "needs --output"),
])
def test_promote_refuses_doing_nothing(dfa, args, message) -> None:
    assert_user_error(run("promote", str(dfa), *args), message)


def test_promote_negative_sample(dfa) -> None:
    result = run("promote", str(dfa), "--regex", "abc", "--sample", "-1")
    assert result.returncode == 2 and b"--sample" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.parametrize("args,message", [
    (["--stats", "--dot-tokens", "97"], "--dot-tokens needs --dot"),
    (["--budget", "5", "-o", "{tmp}/o.dfa"], "--budget applies to --kind transducer only"),
    (["--dot", "{tmp}/x.dot", "--dot-tokens", ",,,"], "no token ids given"),
    (["--kind", "transducer", "-o", "{tmp}/o.fst", "--dot", "{tmp}/x.dot"], "does not apply to --kind transducer"),
    (["-o", ""], "the output path is empty"),
    (["--stats", "--dot", ""], "--dot path is empty"),
])
def test_compile_refuses_ignored_options(tmp_path, tok, args, message) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert_user_error(run("compile", str(tok), *args), message)
    assert sorted(os.listdir(tmp_path)) == ["tok.bpefst"]


@pytest.mark.parametrize("command", ["train", "convert"])
def test_empty_output_path(tok, corpus, command) -> None:
    args = ["train", str(corpus), "--vocab-size", "260"] if command == "train" else ["convert", str(tok)]
    assert_user_error(run(*args, "-o", ""), "the output path is empty")
