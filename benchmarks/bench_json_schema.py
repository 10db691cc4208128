"""Benchmark: JSON Schema coverage on real-world schemas (issue 27), llguidance and outlines-core in the same run.

Usage: .venv/bin/python benchmarks/bench_json_schema.py SAMPLE_DIR [--sample N --seed S] [--vocab gpt2|cl100k]
       [--no-peers] [--timeout SECONDS] [--max-depth D] [--text-only] [--closed-objects] [--show-rejected]
       [--member-order schema|any] [--cut values-1|scalar-values|outermost|outermost-scalar-values] [--times FILE]

SAMPLE_DIR holds JSONSchemaBench MaskBench files (github guidance-ai/jsonschemabench,
``maskbench/data``: ``{"schema": ..., "tests": [{"data": ..., "valid": bool}, ...]}``);
``--sample N --seed S`` takes a seeded sample of N of its files that have tests
(``random.Random(S).sample`` of the sorted names), so the whole data folder can
be given.  Per schema, in one process, one schema after another:

* **translation**: ``schema_to_dfa``, the schema to the minimal DFA over the
  tokenizer's base alphabet, built directly (the part this issue owns;
  ``--via-text`` times ``schema_to_regex`` + ``compile_regex`` instead); a
  refusal is counted under the keyword its pointer ends with, and must be
  one line;
* **set-up**: promotion over the tokenizer and the first mask (``guide``'s
  route; the promotion engine's cost, issue 31); ``--text-only`` skips it and
  checks the instances on the byte DFA (the same verdicts: canonical
  promotion accepts exactly the tokenizer's encoding of each accepted text);
* **instances**: each test document, written compactly, encoded by the
  tokenizer and walked through the guide (a bitmask filled per token, timed:
  ``mask``); accepted when every token is allowed and the end accepts.
  Counted: valid instances accepted, invalid instances accepted (must be 0);
* **peers**: llguidance (``LLMatcher`` over the same tokenizer, compact
  whitespace) on the same instances; outlines-core's translation
  (``build_regex_from_schema``) with its regex matched on the text by the
  ``regex`` module (building its token index takes minutes on large schemas,
  so only the translation's coverage is compared).

``--member-order any`` translates with ``member_order="any"`` (objects with
at most one required member in any order): the sample's valid documents list
their members in their own orders, so this is the form that checks them.

``--cut CUT`` translates and promotes every schema with that cut of its open
objects (``open_objects=CUT``, :data:`bpefst.regex.json_schema.OPENNESS`)
instead of promote's default (open where the limits allow, else the first cut
that fits): a schema too large even so is refused.  It measures what a cut
buys in set-up and costs in valid documents (``--cut values-1``: extra
members' unconstrained values nest one level deep).

Peak RSS of the process is printed at the end (the memory acceptance: the
whole sample promoted one schema after another; with the peers it holds
their memory too).  ``--times FILE`` writes one JSON line per schema (vocabulary,
name, translation and set-up seconds, outcome), to find the schemas behind a
median.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import random
import resource
import signal
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_guided import DATA, VOCABS, LLGuidance  # noqa: E402
from bpefst.decoding import allocate_token_bitmask  # noqa: E402
from bpefst.errors import BpefstError  # noqa: E402
from bpefst.promotion.parts import DEFAULT_PARTS  # noqa: E402
from bpefst.promotion.token_language import TokenLanguage, default_stop_ids  # noqa: E402
from bpefst.regex import ByteAlphabet, alphabet_for, compile_regex  # noqa: E402
from bpefst.regex.json_schema import OPENNESS, SchemaError, SchemaWarning, schema_to_dfa, schema_to_regex  # noqa: E402
from bpefst.regex.json_schema_words import VOCABULARY  # noqa: E402

MAX_STATES = 1_000_000
PEER_SETUP: list[float] = []  # llguidance's set-up per schema it compiles


class Timeout(Exception):
    pass


class PeakMemory:
    """The process's resident peak per schema and overall (Linux: /proc/self/status; elsewhere only overall).

    Each schema starts by resetting the kernel's peak (VmHWM, via clear_refs) to the current size; the
    reset also lowers ``ru_maxrss``, so the overall peak is kept here as the largest peak read."""

    def __init__(self) -> None:
        self.overall = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.largest = (0.0, None)  # (MB a schema took the process past its size before it, schema)
        self.before: float | None = None

    def start(self) -> None:
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.before = self._status_mb("VmRSS")
        except OSError:
            self.before = None

    def stop(self, name: str) -> None:
        if self.before is None:
            return
        peak = self._status_mb("VmHWM")
        self.overall = max(self.overall, peak)
        if peak - self.before > self.largest[0]:
            self.largest = (peak - self.before, name)

    def peak_mb(self) -> float:
        return max(self.overall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    @staticmethod
    def _status_mb(field: str) -> float:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        raise OSError(f"no {field} in /proc/self/status")


MEMORY = PeakMemory()


def _alarm(*_):
    raise Timeout()


def sample_files(folder: Path, n: int | None, seed: int) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    if n is None:
        return files
    with_tests = [p for p in files if json.loads(p.read_text()).get("tests")]
    return sorted(random.Random(seed).sample(with_tests, min(n, len(with_tests))))


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def refusal_keyword(exc: SchemaError) -> str:
    """The keyword a refusal is about: the last keyword of its pointer (or its message when none is)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in exc.pointer.split("/")]
    for part in reversed(parts):
        if part in VOCABULARY:
            return part
    return str(exc).split(": ", 1)[-1][:40]


