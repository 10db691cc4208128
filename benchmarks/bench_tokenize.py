"""Tokenization throughput of bpefst against tiktoken, HF tokenizers and bpe-openai, in one run.

Usage::

    .venv/bin/python benchmarks/bench_tokenize.py              # the table: cl100k, o200k, GPT-2 x pydocs, fortunes
    .venv/bin/python benchmarks/bench_tokenize.py --tokenizers o200k_base --corpora fortunes --rounds 5
    .venv/bin/python benchmarks/bench_tokenize.py --adversarial --sizes 1,10   # linear-time ratios

Every engine tokenizes the same text on the same machine in the same run, in
interleaved rounds (so a noisy neighbour hurts all of them alike); each cell is
the median over the rounds, and the ratio is tiktoken's median over the
engine's.  Every engine's ids are checked equal to tiktoken's before timing
(for GPT-2, tiktoken is built from GPT-2's vocabulary, ids as ranks, as its own
r50k_base is).  HF ``tokenizers`` runs in a helper process of its own (see
``_hf_start``); the others in this process.  Parallel tokenizing has its own
benchmark (``bench_jobs.py``), validation too (``bench_validate.py``).

* ``bpefst cold``: a fresh :class:`~bpefst.pipeline.encoder.Tokenizer` per
  round (empty chunk cache, the miss path's tables built on first use; the
  model's load is not timed); ``bpefst warm``: one tokenizer encoding the same
  text again, cache warm.  Both for the compiled core and, beside them, for
  the pure-Python path (``engine="pure"``); ``--no-pure`` leaves the pure
  columns out.
* HF ``tokenizers`` loads the same tokenizer converted to ``tokenizer.json`` by
  bpefst (for cl100k/o200k), or GPT-2's files.
* bpe-openai (GitHub's rust-gems ``bpe``) ships cl100k and o200k only.
* ``--adversarial``: bpefst on 1 MB and 10 MB (``--sizes``) of one letter, one
  digit, spaces, ``_``, random letters without spaces, random valid UTF-8,
  emoji and CJK, and the CPU-time ratio 10 MB / 1 MB (linear: about 10; the
  acceptance bound is 11), for the compiled core (``--engine pure`` for the
  pure path).  ``--peer`` adds tiktoken at the first size, each input in a
  child process stopped after ``--peer-timeout`` seconds: tiktoken's
  per-chunk merge loop is quadratic on a megabyte-long chunk.
"""

from __future__ import annotations

import argparse
import base64
import gc
import gzip
import lzma
import random
import statistics
import sys
import tempfile
import time
import unicodedata
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from bpefst.pipeline.encoder import Tokenizer  # noqa: E402
from bpefst.tokenizer import load_tokenizer, save_tokenizer  # noqa: E402

TIKTOKEN_SPECIALS = {
    "cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


def tokenizer_path(name: str) -> Path:
    if name in TIKTOKEN_SPECIALS:
        return SHARED / "tiktoken" / f"{name}.tiktoken.gz"
    if name == "gpt2":
        return SHARED / "gpt2" / "vocab.json"
    return SHARED / "wikitext-bpe" / f"tokenizer_{name.removeprefix('wikitext')}.json"


def build_tiktoken(name: str, model):
    import tiktoken

    ranks = {}
    for line in gzip.open(tokenizer_path(name)).read().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(name, pat_str=model.pattern, mergeable_ranks=ranks, special_tokens=TIKTOKEN_SPECIALS[name])


def build_hf(name: str, model, workdir: str):
    import tokenizers

    if name == "gpt2":
        data = SHARED / "gpt2"
        tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(data / "vocab.json"), str(data / "merges.txt")))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        return tok
    if name.startswith("wikitext"):
        return tokenizers.Tokenizer.from_file(str(tokenizer_path(name)))
    path = Path(workdir) / f"{name}.json"
    save_tokenizer(model, str(path), "hf")
    return tokenizers.Tokenizer.from_file(str(path))


# HF tokenizers runs in a process of its own: after an 11 MB encode its process holds
# a large heap and an idle thread pool, which made forking bpefst's --jobs workers in
# the same process measurably slower (0.8 s -> 1.0 s).  It still runs in the same
# benchmark run, on the same text and cores, interleaved with the others.
_HF = None
_HF_TEXT = None


def _hf_start(name: str, text: str, json_path: str) -> None:
    global _HF, _HF_TEXT
    model = load_tokenizer(tokenizer_path(name))
    _HF, _HF_TEXT = build_hf(name, model, json_path), text


def _hf_encode(return_ids: bool):
    gc.collect()
    began = time.perf_counter()
    ids = _HF.encode(_HF_TEXT).ids
    seconds = time.perf_counter() - began
    return (seconds, ids) if return_ids else (seconds, None)


