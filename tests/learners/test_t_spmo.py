"""T-SPMO on the tiny model: trie advantages in the batch, the objective's gradient, replay, LoRA, large groups."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from learners.t_spmo.prefix_trie import prefix_advantages
from learners.t_spmo.replay import ReplayBuffer


def _mod3_reward(prompts, completions, **kwargs):
    """Test-only reward in {0, 1} that varies within groups."""
    return [float(len(c[0]["content"]) % 3 == 0) for c in completions]


class _RecordingReward:
    """A reward function that remembers what it scored (TRL calls it once per batch, replay once more)."""

    __name__ = "recording_reward"

    def __init__(self):
        self.calls = []

    def __call__(self, prompts, completions, completion_ids, **kwargs):
        self.calls.append([list(ids) for ids in completion_ids])
        return _mod3_reward(prompts, completions)


def _probe_class():
    from learners.t_spmo import TSPMOTrainer

    class Probe(TSPMOTrainer):
        """Keeps each generation batch (after seam 1) and its rollout."""

        def shape_batch(self, batch, rollout):
            batch = super().shape_batch(batch, rollout)
            self.seen = getattr(self, "seen", [])
            snapshot = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
            self.seen.append((snapshot, rollout, list(self.last_replay_plans)))
            return batch

    return Probe


def _tspmo(make_trainer, kwargs, reward=_mod3_reward, cls=None, **extra):
    from learners.t_spmo import TSPMOConfig

    return make_trainer(cls or _probe_class(), TSPMOConfig(**kwargs), reward_funcs=reward, **extra)


def _rows(batch, key_ids, key_mask, row):
    return batch[key_ids][row][batch[key_mask][row].bool()].tolist()


# --------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tspmo_objective": "pi"}, "tspmo_objective"),
        ({"loss_type": "grpo"}, "token-level normaliser"),
        ({"l2_coef": -1.0}, "l2_coef"),
        ({"l2_anchor": "base"}, "l2_anchor"),
        ({"replay_success": -1}, "replay_success"),
        ({"replay_min_prefix": 0}, "replay_min_prefix"),
        ({"importance_sampling_level": "sequence"}, "importance_sampling_level"),
    ],
)
def test_config_rejects_bad_values(kwargs, message, cpu_grpo_kwargs):
    from learners.t_spmo import TSPMOConfig

    with pytest.raises(ValueError, match=message):
        TSPMOConfig(**cpu_grpo_kwargs, **kwargs)


def test_registered(cpu_grpo_kwargs):
    from learners.core.registry import get_learner
    from learners.t_spmo import TSPMOConfig, TSPMOTrainer

    spec = get_learner("t_spmo")
    assert spec.load() == (TSPMOConfig, TSPMOTrainer)
    assert spec.make_config(**cpu_grpo_kwargs).loss_type == "dapo"


# --------------------------------------------------------------------------------------------- replay buffer


def test_replay_buffer_keeps_recent_distinct_completions_per_kind():
    buffer = ReplayBuffer(capacity=2, keep_failures=True)
    buffer.add("p", [1, 2, 3], True)
    buffer.add("p", [1, 2, 3], True)  # duplicate: stored once
    buffer.add("p", [4, 5], True)
    buffer.add("p", [6, 7], True)  # evicts [1, 2, 3]
    buffer.add("p", [8, 9], False)
    buffer.add("p", [9, 9], None)  # unscorable: ignored
    assert buffer.completions("p", True) == [(4, 5), (6, 7)]
    assert buffer.completions("p", False) == [(8, 9)]
    assert buffer.completions("q", True) == []
    without_failures = ReplayBuffer(keep_failures=False)
    without_failures.add("p", [1, 2], False)
    assert without_failures.completions("p", False) == []


def test_replay_plans_cut_proper_prefixes_within_budget():
    import numpy as np

    buffer = ReplayBuffer(capacity=4, keep_failures=True, min_prefix=2)
    buffer.add("a", [1, 2, 3, 4, 5], True)
    buffer.add("a", [1, 2], True)  # too short for min_prefix=2: never replayed
    buffer.add("a", [7, 8, 9], False)
    buffer.add("b", [5, 5, 5, 5], False)
    plans = buffer.plan(["a", "b", "c"], 3, 1, np.random.default_rng(0))
    assert [p.group for p in plans] == [0, 0, 0, 0, 1]
    assert [p.success for p in plans] == [True, True, True, False, False]
    for plan in plans:
        assert 2 <= len(plan.prefix) < len(plan.source)
        assert plan.source[: len(plan.prefix)] == plan.prefix
    assert all(p.source == (1, 2, 3, 4, 5) for p in plans[:3])
    cuts = {len(p.prefix) for p in buffer.plan(["a"] * 50, 1, 0, np.random.default_rng(1))}
    assert cuts == {2, 3, 4}  # uniform over [min_prefix, len - 1]
    with pytest.raises(ValueError, match=">= 0"):
        buffer.plan(["a"], -1, 0, np.random.default_rng(0))


# --------------------------------------------------------------------------------------------- trainer


@pytest.mark.slow
def test_two_steps_use_trie_advantages_and_move_the_weights(make_trainer, cpu_grpo_kwargs):
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    for batch, rollout, _ in trainer.seen:
        expected = prefix_advantages(
            batch["completion_ids"], rollout.rewards, batch["completion_mask"], group_size=rollout.num_generations
        )
        torch.testing.assert_close(batch["advantages"], expected.advantages * expected.loss_mask)
        assert torch.equal(batch["tool_mask"], expected.loss_mask.to(batch["tool_mask"].dtype))
    logged = [e for e in trainer.state.log_history if "tspmo/num_transitions" in e]
    assert len(logged) == 2
    assert all(0 < e["tspmo/loss_token_share"] <= 1 and 0 <= e["tspmo/singleton_share"] <= 1 for e in logged)
    assert all(math.isfinite(e["loss"]) for e in trainer.state.log_history if "loss" in e)


def _one_batch(trainer, dataset, groups=2, size=4):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    inputs = [dict(dataset[i]) for i in range(groups) for _ in range(size)]
    return trainer._generate_and_score_completions(inputs)


def _grad(model, loss):
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.cat([g.flatten() for g in torch.autograd.grad(loss, params)])


@pytest.mark.slow
@pytest.mark.parametrize("objective", ["log_prob", "prob"])
def test_loss_gradient_is_the_stated_objective(objective, make_trainer, toy_prompt_dataset, cpu_grpo_kwargs):
    cpu_grpo_kwargs.update(tspmo_objective=objective, max_completion_length=12)
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs)
    batch = _one_batch(trainer, toy_prompt_dataset)
    trie = trainer.last_trie
    model = trainer.model
    input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].size(1)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(model, input_ids, attention, width, batch_size=8)
    unique = trie.loss_mask.float()
    assert unique.sum() > 0 and torch.count_nonzero(trie.advantages * unique) > 0
    term = logps if objective == "log_prob" else torch.exp(logps)
    # J = (1/|U|) Σ_U A(v|p) · log π(v|p)   (or · π(v|p) for the printed Eq. 10)
    manual = -(trie.advantages * term * unique).sum() / unique.sum()
    expected = _grad(model, manual)
    got = _grad(model, trainer._compute_loss(model, batch))
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-7)
    assert trainer._metrics["train"]["loss/forward_token_frac"]  # through the base's shared truncation


@pytest.mark.slow
def test_replayed_rows_share_the_chosen_prefix(make_trainer, cpu_grpo_kwargs):
    reward = _RecordingReward()
    cpu_grpo_kwargs.update(replay_success=1, replay_failure=2, max_steps=1, success_threshold=1.0)
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs, reward=reward)
    trainer.train()
    batch, rollout, plans = trainer.seen[0]
    n, size = rollout.rewards.numel(), rollout.num_generations
    assert batch["completion_ids"].size(0) == n + 2 * 3  # 2 groups × (C_success + C_failure) slots
    assert plans, "the mod-3 reward gives each toy group successes and failures"
    assert len(reward.calls) == 2 and reward.calls[1] == [
        _rows(batch, "completion_ids", "completion_mask", n + j) for j in range(len(plans))
    ]
    for j, plan in enumerate(plans):
        row = n + j
        completion = _rows(batch, "completion_ids", "completion_mask", row)
        assert tuple(completion[: len(plan.prefix)]) == plan.prefix
        assert plan.source[: len(plan.prefix)] == plan.prefix and len(plan.prefix) < len(plan.source)
        assert _rows(batch, "prompt_ids", "prompt_mask", row) == _rows(
            batch, "prompt_ids", "prompt_mask", plan.group * size
        )
        assert plan.source in trainer.replay_buffer.completions(
            tuple(_rows(batch, "prompt_ids", "prompt_mask", row)), plan.success
        )
        # tokens before the restart belong to the source's statistics, not to the replayed row's loss
        assert int(batch["tool_mask"][row, : len(plan.prefix) - 1].sum()) == 0
    for row in range(n + len(plans), batch["completion_ids"].size(0)):  # filler slots
        assert int(batch["tool_mask"][row].sum()) == 0
    # the batch's advantages are the trie over originals + replays (replays count from their restart depth)
    rows = n + len(plans)
    rewards = torch.cat(
        [
            rollout.rewards,
            torch.tensor(
                _mod3_reward(
                    None,
                    [
                        [{"content": t}]
                        for t in trainer.processing_class.batch_decode(reward.calls[1], skip_special_tokens=True)
                    ],
                )
            ),
        ]
    )
    groups = torch.cat([torch.arange(n) // size, torch.tensor([p.group for p in plans])])
    starts = torch.cat([torch.zeros(n, dtype=torch.long), torch.tensor([len(p.prefix) for p in plans])])
    expected = prefix_advantages(
        batch["completion_ids"][:rows],
        rewards,
        batch["completion_mask"][:rows],
        group_ids=groups,
        start_positions=starts,
    )
    torch.testing.assert_close(batch["advantages"][:rows], expected.advantages * expected.loss_mask)
    assert torch.equal(batch["tool_mask"][:rows], expected.loss_mask)


@pytest.mark.slow
def test_lora_with_l2_kl_and_replay(make_trainer, cpu_grpo_kwargs):
    from peft import LoraConfig

    cpu_grpo_kwargs.update(beta=0.05, l2_coef=0.1, l2_anchor="zero", replay_success=1, replay_failure=1)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs, peft_config=lora)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    after = dict(trainer.model.named_parameters())
    lora_names = [n for n in before if "lora_" in n]
    assert lora_names and all(after[n].requires_grad for n in lora_names)
    assert any(not torch.equal(before[n], after[n].detach()) for n in lora_names if "lora_B" in n)
    assert all(torch.equal(before[n], after[n].detach()) for n in before if "lora_" not in n)
    logs = [e for e in trainer.state.log_history if "loss" in e and "tspmo/l2_penalty" in e]
    assert logs and all(e["tspmo/l2_penalty"] > 0 for e in logs) and "kl" in logs[0]
    batch, _, plans = trainer.seen[-1]
    assert "ref_per_token_logps" in batch and batch["ref_per_token_logps"].shape == batch["completion_ids"].shape


@pytest.mark.slow
def test_large_group_over_micro_batches_with_replay_and_reuse(make_trainer, cpu_grpo_kwargs):
    # one group of 12 split into 3 micro-batches of 4; each batch is used twice (num_iterations=2, clipped ratio)
    cpu_grpo_kwargs.update(
        num_generations=12,
        per_device_train_batch_size=4,
        steps_per_generation=3,
        gradient_accumulation_steps=3,
        num_iterations=2,
        max_steps=2,
        replay_success=1,
        replay_failure=1,
    )
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs)
    trainer.train()
    assert trainer.state.global_step == 2
    batch, rollout, plans = trainer.seen[0]
    assert rollout.num_groups == 1 and rollout.rewards.numel() == 12
    assert batch["completion_ids"].size(0) == 15  # 12 + 2 replay slots, rounded up to 3 whole micro-batches
    assert batch["old_per_token_logps"].shape == batch["completion_ids"].shape
    assert "clip_ratio/region_mean" in trainer.state.log_history[0]


def test_seam_2_truncates_to_loss_tokens_and_adds_the_l2_penalty():
    from learners.t_spmo import TSPMOTrainer

    logged = {}
    params = [torch.nn.Parameter(torch.tensor([1.0, 2.0])), torch.nn.Parameter(torch.tensor([[3.0]]))]
    trainer = SimpleNamespace(
        args=SimpleNamespace(l2_coef=0.5),
        _l2_unique=1.0,
        _l2_params=params,
        _l2_anchor=[torch.tensor([1.0, 0.0]), torch.tensor([[1.0]])],
        log_metric=lambda name, value: logged.update({name: value}),
    )
    assert TSPMOTrainer.truncate_to_loss_tokens(trainer) is True
    penalty = TSPMOTrainer.loss_penalty(trainer, None)
    torch.testing.assert_close(penalty, torch.tensor(0.5 * (0 + 4 + 4)))  # λ‖θ − θ_0‖²
    assert logged == {"tspmo/l2_penalty": 8.0}
    (grad,) = torch.autograd.grad(penalty, [params[0]])
    torch.testing.assert_close(grad, torch.tensor([0.0, 2.0]))
    trainer._l2_anchor = None  # l2_anchor="zero": λ‖θ‖²
    torch.testing.assert_close(TSPMOTrainer.loss_penalty(trainer, None), torch.tensor(0.5 * 14))
    trainer._l2_unique = 4.0  # divided by |U|, like the policy-gradient term
    torch.testing.assert_close(TSPMOTrainer.loss_penalty(trainer, None), torch.tensor(0.5 * 14 / 4))
    trainer.args.l2_coef = 0.0
    assert TSPMOTrainer.loss_penalty(trainer, None) is None


@pytest.mark.parametrize("loss_type", ["dapo", "bnpo"])
def test_l2_to_policy_gradient_weight_ratio_is_lambda_for_any_number_of_transitions(
    loss_type, make_trainer, cpu_grpo_kwargs
):
    """Through the real seam-2 path (TRL's loss + the base's penalty): d loss / d log π(v|p) = -A/|U| for each unique
    transition, and the penalty's weight on ‖θ − θ_0‖² is λ/|U|, so their ratio is λ whatever |U| is."""
    from learners.t_spmo import TSPMOTrainer

    lam = 0.01
    kwargs = dict(cpu_grpo_kwargs, l2_coef=lam, loss_type=loss_type)
    trainer = _tspmo(make_trainer, kwargs, cls=TSPMOTrainer)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # one micro-batch per step (GA = steps_per_generation = 1)
    param = next(p for p in trainer.model.parameters() if p.requires_grad)
    ratios = []
    for unique in (3, 40):
        leaf = torch.full((1, unique), -1.0, requires_grad=True)
        trainer._get_per_token_logps_and_entropies = lambda model, ids, mask, keep, leaf=leaf, **kw: (
            leaf[:, :keep],
            torch.zeros_like(leaf[:, :keep]),
            None,
        )
        inputs = {
            "prompt_ids": torch.tensor([[5]]),
            "prompt_mask": torch.ones(1, 1, dtype=torch.long),
            "completion_ids": torch.full((1, unique), 7),
            "completion_mask": torch.ones(1, unique, dtype=torch.long),
            "advantages": torch.full((1, unique), 0.5),
            "num_items_in_batch": torch.tensor(unique),
        }
        with torch.no_grad():
            param.copy_(trainer._l2_anchor[0])  # θ = θ_0: no penalty
        base_loss = trainer._compute_loss(trainer.model, inputs)
        (grad,) = torch.autograd.grad(base_loss, leaf)
        torch.testing.assert_close(grad, torch.full((1, unique), -0.5 / unique))  # -A/|U|
        with torch.no_grad():
            param.view(-1)[0] += 1.0  # ‖θ − θ_0‖² = 1
        shifted = trainer._compute_loss(trainer.model, inputs)
        l2_weight = float(shifted - base_loss)  # the policy-gradient part does not depend on θ here
        assert l2_weight == pytest.approx(lam / unique, rel=1e-4)
        ratios.append(l2_weight / (0.5 / unique / 0.5))  # L2 weight / policy-gradient weight per unit advantage
    assert ratios[0] == pytest.approx(lam, rel=1e-4) and ratios[1] == pytest.approx(lam, rel=1e-4)


