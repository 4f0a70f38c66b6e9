"""PS-PPO and T-SPMO call a completion a success when it is correct (the verifier's verdict), never because its
reward passed a threshold (issue 23 item 1): a learner's reward functions may shape the reward (DAPO's overlong
penalty, a format bonus), so a correct answer may score 0.5 and a wrong one 1.3.

Each test builds a group of four completions of one puzzle, with rewards that disagree with correctness, and reads
what the learner counted as a success: the ``success`` PS-PPO hands to its reward-uncertainty bound, and the kind
under which T-SPMO's replay buffer stored each completion. The expected verdicts come from ``verify`` on the
expressions written into the completions, not from the learners' scoring route."""

from __future__ import annotations

import pytest
import torch

from countdown_env import Puzzle
from countdown_env.expressions.verifier import verify

PUZZLE = Puzzle((3, 7, 11), 21)
EXPRESSIONS = ["3*7", "3+7", "11-7", "7*3+11"]  # one correct answer, three wrong ones
SHAPED_REWARDS = [0.5, 1.3, 0.0, 1.0]  # the correct one penalised, two wrong ones at or above 1
GROUP = 4


def _expected_verdicts() -> list[bool]:
    return [verify(e, PUZZLE).correct for e in EXPRESSIONS]


def _group_batch(trainer):
    """One group of GROUP completions ``<solution>EXPR</solution>`` + eos of PUZZLE's prompt, right-padded."""
    from countdown_env import CountdownTask

    tok = trainer.processing_class
    messages = CountdownTask(template="default").messages(PUZZLE)
    prompt = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    bodies = [
        tok.encode(f"<solution>{e}</solution>", add_special_tokens=False) + [tok.eos_token_id] for e in EXPRESSIONS
    ]
    width = max(map(len, bodies))
    ids = torch.full((GROUP, width), tok.pad_token_id)
    mask = torch.zeros(GROUP, width, dtype=torch.long)
    for i, body in enumerate(bodies):
        ids[i, : len(body)] = torch.tensor(body)
        mask[i, : len(body)] = 1
    batch = {
        "prompt_ids": torch.tensor([prompt] * GROUP),
        "prompt_mask": torch.ones(GROUP, len(prompt), dtype=torch.long),
        "completion_ids": ids,
        "completion_mask": mask,
        "advantages": torch.zeros(GROUP),
    }
    row = {"prompt": messages, "numbers": list(PUZZLE.numbers), "target": PUZZLE.target}
    return batch, [dict(row) for _ in range(GROUP)], bodies


def _rollout(trainer, batch, inputs, with_puzzles=True, env_trajectories=None):
    """The rollout the base trainer builds for ``batch`` (its one verdict per completion), rewarded SHAPED_REWARDS."""
    rows = inputs if with_puzzles else [{}] * GROUP
    return trainer.make_rollout(batch, rows, torch.tensor(SHAPED_REWARDS)[:, None], env_trajectories=env_trajectories)


def test_expectations_disagree_with_the_reward_threshold():
    verdicts = _expected_verdicts()
    assert verdicts == [True, False, False, False]
    assert [r >= 1.0 for r in SHAPED_REWARDS] != verdicts  # a threshold would get both kinds of row wrong


def _ps_ppo_recording_successes(make_trainer, cpu_grpo_kwargs, monkeypatch):
    """A PS-PPO trainer (budget 3: every group is truncated) and the list each batch's success vector (the one
    handed to the reward-uncertainty bound) is appended to."""
    import learners.ps_ppo.trainer as ps_ppo
    from learners.ps_ppo import PSPPOConfig, PSPPOTrainer

    cpu_grpo_kwargs.update(budget=3)
    trainer = make_trainer(PSPPOTrainer, PSPPOConfig(**cpu_grpo_kwargs))
    seen: list = []
    original = ps_ppo.reward_uncertainty_bound
    monkeypatch.setattr(
        ps_ppo, "reward_uncertainty_bound", lambda *a, **kw: seen.append(a[2].tolist()) or original(*a, **kw)
    )
    return trainer, seen


@pytest.mark.slow
def test_ps_ppo_success_is_the_verdict(make_trainer, cpu_grpo_kwargs, monkeypatch):
    trainer, seen = _ps_ppo_recording_successes(make_trainer, cpu_grpo_kwargs, monkeypatch)
    batch, inputs, _ = _group_batch(trainer)
    trainer.shape_batch(dict(batch), _rollout(trainer, batch, inputs))
    assert seen == [_expected_verdicts()]

    # rows without a puzzle have no verdict: there the documented reward threshold binarises the reward
    seen.clear()
    trainer.shape_batch(dict(batch), _rollout(trainer, batch, inputs, with_puzzles=False))
    assert seen == [[r >= trainer.args.success_threshold for r in SHAPED_REWARDS]]


