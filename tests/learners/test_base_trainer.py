"""The base trainer: seams are called, weights move, group statistics and loss masks behave."""

from __future__ import annotations

import pytest
import torch

from learners.core.config import CountdownConfig


def _length_reward(prompts, completions, **kwargs):
    """Test-only reward: varies within groups so that advantages are non-zero."""
    return [float(len(c[0]["content"]) % 3) for c in completions]


def _constant_reward(prompts, completions, **kwargs):
    return [1.0 for _ in completions]


@pytest.mark.slow
def test_two_grpo_steps_change_the_weights(make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.core.trainer import CountdownGRPOTrainer

    trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=_length_reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert len(changed) == len(before)
    logs = trainer.state.log_history
    assert any("countdown/homogeneous_group_frac" in entry for entry in logs)
    assert all(torch.isfinite(torch.tensor(e["loss"])) for e in logs if "loss" in e)


@pytest.mark.slow
def test_seams_see_rollout_and_micro_batches(make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.core.trainer import CountdownGRPOTrainer

    seen = {"shape": [], "select": 0}

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            seen["shape"].append(rollout)
            # drop every second row from the loss
            mask = self.loss_mask(batch).clone()
            mask[1::2] = 0
            self.set_loss_mask(batch, mask)
            return batch

        def select_loss_tokens(self, inputs):
            seen["select"] += 1
            assert "tool_mask" in inputs
            return inputs

    trainer = make_trainer(Probe, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=_length_reward)
    trainer.train()
    assert len(seen["shape"]) == 2 and seen["select"] == 2
    rollout = seen["shape"][0]
    assert rollout.rewards.shape == (8,) and rollout.num_generations == 4 and rollout.num_groups == 2
    # rows of one group share a prompt
    numbers = [tuple(row["numbers"]) for row in rollout.inputs]
    assert numbers[:4] == [numbers[0]] * 4 and numbers[4:] == [numbers[4]] * 4
    assert rollout.puzzles is not None and rollout.puzzles[0].numbers == numbers[0]
    # rewards are the test reward's values
    assert set(rollout.rewards.tolist()) <= {0.0, 1.0, 2.0}


@pytest.mark.slow
def test_recount_items_follows_the_loss_mask(make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs):
    from learners.core.trainer import CountdownGRPOTrainer

    counts = []

    class Drop(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            full = int(self.loss_mask(batch).sum())
            self.set_loss_mask(batch, torch.zeros_like(batch["completion_mask"]))
            counts.append(full)
            return batch

    cpu_grpo_kwargs.update(loss_type="dapo", max_steps=1)
    trainer = make_trainer(Drop, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=_length_reward)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert counts[0] > 0
    # no loss tokens: zero gradient, finite loss; weight decay is 0 by default, so nothing moves
    logs = [e for e in trainer.state.log_history if "loss" in e]
    assert logs and logs[0]["loss"] == 0.0
    assert all(torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())


@pytest.mark.slow
def test_all_equal_rewards_give_zero_advantage_and_finite_loss(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs
):
    from learners.core.trainer import CountdownGRPOTrainer

    advantages = []

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            advantages.append(batch["advantages"].clone())
            assert bool(rollout.homogeneous_groups().all())
            return batch

    trainer = make_trainer(Probe, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=_constant_reward)
    trainer.train()
    assert all(torch.count_nonzero(a) == 0 for a in advantages)
    logs = [e for e in trainer.state.log_history if "loss" in e]
    assert logs and all(torch.isfinite(torch.tensor(e["loss"])) for e in logs)
    assert any(e.get("countdown/homogeneous_group_frac") == 1.0 for e in trainer.state.log_history)


@pytest.mark.slow
def test_env_reward_scores_with_the_env_and_logs_countdown_metrics(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs
):
    from countdown_env.trajectory import score_trajectories
    from learners.core.trainer import CountdownGRPOTrainer

    rollouts = []

    class Probe(CountdownGRPOTrainer):
        def shape_batch(self, batch, rollout):
            rollouts.append((rollout, batch["completion_ids"].clone()))
            return batch

    trainer = make_trainer(Probe, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=None)
    assert trainer.reward_func_names == ["countdown_env_reward"]
    trainer.train()
    rollout, completion_ids = rollouts[0]
    assert rollout.trajectories is not None and len(rollout.trajectories) == 8
    again = score_trajectories(
        rollout.puzzles,
        completion_ids.tolist(),
        trainer.processing_class,
        max_new_tokens=trainer.max_completion_length,
        stop_ids=list(trainer.eos_token_ids),
    )
    assert [t.reward for t in again] == rollout.rewards.tolist()
    assert [t.truncated for t in again] == [t.truncated for t in rollout.trajectories]
    keys = set().union(*trainer.state.log_history)
    for name in ("accuracy", "format_rate", "mean_completion_length", "truncation_rate", "homogeneous_group_frac"):
        assert f"countdown/{name}" in keys


@pytest.mark.slow
def test_env_reward_on_correct_truncated_and_empty_completions(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs
):
    from learners.core.trainer import CountdownGRPOTrainer

    cpu_grpo_kwargs["max_completion_length"] = 64
    trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=None)
    tok = trainer.processing_class
    eos = tok.eos_token_id
    good = tok.encode("<reasoning>\n3 + 7 + 11 = 21\n</reasoning>\n<solution>3 + 7 + 11</solution>") + [eos]
    wrong = tok.encode("<reasoning>\nx\n</reasoning>\n<solution>3 + 7</solution>") + [eos]
    truncated = tok.encode("<reasoning>\n" + "3 + 7 + 11 = 21\n" * 10)[: trainer.max_completion_length]
    assert len(truncated) == trainer.max_completion_length
    empty = [eos]
    rewards = trainer.countdown_env_reward(
        prompts=[None] * 4,
        completions=[None] * 4,
        completion_ids=[good, wrong, truncated, empty],
        numbers=[[3, 7, 11]] * 4,
        target=[21] * 4,
    )
    assert rewards == [1.0, 0.0, 0.0, 0.0]
    flags = [t.truncated for t in trainer._rollout_trajectories]
    assert flags == [False, False, True, False]
    with pytest.raises(ValueError, match="numbers"):
        trainer.countdown_env_reward(prompts=[None], completions=[None], completion_ids=[empty])


def _rollout(rewards, g, start=0, local=None):
    from learners.core.trainer import Rollout

    rewards = torch.tensor(rewards, dtype=torch.float32)
    local = local if local is not None else len(rewards)
    return Rollout(
        rewards=rewards,
        rewards_per_func=rewards.unsqueeze(1),
        num_generations=g,
        process_slice=slice(start, start + local),
        inputs=[{} for _ in range(local)],
    )


def test_rollout_group_helpers():
    nan = float("nan")
    r = _rollout([1, 1, 1, 0, 2, 0, nan, nan, 3, 3, nan, 3], g=3, start=3, local=6)
    assert r.num_groups == 4
    assert r.homogeneous_groups().tolist() == [True, False, True, True]  # NaN rewards are ignored
    assert r.group_index.tolist() == [1, 1, 1, 2, 2, 2]
    assert r.local_rewards[:3].tolist() == [0.0, 2.0, 0.0]
    grouped = r.grouped(torch.arange(12).reshape(12, 1).expand(12, 5))
    assert grouped.shape == (4, 3, 5)
    wide = torch.arange(24).reshape(12, 2)
    assert r.local(wide, width=1).tolist() == [[6], [8], [10], [12], [14], [16]]
    assert r.local(list(range(12))) == [3, 4, 5, 6, 7, 8]
    all_nan = _rollout([nan, nan, 1, 0], g=2)
    assert all_nan.homogeneous_groups().tolist() == [True, False]


def test_puzzles_from_inputs():
    from learners.core.trainer import puzzles_from_inputs

    puzzles = puzzles_from_inputs([{"numbers": [3, 7, 11], "target": 21, "prompt": []}])
    assert puzzles[0].numbers == (3, 7, 11) and puzzles[0].target == 21
    assert puzzles_from_inputs([{"prompt": []}]) is None and puzzles_from_inputs([]) is None


def test_set_loss_mask_checks_shapes():
    from learners.core.trainer import CountdownGRPOTrainer

    batch = {"completion_mask": torch.ones(2, 3, dtype=torch.long)}
    with pytest.raises(ValueError, match="shape"):
        CountdownGRPOTrainer.set_loss_mask(batch, torch.ones(2, 4))
    CountdownGRPOTrainer.set_loss_mask(batch, torch.tensor([[1, 0, 1], [0, 0, 1]], dtype=torch.bool))
    assert CountdownGRPOTrainer.loss_mask(batch).tolist() == [[1, 0, 1], [0, 0, 1]]
    assert batch["completion_mask"].sum() == 6  # the attention mask is untouched


@pytest.mark.slow
@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "bnpo"])
def test_seam_2_truncation_and_penalty_keep_the_loss_and_gradient(
    make_trainer, tiny_model_dir, toy_prompt_dataset, cpu_grpo_kwargs, synthetic_loss_batch, loss_type, monkeypatch
):
    """Truncating to the loss tokens changes neither loss nor gradient, only the widths TRL's loss runs on; the
    penalty is added once per optimiser step (divided by the accumulation steps)."""
    from trl import GRPOTrainer

    from learners.core.trainer import CountdownGRPOTrainer

    widths = []
    trl_loss = GRPOTrainer._compute_loss

    def recording_loss(self, model, inputs):
        widths.append(inputs["completion_ids"].size(1))
        return trl_loss(self, model, inputs)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", recording_loss)

    class Seam2(CountdownGRPOTrainer):
        truncate, penalty_scale = False, 0.0

        def truncate_to_loss_tokens(self):
            return self.truncate

        def loss_penalty(self, model):
            if not self.penalty_scale:
                return None
            return self.penalty_scale * sum((p**2).sum() for p in model.parameters())

    cpu_grpo_kwargs.update(loss_type=loss_type)
    trainer = make_trainer(Seam2, CountdownConfig(**cpu_grpo_kwargs), reward_funcs=_length_reward)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 2
    params = list(trainer.model.parameters())
    inputs = synthetic_loss_batch(seed=1)
    inputs["tool_mask"][:, 10:] = 0  # no loss token after column 10: the tail can be cut

    def loss_and_grad(truncate, penalty_scale):
        trainer.truncate, trainer.penalty_scale = truncate, penalty_scale
        widths.clear()
        trainer.model.zero_grad()
        loss = trainer._compute_loss(trainer.model, dict(inputs))
        loss.backward()
        return loss.detach(), torch.cat([p.grad.flatten() for p in params]), list(widths)

    full_loss, full_grad, full_widths = loss_and_grad(False, 0.0)
    assert full_widths == [20] and full_grad.abs().max() > 0
    cut_loss, cut_grad, cut_widths = loss_and_grad(True, 0.0)
    assert 1 < len(cut_widths) <= 4 and max(cut_widths) <= 10  # DEFAULT_MAX_BUCKETS: GRPOConfig has no max_buckets
    torch.testing.assert_close(cut_loss, full_loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(cut_grad, full_grad, rtol=1e-4, atol=1e-7)
    assert 0 < trainer._metrics["train"]["loss/forward_token_frac"][-1] <= 0.5

    scale = 1e-3
    loss, grad, _ = loss_and_grad(True, scale)
    flat = torch.cat([p.detach().flatten() for p in params])
    torch.testing.assert_close(loss, full_loss + scale * (flat**2).sum() / 2, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, full_grad + scale * 2 * flat / 2, rtol=1e-4, atol=1e-6)


def test_check_args_builds_the_default_and_rejects_other_configs(tmp_path):
    from dataclasses import dataclass

    from trl import GRPOConfig

    from learners.core.trainer import CountdownGRPOTrainer
    from learners.s_grpo import SGRPOConfig

    @dataclass
    class CPUConfig(SGRPOConfig):  # the default config must build on this CPU-only machine
        use_cpu: bool = True
        bf16: bool = False
        report_to: str = "none"

    cpu = dict(use_cpu=True, bf16=False, report_to="none")
    default = CountdownGRPOTrainer._check_args(None, CPUConfig, str(tmp_path / "default"))
    assert type(default) is CPUConfig and default.output_dir == str(tmp_path / "default")
    given = SGRPOConfig(str(tmp_path), **cpu)
    assert CountdownGRPOTrainer._check_args(given, SGRPOConfig, "unused") is given
    with pytest.raises(TypeError, match="CountdownGRPOTrainer needs args of type SGRPOConfig, got GRPOConfig"):
        CountdownGRPOTrainer._check_args(GRPOConfig(str(tmp_path), **cpu), SGRPOConfig, "unused")


def test_log_ratio_metrics_divides_summed_parts(make_trainer, cpu_grpo_kwargs):
    from learners.core.trainer import CountdownGRPOTrainer

    trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs))
    trainer.log_ratio_metrics({"x/a": (torch.tensor(1.0), torch.tensor(4)), "x/b": (3, 0)}, "train")
    assert trainer._metrics["train"]["x/a"] == [0.25] and trainer._metrics["train"]["x/b"] == [3.0]


