"""The command line as a user meets it: results, exit codes, one-line errors, pipes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import replace

import msgpack
import pytest

from bpefst import __version__
from bpefst.artifact import repack, write_artifact
from bpefst.tokenizer import PRESETS, ReferenceEncoder, save_tokenizer
from cli_runner import assert_user_error, run
from conftest import require_shared, tiktoken_oracle
from small_models import random_byte_model, random_char_model


@pytest.fixture()
def byte_tok(tmp_path):
    path = tmp_path / "byte.bpefst"
    save_tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]), path)
    return path


@pytest.fixture()
def char_tok(tmp_path):
    path = tmp_path / "char.bpefst"
    save_tokenizer(random_char_model(8), path)
    return path


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0 and __version__ in result.stdout.decode()


def test_info_json(byte_tok) -> None:
    result = run("info", str(byte_tok), "--json")
    summary = json.loads(result.stdout)
    assert summary["kind"] == "byte-level BPE" and summary["merges"] == 12 and summary["specials"] == {"<|end|>": 268}


def test_encode_decode_round_trip(byte_tok) -> None:
    text = "abc cab  bca\nabc <|end|>".encode()
    expected = ReferenceEncoder(random_byte_model(21, pattern=PRESETS["gpt2"])).encode_bytes(text, allowed_special="all")
    encoded = run("encode", str(byte_tok), "--allowed-special", "all", stdin=text)
    assert encoded.returncode == 0
    assert [int(x) for x in encoded.stdout.split()] == expected
    decoded = run("decode", str(byte_tok), stdin=encoded.stdout)
    assert decoded.stdout == text


def test_encode_jsonl(byte_tok) -> None:
    result = run("encode", str(byte_tok), "--format", "jsonl", stdin=b"ab\nc\n")
    encoder = ReferenceEncoder(random_byte_model(21, pattern=PRESETS["gpt2"]))
    assert [json.loads(line) for line in result.stdout.splitlines()] == [encoder.encode("ab"), encoder.encode("c")]
    decoded = run("decode", str(byte_tok), "--format", "jsonl", stdin=result.stdout)
    assert decoded.stdout == b"ab\nc\n"


def test_gpt2_files_match_known_ids() -> None:
    data = require_shared()
    result = run("encode", str(data / "gpt2" / "vocab.json"), stdin=b"Hello world")
    assert result.stdout.split() == [b"15496", b"995"]



PATTERN_NONE_TEXTS = ["  h", "Hello world, it's 2026!\n\n  x", "a\r\n\tb  "]


def test_pattern_none_means_no_pre_tokenization() -> None:
    """``--pattern none`` overrides a file's pattern with none at all: each text is one chunk.

    Oracles: tiktoken with the pattern ``[\\s\\S]+`` (one match per text) over cl100k's
    ranks, and HF tokenizers' ByteLevel without its regex over GPT-2's files.
    """
    data = require_shared()
    tiktoken = pytest.importorskip("tiktoken")
    tokenizers = pytest.importorskip("tokenizers")
    oracle = tiktoken_oracle("cl100k_base")
    whole = tiktoken.Encoding("whole", pat_str=r"[\s\S]+", mergeable_ranks=oracle._mergeable_ranks, special_tokens={})
    gpt2 = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(data / "gpt2" / "vocab.json"), str(data / "gpt2" / "merges.txt")))
    gpt2.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    cases = [(data / "tiktoken" / "cl100k_base.tiktoken.gz", lambda text: whole.encode(text)),
             (data / "gpt2" / "vocab.json", lambda text: gpt2.encode(text).ids)]
    for path, expected in cases:
        for text in PATTERN_NONE_TEXTS:
            result = run("encode", "--pattern", "none", str(path), stdin=text.encode())
            assert result.returncode == 0, result.stderr
            assert list(map(int, result.stdout.split())) == expected(text), (path.name, text)
        assert json.loads(run("info", "--json", "--pattern", "none", str(path)).stdout)["pattern"] == "none"
    assert whole.encode("  h") != oracle.encode("  h")  # the override changes the answer


def test_pattern_none_reads_an_unnamed_rank_file(tmp_path) -> None:
    """A rank file not named after a known encoding needs --pattern; ``none`` is a valid answer."""
    data = require_shared()
    renamed = tmp_path / "mine.tiktoken.gz"
    renamed.write_bytes((data / "tiktoken" / "cl100k_base.tiktoken.gz").read_bytes())
    assert_user_error(run("encode", str(renamed), stdin=b"  h"), "pass --pattern")
    result = run("encode", "--pattern", "none", str(renamed), stdin=b"  h")
    assert result.returncode == 0 and result.stdout.split() == [b"256", b"71"], result.stderr


# -- bad input: one line, exit 2, no traceback ----------------------------------------

def test_missing_file_and_directory(tmp_path) -> None:
    assert_user_error(run("info", str(tmp_path / "nope.json")), "cannot read")
    assert_user_error(run("info", str(tmp_path)), "directory")


def test_truncated_and_corrupted_artifacts(byte_tok, tmp_path) -> None:
    raw = byte_tok.read_bytes()
    bad = tmp_path / "bad.bpefst"
    bad.write_bytes(raw[: len(raw) // 2])
    assert_user_error(run("info", str(bad)), "truncated or corrupted")
    document = msgpack.unpackb(raw)
    document["body"]["merges"] = document["body"]["merges"][:-3]
    bad.write_bytes(repack(document))
    assert_user_error(run("encode", str(bad), stdin=b"abc"), "corrupted")


def test_wrong_kind_and_schema(tmp_path) -> None:
    path = tmp_path / "x.bpefst"
    write_artifact(path, "transducer", 1, "", {})
    assert_user_error(run("encode", str(path), "--reference", stdin=b"a"), "expected a tokenizer artifact, found a transducer")
    write_artifact(path, "tokenizer", 7, "", {})
    assert_user_error(run("encode", str(path), stdin=b"a"), "schema version 7")


def test_unsupported_model_type(tmp_path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "Unigram", "vocab": []}}))
    assert_user_error(run("info", str(path)), "unsupported model type 'Unigram'")


def test_improper_and_duplicate_merges(tmp_path) -> None:
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}))
    (tmp_path / "merges.txt").write_text("ab c\na b\n")
    assert_user_error(run("info", str(tmp_path / "vocab.json")), "improper merge list")
    (tmp_path / "merges.txt").write_text("a b\na b\n")
    assert_user_error(run("info", str(tmp_path / "vocab.json")), "listed twice")
    (tmp_path / "merges.txt").write_text("a b\nab q\n")
    assert_user_error(run("info", str(tmp_path / "vocab.json")), "'q', which is not in")


def test_invalid_utf8_char_level_vs_byte_level(char_tok, byte_tok) -> None:
    assert_user_error(run("encode", str(char_tok), stdin=b"ab\xffc"), "byte offset 2")
    result = run("encode", str(byte_tok), stdin=b"ab\xffc")
    assert result.returncode == 0
    assert run("decode", str(byte_tok), stdin=result.stdout).stdout == b"ab\xffc"


def test_disallowed_special_and_bad_ids(byte_tok) -> None:
    assert_user_error(run("encode", str(byte_tok), "--allowed-special", "<|nope|>", stdin=b"a"), "not a special token")
    assert_user_error(run("decode", str(byte_tok), stdin=b"1 2 x"), "not a non-negative integer")
    assert_user_error(run("decode", str(byte_tok), stdin=b"1 99999"), "not in the vocabulary")


def test_special_options_add_to_the_files_specials(byte_tok) -> None:
    """``--special`` extends a tokenizer's specials (the tiktoken idiom ``{**enc._special_tokens, ...}``)."""
    model = random_byte_model(21, pattern=PRESETS["gpt2"])
    new_id = max(model.vocab) + 5
    text = b"ab<|end|>c<|new|>"
    result = run("encode", str(byte_tok), "--special", f"<|new|>={new_id}", "--allowed-special", "all", stdin=text)
    extended = ReferenceEncoder(replace(model, specials={**model.specials, "<|new|>": new_id}))
    assert result.returncode == 0 and list(map(int, result.stdout.split())) == extended.encode(text.decode(), allowed_special="all")
    assert_user_error(run("encode", str(byte_tok), "--special", f"<|a|>={new_id}", "--special", f"<|b|>={new_id}", stdin=b"a"), "both have id")
    assert_user_error(run("encode", str(byte_tok), "--special", "<|a|>=4294967296", stdin=b"a"), "ids go from 0 to 4294967295")
    assert_user_error(run("encode", str(byte_tok), "--special", "<|a|>=1", "--special", "<|a|>=2", stdin=b"a"), "two ids")
    assert_user_error(run("encode", str(byte_tok), "--special", "<|a|>=97", stdin=b"a"), "already belongs to token")


