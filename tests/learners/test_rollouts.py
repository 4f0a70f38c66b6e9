"""learners.pipeline.rollouts: EnvRollouts (TRL rollout_func over CountdownTokens-v0);
learners.sampling.HFSampler."""

from __future__ import annotations

import pytest

from countdown_env.puzzle import Puzzle
from countdown_env.task import CountdownTask
from countdown_env.trajectory import score_trajectories
from learners.pipeline.rollouts import EnvRollouts, env_episode_reward
from learners.sampling import HFSampler, Sample, Sampling

TASK = CountdownTask(template="compact")
PUZZLES = [Puzzle([3, 7, 11], 21), Puzzle([2, 5, 9], 19), Puzzle([4, 6, 8], 32)]


class ScriptedSampler:
    """A sampler that answers each call with the next scripted text per row (ids, fake log-probs)."""

    name = "scripted"
    stop_ids = ()

    def __init__(self, tokenizer, scripts):
        self.tokenizer, self.scripts, self.calls = tokenizer, [list(s) for s in scripts], []

    def sample(self, prompts, sampling, *, n=1, max_new_tokens):
        self.calls.append((len(prompts), list(max_new_tokens)))
        out = []
        for prompt, budget in zip(prompts, max_new_tokens, strict=True):
            row = self._row_of(prompt)
            ids = list(self.tokenizer.encode(self.scripts[row].pop(0), add_special_tokens=False))[:budget]
            out.append([Sample(ids, [-0.5] * len(ids))])
        return out

    def _row_of(self, prompt):
        text = self.tokenizer.decode(list(prompt), skip_special_tokens=False)
        return next(i for i, p in enumerate(PUZZLES) if TASK.prompt_text(p) in text)


def answer(expr):
    return TASK.format_completion("r", expr) + "<|im_end|>"


def test_rewards_equal_the_dataset_route_on_the_same_completions(tiny_tokenizer):
    texts = [answer("3 * 7"), answer("2 + 5"), "<reasoning>never ends" * 20]
    rollouts = EnvRollouts(TASK, tiny_tokenizer, PUZZLES)
    sampler = ScriptedSampler(tiny_tokenizer, [[t] for t in texts])
    episodes = rollouts.play(PUZZLES, sampler, Sampling(), max_new_tokens=64)
    completion_ids = [e["completion_ids"] for e in episodes]
    dataset_route = score_trajectories(
        PUZZLES,
        completion_ids,
        tiny_tokenizer,
        reward_config=TASK.reward_config,
        max_new_tokens=64,
        stop_ids=[tiny_tokenizer.eos_token_id],
    )
    rewards = [e["reward"] for e in episodes]
    assert rewards == [t.reward for t in dataset_route] == [1.0, 0.0, 0.0]
    decoded = tiny_tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    numbers, target = [list(p.numbers) for p in PUZZLES], [p.target for p in PUZZLES]
    assert TASK.reward_function()(None, decoded, numbers=numbers, target=target)[:2] == rewards[:2]
    assert episodes[2]["trajectory"].truncated and len(completion_ids[2]) == 64
    assert all(e["env_mask"] == [1] * len(e["completion_ids"]) for e in episodes)


def test_rollout_func_output_and_multi_turn_masks(tiny_tokenizer):
    task = CountdownTask(template="compact", feedback="compact", max_turns=3, turn_discount=0.5)
    scripts = [[answer("3 + 7"), answer("3 * 7")], [answer("2 * 5 + 9")], [answer("4"), answer("5"), answer("6")]]
    sampler = ScriptedSampler(tiny_tokenizer, scripts)
    rollouts = EnvRollouts(task, tiny_tokenizer, PUZZLES, sampler=sampler, sampling=Sampling(), max_new_tokens=48)

    class Trainer:
        max_completion_length = 999

    prompts = [task.messages(p) for p in PUZZLES]
    out = rollouts(prompts, Trainer())
    assert [n for n, _ in sampler.calls] == [3, 2, 1]  # rows still playing get their next turn in one batch
    assert out["env_reward"] == [0.5, 1.0, 0.0] and env_episode_reward(None, None, env_reward=out["env_reward"])
    assert out["numbers"] == [list(p.numbers) for p in PUZZLES] and out["target"] == [21, 19, 32]
    for i in range(3):
        ids, mask, logps = out["completion_ids"][i], out["env_mask"][i], out["logprobs"][i]
        assert len(ids) == len(mask) == len(logps)
        assert all((lp == -0.5) == (m == 1) for lp, m in zip(logps, mask, strict=True))
        policy = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False)
        assert policy == "".join(scripts_text for scripts_text in _played(i))
    feedback = tiny_tokenizer.decode(
        [t for t, m in zip(out["completion_ids"][0], out["env_mask"][0], strict=False) if not m]
    )
    assert "Value: 10" in feedback and "Turns left: 2" in feedback
    with pytest.raises(KeyError, match="prompt_dataset"):
        rollouts([[{"role": "user", "content": "unknown"}]], Trainer())


def _played(i):
    return {
        0: [answer("3 + 7"), answer("3 * 7")],
        1: [answer("2 * 5 + 9")],
        2: [answer("4"), answer("5"), answer("6")],
    }[i]


