# Two set-up commands: `make demo` and `make test`. Both create .venv and install what they need.
# ArviZ 1.x needs Python >= 3.12: use the first of python3.14, python3.13, python3.12 on PATH that
# runs (a pyenv shim of a version not enabled does not), else a pyenv 3.12+ install, else python3
# (which then gets ArviZ 0.2x; thrifty works with both).
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3; do \
	$$p -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1 && { echo $$p; exit; }; \
	done; echo python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs lint bench clean

# pip --no-compile: byte-compiling every installed module (JAX, Ray, SciPy, ...) is two thirds
# of the install's CPU time; Python compiles what is imported, once, on first import instead
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --no-compile -e ".[dev,ray,docs,jax]"
	touch $(STAMP)

# (demo, docs, bench and test: Python's default of caching compiled modules, even where the
# environment turns it off — see --no-compile above)
demo: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/thrifty demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	@# two processes, a module's tests (and its module fixtures) on one; Python's default of
	@# caching compiled modules (__pycache__) even where the environment turns it off: the
	@# tests start some sixty Python processes, which would each compile thrifty anew
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n 2 --dist loadfile

# The documentation site (Sphinx, pydata theme; the worked examples run during the build),
# warnings as errors: docs/_build/html/index.html
docs: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m sphinx -E -W --keep-going -b html docs docs/_build/html

bench: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python benchmarks/core_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
