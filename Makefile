# Two entry points for a fresh machine: `make run` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test install install-dev lint typecheck pytest browsers typescript openapi dist clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

# dev: the test and lint tools; bench: what the benchmarks (benchmarks/) need, for their tests.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/memorybank serve --host $(HOST) --port $(PORT)

lint: install-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: install-dev
	$(BIN)/mypy

# The UI tests drive Debian's Chromium through Playwright (never `playwright install`);
# the README test runs its curl lines with curl. As root (CI) what is missing is installed
# from the Debian archive; otherwise we say how, and the tests fail with the same advice.
browsers:
	@if command -v chromium >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
			chromium chromium-driver curl; \
	else \
		echo "chromium or curl is missing and we are not root: skipping their install; run" \
			"'sudo apt-get install -y chromium chromium-driver curl' (the tests need them)"; \
	fi

# Two workers: CI has two cores, and much of the suite waits on servers and databases.
# The concurrency stress test runs 15 s in CI (60 s by default) and the SIGKILL tests kill
# each server 4 times (10 by default), docs/reliability.md.
pytest: install-dev browsers
	MEMORYBANK_STRESS_SECONDS=15 MEMORYBANK_CRASH_KILLS=4 $(BIN)/pytest -n 2

# The TypeScript client: its dev tools from the lockfile (npm ci), the tsc builds (ES module and
# CommonJS), and node's test runner against a real `memorybank serve` that the tests start: the
# client, its chat examples, and its npm pack tarball installed (offline) in a CommonJS app and
# an ES module app, where every TypeScript block of both READMEs is compiled with tsc --strict.
typescript: install
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error \
		&& MEMORYBANK_BIN="$(abspath $(BIN))/memorybank" npm test

# After changing the API: the schema the TypeScript types are generated from, and the types.
openapi: install
	$(BIN)/memorybank openapi --output clients/typescript/openapi.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run generate

# The sdist and the wheel, in dist/ (pip install dist/memorybank-*.whl installs it anywhere).
dist: install-dev
	$(BIN)/python -m build --outdir dist .

# pytest exits 5 when it collected no tests; that must fail, and it does, since make
# stops on any non-zero exit.
test: browsers lint typecheck pytest typescript

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	rm -rf clients/typescript/node_modules clients/typescript/dist