def test_special_options_extend_a_known_tiktoken_encoding() -> None:
    data = require_shared()
    tiktoken = pytest.importorskip("tiktoken")
    base = tiktoken_oracle("cl100k_base")
    chat = tiktoken.Encoding("chat", pat_str=base._pat_str, mergeable_ranks=base._mergeable_ranks,
                             special_tokens={**base._special_tokens, "<|im_start|>": 100264})
    text = "<|im_start|>user hi<|endoftext|>"
    result = run("encode", str(data / "tiktoken" / "cl100k_base.tiktoken.gz"), "--special", "<|im_start|>=100264",
                 "--allowed-special", "all", stdin=text.encode())
    assert list(map(int, result.stdout.split())) == chat.encode(text, allowed_special="all"), result.stderr


def test_compiled_artifacts_refuse_another_pattern_or_specials(tmp_path, byte_tok) -> None:
    """A DFA or transducer is built for the tokenizer it embeds; --pattern/--special may not describe another."""
    dfa, fst = tmp_path / "t.dfa", tmp_path / "t.fst"
    assert run("compile", str(byte_tok), "-o", str(dfa)).returncode == 0
    assert run("compile", str(byte_tok), "--kind", "transducer", "-o", str(fst)).returncode == 0
    ids = " ".join(map(str, ReferenceEncoder(random_byte_model(21, pattern=PRESETS["gpt2"])).encode("ab cab"))).encode()
    for command, artifact, stdin in (("tokenize", fst, b"ab cab"), ("validate", dfa, ids)):
        assert_user_error(run(command, str(artifact), "--pattern", "cl100k", stdin=stdin), "--pattern cannot change it")
        assert_user_error(run(command, str(artifact), "--pattern", "none", stdin=stdin), "--pattern cannot change it")
        assert_user_error(run(command, str(artifact), "--special", "<|x|>=900", stdin=stdin), "--special cannot add it")
        same = run(command, str(artifact), "--pattern", "gpt2", "--special", "<|end|>=268", stdin=stdin)
        assert same.returncode == 0, same.stderr


