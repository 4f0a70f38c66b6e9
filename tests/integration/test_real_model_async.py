"""Async rollouts on the real pretrained model's architecture (a 2-layer copy of SmolLM2-135M-Instruct, vLLM's CPU
build, one shared colocated engine): every learner that takes them trains with them. A module apart from
``test_real_model_vllm.py`` so that ``make test``'s two workers share the real model's runs."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_vllm import _learners, train_argv

pytest.importorskip("vllm")
pytest.importorskip("gguf")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("collect_garbage")]


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