@pytest.mark.slow
def test_ps_ppo_takes_the_env_verdicts_when_the_env_reward_scored(make_trainer, cpu_grpo_kwargs, monkeypatch):
    from types import SimpleNamespace

    trainer, seen = _ps_ppo_recording_successes(make_trainer, cpu_grpo_kwargs, monkeypatch)
    batch, inputs, _ = _group_batch(trainer)
    verdicts = [False, False, True, False]  # the env's own verdicts are used as they are, not recomputed
    env = [SimpleNamespace(puzzle=PUZZLE, verification=SimpleNamespace(correct=v), truncated=False) for v in verdicts]
    rollout = _rollout(trainer, batch, inputs, env_trajectories=env)
    trainer.shape_batch(dict(batch), rollout)
    assert seen == [verdicts]


@pytest.mark.slow
def test_a_correct_answer_cut_at_the_budget_is_no_success(make_trainer, cpu_grpo_kwargs, monkeypatch):
    """As in countdown eval and the env reward: no end-of-turn token within max_completion_length is wrong."""
    trainer, seen = _ps_ppo_recording_successes(make_trainer, cpu_grpo_kwargs, monkeypatch)
    batch, inputs, bodies = _group_batch(trainer)
    tok, budget = trainer.processing_class, trainer.max_completion_length
    cut = tok.encode("<solution>3*7</solution>" + "x" * budget, add_special_tokens=False)[:budget]  # no eos
    width = max(budget, batch["completion_ids"].size(1))
    ids = torch.full((GROUP, width), tok.pad_token_id)
    ids[:, : batch["completion_ids"].size(1)] = batch["completion_ids"]
    mask = torch.zeros(GROUP, width, dtype=torch.long)
    mask[:, : batch["completion_mask"].size(1)] = batch["completion_mask"]
    ids[2], mask[2] = tok.pad_token_id, 0
    ids[2, :budget], mask[2, :budget] = torch.tensor(cut), 1
    cut_batch = dict(batch, completion_ids=ids, completion_mask=mask)
    trainer.shape_batch(cut_batch, _rollout(trainer, cut_batch, inputs))
    assert verify("3*7", PUZZLE).correct and seen == [[True, False, False, False]]


@pytest.mark.slow
def test_t_spmo_replay_stores_correct_answers_as_successes(make_trainer, cpu_grpo_kwargs):
    from learners.t_spmo import TSPMOConfig, TSPMOTrainer

    cpu_grpo_kwargs.update(replay_success=1, replay_failure=1)
    trainer = make_trainer(TSPMOTrainer, TSPMOConfig(**cpu_grpo_kwargs))
    trainer.replay_buffer.plan = lambda *args, **kwargs: []  # store only: no restart is generated
    batch, inputs, bodies = _group_batch(trainer)
    trainer.shape_batch(dict(batch), _rollout(trainer, batch, inputs))
    key = tuple(batch["prompt_ids"][0].tolist())
    verdicts = _expected_verdicts()
    kinds = list(zip(map(tuple, bodies), verdicts, strict=True))
    assert trainer.replay_buffer.completions(key, True) == [body for body, ok in kinds if ok]
    assert trainer.replay_buffer.completions(key, False) == [body for body, ok in kinds if not ok]


def test_replay_buffer_takes_the_verdict_not_a_reward():
    from learners.t_spmo.replay import ReplayBuffer

    buffer = ReplayBuffer(keep_failures=True)
    buffer.add("p", [1, 2], True)
    buffer.add("p", [3, 4], False)
    buffer.add("p", [5, 6], None)  # unscorable: ignored
    assert buffer.completions("p", True) == [(1, 2)] and buffer.completions("p", False) == [(3, 4)]
    with pytest.raises(TypeError, match="success must be True, False or None"):
        buffer.add("p", [7], 1.0)


@pytest.mark.slow
def test_dapo_dynamic_sampling_keeps_a_group_the_verdicts_split(make_trainer, cpu_grpo_kwargs):
    """Equal rewards, mixed verdicts: DAPO filters on accuracy, so the group stays in the loss; the same group with
    one verdict (all four rows carrying the wrong answer) leaves it, whatever the rewards."""
    from learners.grpo import GRPOPresetTrainer, grpo_config

    trainer = make_trainer(GRPOPresetTrainer, grpo_config("dapo", **cpu_grpo_kwargs), reward_funcs=lambda **kw: [0.0])
    batch, inputs, _ = _group_batch(trainer)
    equal = torch.ones(GROUP, 2)  # (reward, overlong penalty) columns, equal on every row
    kept = trainer.shape_batch(dict(batch), trainer.make_rollout(batch, inputs, equal))
    assert trainer.loss_mask(kept).sum() == batch["completion_mask"].sum()

    wrong = dict(batch, completion_ids=batch["completion_ids"][[1, 1, 1, 1]])
    wrong["completion_mask"] = batch["completion_mask"][[1, 1, 1, 1]]
    assert not verify(EXPRESSIONS[1], PUZZLE).correct
    varied = torch.tensor([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    dropped = trainer.shape_batch(dict(wrong), trainer.make_rollout(wrong, inputs, varied))
    assert trainer.loss_mask(dropped).sum() == 0