@pytest.mark.skipif(not (os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode)), reason="needs /dev/full")
def test_full_disk_behind_stdout_is_one_line(byte_tok) -> None:
    for args, stdin in ((("encode", str(byte_tok)), b"ab"), (("tokenize", str(byte_tok)), b"ab ca\n" * 50_000),
                        (("decode", str(byte_tok)), b"97 98"), (("info", str(byte_tok)), b"")):
        with open("/dev/full", "wb") as full:
            result = subprocess.run([sys.executable, "-m", "bpefst", *args], input=stdin, stdout=full, stderr=subprocess.PIPE, timeout=120)
        assert result.returncode == 2 and result.stderr == b"bpefst: error: cannot write to stdout: No space left on device\n", (args, result.stderr)


def test_usage_error_exits_2() -> None:
    result = run("encode")
    assert result.returncode == 2 and "Traceback" not in result.stderr.decode()


def test_closed_pipe_is_quiet(byte_tok) -> None:
    pipeline = f"{sys.executable} -m bpefst encode {byte_tok} --format tokens | head -c 10"
    result = subprocess.run(["bash", "-c", f"set -o pipefail; yes 'abc cab' | head -c 3000000 | {pipeline}"], capture_output=True, timeout=120)
    assert len(result.stdout) == 10
    assert result.stderr == b"", result.stderr