def test_accuracy_is_the_verifier_verdict_not_a_reward_threshold(tmp_path):
    """A reward that pays 0.9 for a correct answer (a shaped reward, like DAPO's overlong penalty on top of a 0/1
    reward) must not hide the correct answers: ``countdown/accuracy`` is the share the verifier accepts, counted
    here independently inside the reward function from the decoded texts."""
    from transformers import AutoModelForCausalLM

    from countdown_env import Puzzle, verify_completion
    from countdown_env.task import CountdownTask
    from learners.grpo import GRPOPresetTrainer, grpo_config
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.warm_start import SHIPPED_DIR

    task = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), template="compact", seed=0)
    verdicts: list[bool] = []

    def shaped(prompts, completions, numbers, target, **kwargs):
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        ok = [verify_completion(t, Puzzle(n, g)).correct for t, n, g in zip(texts, numbers, target, strict=True)]
        verdicts.extend(ok)
        return [0.9 * float(x) for x in ok]

    args = grpo_config("dapo", **tiny_cpu_kwargs(tmp_path, max_completion_length=96, max_steps=2, temperature=0.8))
    trainer = GRPOPresetTrainer(
        model=AutoModelForCausalLM.from_pretrained(SHIPPED_DIR),
        reward_funcs=[shaped],
        args=args,
        train_dataset=prompt_dataset([task.puzzle(i) for i in range(16)], task),
        processing_class=load_tokenizer(SHIPPED_DIR),
        task=task,
    )
    trainer.train()
    logged = [h["countdown/accuracy"] for h in trainer.state.log_history if "countdown/accuracy" in h]
    per_step = [sum(verdicts[i * 8 : (i + 1) * 8]) / 8 for i in range(2)]
    assert logged == pytest.approx(per_step) and sum(verdicts) > 0


