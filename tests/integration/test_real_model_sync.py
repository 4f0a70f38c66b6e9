"""The colocated vLLM engine stays on the policy of the real pretrained model (SmolLM2-135M-Instruct, converted from
its wheel): after one GRPO step of the full 30-layer model, and with a LoRA adapter (merged before each sync) on a
2-layer copy; and colocated runs on one machine get ports of their own."""

from __future__ import annotations

import pytest

from tests.integration.test_vllm import SYNC_MAX_TOLERANCE, SYNC_MEAN_TOLERANCE, sampling_metric

pytest.importorskip("vllm")
pytest.importorskip("gguf")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("collect_garbage")]


def policy_logprobs(model, ids) -> list[float]:
    """log p(ids[t] | ids[:t]) for t >= 1 under a ``transformers`` model."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, :-1].float()
    return logits.log_softmax(-1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1).tolist()


def engine_logprobs(llm, ids) -> list[float]:
    """The same log-probabilities from a ``vllm.LLM`` (``prompt_logprobs``, prefix cache emptied first: cached
    positions come back wrong)."""
    from vllm import SamplingParams

    llm.reset_prefix_cache()
    (out,) = llm.generate([{"prompt_token_ids": list(ids)}], SamplingParams(max_tokens=1, prompt_logprobs=0),
                          use_tqdm=False)  # fmt: skip
    assert out.num_cached_tokens == 0
    return [out.prompt_logprobs[t][ids[t]].logprob for t in range(1, len(ids))]


def probe_ids(tokenizer) -> list[int]:
    """A Countdown exchange in the model's chat template: the tokens whose log-probabilities are compared."""
    chat = [{"role": "user", "content": "Numbers: 3, 7, 11\nTarget: 21"},
            {"role": "assistant", "content": "<reasoning>\nTry 3 * 7 = 21. Reached 21.\n</reasoning>\n"
                                             "<solution>3 * 7</solution>"}]  # fmt: skip
    return tokenizer.apply_chat_template(chat, return_dict=False)


def gaps(a, b) -> tuple[float, float]:
    differences = [abs(x - y) for x, y in zip(a, b, strict=True)]
    return sum(differences) / len(differences), max(differences)


def alternating_reward(prompts, completions, **kwargs):
    """1, 0, 1, 0, ... down the batch: every group (contiguous, even size) has rewards that differ, whatever the
    model writes, so every step has non-zero advantages and moves the policy."""
    return [float(i % 2 == 0) for i in range(len(completions))]


@pytest.fixture
def colocated_trainer():
    """Builds GRPO trainers with colocated vLLM (:func:`build_colocated_trainer`) and frees their engines after the
    test: a dropped trainer's engine is not collected (learners/core/vllm_release.py), and the two tests' engines (the
    30-layer model's included) stayed resident for the rest of the process: 2 GiB more under the next module's
    peak."""
    trainers = []

    def build(model_dir, out, **kwargs):
        trainers.append(build_colocated_trainer(model_dir, out, **kwargs))
        return trainers[-1]

    yield build
    for trainer in trainers:
        trainer.release_generation_engine()


def build_colocated_trainer(model_dir, out, *, peft_config=None, **overrides):
    """A GRPO trainer on ``model_dir`` with colocated vLLM and :func:`alternating_reward`."""
    from countdown_env import Puzzle
    from countdown_env.task import CountdownTask
    from learners.core.registry import get_learner
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from tests.conftest import TOY_PUZZLES

    spec = get_learner("grpo")
    settings = dict(use_vllm=True, vllm_mode="colocate", vllm_importance_sampling_correction=True, temperature=1.0)
    args = spec.make_config(**tiny_cpu_kwargs(out, **{**settings, **overrides}))
    _, trainer_class = spec.load()
    task = CountdownTask(template="compact")
    return trainer_class(
        model=str(model_dir),
        reward_funcs=alternating_reward,
        args=args,
        train_dataset=prompt_dataset([Puzzle(n, t) for n, t in TOY_PUZZLES], task),
        processing_class=load_tokenizer(model_dir),
        peft_config=peft_config,
    )


def initial_logprobs(trainer) -> tuple[list[int], list[float]]:
    """The probe and the policy's log-probabilities of it before training (the model as loaded: no second copy)."""
    ids = probe_ids(trainer.processing_class)
    return ids, policy_logprobs(trainer.model.eval(), ids)


def assert_synced_and_moved(trainer, ids, initial) -> None:
    """After the project's sync the engine scores the probe like the trained policy (within the sync tolerances),
    and the policy scores it unlike the initial model (by more than the mean tolerance, so that an engine left on the
    initial weights would have failed the first check). The optimizer's state and the gradients are dropped first:
    the check needs neither, and the 30-layer model's AdamW state is 1 GB of the test's peak memory."""
    import gc

    trainer.optimizer = trainer.lr_scheduler = None
    trainer.accelerator._optimizers.clear()
    trainer.model.zero_grad(set_to_none=True)
    gc.collect()
    trainer.vllm_generation.sync_weights()
    policy = policy_logprobs(trainer.model.eval(), ids)
    mean, worst = gaps(engine_logprobs(trainer.vllm_generation.llm, ids), policy)
    assert mean < SYNC_MEAN_TOLERANCE and worst < SYNC_MAX_TOLERANCE, (mean, worst)
    moved, _ = gaps(initial, policy)
    assert moved > SYNC_MEAN_TOLERANCE, moved


