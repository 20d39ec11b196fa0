# Two set-up commands: `make demo` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/thrifty demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/core_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
