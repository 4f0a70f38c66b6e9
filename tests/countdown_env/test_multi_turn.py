"""Multi-turn Countdown: task fields, verifier feedback, Countdown-v0 and CountdownTokens-v0 over several turns."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import countdown_env  # noqa: F401  (registers the ids)
from countdown_env.expressions.verifier import REASONS, verify
from countdown_env.feedback import REASON_GROUPS, feedback_text, verdict_text
from countdown_env.puzzle import Puzzle
from countdown_env.solving.solver import solve
from countdown_env.task import CountdownTask

PUZZLE = Puzzle([3, 7, 11], 21)
SMALL = dict(n_numbers=3, value_range=(1, 20), target_range=(10, 100))


def answer(task: CountdownTask, expression: str) -> str:
    return task.format_completion("trying", expression)


# ------------------------------------------------------------------------------------------------ task fields
def test_task_turn_fields_round_trip_and_validate():
    task = CountdownTask(max_turns=3, turn_discount=0.5, feedback="compact", **SMALL)
    assert CountdownTask.from_dict(task.to_dict()) == task
    assert CountdownTask().max_turns == 1 and CountdownTask().turn_discount == 1.0
    assert CountdownTask.from_dict({**task.to_dict(), "max_turns": 2.0}).max_turns == 2
    assert task.turn_reward(1.0, 1) == 1.0 and task.turn_reward(1.0, 3) == 0.25
    for bad in (
        dict(max_turns=0),
        dict(max_turns=True),
        dict(max_turns=1000),
        dict(turn_discount=0.0),
        dict(turn_discount=1.5),
        dict(turn_discount=float("nan")),
        dict(feedback="nope"),
        dict(feedback=3),
    ):
        with pytest.raises(ValueError):
            CountdownTask(**bad)


def test_every_reason_has_a_feedback_group_and_no_message_contains_a_solution():
    assert set(REASON_GROUPS) == set(REASONS)
    puzzle = Puzzle([25, 3, 7], 154)
    solution = solve(puzzle).replace(" ", "")
    attempts = ["25 + 3", "25 * 25", "12", "3 / 0", "((", "2 ** 3", "", None, "25 - 3 - 7 + 1"]
    for template in ("default", "compact"):
        for attempt in attempts:
            v = verify(attempt, puzzle)
            text = feedback_text(v, puzzle, template, turns_left=1)
            assert text and "(25-3)*7" not in text.replace(" ", "") and solution not in text.replace(" ", "")
    assert verdict_text(verify("25 + 3", puzzle), puzzle) == "Your expression 25 + 3 evaluates to 28, not 154."
    assert "not among the given numbers" in verdict_text(verify("12", puzzle), puzzle)
    assert "evaluates to 1/3" in verdict_text(verify("7 / 21", Puzzle([7, 21], 5)), Puzzle([7, 21], 5))
    assert "<solution>" in verdict_text(verify(None, puzzle), puzzle)
    long = "1+" * 400 + "1"
    assert len(verdict_text(verify(long, Puzzle([1] * 3, 5)), Puzzle([1] * 3, 5))) < 400


# ---------------------------------------------------------------------------------------------- Countdown-v0
def test_text_env_default_is_one_step():
    env = gym.make("Countdown-v0", puzzles=[PUZZLE])
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(answer(CountdownTask(), "3 + 7"))
    assert (reward, terminated, truncated, info["turn"]) == (0.0, True, False, 1)


def test_text_env_feedback_then_success_with_discount():
    task = CountdownTask(max_turns=3, turn_discount=0.5)
    env = gym.make("Countdown-v0", task=task, puzzles=[PUZZLE])
    prompt, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(answer(task, "3 + 7"))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs == info["feedback"] == task.feedback_text(verify("3 + 7", PUZZLE), PUZZLE, 1)
    assert "evaluates to 10, not 21" in obs and "2 attempts left" in obs
    assert obs in env.observation_space
    assert [m["role"] for m in info["messages"]] == ["system", "user", "assistant", "user"]
    assert info["messages"][-1]["content"] == obs
    obs, reward, terminated, truncated, info = env.step("no tags at all")
    assert not terminated and "No answer found" in obs and "1 attempt left" in obs
    obs, reward, terminated, truncated, info = env.step(answer(task, "3 * 7"))
    assert (reward, terminated, info["turn"]) == (0.25, True, 3) and obs == prompt
    with pytest.raises(RuntimeError):
        env.step("again")


def test_text_env_last_turn_failure_ends_with_discounted_format_bonus():
    task = CountdownTask(max_turns=2, turn_discount=0.5, format_bonus=0.2)
    env = gym.make("Countdown-v0", task=task, puzzles=[PUZZLE])
    env.reset(seed=0)
    assert env.step(answer(task, "3 + 3"))[1:3] == (0.0, False)
    _, reward, terminated, _, info = env.step(answer(task, "3 + 7"))
    assert terminated and reward == pytest.approx(0.5 * 0.2) and info["turn"] == 2
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step(answer(task, "3 * 7"))
    assert terminated and reward == pytest.approx(1.2)


def test_text_env_check_env_multi_turn():
    env = gym.make("Countdown-v0", max_turns=3, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


# ------------------------------------------------------------------------------------------ CountdownTokens-v0
@pytest.mark.parametrize("kind", ["char", "hf"])
def test_token_env_check_env_multi_turn(kind, char_tokenizer, tiny_tokenizer):
    tok = char_tokenizer if kind == "char" else tiny_tokenizer
    env = gym.make("CountdownTokens-v0", tokenizer=tok, max_new_tokens=8, max_turns=3, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def _ids(tok, text):
    return list(tok.encode(text, add_special_tokens=False)) if hasattr(tok, "apply_chat_template") else tok.encode(text)


@pytest.mark.parametrize("kind", ["char", "hf"])
def test_token_env_feedback_tokens_masked_and_reward_discounted(kind, char_tokenizer, tiny_tokenizer):
    tok = char_tokenizer if kind == "char" else tiny_tokenizer
    task = CountdownTask(max_turns=3, turn_discount=0.5, template="compact", feedback="compact")
    env = gym.make("CountdownTokens-v0", tokenizer=tok, task=task, puzzles=[PUZZLE], max_new_tokens=64)
    obs, info = env.reset(seed=0)
    prompt_length = info["prompt_length"]
    wrong = _ids(tok, answer(task, "3 + 7")) + [tok.eos_token_id]
    obs, reward, terminated, truncated, info = env.step(np.array(wrong + [5, 5]))  # ids after the EOS: ignored
    assert (reward, terminated, truncated, info["turn"]) == (0.0, False, False, 1)
    assert info["feedback"] == "Value: 10\nTurns left: 2"
    n_feedback = info["feedback_length"]
    assert len(obs) == prompt_length + len(wrong) + n_feedback
    inserted = tok.decode(obs[prompt_length + len(wrong) :].tolist())
    assert "Value: 10" in inserted
    if kind == "hf":
        assert inserted == "\n<|im_start|>user\nValue: 10\nTurns left: 2<|im_end|>\n<|im_start|>assistant\n"
    assert env.unwrapped.tokens_left_in_turn == 64
    right = _ids(tok, answer(task, "3 * 7")) + [tok.eos_token_id]
    for token in right:  # one id per step in the second turn
        obs, reward, terminated, truncated, info = env.step(int(token))
    assert terminated and not truncated and reward == 0.5 and info["turn"] == 2
    traj = info["trajectory"]
    assert traj.turns == 2 and traj.reward == 0.5 and traj.verification.correct and info["ignored_tokens"] == 2
    expected_mask = [1] * len(wrong) + [0] * n_feedback + [1] * len(right)
    assert traj.env_mask.tolist() == expected_mask
    assert traj.completion_ids.tolist() == obs[prompt_length:].tolist()
    assert traj.completion_text == answer(task, "3 * 7")
    assert traj.token_rewards[-1] == 0.5 and traj.token_rewards[:-1].sum() == 0


def test_token_env_truncated_turn_ends_the_episode(char_tokenizer):
    task = CountdownTask(max_turns=3, template="compact")
    env = gym.make("CountdownTokens-v0", tokenizer=char_tokenizer, task=task, puzzles=[PUZZLE], max_new_tokens=4)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(np.array(char_tokenizer.encode("abcdef")))
    assert (reward, terminated, truncated, info["turn"]) == (0.0, False, True, 1)
    assert info["trajectory"].env_mask.tolist() == [1, 1, 1, 1]


def test_token_env_single_turn_unchanged(char_tokenizer):
    env = gym.make("CountdownTokens-v0", tokenizer=char_tokenizer, puzzles=[PUZZLE], template="compact")
    obs, _ = env.reset(seed=0)
    ids = char_tokenizer.encode(answer(CountdownTask(template="compact"), "3 * 7")) + [1]
    _, reward, terminated, _, info = env.step(np.array(ids))
    assert reward == 1.0 and terminated and info["trajectory"].env_mask is None and info["trajectory"].turns == 1
    assert env.unwrapped.observation_space.max_length == 4096 + 256


@pytest.mark.parametrize(
    "expression",
    [
        "3 +" + " " * 200 + "7",  # padding echoed back
        "1" + "0" * 299 + " + 3",  # a 300-digit value (also an unknown number)
        " + ".join(str(n) for n in range(100, 160)),  # 60 unknown numbers
    ],
)
@pytest.mark.parametrize("feedback", ["default", "compact"])
def test_long_model_text_cannot_overflow_the_feedback_budget(tiny_tokenizer, expression, feedback):
    """A long wrong answer's verdict is cut to ``max_feedback_tokens`` (it raised ValueError): the episode goes
    on, the inserted ids fit the budget and the retry suffix is whole."""
    task = CountdownTask(max_turns=3, template="compact", feedback=feedback)
    budget = 64
    env = gym.make("CountdownTokens-v0", tokenizer=tiny_tokenizer, task=task, puzzles=[PUZZLE], max_new_tokens=512,
                   max_feedback_tokens=budget)  # fmt: skip
    env.reset(seed=0)
    ids = _ids(tiny_tokenizer, answer(task, expression)) + [tiny_tokenizer.eos_token_id]
    obs, reward, terminated, truncated, info = env.step(np.array(ids))
    assert not (terminated or truncated) and reward == 0.0 and info["turn"] == 1
    assert 0 < info["feedback_length"] <= budget
    assert info["feedback"].endswith("Turns left: 2" if feedback == "compact" else "(2 attempts left).")
    full = feedback_text(info["verification"], PUZZLE, feedback, turns_left=2)
    assert info["feedback"] == full or "..." in info["feedback"]
    if feedback == "default":  # it echoes the expression: more than 64 characters, so it was cut
        assert len(full) > budget and len(info["feedback"]) < len(full)