# -- compile and validate ------------------------------------------------------------------

@pytest.fixture()
def compiled(tmp_path, byte_tok):
    path = tmp_path / "byte.dfa"
    result = run("compile", str(byte_tok), "--stats", "-o", str(path))
    assert result.returncode == 0, result.stderr
    assert b"states:" in result.stderr
    return path


def test_compile_and_validate_round_trip(compiled, byte_tok) -> None:
    model = random_byte_model(21, pattern=PRESETS["gpt2"])
    ids = ReferenceEncoder(model).encode("abc cab bca  ab\n", allowed_special="all")
    stream = " ".join(map(str, ids)).encode()
    ok = run("validate", str(compiled), stdin=stream)
    assert ok.returncode == 0 and ok.stdout.startswith(b"canonical"), ok.stdout
    spelled = " ".join(str(b) for b in b"abc").encode()
    merged = ReferenceEncoder(model).encode("abc")
    verdict = run("validate", str(compiled), stdin=spelled)
    assert verdict.returncode == (0 if merged == list(b"abc") else 1)
    jsonl = run("validate", str(byte_tok), "--format", "jsonl", stdin=json.dumps(ids).encode() + b"\n")
    assert jsonl.returncode == 0


def test_validate_bad_input(compiled, byte_tok, tmp_path) -> None:
    assert_user_error(run("validate", str(compiled), stdin=b"1 2 999999"), "not in the vocabulary")
    assert_user_error(run("validate", str(compiled), stdin=b"1 -2"), "not a non-negative integer")
    assert_user_error(run("validate", str(compiled), stdin=b"1 2.5"), "not a non-negative integer")
    assert_user_error(run("validate", str(compiled), stdin=b"[1, 2]"), "not a non-negative integer")
    assert_user_error(run("validate", str(compiled), "--format", "jsonl", stdin=b"1 2 3\n"), "not a JSON array")
    assert_user_error(run("validate", str(compiled), "--format", "jsonl", stdin=b"[97]\n\n[99999]\n"), "line 3: token 0: id 99999")
    assert_user_error(run("decode", str(byte_tok), "--format", "jsonl", stdin=b"[97]\n[99999]\n"), "line 2: token id 99999")
    other = tmp_path / "other.bpefst"
    save_tokenizer(random_byte_model(22), other)
    assert_user_error(run("validate", str(compiled), "--tokenizer", str(other), stdin=b"1"), "built from tokenizer")
    truncated = tmp_path / "cut.dfa"
    truncated.write_bytes(compiled.read_bytes()[:-50])
    assert_user_error(run("validate", str(truncated), stdin=b"1"), "truncated or corrupted")


def test_compile_dot(tmp_path, byte_tok) -> None:
    dot = tmp_path / "a.dot"
    result = run("compile", str(byte_tok), "--dot", str(dot), "--dot-tokens", "97,98,99")
    assert result.returncode == 0, result.stderr
    assert dot.read_text().startswith("digraph")


# -- promote -----------------------------------------------------------------------------------

def test_promote_outputs_and_sample(tmp_path, compiled) -> None:
    out = tmp_path / "p.json"
    result = run("promote", str(compiled), "--regex", "(ab|ba)c{1,2}", "--format", "json", "-o", str(out), "--sample", "3", "--stats")
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["arcs"] and document["finals"]
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(samples) == 3
    import regex as re_oracle

    assert all(re_oracle.fullmatch("(ab|ba)c{1,2}", s["text"]) for s in samples)
    assert b"promoted:" in result.stderr
    msgpack_out = tmp_path / "p.msgpack"
    assert run("promote", str(compiled), "--regex", "abc", "-o", str(msgpack_out)).returncode == 0
    assert run("info", str(msgpack_out)).stdout.startswith(b"kind:")