def hf_process(name: str, text: str):
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(1, initializer=_hf_start, initargs=(name, text, tempfile.mkdtemp()))
    return pool


def timed(fn, clock=time.perf_counter) -> tuple[float, object]:
    gc.collect()
    began = clock()
    result = fn()
    return clock() - began, result


def build_tiktoken_gpt2(model):
    """tiktoken for GPT-2's vocabulary: GPT-2's ids are its ranks (as in tiktoken's own r50k_base)."""
    import tiktoken

    ranks = {model.vocab[i]: i for i in model.vocab}
    return tiktoken.Encoding("gpt2", pat_str=model.pattern, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256})


def load_corpus(name: str, mb: float) -> str:
    text = lzma.open(SHARED / "corpora" / f"{name}.txt.xz").read().decode("utf-8")
    return text[: int(mb * 1e6)] if mb else text


def engines_for(name: str, model, text: str) -> tuple[dict, object]:
    """The peers' encode functions on ``text`` (tiktoken first), and the HF helper process."""
    engines = {}
    tk = build_tiktoken_gpt2(model) if name == "gpt2" else build_tiktoken(name, model)
    engines["tiktoken"] = lambda: tk.encode_ordinary(text)
    if name in ("cl100k_base", "o200k_base"):
        try:
            from bpe_openai import _bindings

            backend = _bindings.tokenizer_for_encoding(name)  # the Rust encoder, without the
            engines["bpe-openai"] = lambda: backend.encode(text)  # Python wrapper's 1M-character limit
        except Exception as exc:  # the package ships its own rank files; report if it cannot load them
            print(f"bpe-openai unavailable: {exc}", file=sys.stderr)
    hf = hf_process(name, text)
    engines["HF tokenizers"] = lambda: hf.apply(_hf_encode, (True,))[1]
    return engines, hf


def measure(name: str, corpus: str, args) -> dict[str, float]:
    """Median seconds per engine over interleaved rounds, after checking every engine's ids against tiktoken's."""
    model = load_tokenizer(tokenizer_path(name))
    text = load_corpus(corpus, args.mb)
    engines, hf = engines_for(name, model, text)
    # The ids every engine must give, kept compact (a list of 2.6M Python ints is 100 MB).
    reference = array("I", engines["tiktoken"]())
    for engine, fn in engines.items():
        if array("I", fn()) != reference:
            sys.exit(f"{engine} differs from tiktoken on {name} / {corpus}")
    flavours = {"bpefst": "compiled", "pure": "pure"} if args.pure else {"bpefst": "compiled"}
    warm = {label: Tokenizer(model, engine=engine) for label, engine in flavours.items()}
    for label, tok in warm.items():
        if array("I", tok.encode_ordinary(text)) != reference:
            sys.exit(f"{label} differs from tiktoken on {name} / {corpus}")
    times: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for engine, fn in engines.items():
            if engine == "HF tokenizers":
                seconds = hf.apply(_hf_encode, (False,))[0]
            else:
                seconds, _ = timed(fn)
            times.setdefault(engine, []).append(seconds)
        for label, engine in flavours.items():
            cold = Tokenizer(model, engine=engine)  # a fresh tokenizer: empty chunk cache, tables built on first use
            seconds, ids = timed(lambda: cold.encode_ordinary(text))
            assert array("I", ids) == reference, f"{label} cold differs"
            del ids
            times.setdefault(f"{label} cold", []).append(seconds)
            seconds, _ = timed(lambda: warm[label].encode_ordinary(text))
            times.setdefault(f"{label} warm", []).append(seconds)
    hf.terminate()
    size = len(text.encode("utf-8")) / 1e6
    return {"MB": size, **{engine: statistics.median(values) for engine, values in times.items()}}


