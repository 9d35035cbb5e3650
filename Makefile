# The two set-up commands in the README are `make run` and `make test`.
# Each creates .venv on first use, installs what it needs, and is safe to repeat.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test install lint typecheck unit bench cost lock clean

# Installed with the lock as constraints: the exact versions the tests and the layer share.
$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "chatmemory needs Python >= 3.11")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[local,dev]'
	@touch $(STAMP)

# The browser tests (tests/browser) drive Debian's chromium. Installed here where we may
# (root or passwordless sudo, and apt-get); never fatal: without it those tests skip.
CHROMIUM ?= /usr/bin/chromium
install: $(STAMP)
	@test -x $(CHROMIUM) || ! command -v apt-get >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then as=""; elif sudo -n true 2>/dev/null; then as="sudo -n"; else exit 0; fi; \
	  echo "installing chromium for the browser tests"; \
	  { $$as apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$as apt-get install -y -qq chromium; } >/dev/null 2>&1 \
	    || echo "could not install chromium: the browser tests will skip"; }

## Install everything and start the local server on http://127.0.0.1:3000
## (make run PORT=3001 STATE_DIR=/tmp/chatmemory-demo for another port or state folder;
## DAYS_LATER=8 runs its clock eight days ahead, to watch threads ripen)
PORT ?= 3000
STATE_DIR ?=
DAYS_LATER ?=
run: install
	$(BIN)/chatmemory serve --port $(PORT)$(if $(STATE_DIR), --state-dir $(STATE_DIR))$(if $(DAYS_LATER), --days-later $(DAYS_LATER))

## Install everything and run every check and test
test: install lint typecheck unit

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest -n 2 --dist loadfile

## Benchmarks (not tests): retrieval latency and quality against mem0, token budget
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[local,dev,bench]'
	@touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python bench/retrieval.py

## Re-resolve every dependency in a fresh virtualenv and write requirements.lock and the
## layer's pins (layers/dependencies/requirements.txt) from it; commit both
LOCK_VENV := .lock-venv
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[local,dev]'
	$(LOCK_VENV)/bin/python layers/dependencies/lock.py
	rm -rf $(LOCK_VENV)

## The cost model: seed 002's traffic priced on AWS from the real handlers (offline, ~2 min)
cost: install
	$(BIN)/python bench/cost_model.py

clean:
	rm -rf $(VENV) $(LOCK_VENV) build *.egg-info shared/*.egg-info .pytest_cache .mypy_cache .ruff_cache
