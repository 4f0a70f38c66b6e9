"""Countdown-v0: registration, check_env, seeding, puzzle pinning, generator pass-through, rewards, errors."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import countdown_env
from countdown_env.prompts import chat_messages, format_completion, prompt_text
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig, score_completion
from countdown_env.task import PuzzleGenerator

PUZZLE = Puzzle([3, 7, 11], 21)
RIGHT = format_completion("3 times 7 is 21", "3 * 7")
SMALL = dict(n_numbers=3, value_range=(1, 20), target_range=(10, 100))


def make(**kwargs):
    """Countdown-v0 with small generated puzzles, or with the given ``puzzles`` list."""
    return gym.make("Countdown-v0", **(kwargs if "puzzles" in kwargs else {**SMALL, **kwargs}))


def test_registered_on_import_and_by_module_prefix():
    assert "Countdown-v0" in gym.registry and "CountdownTokens-v0" in gym.registry
    code = (
        "import sys, gymnasium as gym\n"
        "assert 'countdown_env' not in sys.modules\n"
        "env = gym.make('countdown_env:Countdown-v0', puzzles=[{'numbers': [3, 7, 11], 'target': 21}])\n"
        "obs, info = env.reset(seed=0)\n"
        "print(type(env.unwrapped).__name__, info['puzzle'].target)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CountdownEnv", "21"]


def test_check_env_passes_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(make().unwrapped)


def test_reset_returns_prompt_and_chat_messages():
    env = make(template="tinyzero", use_all_numbers=True)
    obs, info = env.reset(seed=0)
    puzzle = info["puzzle"]
    assert isinstance(puzzle, Puzzle) and puzzle.n_numbers == 3
    assert obs == prompt_text(puzzle, "tinyzero", use_all_numbers=True)
    assert info["messages"] == chat_messages(puzzle, "tinyzero", use_all_numbers=True)
    assert "<answer>" in obs and "exactly once" in obs and str(puzzle.target) in obs
    assert obs in env.observation_space


def test_step_scores_with_score_completion():
    env = make(puzzles=[PUZZLE])
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["verification"].correct and info["format_ok"] and info["puzzle"] == PUZZLE
    for text in ("<solution>11 + 7</solution>", "no tags 3 * 7", RIGHT.replace("3 * 7", "3 * 7 * 11")):
        env.reset()
        _, reward, _, _, info = env.step(text)
        expected = score_completion(text, PUZZLE, RewardConfig())
        assert reward == expected.reward == 0.0 and info["verification"] == expected.verification


def test_format_bonus_template_and_rules_reach_the_reward():
    env = make(puzzles=[PUZZLE], format_bonus=0.5)
    env.reset()
    assert env.step(RIGHT)[1] == 1.5
    env.reset()
    assert env.step("<solution>3 * 7</solution>")[1] == 1.0  # correct, no reasoning block: no bonus
    tiny = make(puzzles=[PUZZLE], template="tinyzero")
    tiny.reset()
    assert tiny.step(RIGHT)[1] == 0.0  # <solution> is not the answer tag of this template
    tiny.reset()
    assert tiny.step(format_completion("3 * 7", "3 * 7", "tinyzero"))[1] == 1.0
    strict = make(puzzles=[PUZZLE], use_all_numbers=True)
    strict.reset()
    _, reward, _, _, info = strict.step(RIGHT)
    assert reward == 0.0 and info["verification"].reason == "unused_number"


def test_chat_message_actions():
    env = make(puzzles=[PUZZLE])
    env.reset()
    _, reward, *_ = env.step([{"role": "assistant", "content": RIGHT}])
    assert reward == 1.0


def test_seeded_resets_are_reproducible_and_vary():
    env = make(seed=3)
    first = [env.reset(seed=s)[1]["puzzle"] for s in range(6)]
    again = [env.reset(seed=s)[1]["puzzle"] for s in range(6)]
    assert first == again and len(set(first)) > 1
    env.reset(seed=11)
    follow = [env.reset()[1]["puzzle"] for _ in range(4)]
    env.reset(seed=11)
    assert follow == [env.reset()[1]["puzzle"] for _ in range(4)]


def test_generator_kwargs_pass_through_gym_make():
    env = make(seed=7, value_range=(2, 9), require_solvable=True)
    gen = PuzzleGenerator(**{**SMALL, "value_range": (2, 9)}, require_solvable=True, seed=7)
    for s in range(4):
        _, info = env.reset(seed=s)
        assert info["puzzle"] == gen[info["index"]]
        assert all(2 <= n <= 9 for n in info["puzzle"].numbers)


def test_options_pin_a_puzzle():
    env = make(seed=1)
    _, info = env.reset(options={"puzzle": PUZZLE})
    assert info["puzzle"] == PUZZLE and info["index"] is None
    _, info = env.reset(options={"puzzle": {"numbers": [2, 5], "target": 7}})
    assert info["puzzle"] == Puzzle([2, 5], 7)
    _, info = env.reset(seed=99, options={"index": 12})
    assert info["index"] == 12 and info["puzzle"] == env.unwrapped.source[12]
    group = {env.reset(seed=s, options={"index": 5})[1]["puzzle"] for s in range(4)}
    assert len(group) == 1


def test_fixed_puzzle_list():
    puzzles = [PUZZLE, Puzzle([2, 5, 9], 19)]
    env = gym.make("Countdown-v0", puzzles=puzzles)
    seen = {env.reset(seed=s)[1]["index"] for s in range(20)}
    assert seen == {0, 1}
    with pytest.raises(IndexError):
        env.reset(options={"index": 2})


def test_bad_use_raises_clear_errors():
    env = make(puzzles=[PUZZLE]).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step(RIGHT)
    env.reset()
    with pytest.raises(TypeError, match="str"):
        env.step(42)
    env.step(RIGHT)
    with pytest.raises(RuntimeError, match="terminated"):
        env.step(RIGHT)
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"puzle": PUZZLE})
    with pytest.raises(ValueError, match="not both"):
        env.reset(options={"puzzle": PUZZLE, "index": 0})
    with pytest.raises(ValueError, match="generator arguments"):
        gym.make("Countdown-v0", puzzles=[PUZZLE], n_numbers=3)
    with pytest.raises(ValueError, match="template"):
        gym.make("Countdown-v0", puzzles=[PUZZLE], template="nope")


def test_vector_env_is_reproducible_under_seeds():
    def rollout():
        envs = gym.make_vec("Countdown-v0", num_envs=4, vectorization_mode="sync", **SMALL, seed=2)
        obs, info = envs.reset(seed=42)
        puzzles = list(info["puzzle"])
        answers = [format_completion("", f"{p.numbers[0]} + {p.numbers[1]}") for p in puzzles]
        _, rewards, terminated, truncated, step_info = envs.step(answers)
        envs.close()
        return obs, puzzles, rewards, terminated, [v.reason for v in step_info["final_info"]["verification"]]

    obs, puzzles, rewards, terminated, reasons = rollout()
    assert obs == rollout()[0] and puzzles == rollout()[1]
    assert len(set(puzzles)) > 1 and terminated.all()
    expected = [1.0 if p.numbers[0] + p.numbers[1] == p.target else 0.0 for p in puzzles]
    np.testing.assert_array_equal(rewards, expected)
    assert all(r in {"ok", "wrong_value"} for r in reasons)


def test_render_ansi():
    env = make(puzzles=[PUZZLE], render_mode="ansi")
    obs, _ = env.reset()
    assert env.render() == obs
    env.step(RIGHT)
    assert env.render().endswith(f"{RIGHT}\n\n[turn 1: correct (ok, value {PUZZLE.target})]")
    wrong = make(puzzles=[PUZZLE], render_mode="ansi")
    wrong.reset()
    wrong.step("<reasoning>x</reasoning>\n<solution>3 + 7</solution>")
    assert wrong.render().endswith("[turn 1: wrong (wrong_value, value 10)]")
    assert countdown_env.CountdownEnv is type(env.unwrapped)


def test_the_action_space_contains_the_replies_the_env_accepts():
    import gymnasium as gym

    env = gym.make("Countdown-v0", n_numbers=3, template="compact")
    space = env.action_space
    assert space.contains("<solution>3 × 7</solution>")  # non-ASCII: accepted and scored by step
    assert space.contains("<reasoning>" + "x" * 5000 + "</reasoning><solution>1</solution>")
    assert not space.contains(42) and not space.contains("x" * (space.max_length + 1))
    assert space.contains(space.sample())
    env.reset(seed=0)
    assert env.step("<solution>3 × 7</solution>")[4]["verification"].reason != "forbidden_token"
