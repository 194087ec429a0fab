# lcg developer commands. `make install` is implied by every other target.
# `make demo DEMO_ARGS="--limit 5"` passes options to the demo (see `lcg demo --help`).
# VENV=DIR NO_INSTALL=1 runs with an existing environment as it is (the clone test uses it).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_ARGS ?=
# The suite runs on every core, a test file per worker at a time (pytest-xdist, ADR 0187);
# `make test TEST_WORKERS=0` runs it in this one process.
TEST_WORKERS ?= auto
PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

.PHONY: install test test-deep test-fast bench bench-paired lint demo clean

ifdef NO_INSTALL
install:
	@test -x $(BIN)/python || { echo "NO_INSTALL is set but $(BIN)/python does not exist" >&2; exit 1; }
else
install: $(STAMP)
endif

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

test: install
	@# pytest exits 5 when it collected nothing: treat that as a failure.
	$(BIN)/python -m pytest $(PARALLEL); rc=$$?; if [ $$rc -eq 5 ]; then echo 'pytest collected no tests' >&2; exit 1; fi; exit $$rc

# The whole suite under hypothesis' deep profile (tests/_hypothesis_profiles.py): each property
# test at its full count (the Cypher guard's 10,000 wrapped clauses, 250-290 s alone), where
# `make test` draws a few hundred at most. The nightly run (ADR 0222).
test-deep: install
	$(BIN)/python -m pytest $(PARALLEL) --hypothesis-profile=deep; rc=$$?; if [ $$rc -eq 5 ]; then echo 'pytest collected no tests' >&2; exit 1; fi; exit $$rc

# The unit and property tests alone (no service subprocesses, no crash or e2e runs): the quick
# check while working, under the same default hypothesis profile as `make test`.
test-fast: install
	$(BIN)/python -m pytest $(PARALLEL) tests/unit tests/property

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: install
	@# The suite's addopts skip benchmarks; the bench run replaces them.
	$(BIN)/python -m pytest bench -o addopts='' --import-mode=importlib -p no:cacheprovider --benchmark-enable -q -s

# Whole commands of two checkouts, paired in one run (ratios after/before): `lcg ingest` of a
# 1,000-file git tree and `lcg import-reference` of a 7,300-line reference stream.
# BEFORE names the baseline commit (default: the last commit before issue 27's work).
BEFORE ?= 7d46494
bench-paired: install
	rm -rf .bench-before && git worktree prune && git worktree add -f --detach .bench-before $(BEFORE)
	$(BIN)/python bench/paired_ingest.py .bench-before/src src
	$(BIN)/python bench/paired_import_reference.py .bench-before/src src
	git worktree remove --force .bench-before

demo: install
	$(BIN)/python -m lcg.cli.demo $(DEMO_ARGS)

clean:
	rm -rf $(VENV) .lcg build src/*.egg-info
