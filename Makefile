# Two commands: `make crawl` sets everything up and crawls the in-vitro web; `make test` runs the tests.
# `make crawl` installs the crawler with its runtime dependencies only, so a missing one fails here, not for a user.
# `make bench` runs the in-vitro benchmarks (about 30 minutes) and writes their JSON and PNG next to bench/RESULTS.md.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
BENCH_DEPS := $(VENV)/.bench-installed

.PHONY: setup bytecode browser crawl test bench bench-crawl bench-fetchers bench-politeness bench-raw bench-overhead bench-scrapy
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py store/_signature.c store/_deflate.c store/_graph.c engine/_start_tags.c frontier/_resolve.c
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# An editable install leaves the crawler's modules uncompiled, and where the crawl's user cannot write them back
# (a service account, PYTHONDONTWRITEBYTECODE=1 as in many containers) every process of every crawl compiles them
# again: ~0.15 CPU-s an agent process. compileall writes them whatever the environment, and skips those up to date.
bytecode: setup
	@$(PY) -m compileall -q engine frontier store tools > /dev/null

# The tests' and the benchmarks' extras (pytest, hypothesis, mypy; matplotlib, pyinstrument, Scrapy): the tests run
# a smoke version of every benchmark.
$(BENCH_DEPS): $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

# Each demo crawl gets a folder of its own: a second `make crawl` must not find the first one's crawl in its way.
CRAWL_ARGS ?= --out out/demo-$(shell date +%Y%m%d-%H%M%S)

crawl: bytecode
	$(VENV)/bin/crawl run $(CRAWL_ARGS)

# The tests that look at a page (the dashboard, the crawl report) run Debian's Chromium headless, driven by Playwright
# (tests/browser.py); Playwright's own browser download does not work on a closed network, so the package manager's.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:
	@test -x /usr/bin/chromium || $(SUDO) apt-get install -y -q chromium \
	    || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

# mypy first ([tool.mypy] in pyproject.toml: the crawler's packages under --strict), then the tests.
test: bytecode $(BENCH_DEPS) browser
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q

bench: bench-fetchers bench-politeness bench-raw bench-overhead bench-scrapy

bench-crawl: $(BENCH_DEPS) bytecode
	$(PY) -m bench.crawl_bench

bench-fetchers: $(BENCH_DEPS) bytecode
	$(PY) -m bench.fetchers_sweep

bench-politeness: $(BENCH_DEPS) bytecode
	$(PY) -m bench.politeness_sweep

bench-raw: $(BENCH_DEPS) bytecode
	$(PY) -m bench.raw_speed

bench-overhead: $(BENCH_DEPS) bytecode
	$(PY) -m bench.engine_overhead

bench-scrapy: $(BENCH_DEPS) bytecode
	$(PY) -m bench.scrapy_side