def test_the_model_card_names_no_none_base_model(make_trainer, cpu_grpo_kwargs):
    """TRL's card says "fine-tuned version of [None](https://huggingface.co/None)" for a local model folder."""
    from pathlib import Path

    from learners.grpo import GRPOPresetTrainer, grpo_config

    trainer = make_trainer(GRPOPresetTrainer, grpo_config("grpo", **cpu_grpo_kwargs))
    trainer.create_model_card(model_name="run")
    card = (Path(trainer.args.output_dir) / "README.md").read_text()
    assert "[None]" not in card and "huggingface.co/None" not in card and "local checkpoint" in card


@pytest.mark.slow
def test_resuming_a_tied_model_reports_only_real_missing_keys(make_trainer, cpu_grpo_kwargs, monkeypatch):
    """Issue 36 item 11: the tiny model ties its LM head to the embedding; a checkpoint stores the tensor once, so a
    resume used to warn ``missing keys ... ['lm_head.weight']``. Resuming warns no more, while a key that is really
    absent from the checkpoint (a non-tied weight) is still reported."""
    from types import SimpleNamespace

    import transformers.trainer as hf_trainer

    from learners.core.trainer import CountdownGRPOTrainer

    warnings: list[str] = []
    monkeypatch.setattr(hf_trainer.logger, "warning", lambda message, *a, **k: warnings.append(str(message)))
    cpu_grpo_kwargs.update(save_strategy="steps", save_steps=1, max_steps=1)
    first = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs))
    model = first.model
    assert model.lm_head.weight is model.get_input_embeddings().weight  # tied: one tensor, two names
    first.train()
    checkpoint = f"{cpu_grpo_kwargs['output_dir']}/checkpoint-1"
    cpu_grpo_kwargs.update(max_steps=2)
    second = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs))
    warnings.clear()
    second.train(resume_from_checkpoint=checkpoint)
    assert second.state.global_step == 2
    assert not [w for w in warnings if "missing keys" in w], warnings

    real = "model.layers.0.mlp.up_proj.weight"
    second._issue_warnings_after_load(SimpleNamespace(missing_keys=["lm_head.weight", real], unexpected_keys=[]))
    assert warnings[-1] == f"There were missing keys in the checkpoint model loaded: ['{real}']."


