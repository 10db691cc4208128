"""Regression tests for issue 16 (reliability hardening): each test failed on the code before the fix.

Oracles: HF ``tokenizers`` and ``tiktoken`` (capturing groups in pre-tokenization
patterns, the BPE-only encoding), the artifact's own untampered load (checksums),
and the command-line conventions of the README (exit codes, one-line errors).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import msgpack
import pytest
import regex

from bpefst.artifact import pack_artifact, parse_artifact, repack
from bpefst.automata.serialize import load as load_automaton
from bpefst.automata.serialize import save as save_automaton
from bpefst.bpe import MergeForest, build_canonical
from bpefst.bpe.canonical_io import load_canonical, save_canonical
from bpefst.bpe.transducer_io import compile_transducer, read_transducer, write_transducer
from bpefst.errors import ArtifactError
from bpefst.pipeline.encoder import Tokenizer
from bpefst.pipeline.validate import Validator, parse_id_blocks
from bpefst.promotion import TokenLanguage
from bpefst.promotion.token_automaton_io import load_token_automaton, save_token_automaton
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS, ReferenceEncoder, load_tokenizer, save_tokenizer
from bpefst.tokenizer.formats import hf
from cli_runner import assert_user_error, run
from conftest import require_shared
from small_models import random_byte_model

GROUPED = [r"(\w)+|\s+", r"(\w+)|(\s+)", r"(?<word>[a-c]+)|( )"]


@pytest.fixture()
def byte_tok(tmp_path):
    path = tmp_path / "byte.bpefst"
    save_tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]), path)
    return path


def _artifacts(tmp_path) -> dict[str, tuple]:
    """One small artifact of every kind, with the loader that reads it."""
    model = random_byte_model(21, pattern=PRESETS["gpt2"])
    paths = {kind: tmp_path / f"a.{kind}" for kind in ("tokenizer", "canonical-dfa", "transducer", "token-automaton", "token-guide",
                                                             "automaton")}
    save_tokenizer(model, paths["tokenizer"])
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    save_canonical(automaton, model, paths["canonical-dfa"])
    transducer, stats = compile_transducer(model, budget=30)
    write_transducer(paths["transducer"], model, transducer, stats)
    pattern = compile_regex("[abc]{1,4}( [abc]{1,3})?", alphabet_for(model))
    save_automaton(pattern, paths["automaton"])
    promoted = TokenLanguage(pattern, model, pretokenize=False, automaton=automaton).dfa()
    save_token_automaton(paths["token-automaton"], promoted, "canonical", model.fingerprint)
    TokenLanguage(pattern, model, automaton=automaton, source="[abc]{1,4}( [abc]{1,3})?").save(paths["token-guide"], form="guide")
    loaders = {"tokenizer": load_tokenizer, "canonical-dfa": load_canonical, "transducer": read_transducer,
               "token-automaton": load_token_automaton, "token-guide": lambda path: TokenLanguage.load(path, tokenizer=model),
               "automaton": load_automaton}
    return {kind: (paths[kind], loaders[kind]) for kind in paths}


# -- item 1: integers too long for Python's int() -------------------------------------------------


def test_huge_integers_are_one_line_errors(tmp_path, byte_tok) -> None:
    huge = "1" * 5000
    assert_user_error(run("decode", str(byte_tok), stdin=huge.encode()), "token 0:")
    assert_user_error(run("validate", str(byte_tok), stdin=f"97 {huge}".encode()), "token 1:")
    assert_user_error(run("decode", str(byte_tok), "--format", "jsonl", stdin=f"[97]\n[{huge}]".encode()), "line 2:")
    assert_user_error(run("validate", str(byte_tok), "--format", "jsonl", stdin=f"[-{huge}]".encode()), "line 1:")
    assert_user_error(run("info", str(byte_tok), "--special", f"<x>={huge}"), "--special")
    document = hf.to_document(random_byte_model(21, pattern=PRESETS["gpt2"]))
    document["padding"] = 7
    text = json.dumps(document, indent=1).replace('"padding": 7', f'"padding": {huge}')
    (tmp_path / "tokenizer.json").write_text(text)
    line = text[: text.index(huge)].count("\n") + 1
    assert_user_error(run("info", str(tmp_path / "tokenizer.json")), f"line {line}: an integer of 5,000 digits")


def test_a_digit_run_without_end_is_refused_without_holding_it() -> None:
    blocks = parse_id_blocks(iter([b"1 2 ", b"3" * 65536, b"3" * 65536]))
    assert next(blocks) == [1, 2]
    with pytest.raises(Exception, match="token 2: an id of more than 20 digits"):
        next(blocks)


# -- item 2: deep nesting ---------------------------------------------------------------------------


def test_deep_nesting_is_refused_clearly(byte_tok) -> None:
    brackets = b"[" * 100_000
    assert_user_error(run("decode", str(byte_tok), "--format", "jsonl", stdin=brackets), "nested too deeply")
    assert_user_error(run("validate", str(byte_tok), "--format", "jsonl", stdin=brackets), "nested too deeply")
    nested = "(" * 3000 + "a" + ")" * 3000
    assert_user_error(run("promote", str(byte_tok), "--regex", nested), "groups nest more than 200 deep")
    assert_user_error(run("encode", str(byte_tok), "--pattern", nested, stdin=b"a"), "groups nest more than 200 deep")
    ok = run("promote", str(byte_tok), "--regex", "[(]" + "(" * 150 + "a" + ")" * 150)  # ( in a class opens nothing
    assert ok.returncode == 0, ok.stderr


# -- item 3: capturing groups in a pre-tokenization pattern ---------------------------------------

TEXTS = ["hello world", "abc cab  bca\n", "a  b\tc", "", "cc ab ba abc cba bb aa  "]


@pytest.mark.parametrize("pattern", GROUPED)
def test_capturing_groups_do_not_change_the_chunks_hf(tmp_path, pattern) -> None:
    """HF's Split cuts at whole matches, groups or not; so do the reference encoder, the pipeline and the CLI."""
    tokenizers = pytest.importorskip("tokenizers")
    model = replace(random_byte_model(21, alphabet=b"abc helowrd\t\n", num_merges=30), pattern=pattern)
    path = tmp_path / "tokenizer.json"
    hf.write(model, path)
    oracle = tokenizers.Tokenizer.from_file(str(path))
    loaded = load_tokenizer(path)
    reference, fast = ReferenceEncoder(loaded), Tokenizer(loaded)
    for text in TEXTS:
        expected = oracle.encode(text).ids
        assert reference.encode(text) == expected == fast.encode(text), (pattern, text)
        assert reference.decode(expected) == "".join(m.group() for m in regex.finditer(pattern, text))  # no text lost
    # Isolated (HF's default behaviour) with groups: the file bpefst refused with an AttributeError traceback
    document = json.loads(path.read_text())
    document["pre_tokenizer"]["pretokenizers"][0].update(behavior="Isolated", invert=False)
    path.write_text(json.dumps(document))
    oracle, loaded = tokenizers.Tokenizer.from_file(str(path)), load_tokenizer(path)
    for text in TEXTS:
        assert ReferenceEncoder(loaded).encode(text) == oracle.encode(text).ids == Tokenizer(loaded).encode(text), (pattern, text)
    text = "\n".join(TEXTS)
    for command in ("encode", "tokenize"):
        result = run(command, str(path), stdin=text.encode())
        assert list(map(int, result.stdout.split())) == oracle.encode(text).ids, (command, result.stderr)
    validated = run("validate", str(path), stdin=" ".join(map(str, oracle.encode(text).ids)).encode())
    assert validated.returncode == 0, validated.stdout