def table(args) -> None:
    """The throughput table: every tokenizer x corpus, each engine's MB/s and ratio to tiktoken (medians)."""
    print(f"Tokenizing, median of {args.rounds} interleaved rounds; ratio = tiktoken's time / the engine's "
          "(above 1: faster than tiktoken); ids checked equal to tiktoken's for every engine.\n")
    columns = ["bpe-openai", "HF tokenizers", "bpefst cold", "bpefst warm"] + (["pure cold", "pure warm"] if args.pure else [])
    print("| encoding, corpus | tiktoken | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for name in args.tokenizers.split(","):
        for corpus in args.corpora.split(","):
            result = measure(name, corpus, args)
            base = result["tiktoken"]
            cells = [f"{result['MB'] / base:.1f} MB/s"]
            for engine in columns:
                seconds = result.get(engine)
                cells.append(f"{base / seconds:.2f}x ({result['MB'] / seconds:.1f} MB/s)" if seconds else "-")
            print(f"| {name}, {corpus} ({result['MB']:.1f} MB) | " + " | ".join(cells) + " |", flush=True)


def adversarial_inputs(size: int) -> dict[str, str]:
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    assigned = [c for c in map(chr, range(0x20, 0x30000)) if unicodedata.category(c) not in ("Cn", "Cs", "Co")]

    def fill(unit: str) -> str:
        return (unit * (size // len(unit.encode()) + 1))[: size // max(1, len(unit[0].encode()))]

    def random_text(alphabet) -> str:
        out, total = [], 0
        while total < size:
            piece = "".join(rng.choices(alphabet, k=4096))
            out.append(piece)
            total += len(piece.encode())
        return "".join(out)

    return {
        "one letter": "a" * size,
        "one digit": "7" * size,
        "spaces": " " * size,
        "underscores": "_" * size,
        "random letters": random_text(letters),
        "random UTF-8": random_text(assigned),
        "emoji": fill("😀"),
        "CJK": random_text([chr(c) for c in range(0x4E00, 0xA000)]),
    }


def adversarial(args) -> None:
    name = args.tokenizers.split(",")[0]
    model = load_tokenizer(tokenizer_path(name))
    sizes = [float(s) for s in args.sizes.split(",")]
    print(f"{name}: bpefst CPU seconds per input size (fresh tokenizer each run, best of {args.repeat} "
          f"for every size, so the ratio compares like with like; CPU time because the machine may be shared)")
    header = "".join(f"{s:>9g} MB" for s in sizes)
    inputs = {s: adversarial_inputs(int(s * 1_000_000)) for s in sizes}
    if args.peer:
        header += f"{'tiktoken':>12}{'vs tiktoken':>13}"
    print(f"engine: {args.engine}")
    print(f"{'input':<16}{header}{'ratio':>9}")
    for kind in inputs[sizes[0]]:
        times = []
        for s in sizes:
            best = float("inf")
            for attempt in range(args.repeat):
                tok = Tokenizer(model, engine=args.engine)  # fresh caches every time
                seconds, _ = timed(lambda: tok.encode_ordinary(inputs[s][kind]), time.process_time)
                best = min(best, seconds)
            times.append(best)
        cells = "".join(f"{t:>10.2f}s" for t in times)
        peer = ""
        if args.peer:
            seconds = tiktoken_seconds(name, model, inputs[sizes[0]][kind], args.peer_timeout)
            peer = (f"{seconds:>11.2f}s{seconds / times[0]:>12.2f}x" if isinstance(seconds, float)
                    else f"{seconds:>12}{'-':>13}")
        print(f"{kind:<16}{cells}{peer}{times[-1] / times[0]:>9.2f}", flush=True)


def _tiktoken_child(name: str, text: str, queue) -> None:
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # a panic's backtrace would bury the table
    model = load_tokenizer(tokenizer_path(name))
    tk = build_tiktoken_gpt2(model) if name == "gpt2" else build_tiktoken(name, model)
    tk.encode_ordinary("warm up")
    seconds, _ = timed(lambda: tk.encode_ordinary(text), time.process_time)
    queue.put(seconds)


def tiktoken_seconds(name: str, model, text: str, timeout: float) -> float | str:
    """tiktoken's CPU seconds on ``text`` in a child process, ``">TIMEOUTs"`` when it takes longer, or
    ``"crashed"`` when it fails (on a megabyte of spaces o200k's regex overflows its stack and panics)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_tiktoken_child, args=(name, text, queue))
    child.start()
    child.join(timeout + 30)  # + its load
    if child.is_alive():
        child.kill()
        child.join()
        return f">{timeout:g}s"
    if child.exitcode != 0 or queue.empty():
        return "crashed"
    seconds = queue.get()
    return seconds if seconds <= timeout else f">{timeout:g}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizers", default="cl100k_base,o200k_base,gpt2")
    parser.add_argument("--corpora", default="pydocs,fortunes")
    parser.add_argument("--mb", type=float, default=0.0, help="Use only the first MB of each corpus (0 = all).")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--adversarial", action="store_true", help="Linear-time check on adversarial inputs instead.")
    parser.add_argument("--sizes", default="1,10", help="Adversarial input sizes in MB.")
    parser.add_argument("--repeat", type=int, default=3, help="Adversarial: repetitions per input (best counts).")
    parser.add_argument("--engine", default="compiled", choices=["compiled", "pure"], help="Adversarial: which bpefst path.")
    parser.add_argument("--peer", action="store_true", help="Adversarial: tiktoken at the first size too.")
    parser.add_argument("--peer-timeout", type=float, default=60.0, help="Adversarial: stop tiktoken after this many seconds.")
    parser.add_argument("--no-pure", dest="pure", action="store_false", help="Leave out the pure-Python columns.")
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"needs the shared reference data at {SHARED}")
    adversarial(args) if args.adversarial else table(args)


if __name__ == "__main__":
    main()