def test_the_lm_head_scores_only_the_completion_tokens_on_a_cpu_with_trls_values(
    make_trainer, cpu_grpo_kwargs, monkeypatch
):
    """TRL's fused LM head runs its full-vocabulary projection on every position of every row off Triton devices;
    the base trainer's log-probabilities run it on the completion tokens only (prompt and padding cost nothing), with
    TRL's values: log-probabilities and gradients as TRL's own call computes them."""
    import trl.trainer.utils as trl_utils
    from trl import GRPOTrainer

    from learners.core.trainer import CountdownGRPOTrainer

    trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**cpu_grpo_kwargs))
    model = trainer.model
    scored_rows = []
    chunked = trl_utils._ChunkedLogProbFunction.apply
    monkeypatch.setattr(trl_utils._ChunkedLogProbFunction, "apply",
                        lambda hidden, *a: scored_rows.append(hidden.shape[0]) or chunked(hidden, *a))  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    prompt, completion = 5, 9
    input_ids = torch.randint(10, 60, (4, prompt + completion), generator=generator)
    mask = torch.ones_like(input_ids)
    for row, length in enumerate((9, 3, 6, 1)):  # right-padded completions
        mask[row, prompt + length :] = 0
    completion_mask = mask[:, prompt:].bool()

    def logps_and_grads(method):
        model.zero_grad(set_to_none=True)
        logps, _, _ = method(trainer, model, input_ids, mask, completion)
        (logps * completion_mask).sum().backward()
        return logps.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    ours = logps_and_grads(CountdownGRPOTrainer._get_per_token_logps_and_entropies)
    trls = logps_and_grads(GRPOTrainer._get_per_token_logps_and_entropies)
    # ours: the completion tokens; TRL's: every position that has a next token
    assert scored_rows == [int(completion_mask.sum()), 4 * (prompt + completion - 1)]
    torch.testing.assert_close(ours[0][completion_mask], trls[0][completion_mask], rtol=1e-6, atol=1e-6)
    assert len(ours[1]) == len(trls[1]) > 0
    for a, b in zip(ours[1], trls[1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    assert trl_utils._use_triton(torch.device("cpu")) is False  # TRL's own choice is back after the call