def test_capturing_groups_do_not_change_the_chunks_tiktoken() -> None:
    """tiktoken with a pat_str that has groups (cl100k's ranks): the same ids, and validate accepts them."""
    tiktoken = pytest.importorskip("tiktoken")
    from conftest import tiktoken_oracle

    ranks = tiktoken_oracle("cl100k_base")._mergeable_ranks
    pattern = r"""('(?:s|t|re|ve|m|ll|d))|( ?\p{L}+)|( ?\p{N}+)|( ?[^\s\p{L}\p{N}]+)|(\s+(?!\S))|(\s+)"""
    oracle = tiktoken.Encoding("grouped", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    model = load_tokenizer(require_shared() / "tiktoken" / "cl100k_base.tiktoken.gz", pattern=pattern)
    validator = Validator(model, build_canonical(MergeForest.from_model(model), "implicit"))
    fast = Tokenizer(model)
    for text in ["Hello world, it's 2024!  ", "naïve café — 123456 ok\n\n  x", "don't stop   me"]:
        expected = oracle.encode_ordinary(text)
        assert ReferenceEncoder(model).encode(text) == expected == fast.encode(text), text
        assert validator.check(expected) is None


# -- items 4 and 5: tampered and corrupted artifacts ----------------------------------------------

TAMPERED = {
    "tokenizer": [("pattern", 5), ("unk_token", {"a": 1}), ("fuse_unk", "yes"), ("specials", {"<x>": "1"}), ("level", 3)],
    "canonical-dfa": [("encoding", 5), ("stats", [1]), ("forest", {"size": "x"}), ("tokenizer", {"pattern": 5})],
    "transducer": [("lazy", {"max_states": -1}), ("eager", {"ctx": 5}), ("stats", {"a": [1]})],
    "token-automaton": [("mode", 5), ("mode", "other"), ("automaton", {"type": "dfa"})],
    "token-guide": [("pretokenize", "yes"), ("source", 5), ("stats", {"lattice states": 1}), ("cut", b"\x00"), ("good", 7),
                    ("finals", b"\xff\xff\xff\x7f"), ("goods", [b"\xff" * 64])],
    "automaton": [("num_states", "3"), ("targets", 7)],
}


def _edit(value: dict, field: str, new) -> None:
    if field == "tokenizer":
        value["tokenizer"].update(new)
    elif field == "forest":
        value["forest"].update(new)
    else:
        value[field] = new


def test_tampered_fields_are_refused_on_load(tmp_path) -> None:
    """Every field of every kind is checked for type and range, even when the checksum was recomputed."""
    for kind, (path, loader) in _artifacts(tmp_path).items():
        original = path.read_bytes()
        for field, value in TAMPERED[kind]:
            document = msgpack.unpackb(original, raw=False, strict_map_key=False)
            _edit(document["body"], field, value)
            path.write_bytes(repack(document))
            with pytest.raises(ArtifactError):
                loader(path)
        path.write_bytes(original)
        loader(path)


def test_tampered_tokenizer_fails_on_the_command_line(tmp_path, byte_tok) -> None:
    document = msgpack.unpackb(byte_tok.read_bytes(), raw=False, strict_map_key=False)
    document["body"]["pattern"] = 5
    byte_tok.write_bytes(repack(document))
    for command in ("tokenize", "validate", "promote"):
        args = ("--regex", "abc") if command == "promote" else ()
        assert_user_error(run(command, str(byte_tok), *args, stdin=b"97"), "field 'pattern'")


def test_every_flipped_body_byte_of_every_kind_is_refused(tmp_path) -> None:
    for kind, (path, loader) in _artifacts(tmp_path).items():
        original = path.read_bytes()
        body_start = original.index(msgpack.packb("body")) + len(msgpack.packb("body"))
        positions = range(body_start, len(original), max(1, (len(original) - body_start) // 300))
        for position in positions:
            for flip in (0x01, 0x80):
                corrupted = bytearray(original)
                corrupted[position] ^= flip
                path.write_bytes(bytes(corrupted))
                with pytest.raises(ArtifactError):
                    loader(path)
        path.write_bytes(original[:-1])
        with pytest.raises(ArtifactError):
            loader(path)
        path.write_bytes(original)
        loader(path)


def test_artifacts_without_a_checksum_are_refused_with_a_hint(tmp_path) -> None:
    path = tmp_path / "old.bpefst"
    save_tokenizer(random_byte_model(3), path)
    document = msgpack.unpackb(path.read_bytes(), raw=False, strict_map_key=False)
    del document["checksum"]
    path.write_bytes(msgpack.packb(document, use_bin_type=True))
    assert_user_error(run("info", str(path)), "has no integrity checksum")
    data = pack_artifact("automaton", 1, "", {"type": "dfa"})
    assert parse_artifact(data, "x")["body"] == {"type": "dfa"}


# -- item 8: interruption and closed pipes -----------------------------------------------------------


def _interruptible() -> None:
    """Start the child with Ctrl-C's default action: a shell that runs the suite in the background
    (no job control) starts it with SIGINT ignored, children inherit that, and Python then installs
    no KeyboardInterrupt handler; a command run at a terminal has the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_without_a_traceback(byte_tok) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "bpefst", "validate", str(byte_tok)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_interruptible)
    proc.stdin.write(b"97 98 ")
    proc.stdin.flush()
    _wait_until_reading_stdin(proc.pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"Aborted" not in err and out == b"", err


def test_ctrl_c_during_start_up_exits_130_without_a_traceback(byte_tok) -> None:
    """Ctrl-C while the commands are still being imported (the slow part of start-up), made certain by an
    import hook that raises KeyboardInterrupt exactly there, as the signal handler would."""
    script = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'bpefst.cli.automaton_commands':  # validate's module, imported when the command runs\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        f"sys.argv = ['bpefst', 'validate', {str(byte_tok)!r}]\n"
        "from bpefst.cli import main\n"
        "main()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], input=b"97 98", capture_output=True, timeout=120)
    assert result.returncode == 130, result.stderr
    assert b"Traceback" not in result.stderr and result.stdout == b"", result.stderr


def _wait_until_reading_stdin(pid: int) -> None:
    """Block until the process sleeps in a pipe read (Linux /proc), i.e. it is inside the command."""
    wchan = f"/proc/{pid}/wchan"
    if not os.path.exists(wchan):
        pytest.skip("needs /proc/PID/wchan")
    for _ in range(6000):
        with open(wchan) as handle:
            if "pipe" in handle.read():
                return
        time.sleep(0.01)
    raise AssertionError("the command never waited for input")


@pytest.mark.parametrize("args", [("tokenize",), ("encode",), ("decode",), ("promote", "--regex", "[abc ]{1,8}", "--sample", "5000")])
def test_a_closed_pipe_is_quiet_and_exits_141(byte_tok, args) -> None:
    """Outputs far larger than a pipe's buffer, so the reader certainly leaves before the writer is done."""
    feed = "yes 97 98 32" if args[0] == "decode" else "yes 'abc cab'"
    rest = " ".join(repr(a) for a in args[1:])
    command = f"{feed} | head -c 3000000 | {sys.executable} -m bpefst {args[0]} {byte_tok} {rest} | head -c 10"
    if args[0] == "promote":
        command = f"{sys.executable} -m bpefst promote {byte_tok} {rest} | head -c 10"
    result = subprocess.run(["bash", "-c", f"{command}; exit ${{PIPESTATUS[-2]}}"], capture_output=True, timeout=120)
    assert len(result.stdout) == 10 and result.stderr == b"", result.stderr
    assert result.returncode == 141, result.returncode


def test_a_pipe_closed_before_a_small_output_exits_141(byte_tok) -> None:
    """``info`` prints a few lines, which ``| head -c 10`` may or may not let through (then exit 0, as cat
    would); with the reader gone before the command starts, the closed pipe is certain."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "bpefst", "info", str(byte_tok)], stdout=write_end, stderr=subprocess.PIPE,
                                timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 141 and result.stderr == b"", result.stderr


# -- item 9: closed standard streams ---------------------------------------------------------------


def test_closed_stdout_and_stdin_are_one_line_errors(tmp_path, byte_tok) -> None:
    for args, closed in ((("info", str(byte_tok)), ">&-"), (("tokenize", str(byte_tok)), "<&-"),
                         (("validate", str(byte_tok)), "<&-"), (("decode", str(byte_tok)), "<&-")):
        result = subprocess.run(["bash", "-c", f"{sys.executable} -m bpefst {' '.join(args)} {closed}"], capture_output=True, timeout=120)
        assert_user_error(result, "it is closed")
    written = tmp_path / "x.json"
    result = subprocess.run(["bash", "-c", f"{sys.executable} -m bpefst convert {byte_tok} --format hf -o {written} >&-"],
                            capture_output=True, timeout=120)
    assert result.returncode == 0 and written.exists(), result.stderr


# -- item 10: an output that is a file a reader opened ---------------------------------------------


def test_convert_does_not_overwrite_the_merges_a_vocab_json_was_read_with(tmp_path) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    save_tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]), directory / "vocab.json", "gpt2")
    merges = (directory / "merges.txt").read_bytes()
    assert_user_error(run("convert", str(directory / "vocab.json"), "--format", "tiktoken", "-o", str(directory / "merges.txt")),
                      "is also an input")
    assert_user_error(run("compile", str(directory / "vocab.json"), "-o", str(directory / "merges.txt")), "is also an input")
    assert (directory / "merges.txt").read_bytes() == merges
    assert run("info", str(directory / "vocab.json")).returncode == 0


# -- item 14: the suggested encoding under --no-pretokenize -----------------------------------------


def test_no_pretokenize_suggests_bpe_s_own_encoding() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    from conftest import tiktoken_oracle

    whole = tiktoken.Encoding("whole", pat_str=r"[\s\S]+", mergeable_ranks=tiktoken_oracle("cl100k_base")._mergeable_ranks,
                              special_tokens={})
    result = run("validate", str(require_shared() / "tiktoken" / "cl100k_base.tiktoken.gz"), "--no-pretokenize", stdin=b"256 4442")
    assert result.returncode == 1
    assert f"encodes '   changes' as {whole.encode_ordinary('   changes')}" in result.stdout.decode(), result.stdout


# -- item 7: decompression bombs ---------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_at_the_cap_which_an_environment_variable_raises(tmp_path) -> None:
    import gzip

    bomb = tmp_path / "tokenizer.json.gz"
    bomb.write_bytes(gzip.compress(b"{" + b" " * (3 << 20) + b'"model": 5}', 9))
    small_cap = subprocess.run([sys.executable, "-m", "bpefst", "info", str(bomb)], capture_output=True, timeout=120,
                               env={**os.environ, "BPEFST_MAX_DECOMPRESSED_MB": "1"})
    assert_user_error(small_cap, "decompresses to more than 1 MiB")
    assert "BPEFST_MAX_DECOMPRESSED_MB" in small_cap.stderr.decode()
    raised = subprocess.run([sys.executable, "-m", "bpefst", "info", str(bomb)], capture_output=True, timeout=120,
                            env={**os.environ, "BPEFST_MAX_DECOMPRESSED_MB": "8"})
    assert_user_error(raised, "merges.txt is missing")  # read whole, then judged on what it holds


# -- item 6: a sparse id -------------------------------------------------------------------------------


def test_a_sparse_id_is_refused_before_any_table_is_sized_by_it(tmp_path) -> None:
    """One id of 2**31 - 1 in a small vocab.json: refused up front (memory stays small), while
    decoding, which needs no table, still works as in HF."""
    directory = tmp_path / "sparse"
    directory.mkdir()
    save_tokenizer(random_byte_model(21, pattern=PRESETS["gpt2"]), directory / "vocab.json", "gpt2")
    vocab = json.loads((directory / "vocab.json").read_text())
    vocab["zzzz"] = 2**31 - 1
    (directory / "vocab.json").write_text(json.dumps(vocab))
    path = str(directory / "vocab.json")
    for args in (("validate", path), ("tokenize", path), ("promote", path, "--regex", "ab"), ("compile", path, "--stats")):
        result = subprocess.run(["bash", "-c", 'ulimit -v 2000000; exec "$@"', "-", sys.executable, "-m", "bpefst", *args],
                                input=b"97 98", capture_output=True, timeout=120)
        assert_user_error(result, "token ids are too sparse")
    assert run("decode", path, stdin=b"97 98").stdout == b"ab"


# -- item 12: promote bounded in time and memory --------------------------------------------------------


def test_promote_gives_up_at_its_time_and_memory_limits() -> None:
    """GPT-2 ``.{0,500}`` used to run 35 s and 1.5 GB before --max-arcs refused it: the limits stop it, with one line.

    The size limits are raised out of the way (the compiled core now reaches the default state limit in
    under 2 s), so that time and memory are what stop it."""
    vocab = str(require_shared() / "gpt2" / "vocab.json")
    unbounded = ["--max-states", "100000000", "--max-arcs", "1000000000"]
    timed = subprocess.run([sys.executable, "-m", "bpefst", "promote", vocab, "--regex", ".{0,500}", "--timeout", "2",
                            *unbounded], capture_output=True, timeout=120)
    assert_user_error(timed, "took more than --timeout 2 s")
    capped = subprocess.run([sys.executable, "-m", "bpefst", "promote", vocab, "--regex", ".{0,500}", "--max-memory", "100",
                             *unbounded], capture_output=True, timeout=120)
    assert_user_error(capped, "needed more than --max-memory 100 MB")
