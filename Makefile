# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: the CPU wheel; an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[train,verifiers,dev]"
	touch $(STAMP)

install: $(STAMP)

# The main job: the shipped warm start of the embedded tiny model -> eval -> GRPO -> eval, PNG + summary.md
# in runs/demo (fixed step counts; `countdown demo-train --help` for the sizes).
demo: $(STAMP)
	$(VENV)/bin/countdown demo-train --out runs/demo

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check countdown_env learners verifiers_ext tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
