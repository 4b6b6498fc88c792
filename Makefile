# Two commands: `make crawl` sets everything up and crawls the in-vitro web; `make test` runs the tests.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python

.PHONY: setup crawl test bench
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

crawl: setup
	$(VENV)/bin/crawl run

test: setup
	$(VENV)/bin/pytest -q

bench: setup
	$(PY) -m bench.crawl_bench