def test_promote_bad_input(tmp_path, compiled, byte_tok) -> None:
    assert_user_error(run("promote", str(compiled), "--regex", "a(?=b)"), "at position 1")
    assert_user_error(run("promote", str(compiled), "--regex", "(ab"), "position")
    assert_user_error(run("promote", str(compiled), "--regex", "(a|b)*a(a|b){18}", "--max-states", "1000"), "--max-states 1,000")
    for route in ([], ["--no-pretokenize"]):  # too many arcs to write out: refused before they are written
        assert_user_error(run("promote", str(compiled), "--regex", "(ab|ba) c{1,2}", "--max-arcs", "3", *route), "--max-arcs 3 ")
    assert_user_error(run("promote", str(compiled)), "exactly one of")
    other = tmp_path / "other.bpefst"
    save_tokenizer(random_byte_model(30), other)
    assert_user_error(run("promote", str(compiled), "--tokenizer", str(other), "--regex", "a"), "built from tokenizer")
    char = tmp_path / "char.bpefst"
    save_tokenizer(random_char_model(8), char)
    unspellable = run("promote", str(char), "--regex", "z+")
    assert unspellable.returncode == 1 and b"empty" in unspellable.stdout
    assert_user_error(run("promote", str(compiled), "--regex", "a", "--unk", "token"), "--unk applies to --mode maxmatch")
    too_wide = run("promote", str(compiled), "--regex", "[abc ]{4}", "--mode", "agnostic", "--max-arcs", "10")
    assert_user_error(too_wide, "the token lattice (every spelling of every match) needs more than --max-arcs 10 arcs")


def test_promote_follows_pretokenization(tmp_path, compiled, byte_tok) -> None:
    from bpefst.pipeline.encoder import Tokenizer

    tokenizer = Tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]))
    result = run("promote", str(compiled), "--regex", "(ab|ca)  ?(bc|a)\n?", "--sample", "8")
    assert result.returncode == 0, result.stderr
    samples = [json.loads(line) for line in result.stdout.splitlines()]
    assert samples and all(s["ids"] == tokenizer.encode_ordinary(s["text"]) for s in samples)
    assert run("promote", str(compiled), "--regex", "(ab|ca) (bc|a)", "--no-pretokenize").returncode == 0
    assert_user_error(run("promote", str(compiled), "--regex", "ab c", "--mode", "canonical-direct"), "--no-pretokenize")
    assert run("promote", str(compiled), "--regex", "ab c", "--mode", "canonical-direct", "--no-pretokenize").returncode == 0
    assert run("promote", str(compiled), "--regex", "(ab|c)+", "--mode", "canonical-direct").returncode == 0  # never cut
    assert_user_error(run("promote", str(byte_tok), "--pattern", "\\w+", "--regex", "ab"), "--no-pretokenize")
    assert run("promote", str(byte_tok), "--pattern", "o200k", "--regex", "ab").returncode == 0
    assert run("promote", str(byte_tok), "--pattern", "o200k", "--regex", "ab", "--no-pretokenize").returncode == 0
    assert_user_error(run("promote", str(compiled), "--pattern", "cl100k", "--regex", "ab"), "compiled with the gpt2")


def test_promote_maxmatch_for_wordpiece() -> None:
    data = require_shared()
    result = run("promote", str(data / "wordpiece" / "tokenizer.json"), "--regex", "(un)?(help|do)(ful|ing)?", "--sample", "5")
    assert result.returncode == 0, result.stderr
    from bpefst.tokenizer.wordpiece import load_wordpiece

    model = load_wordpiece(data / "wordpiece" / "tokenizer.json")
    for line in result.stdout.splitlines():
        sample = json.loads(line)
        assert model.encode(sample["text"]) == sample["ids"]
    assert_user_error(run("promote", str(data / "wordpiece" / "vocab.txt"), "--regex", "a", "--mode", "canonical"), "only --mode maxmatch")