class Ours:
    def __init__(self, model, timeout: float, max_depth: int, text_only: bool = False, open_objects: bool | str = True,
                 via_text: bool = False, member_order: str = "schema"):
        self.model, self.timeout, self.max_depth = model, timeout, max_depth
        self.open_objects, self.via_text, self.member_order = open_objects, via_text, member_order
        self.alphabet = ByteAlphabet() if text_only else alphabet_for(model)  # text_only: symbols are the UTF-8 bytes
        self.stops = default_stop_ids(model)
        self.bitmask = allocate_token_bitmask(1, model.max_id + 1)

    def translate(self, schema):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SchemaWarning)
            started, cpu = time.perf_counter(), time.process_time()
            if self.via_text:
                pattern = schema_to_regex(schema, max_depth=self.max_depth, open_objects=self.open_objects,
                                          member_order=self.member_order)
                self.dfa = compile_regex(pattern, self.alphabet, max_states=MAX_STATES)
            else:
                self.dfa = schema_to_dfa(schema, self.alphabet, max_depth=self.max_depth, open_objects=self.open_objects,
                                         member_order=self.member_order,
                                         max_states=MAX_STATES)
            elapsed = time.perf_counter() - started
            self.cpu = time.process_time() - cpu  # what the translation took of this process's CPU (the machine may be shared)
        return self.dfa, elapsed, len(caught)

    def set_up(self, dfa, schema=None):
        started = time.perf_counter()
        if schema is not None:  # the user's route: promote(...).guide()
            guided = self.bpefst.promote(self.tokenizer, json_schema=schema, max_depth=self.max_depth,  # open where it fits
                                          open_objects=None if self.open_objects is True else self.open_objects,
                                          member_order=self.member_order).guide()
        else:  # the translated DFA as one language, its guide (what promote(json_schema=...) builds)
            guided = TokenLanguage(dfa, self.model, "canonical", self.model.pattern is not None).guide(stop_ids=self.stops)
        if guided.start is not None:
            guided.fill_next_token_bitmask(guided.start, self.bitmask)
        return guided, time.perf_counter() - started

    def accepts(self, guided, ids, masks: list) -> bool:
        state = guided.start
        if state is None:
            return False
        for token in ids:
            started = time.perf_counter()
            guided.fill_next_token_bitmask(state, self.bitmask)
            masks.append(time.perf_counter() - started)
            if not (int(self.bitmask[0, token // 32]) >> (token % 32)) & 1:
                return False
            state = guided.step(state, token)
            if state is None:
                return False
        return guided.is_accepting(state)


def run(files, label: str, timeout: float, max_depth: int, peers: bool, text_only: bool, user_path: bool = False,
        open_objects: bool | str = True, via_text: bool = False, show_rejected: bool = False, member_order: str = "schema",
        times: Path | None = None) -> None:
    import bpefst

    tokenizer = bpefst.load(DATA / VOCABS[label])
    model = tokenizer.model  # one tokenizer in the process, as a user has
    DEFAULT_PARTS.get(model)  # per-tokenizer set-up, once (not counted per schema)
    ours = Ours(model, timeout, max_depth, text_only, open_objects, via_text, member_order)
    ours.bpefst, ours.tokenizer = bpefst, tokenizer
    ll = LLGuidance(label, model, model.specials.get("<|endoftext|>")) if peers else None
    tally = collections.Counter()
    refusals: collections.Counter = collections.Counter()
    examples: dict[str, str] = {}
    translate_times, setup_times, masks, cpu_times = [], [], [], []
    times_file = open(times, "a") if times is not None else None  # (main empties it)
    for path in files:
        guided = dfa = None  # the last schema's guide is dropped before the next is promoted, as one after another
        record = {"vocab": label, "name": path.name, "translation_s": None, "setup_s": None, "outcome": "compiled"}
        item = json.loads(path.read_text())
        schema, tests = item["schema"], item.get("tests", [])
        texts = [(compact(t["data"]), bool(t["valid"])) for t in tests]
        tally["schemas"] += 1
        tally["valid"] += sum(v for _, v in texts)
        tally["invalid"] += sum(not v for _, v in texts)
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(timeout))
        MEMORY.start()
        try:
            dfa, elapsed, warned = ours.translate(schema)
            translate_times.append(elapsed)
            record["translation_s"] = elapsed
            cpu_times.append(ours.cpu)
            tally["warned"] += warned > 0
            if not text_only:
                guided, setup = ours.set_up(dfa, schema if user_path else None)
                setup_times.append(setup)
                record["setup_s"] = setup
            tally["compiled"] += 1
            tally["valid in compiled"] += sum(v for _, v in texts)
            for text, valid in texts:
                if text_only:
                    ok = ours.dfa.accepts(list(text.encode("utf-8")))
                else:
                    ok = ours.accepts(guided, tokenizer.encode(text), masks)
                if valid:
                    tally["valid accepted"] += ok
                    if not ok and show_rejected:
                        print(f"  valid refused: {path.name}: {text[:120]}", flush=True)
                elif ok:
                    tally["INVALID ACCEPTED"] += 1
                    print(f"  invalid accepted: {path.name}: {text[:120]}", flush=True)
        except SchemaError as exc:
            key = refusal_keyword(exc)
            refusals[key] += 1
            record["outcome"] = key
            examples.setdefault(key, str(exc)[:160])
            tally["one-line refusals"] += "\n" not in str(exc)
            tally["refusals naming a pointer"] += 1
        except Timeout:
            refusals["(timeout)"] += 1
            record["outcome"] = "(timeout)"
            print(f"  timeout: {path.name}", flush=True)
        except BpefstError as exc:
            key = f"({type(exc).__name__})"
            refusals[key] += 1
            record["outcome"] = key
            examples.setdefault(key, str(exc)[:240])
            tally["one-line refusals"] += "\n" not in str(exc)
            tally["refusals naming a pointer"] += getattr(exc, "pointer", None) is not None  # where the schema is largest
        except Exception as exc:  # noqa: BLE001 - a crash is what this counts
            tally["CRASHES"] += 1
            record["outcome"] = "(crash)"
            print(f"  crash: {path.name}: {type(exc).__name__}: {exc}", flush=True)
        finally:
            signal.alarm(0)
        MEMORY.stop(path.name)
        if times_file is not None:
            times_file.write(json.dumps(record) + "\n")
            times_file.flush()
        signal.alarm(int(timeout))  # the peers get the same time per schema (a Rust call may overrun it)
        try:
            if ll is not None:
                peer_check(ll, schema, texts, tokenizer, tally, timeout)
            if peers:
                outlines_check(schema, texts, tally)
        except Timeout:
            tally["peer timeouts"] += 1
        finally:
            signal.alarm(0)
        if tally["schemas"] % 10 == 0:
            print(f"  .. {tally['schemas']} schemas: compiled {tally['compiled']}, valid accepted {tally['valid accepted']}"
                  f"/{tally['valid']} ({tally['valid in compiled']} in compiled), invalid accepted {tally['INVALID ACCEPTED']}, crashes {tally['CRASHES']}, timeouts "
                  f"{refusals['(timeout)']}, llguidance {tally['llg compiled']} {tally['llg valid accepted']} "
                  f"{tally['llg invalid accepted']}, outlines {tally['outlines compiled']} {tally['outlines valid accepted']} "
                  f"{tally['outlines invalid accepted']}, peer timeouts {tally['peer timeouts']}; translation median "
                  f"{1e3 * statistics.median(translate_times or [0]):.1f} ms; mask mean "
                  f"{1e6 * statistics.fmean(masks or [0]):.1f} us; peak RSS "
                  f"{MEMORY.peak_mb():.0f} MB", flush=True)
    if times_file is not None:
        times_file.close()
    report(label, tally, refusals, examples, translate_times, setup_times, masks, peers, cpu_times)


def peer_check(ll, schema, texts, tokenizer, tally, timeout) -> None:
    try:
        started = time.perf_counter()
        grammar = ll.llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults={"whitespace_flexible": False})
        matcher = ll.llguidance.LLMatcher(ll.tokenizer, grammar)
        ll.fill(matcher, ll.bitmask)  # its set-up as ours is timed: the schema to the first mask
        elapsed = time.perf_counter() - started
        if matcher.is_error():
            tally["llg refused"] += 1
            return
    except Exception:  # noqa: BLE001 - the peer's refusal
        tally["llg refused"] += 1
        return
    tally["llg compiled"] += 1
    PEER_SETUP.append(elapsed)
    for text, valid in texts:
        matcher.reset()
        ok = all(matcher.consume_token(t) for t in tokenizer.encode(text)) and matcher.is_accepting()
        if valid:
            tally["llg valid accepted"] += ok
        else:
            tally["llg invalid accepted"] += ok


def outlines_check(schema, texts, tally) -> None:
    import regex
    from outlines_core.json_schema import build_regex_from_schema

    try:
        pattern = regex.compile(build_regex_from_schema(json.dumps(schema)))
    except Exception:  # noqa: BLE001 - the peer's refusal (or a pattern the regex module cannot compile)
        tally["outlines refused"] += 1
        return
    tally["outlines compiled"] += 1
    for text, valid in texts:
        ok = pattern.fullmatch(text) is not None
        tally["outlines valid accepted" if valid else "outlines invalid accepted"] += ok


def report(label, tally, refusals, examples, translate_times, setup_times, masks, peers, cpu_times=()) -> None:
    n, valid, invalid = tally["schemas"], tally["valid"], tally["invalid"]
    pct = lambda a, b: f"{a}/{b} ({100 * a / max(b, 1):.1f}%)"  # noqa: E731
    print(f"\n{label}: {n} schemas, {valid} valid and {invalid} invalid instances")
    print("| engine | compiled | valid accepted | invalid accepted |")
    print("|---|---|---|---|")
    print(f"| bpefst | {pct(tally['compiled'], n)} | {pct(tally['valid accepted'], valid)} "
          f"(of the compiled schemas' {tally['valid in compiled']}: {pct(tally['valid accepted'], tally['valid in compiled'])}) "
          f"| {tally['INVALID ACCEPTED']} |")
    if peers:
        for name in ("llg", "outlines"):
            print(f"| {'llguidance' if name == 'llg' else 'outlines-core (its regex, on text)'} | "
                  f"{pct(tally[name + ' compiled'], n)} | {pct(tally[name + ' valid accepted'], valid)} | "
                  f"{tally[name + ' invalid accepted']} |")
    print(f"\ncrashes: {tally['CRASHES']}; refusals: {sum(refusals.values())} "
          f"(one line: {tally['one-line refusals']}, naming a JSON pointer: {tally['refusals naming a pointer']}, "
          f"timeouts: {refusals['(timeout)']}); "
          f"schemas with a warning (ignored keywords): {tally['warned']}")
    print("\n| refused for | schemas | example |\n|---|---|---|")
    for key, count in refusals.most_common():
        print(f"| `{key}` | {count} | {examples.get(key, '')} |")
    if translate_times:
        print(f"\ntranslation (schema -> byte DFA): median {1e3 * statistics.median(translate_times):.1f} ms, "
              f"p90 {1e3 * sorted(translate_times)[int(0.9 * len(translate_times))]:.1f} ms, "
              f"max {1e3 * max(translate_times):.0f} ms over {len(translate_times)} translated")
    if cpu_times:
        print(f"translation CPU time: median {1e3 * statistics.median(cpu_times):.1f} ms, "
              f"p90 {1e3 * sorted(cpu_times)[int(0.9 * len(cpu_times))]:.1f} ms")
    if setup_times:
        print(f"set-up (promotion + first mask): median {statistics.median(setup_times):.3f} s, "
              f"p90 {sorted(setup_times)[int(0.9 * len(setup_times))]:.2f} s, max {max(setup_times):.1f} s "
              f"over {len(setup_times)} compiled")
    if PEER_SETUP:
        print(f"llguidance set-up (grammar + matcher + first mask): median {1e3 * statistics.median(PEER_SETUP):.1f} ms, "
              f"p90 {1e3 * sorted(PEER_SETUP)[int(0.9 * len(PEER_SETUP))]:.1f} ms over {len(PEER_SETUP)} compiled")
    if masks:
        print(f"mask per token: mean {1e6 * statistics.fmean(masks):.1f} us over {len(masks)} tokens")
    print(f"peak RSS: {MEMORY.peak_mb():.0f} MB", flush=True)
    if MEMORY.largest[1] is not None:
        print(f"largest schema: {MEMORY.largest[1]}, its peak {MEMORY.largest[0]:.0f} MB above the process's size before it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sample_dir", type=Path)
    parser.add_argument("--sample", type=int, default=None, metavar="N", help="a seeded sample of N files with tests")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--vocab", action="append", choices=list(VOCABS), help="vocabularies (default: gpt2)")
    parser.add_argument("--no-peers", action="store_true", help="leave llguidance and outlines-core out")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per schema (translation + set-up + instances)")
    parser.add_argument("--max-depth", type=int, default=2)
    parser.add_argument("--user-path", action="store_true",
                        help="set up through bpefst.promote(tokenizer, json_schema=...).guide() (guide()'s cache included)")
    parser.add_argument("--text-only", action="store_true",
                        help="check instances on the byte DFA instead of promoting (canonical promotion accepts exactly "
                             "the tokenizer's encoding of each text the DFA accepts, so the verdicts are the same)")
    parser.add_argument("--open-objects", action="store_true",
                        help="(the default) objects without additionalProperties take extra members, as JSON Schema reads them")
    parser.add_argument("--closed-objects", action="store_true",
                        help="objects with properties but no additionalProperties take their listed members only")
    parser.add_argument("--member-order", choices=("schema", "any"), default="schema",
                        help="schema_to_dfa's member_order (the user path: bpefst.promote's)")
    parser.add_argument("--cut", choices=list(OPENNESS),
                        help="every schema with this cut of its open objects (open_objects=CUT), not promote's fallback")
    parser.add_argument("--via-text", action="store_true", help="translate through the pattern text and compile_regex")
    parser.add_argument("--show-rejected", action="store_true", help="print each valid instance refused, with its schema")
    parser.add_argument("--times", type=Path, metavar="FILE",
                        help="write one JSON line per schema and vocabulary: name, translation and set-up seconds, outcome")
    args = parser.parse_args()
    if args.cut and (args.closed_objects or args.via_text):
        parser.error("--cut takes neither --closed-objects nor --via-text (the pattern text has no cuts)")
    missing = [name for name in ("llguidance", "outlines_core") if importlib.util.find_spec(name) is None]
    if missing and not args.no_peers:
        parser.error(f"the peers need {' and '.join(missing)}: pip install -e '.[bench]', or pass --no-peers")
    files = sample_files(args.sample_dir, args.sample, args.seed)
    if args.times is not None:
        args.times.write_text("")  # one line per schema and vocabulary, appended by each run
    print(f"{len(files)} schemas from {args.sample_dir} (sample {args.sample}, seed {args.seed}); pid {os.getpid()}")
    for label in args.vocab or ["gpt2"]:
        run(files, label, args.timeout, args.max_depth, not args.no_peers, args.text_only, args.user_path,
            args.cut or not args.closed_objects, args.via_text, args.show_rejected, args.member_order, args.times)


if __name__ == "__main__":
    main()
