"""Vector envs: ``gym.make_vec`` in sync and async mode scores every step's actions (same-step autoreset), and the
token env runs async with shared memory and no extra keywords."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from countdown_env.envs.char_tokenizer import CharTokenizer
from countdown_env.prompts import format_completion
from countdown_env.solving.solver import solve

STEPS = 6
SMALL = dict(n_numbers=3, value_range=(1, 20), target_range=(10, 100), seed=3)


def perfect_answers(puzzles) -> list[str]:
    """A correct completion per puzzle, built from the solver's answer (independent of the envs' scoring)."""
    return [format_completion("", solve(p)) for p in puzzles]


def run_perfect_policy(envs, to_action) -> tuple[list, list]:
    """Rewards and observations over STEPS steps of a policy that always answers the current puzzle correctly."""
    obs, info = envs.reset(seed=0)
    rewards, observations = [], [obs]
    for _ in range(STEPS):
        actions = [to_action(answer) for answer in perfect_answers(info["puzzle"])]
        obs, reward, terminated, truncated, info = envs.step(actions)
        assert terminated.all() and not truncated.any()
        assert all(v.correct for v in info["final_info"]["verification"])
        rewards.append(reward.tolist())
        observations.append(obs)
    envs.close()
    return rewards, observations


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_text_env_perfect_policy_gets_reward_one_at_every_step(mode):
    envs = gym.make_vec("Countdown-v0", num_envs=4, vectorization_mode=mode, **SMALL)
    rewards, observations = run_perfect_policy(envs, lambda answer: answer)
    assert rewards == [[1.0] * 4] * STEPS
    # the observations are the current prompts (async shares them in memory): each names its puzzle's target
    for obs in observations:
        assert len(obs) == 4 and all(isinstance(o, str) and "Using the numbers [" in o for o in obs)
    assert len({o for obs in observations for o in obs}) > 4


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_token_env_perfect_policy_gets_reward_one_at_every_step(mode):
    tok = CharTokenizer()
    envs = gym.make_vec("CountdownTokens-v0", num_envs=4, vectorization_mode=mode, tokenizer=tok, **SMALL)
    rewards, observations = run_perfect_policy(envs, lambda answer: np.array([*tok.encode(answer), tok.eos_token_id]))
    assert rewards == [[1.0] * 4] * STEPS
    for obs in observations:
        prompts = [tok.decode(o) for o in obs]
        assert len(prompts) == 4 and all("Using the numbers [" in p for p in prompts)


def test_async_token_observations_match_sync():
    tok = CharTokenizer()
    batches = []
    for mode in ("sync", "async"):
        envs = gym.make_vec("CountdownTokens-v0", num_envs=3, vectorization_mode=mode, tokenizer=tok, **SMALL)
        obs, _ = envs.reset(seed=5)
        after, *_ = envs.step(np.array([10, 11, 12]))
        envs.close()
        batches.append([o.tolist() for o in (*obs, *after)])
    assert batches[0] == batches[1]


def test_registered_vector_kwargs_do_not_reach_single_envs():
    env = gym.make("Countdown-v0", **SMALL)
    assert type(env.unwrapped).__name__ == "CountdownEnv"
    assert env.spec.kwargs["vector_kwargs"] == {"autoreset_mode": "SameStep"}
    envs = gym.make_vec("Countdown-v0", num_envs=2, vectorization_mode="sync", **SMALL)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_explicit_autoreset_mode_is_honoured(mode):
    """The caller's vector_kwargs win over the registered SameStep (Gymnasium lets spec kwargs win by default)."""
    next_step = {"autoreset_mode": "NextStep"}
    envs = gym.make_vec("Countdown-v0", num_envs=3, vectorization_mode=mode, vector_kwargs=next_step, **SMALL)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    puzzles, rewards = info["puzzle"], []
    for _ in range(4):  # next-step autoreset: every other step is a reset step whose actions are dropped
        obs, reward, terminated, truncated, info = envs.step(perfect_answers(puzzles))
        rewards.append(reward.tolist())
        if not terminated.any():  # a reset step: the info holds the new puzzles
            puzzles = info["puzzle"]
    envs.close()
    assert rewards == [[1.0] * 3, [0.0] * 3, [1.0] * 3, [0.0] * 3]


def test_other_vector_kwargs_keep_same_step_and_the_token_env_takes_a_mode():
    envs = gym.make_vec("Countdown-v0", num_envs=2, vectorization_mode="sync", vector_kwargs={"copy": False}, **SMALL)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP and envs.copy is False
    envs.close()
    disabled = {"autoreset_mode": gym.vector.AutoresetMode.DISABLED}
    tok = CharTokenizer()
    envs = gym.make_vec("CountdownTokens-v0", num_envs=2, vector_kwargs=disabled, tokenizer=tok, **SMALL)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.DISABLED
    envs.close()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gym.make_vec("Countdown-v0", num_envs=2, vector_kwargs={"autoreset_mode": "Sometimes"}),
         r"autoreset_mode must be one of \['NextStep', 'SameStep', 'Disabled'\], got 'Sometimes'"),
        (lambda: gym.make_vec("Countdown-v0", num_envs=2, vector_kwargs="NextStep"), "must be a dict"),
        (lambda: gym.make("Countdown-v0", vector_kwargs={"autoreset_mode": "NextStep"}), r"pass it to gym\.make_vec"),
    ],
)  # fmt: skip
def test_vector_settings_that_cannot_apply_are_refused_in_one_line(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
