# Two commands: `make crawl` sets everything up and crawls the in-vitro web; `make test` runs the tests.
# `make crawl` installs the crawler with its runtime dependencies only, so a missing one fails here, not for a user.
# `make bench` runs the in-vitro benchmarks (about 30 minutes) and writes their JSON and PNG next to bench/RESULTS.md.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
BENCH_DEPS := $(VENV)/.bench-installed

.PHONY: setup crawl test bench bench-crawl bench-fetchers bench-politeness bench-raw bench-overhead bench-scrapy
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# The tests' and the benchmarks' extras (pytest, hypothesis, mypy; matplotlib, pyinstrument, Scrapy): the tests run
# a smoke version of every benchmark.
$(BENCH_DEPS): $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

# Each demo crawl gets a folder of its own: a second `make crawl` must not find the first one's crawl in its way.
CRAWL_ARGS ?= --out out/demo-$(shell date +%Y%m%d-%H%M%S)

crawl: setup
	$(VENV)/bin/crawl run $(CRAWL_ARGS)

# mypy first ([tool.mypy] in pyproject.toml: the crawler's packages under --strict), then the tests.
test: setup $(BENCH_DEPS)
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q

bench: bench-fetchers bench-politeness bench-raw bench-overhead bench-scrapy

bench-crawl: $(BENCH_DEPS)
	$(PY) -m bench.crawl_bench

bench-fetchers: $(BENCH_DEPS)
	$(PY) -m bench.fetchers_sweep

bench-politeness: $(BENCH_DEPS)
	$(PY) -m bench.politeness_sweep

bench-raw: $(BENCH_DEPS)
	$(PY) -m bench.raw_speed

bench-overhead: $(BENCH_DEPS)
	$(PY) -m bench.engine_overhead

bench-scrapy: $(BENCH_DEPS)
	$(PY) -m bench.scrapy_side
