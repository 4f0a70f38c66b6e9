"""The real pretrained model (SmolLM2-135M-Instruct, converted from its wheel) with vLLM's CPU build: every learner
trains its architecture through ``countdown train`` with colocated vLLM (on a 2-layer copy, sharing one engine).
The weight sync on the full model and with LoRA: ``tests/integration/test_real_model_sync.py`` (a module of its own,
so that
these engines are shut down before its 30-layer model is loaded)."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_vllm import train_argv, train_two_colocated_steps

pytest.importorskip("vllm")
pytest.importorskip("gguf")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("collect_garbage")]


@pytest.fixture(scope="module")
def shared_colocated_engines():
    """The learners' runs share TRL's colocated ``vllm.LLM`` (one per engine configuration) instead of starting one
    each (~20-60 s apiece on 2 cores). Sound because TRL pushes the trainer's weights into the engine before its first
    generation (``_last_loaded_step`` starts at -1), so every run samples from its own policy. A run's end keeps the
    engine (its release is tested in tests/integration/test_vllm.py)."""
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
    for llm in engines.values():
        llm.llm_engine.engine_core.shutdown()
    engines.clear()


def _learners():
    """test_vllm's learners: every registered one but the presets whose only change is TRL's loss (they train
    with HF generation in tests/learners/test_trl_presets.py; each engine start here costs ~20-40 s)."""
    from tests.integration.test_vllm import _learners as colocated_learners

    return colocated_learners()


@pytest.mark.parametrize("learner", _learners())
def test_every_learner_trains_smollm2_layers_with_colocated_vllm(
    learner, smollm2_truncated_dir, shared_colocated_engines, tmp_path
):
    out = tmp_path / "run"
    train_two_colocated_steps(learner, smollm2_truncated_dir, out)
    assert len(shared_colocated_engines) == 1
    assert (out / "final" / "model.safetensors").is_file()


def _async_learners():
    """The colocated learners that take async rollouts with their default settings: all but T-SPMO, whose refusal
    tests/integration/test_async_rollouts.py checks (contrastive's default frozen scorer takes them; its moving one
    is refused there too)."""
    from learners.core.registry import LEARNERS

    return [name for name in _learners() if LEARNERS[name].load()[1].async_refusal(None) is None]


@pytest.mark.parametrize("learner", _async_learners())
def test_async_rollouts_train_smollm2_layers(learner, smollm2_truncated_dir, shared_colocated_engines, tmp_path):
    """Issue 47: every learner that takes async rollouts trains the real model's architecture with them, the second
    step on samples generated while the first updated (one policy version old)."""
    import threading

    from countdown_env.cli import main

    out = tmp_path / "run"
    correction = "trainer.vllm_importance_sampling_correction=true"
    argv = train_argv(learner, out, f"model={smollm2_truncated_dir}", correction)
    assert main([*argv, "--async"]) == 0
    history = json.loads((out / "log_history.json").read_text())
    assert [e["async/staleness"] for e in history if "async/staleness" in e] == [0.0, 1.0]
    assert not [t for t in threading.enumerate() if t.name == "countdown-async-rollouts"]  # the worker stopped