def test_one_step_of_the_30_layer_model_keeps_the_colocated_engine_on_the_policy(
    smollm2_dir, colocated_trainer, tmp_path
):
    """One GRPO step of the real model generated by colocated vLLM; then the project's sync (vLLM's layer-wise
    reload, learners/core/vllm_sync.py) must make the engine score like the updated policy, and the step must have
    moved the policy further than the tolerance (so an engine left on the initial weights would fail)."""
    import torch

    # Adafactor: an update of AdamW's size (normalised per parameter) without AdamW's 1 GB of moments, which lifted
    # this process past 6 GB resident; the optimiser plays no part in what is checked
    trainer = colocated_trainer(smollm2_dir, tmp_path / "run", max_steps=1, learning_rate=1e-4, optim="adafactor",
                                per_device_train_batch_size=4, num_generations=2, max_completion_length=8)  # fmt: skip
    ids, initial = initial_logprobs(trainer)
    trainer.train()
    assert trainer.vllm_generation.llm.llm_engine.model_config.dtype == torch.float32  # the policy's, not bfloat16
    assert len(sampling_metric(trainer.state.log_history, "mean")) == 1  # the step's batch came from vLLM
    assert_synced_and_moved(trainer, ids, initial)


def test_lora_with_the_colocated_engine_syncs_the_merged_adapter(smollm2_truncated_dir, colocated_trainer, tmp_path):
    """A LoRA adapter trained with colocated vLLM: TRL merges it into the base weights for each sync; the engine must
    score like the adapted policy (not like the base model) after two steps."""
    from learners.pipeline.runs.lora import lora_config

    trainer = colocated_trainer(smollm2_truncated_dir, tmp_path / "run", peft_config=lora_config(4),
                                learning_rate=1e-2)  # fmt: skip
    ids, initial = initial_logprobs(trainer)
    trainer.train()
    history = trainer.state.log_history
    assert len(sampling_metric(history, "mean")) == 2 and max(sampling_metric(history, "max")) < SYNC_MAX_TOLERANCE
    assert all("lora_" in n for n, p in trainer.model.named_parameters() if p.requires_grad)
    assert_synced_and_moved(trainer, ids, initial)  # the adapter (merged) moved the policy, and vLLM with it


def test_a_bf16_lora_run_keeps_a_float32_engine_and_its_frozen_base(smollm2_truncated_dir, colocated_trainer, tmp_path):
    """A bf16 LoRA run: the trainer computes in bfloat16 on a bfloat16 base, its colocated engine holds float32 (a
    bfloat16 engine rounded the adapter's updates away and the SmolLM2 demo collapsed), and two steps with their syncs
    leave the frozen base bit for bit as loaded (TRL's in-place merge and unmerge moved it at every sync)."""
    import torch

    from learners.pipeline.runs.lora import lora_config

    trainer = colocated_trainer(smollm2_truncated_dir, tmp_path / "run", peft_config=lora_config(4), learning_rate=1e-2,
                                bf16=True, model_init_kwargs={"dtype": "bfloat16"})  # fmt: skip
    frozen = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if not p.requires_grad}
    assert frozen and {p.dtype for p in frozen.values()} == {torch.bfloat16}
    trainer.train()
    assert trainer.vllm_generation.llm.llm_engine.model_config.dtype == torch.float32
    assert len(sampling_metric(trainer.state.log_history, "mean")) == 2  # both steps sampled from the synced engine
    assert all(torch.equal(p, frozen[n]) for n, p in trainer.model.named_parameters() if not p.requires_grad)


def test_cpu_engine_defaults_give_a_port_of_its_own_and_time(monkeypatch):
    """TRL's colocate mode takes the first free port of a fixed list, so two colocated runs started on one machine
    meanwhile could both take 29500 (EADDRINUSE): the CPU defaults give each process a free ephemeral port, and keep
    one already set (torchrun's); and they give a model step an hour, not vLLM's 300 s."""
    import os
    import socket

    from learners.core.vllm_sync import cpu_engine_defaults

    monkeypatch.delenv("MASTER_PORT", raising=False)
    monkeypatch.delenv("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", raising=False)
    cpu_engine_defaults()
    assert int(os.environ["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"]) >= 3600  # a starved CPU step outlasted vLLM's 300 s
    port = int(os.environ["MASTER_PORT"])
    assert port not in (29500, 23456, 12355, 12345)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # still free
    monkeypatch.setenv("MASTER_PORT", "29511")
    cpu_engine_defaults()
    assert os.environ["MASTER_PORT"] == "29511"