# --------------------------------------------------------------------------------------------- two processes

_WORKER = """
import os
import sys
import torch
from transformers import AutoModelForCausalLM
from countdown_env import Puzzle
from learners.pipeline.data import prompt_dataset
from learners.t_spmo import TSPMOConfig, TSPMOTrainer
from learners.pipeline.models.tokenizer_io import load_tokenizer

model_dir, out_dir, puzzles = sys.argv[1], sys.argv[2], eval(sys.argv[3])


def mod3_reward(prompts, completions, **kwargs):
    return [float(len(c[0]["content"]) % 3 == 0) for c in completions]


class Recorder(TSPMOTrainer):
    records = []

    def _score_replays(self, plans, completions, all_inputs, size):
        scores = super()._score_replays(plans, completions, all_inputs, size)
        self._scores = scores
        return scores

    def shape_batch(self, batch, rollout):
        self._scores = torch.zeros(0)
        batch = super().shape_batch(batch, rollout)
        keep = ("completion_ids", "completion_mask", "advantages", "tool_mask")
        self.records.append({
            **{k: batch[k].clone() for k in keep},
            "rewards": rollout.rewards.clone(),
            "slice": (rollout.process_slice.start, rollout.process_slice.stop),
            "plans": [(p.group, p.prefix) for p in self.last_replay_plans],
            "replay_scores": self._scores.clone(),
        })
        return batch


args = TSPMOConfig(
    output_dir=out_dir, use_cpu=True, bf16=False, gradient_checkpointing=False, use_vllm=False, report_to="none",
    per_device_train_batch_size=4, num_generations=8, max_completion_length=12, max_steps=2, learning_rate=1e-3,
    save_strategy="no", seed=0, disable_tqdm=True, replay_success=1, replay_failure=1,
)
trainer = Recorder(
    model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=mod3_reward, args=args,
    train_dataset=prompt_dataset([Puzzle(n, t) for n, t in puzzles], "compact"),
    processing_class=load_tokenizer(model_dir),
)
trainer.train()
torch.save(trainer.records, f"{out_dir}/rank{trainer.accelerator.process_index}.pt")
# end without interpreter teardown: it raced gloo's threads under load (tests/multiproc/probe_worker.exit_at_once)
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_build_one_trie_per_group(tiny_model_dir, tmp_path):
    """A group of 8 is split over two processes (4 rows each): the advantages must come from the whole group."""
    import os
    import subprocess
    import sys

    from conftest import TOY_PUZZLES

    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    port = str(_free_port())
    procs = []
    for rank in range(2):
        env = dict(
            os.environ,
            WORLD_SIZE="2",
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
            OMP_NUM_THREADS="1",
            ACCELERATE_USE_CPU="true",
        )
        cmd = [sys.executable, str(script), str(tiny_model_dir), str(tmp_path), repr(TOY_PUZZLES)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        outputs = [p.communicate(timeout=300)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert all(p.returncode == 0 for p in procs), outputs[0][-3000:] + outputs[1][-3000:]
    records = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert len(records[0]) == len(records[1]) == 2
    for step in range(2):
        local = [records[r][step] for r in range(2)]
        assert local[0]["plans"] == local[1]["plans"]  # the same replay plan on every process
        torch.testing.assert_close(local[0]["rewards"], local[1]["rewards"])
        assert [x["slice"] for x in local] == [(0, 4), (4, 8)]
        plans = local[0]["plans"]
        slots = local[0]["completion_ids"].size(0) - 4
        width = max(x["completion_ids"].size(1) for x in local)

        def part(key, rows, local=local, width=width):
            padded = [torch.nn.functional.pad(x[key][rows], (0, width - x[key].size(1))) for x in local]
            return torch.cat(padded)

        originals, replays = slice(0, 4), slice(4, 4 + slots)
        ids = torch.cat([part("completion_ids", originals), part("completion_ids", replays)])
        mask = torch.cat([part("completion_mask", originals), part("completion_mask", replays)])
        replay_rewards = torch.full((2, slots), float("nan"))
        groups = torch.zeros(2, slots, dtype=torch.long)
        starts = torch.zeros(2, slots, dtype=torch.long)
        for r in range(2):
            mine = plans[r::2]
            replay_rewards[r, : len(mine)] = local[r]["replay_scores"]
            starts[r, : len(mine)] = torch.tensor([len(prefix) for _, prefix in mine], dtype=torch.long)
            groups[r, : len(mine)] = torch.tensor([g for g, _ in mine], dtype=torch.long)
        rewards = torch.cat([local[0]["rewards"], replay_rewards.flatten()])
        rewards = torch.where(mask.sum(1) > 0, rewards, torch.full_like(rewards, float("nan")))
        expected = prefix_advantages(
            ids,
            rewards,
            mask,
            group_ids=torch.cat([torch.zeros(8, dtype=torch.long), groups.flatten()]),
            start_positions=torch.cat([torch.zeros(8, dtype=torch.long), starts.flatten()]),
        )
        got_adv = torch.cat([part("advantages", originals), part("advantages", replays)])
        got_mask = torch.cat([part("tool_mask", originals), part("tool_mask", replays)])
        torch.testing.assert_close(got_adv, expected.advantages * expected.loss_mask)
        assert torch.equal(got_mask, expected.loss_mask)
        # the trie spans the processes: every original row's first transition is measured against all 8 rows
        assert expected.parent_counts[:8, 0].tolist() == [8] * 8


def test_replay_refuses_tool_or_environment_tokens(make_trainer, cpu_grpo_kwargs):
    """Replayed rows restart from completion prefixes: a batch whose loss mask hides tool/feedback tokens is refused."""
    from learners.core.trainer import Rollout

    cpu_grpo_kwargs.update(replay_success=1, replay_failure=1)
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs)
    mask = torch.ones(4, 5, dtype=torch.long)
    tool = mask.clone()
    tool[0, 2] = 0  # an environment token inside the first completion
    batch = {
        "prompt_ids": torch.ones(4, 3, dtype=torch.long),
        "prompt_mask": torch.ones(4, 3, dtype=torch.long),
        "completion_ids": torch.full((4, 5), 7),
        "completion_mask": mask,
        "tool_mask": tool,
        "advantages": torch.zeros(4),
    }
    rollout = Rollout(
        rewards=torch.tensor([1.0, 0.0, 1.0, 0.0]),
        rewards_per_func=torch.zeros(4, 1),
        num_generations=4,
        process_slice=slice(0, 4),
        inputs=[{}] * 4,
    )
    with pytest.raises(ValueError, match="replay"):
        trainer.shape_batch(batch, rollout)


def test_replay_rows_pad_prompts_left_completions_right_and_append():
    from learners.t_spmo.replay_rows import append_rows, padded_rows

    rows = padded_rows([[5, 6], [7]], [[1, 2, 9], [3]], pad_id=0, stop_ids={9})
    assert rows["prompt_ids"].tolist() == [[5, 6], [0, 7]] and rows["prompt_mask"].tolist() == [[1, 1], [0, 1]]
    assert rows["completion_ids"].tolist() == [[1, 2, 9], [3, 0, 0]]
    assert rows["completion_mask"].tolist() == [[1, 1, 1], [0, 0, 0]]  # the second never stopped: no loss
    batch = {
        "prompt_ids": torch.tensor([[4, 4, 4]]),
        "prompt_mask": torch.ones(1, 3, dtype=torch.long),
        "completion_ids": torch.tensor([[8, 9]]),
        "completion_mask": torch.ones(1, 2, dtype=torch.long),
    }
    append_rows(batch, rows, pad_id=0)
    assert batch["prompt_ids"].tolist() == [[4, 4, 4], [0, 5, 6], [0, 0, 7]]
    assert batch["completion_ids"].tolist() == [[8, 9, 0], [1, 2, 9], [3, 0, 0]]
    assert batch["completion_mask"].tolist() == [[1, 1, 0], [1, 1, 1], [0, 0, 0]]


@pytest.mark.parametrize("lockstep", [False, True])
def test_replay_samples_every_slot_where_forwards_are_collective(lockstep, make_trainer, cpu_grpo_kwargs, monkeypatch):
    """Under FSDP or ZeRO-3 every process must run the same generate calls, so each process samples all of its
    replay slots (the rows it has no plan for as one-token fillers, dropped); otherwise only its plans."""
    import learners.t_spmo.trainer as t_spmo_trainer

    sampled: list[int] = []
    real_sampler = t_spmo_trainer.trainer_sampler

    def counting_sampler(trainer, model=None):
        sampler = real_sampler(trainer, model=model)
        real_sample = sampler.sample

        def sample(rows, *args, **kwargs):
            sampled.append(len(rows))
            return real_sample(rows, *args, **kwargs)

        sampler.sample = sample
        return sampler

    monkeypatch.setattr(t_spmo_trainer, "trainer_sampler", counting_sampler)
    monkeypatch.setattr(t_spmo_trainer, "lockstep_forward", lambda trainer: lockstep)
    cpu_grpo_kwargs.update(replay_success=1, replay_failure=2, max_steps=1, success_threshold=1.0)
    trainer = _tspmo(make_trainer, cpu_grpo_kwargs)
    trainer.train()
    batch, rollout, plans = trainer.seen[0]
    slots = 2 * 3  # 2 groups x (C_success + C_failure)
    assert 0 < len(plans) < slots  # some slots without a plan: fillers under lockstep
    assert sampled == [slots if lockstep else len(plans)]
    assert batch["completion_ids"].size(0) == rollout.rewards.numel() + slots  # the fillers never reach the batch
    for j, plan in enumerate(plans):
        completion = _rows(batch, "completion_ids", "completion_mask", rollout.rewards.numel() + j)
        assert tuple(completion[: len(plan.prefix)]) == plan.prefix
