"""The real pretrained model (SmolLM2-135M-Instruct, converted from its wheel) with vLLM's CPU build: every learner
trains its architecture through ``countdown train`` with colocated vLLM (on a 2-layer copy, sharing one engine).
The same with async rollouts: ``tests/integration/test_real_model_async.py``. The weight sync on the full model and
with LoRA: ``tests/integration/test_real_model_sync.py``. Three modules, so that ``make test``'s two workers share the
real model's runs and these engines are shut down before the sync module loads its 30-layer model."""

from __future__ import annotations

import pytest

from tests.integration.test_vllm import _learners, train_two_colocated_steps

pytest.importorskip("vllm")
pytest.importorskip("gguf")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("collect_garbage")]


# test_vllm's learners: every registered one but the presets whose only change is TRL's loss (they train with HF
# generation in tests/learners/test_trl_presets.py)
@pytest.mark.parametrize("learner", _learners())
def test_every_learner_trains_smollm2_layers_with_colocated_vllm(
    learner, smollm2_truncated_dir, shared_colocated_engines, tmp_path
):
    out = tmp_path / "run"
    train_two_colocated_steps(learner, smollm2_truncated_dir, out)
    assert len(shared_colocated_engines) == 1
    assert (out / "final" / "model.safetensors").is_file()
