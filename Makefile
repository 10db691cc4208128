# bpefst developer commands.  `make demo` sets everything up and shows the tool;
# `make test` runs the whole suite (what CI runs).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := build/demo

.PHONY: install demo test bench clean

# The test extra's llama-cpp-python compiles llama.cpp for this machine's CPU (-march=native), but without
# Intel's AMX tile instructions: ggml's AMX kernels die with SIGILL ("tilezero") on machines whose kernel has
# not given the worker thread the tile state (ggml-org/llama.cpp#26954), as on this project's 2-core x86
# machines.  A CMAKE_ARGS of your own replaces this.  (pip caches the wheel it builds: after a build with
# AMX, `pip cache remove llama_cpp_python` first.)
ifeq ($(shell uname -m),x86_64)
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
CMAKE_ARGS ?= -DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'
export CMAKE_ARGS
endif

$(STAMP): pyproject.toml setup.py $(wildcard src/core/*.c src/core/*.h)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	@mkdir -p $(DEMO)
	$(BIN)/bpefst train fixtures/corpus.txt --vocab-size 600 --special-token '<|endoftext|>' --output $(DEMO)/tokenizer.bpefst
	$(BIN)/bpefst info $(DEMO)/tokenizer.bpefst
	echo 'The tokenizer compiles merges into automata.' | $(BIN)/bpefst encode $(DEMO)/tokenizer.bpefst --format tokens
	echo 'The tokenizer compiles merges into automata.' | $(BIN)/bpefst encode $(DEMO)/tokenizer.bpefst | $(BIN)/bpefst decode $(DEMO)/tokenizer.bpefst
	$(BIN)/bpefst compile $(DEMO)/tokenizer.bpefst --kind dfa --stats --output $(DEMO)/tokenizer.dfa
	echo 'The tokenizer compiles merges into automata.' | $(BIN)/bpefst tokenize $(DEMO)/tokenizer.bpefst | $(BIN)/bpefst validate $(DEMO)/tokenizer.dfa
	$(BIN)/bpefst convert $(DEMO)/tokenizer.bpefst --format hf --output $(DEMO)/tokenizer.json

# The suite runs on TEST_WORKERS processes (pytest-xdist, handing out one test at a time; keeping a module on one
# worker, --dist loadfile, ended the default pass 2:20 later on 2 cores): first every module on the default engine
# (the compiled core, where it is built), then the modules that compare token ids again on the pure-Python path
# (tests/conftest.py ID_MODULES; no pytest cache of its own, which the first pass owns).  Fails when either fails.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS)

test: install
	@$(BIN)/python -m pytest -q $(XDIST); compiled=$$?; \
	echo "== the modules that compare token ids, again on the pure-Python path: BPEFST_PURE_PYTHON=1 pytest -m ids"; \
	BPEFST_PURE_PYTHON=1 $(BIN)/python -m pytest -q $(XDIST) -m ids -p no:cacheprovider; pure=$$?; \
	test $$compiled -eq 0 -a $$pure -eq 0

BENCHES := bench_api bench_train bench_compile bench_tokenize bench_end_to_end bench_validate bench_jobs bench_stream_memory bench_datasets bench_promote bench_guided bench_real_model bench_ray

# Every benchmark, each printing its table with the peer measured in the same run;
# the tables also go to benchmarks/RESULTS.md (the README quotes them).
bench: install
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	@echo "# Benchmark results ($$(date -u +%Y-%m-%d), make bench)" > benchmarks/RESULTS.md
	@for b in $(BENCHES); do echo "## $$b" | tee -a benchmarks/RESULTS.md; \
	  $(BIN)/python benchmarks/$$b.py | tee -a benchmarks/RESULTS.md || exit 1; done

clean:
	rm -rf build $(VENV)