@pytest.mark.parametrize(("temperature", "top_k"), [(1.0, 0), (0.7, 5)])
def test_hf_sampler_logprobs_are_the_sampling_distribution(tiny_model_dir, tiny_tokenizer, temperature, top_k):
    """The log-probability of each sampled id under softmax(logits / T) restricted to the top-k, recomputed here by
    a teacher-forced forward pass (ids outside the top-k would have probability 0 and are never sampled)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    sampler = HFSampler(model, tiny_tokenizer)
    prompts = [tiny_tokenizer.encode("Numbers: 3, 7, 11\nTarget: 21", add_special_tokens=False), [5, 6, 7]]
    rows = sampler.sample(prompts, Sampling(temperature=temperature, top_k=top_k, seed=0), max_new_tokens=[12, 5])
    assert len(rows[0][0].ids) <= 12 and len(rows[1][0].ids) <= 5
    for prompt, (sample,) in zip(prompts, rows, strict=True):
        ids = sample.ids
        with torch.no_grad():
            logits = model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1] / temperature
        if top_k:
            kth = logits.topk(top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        expected = logits.log_softmax(-1).gather(-1, torch.tensor(ids).unsqueeze(-1)).squeeze(-1)
        assert torch.allclose(torch.tensor(sample.logprobs), expected, atol=1e-4)
    again = sampler.sample(prompts, Sampling(temperature=temperature, top_k=top_k, seed=0), max_new_tokens=[12, 5])
    assert [r[0].ids for r in again] == [r[0].ids for r in rows]  # seeded


def test_two_grpo_steps_from_environment_episodes(tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from learners.core.registry import get_learner
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    spec = get_learner("grpo")
    args = spec.make_config(**tiny_cpu_kwargs(tmp_path / "out", max_completion_length=24))
    _, trainer_class = spec.load()
    tokenizer = load_tokenizer(tiny_model_dir)
    rollouts = EnvRollouts(TASK, tokenizer, PUZZLES)
    trainer = trainer_class(
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        reward_funcs=[env_episode_reward],
        args=args,
        train_dataset=prompt_dataset(PUZZLES, TASK),
        processing_class=tokenizer,
        rollout_func=rollouts,
        task=TASK,
    )
    seen = []
    shape = trainer.shape_batch

    def spy(batch, rollout):
        seen.append(({k: v.clone() for k, v in batch.items() if isinstance(v, torch.Tensor)}, rollout))
        return shape(batch, rollout)

    trainer.shape_batch = spy
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2
    for batch, rollout in seen:
        assert "sampling_per_token_logps" in batch and "tool_mask" in batch
        ids = [
            row[m.bool()].tolist() for row, m in zip(batch["completion_ids"], batch["completion_mask"], strict=False)
        ]
        dataset_route = score_trajectories(
            rollout.puzzles,
            ids,
            tokenizer,
            reward_config=TASK.reward_config,
            max_new_tokens=24,
            stop_ids=list(trainer.eos_token_ids),
        )
        assert rollout.rewards.tolist() == [t.reward for t in dataset_route]
        assert rollout.puzzles == [Puzzle(r["numbers"], r["target"]) for r in rollout.inputs]


def test_an_episode_the_env_fails_on_is_recorded_not_fatal(tiny_tokenizer, monkeypatch, capsys):
    """Issue 24 item 1: one sample's environment error scores 0 with its reason; the other rows play on."""
    from countdown_env.envs.countdown_tokens import CountdownTokensEnv

    task = CountdownTask(template="compact", feedback="compact", max_turns=2)
    scripts = [[answer("3 + 7"), answer("3 * 7")], [answer("2 * 5 + 9")], [answer("4"), answer("4 + 6")]]
    real_step = CountdownTokensEnv.step

    def step(env, action):
        if env._puzzle.target == 32 and env._turn >= 2:  # the third row's second answer: the env fails on it
            raise ValueError("feedback longer than its budget")
        return real_step(env, action)

    monkeypatch.setattr(CountdownTokensEnv, "step", step)
    sampler = ScriptedSampler(tiny_tokenizer, scripts)
    episodes = EnvRollouts(task, tiny_tokenizer, PUZZLES).play(PUZZLES, sampler, Sampling(), max_new_tokens=48)
    assert [e["reward"] for e in episodes[:2]] == [1.0, 1.0] and [e["error"] for e in episodes[:2]] == [None, None]
    failed = episodes[2]
    assert failed["reward"] == 0.0 and failed["error"] == "ValueError: feedback longer than its budget"
    trajectory = failed["trajectory"]
    assert trajectory.verification.reason == "episode_error" and trajectory.turns == 2
    assert "feedback longer" in trajectory.verification.message and not trajectory.verification.correct
    ids, mask, logps = failed["completion_ids"], failed["env_mask"], failed["logprobs"]
    assert len(ids) == len(mask) == len(logps)
    policy = tiny_tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False)
    assert policy == answer("4") + answer("4 + 6")  # both of its answers kept, the feedback between masked
    assert "1 of 3 episodes failed in the environment" in capsys.readouterr().err
