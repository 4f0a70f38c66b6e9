"""CountdownTask: one task definition; every consumer (text env, token env, TRL reward function, verifiers rubric)
scores a completion alike for every template; mixed number counts; serialisation."""

from __future__ import annotations

import asyncio
import json
import signal

import gymnasium as gym
import numpy as np
import pytest

from countdown_env.envs.char_tokenizer import CharTokenizer
from countdown_env.prompts import TEMPLATES
from countdown_env.solving.solver import solve
from countdown_env.task import TASK_FILE, CountdownTask, PuzzleGenerator
from verifiers_ext.classic_env import classic_api_installed

BONUS = 0.25
TAGS = {"default": ("reasoning", "solution"), "tinyzero": ("think", "answer"), "compact": ("reasoning", "solution")}


def completions(template: str, puzzle) -> dict[str, tuple[str, float]]:
    """A correct and a wrong completion with their expected rewards, written by hand from the template's tags and
    the solver's answer (not through the code under test): 1 + bonus and 0 + bonus."""
    reasoning, answer = TAGS[template]
    right, wrong = solve(puzzle), f"{puzzle.numbers[0]} + {puzzle.numbers[0]} + {puzzle.numbers[0]}"
    text = f"<{reasoning}>\nsearch\n</{reasoning}>\n<{answer}>{{}}</{answer}>"
    return {"right": (text.format(right), 1.0 + BONUS), "wrong": (text.format(wrong), 0.0 + BONUS)}


def text_env_reward(task, puzzle, completion) -> float:
    env = gym.make("Countdown-v0", task=task)
    env.reset(options={"puzzle": puzzle})
    return env.step(completion)[1]


def token_env_reward(task, puzzle, completion) -> float:
    tok = CharTokenizer()
    env = gym.make("CountdownTokens-v0", tokenizer=tok, task=task, max_new_tokens=400)
    env.reset(options={"puzzle": puzzle})
    return env.step(np.array([*tok.encode(completion), tok.eos_token_id]))[1]


def trl_reward(task, puzzle, completion) -> float:
    reward = task.reward_function()
    assert reward.__name__ == "countdown_reward"
    return reward([None], [[{"role": "assistant", "content": completion}]], [list(puzzle.numbers)], [puzzle.target])[0]


def rubric_reward(task, puzzle, completion) -> float:
    import verifiers as vf

    from verifiers_ext.classic_env import load_environment

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = load_environment(num_train_examples=0, num_eval_examples=1, task=task)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    info = {"numbers": list(puzzle.numbers), "target": puzzle.target, "index": 0}
    state = vf.State(input={"prompt": task.messages(puzzle), "answer": "", "info": info, "example_id": 0})
    state["completion"] = [{"role": "assistant", "content": completion}]
    state["trajectory"] = []
    asyncio.run(env.rubric.score_rollout(state))
    return state["reward"]


SCORERS = {"text env": text_env_reward, "token env": token_env_reward, "TRL": trl_reward}
if classic_api_installed():  # verifiers 0.3.x: the project venv has 0.4, `make test` runs this file in the classic one
    SCORERS["rubric"] = rubric_reward


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_every_consumer_scores_alike_for_every_template(template):
    task = CountdownTask(n_numbers=3, value_range=(1, 20), template=template, format_bonus=BONUS)
    puzzle = task.puzzle(0)
    for kind, (completion, expected) in completions(template, puzzle).items():
        assert task.score(completion, puzzle).reward == expected, kind
        for name, scorer in SCORERS.items():
            assert scorer(task, puzzle, completion) == expected, (template, kind, name)


def test_tinyzero_scores_with_answer_tags_and_the_rule_reaches_the_prompt():
    task = CountdownTask(n_numbers=3, template="tinyzero", use_all_numbers=True)
    assert (task.reward_config.answer_tag, task.reward_config.reasoning_tag) == ("answer", "think")
    assert "exactly once" in task.messages(task.puzzle(0))[-1]["content"]
    assert "at most once" in CountdownTask(n_numbers=3).prompt_text(task.puzzle(0))


def test_int_count_task_is_the_generator_stream():
    task = CountdownTask(n_numbers=4, seed=7)
    generator = PuzzleGenerator(n_numbers=4, seed=7)
    assert [task.puzzle(i) for i in range(10)] == generator.generate(10)
    assert PuzzleGenerator(task=task)[3] == PuzzleGenerator.from_task(task)[3] == task.generator()[3]
    assert task.generator() is task.generator() and task.record(2).puzzle == task.puzzle(2)


@pytest.mark.parametrize("n_numbers", [(3, 5), ((3, 1.0), (4, 2.0), (5, 1.0))])
def test_mixed_counts_cover_the_range_deterministically(n_numbers):
    task, again = CountdownTask(n_numbers=n_numbers, seed=2), CountdownTask(n_numbers=n_numbers, seed=2)
    counts = [task.n_numbers_at(i) for i in range(200)]
    assert set(counts) == {3, 4, 5} and task.counts == (3, 4, 5)
    assert counts == [again.n_numbers_at(i) for i in range(200)]
    puzzles = [task.puzzle(i) for i in range(0, 200, 20)]
    assert puzzles == [again.puzzle(i) for i in range(0, 200, 20)]
    assert [p.n_numbers for p in puzzles] == counts[::20]
    assert puzzles == [PuzzleGenerator(task=task)[i] for i in range(0, 200, 20)]
    assert counts != [CountdownTask(n_numbers=n_numbers, seed=3).n_numbers_at(i) for i in range(200)]


def test_round_trip_save_load_and_unknown_keys(tmp_path):
    task = CountdownTask(n_numbers=((3, 0.5), (6, 0.5)), value_range=(1, 20), template="compact", format_bonus=0.1)
    data = task.to_dict()
    assert json.loads(json.dumps(data)) == data and CountdownTask.from_dict(data) == task
    assert CountdownTask.from_dict({"n_numbers": [3, 5], "value_range": [1, 9]}).n_numbers == (3, 5)
    assert CountdownTask.load(tmp_path) is None
    assert task.save(tmp_path) == tmp_path / TASK_FILE and CountdownTask.load(tmp_path) == task
    assert [p.name for p in tmp_path.iterdir()] == [TASK_FILE]  # no temporary file left behind
    pattern = r"unknown CountdownTask keys 'n_number' \(did you mean 'n_numbers'\?\), 'tmplate'"
    with pytest.raises(ValueError, match=pattern):
        CountdownTask.from_dict({"n_number": 3, "tmplate": "default"})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_numbers": 0}, "n_numbers"),
        ({"n_numbers": (5, 3)}, "lo <= hi"),
        ({"n_numbers": ((3, 0.0),)}, "weights"),
        ({"n_numbers": ((3, 1.0), (3, 1.0))}, "distinct"),
        ({"value_range": (5, 1)}, "value_range"),
        ({"operators": "+^"}, "operators"),
        ({"template": "nope"}, "unknown prompt template"),
        ({"format_bonus": float("nan")}, "finite"),
        ({"target_mode": "x"}, "target_mode"),
        ({"n_numbers": (3, 7), "min_solutions": 1}, "counting"),
    ],
)
def test_bad_settings_raise_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        CountdownTask(**kwargs)
    assert "\n" not in str(info.value)


def test_consumers_refuse_a_task_and_its_fields_together():
    task = CountdownTask()
    with pytest.raises(ValueError, match="not both"):
        PuzzleGenerator(task=task, seed=1)
    with pytest.raises(ValueError, match="not both"):
        gym.make("Countdown-v0", task=task, n_numbers=3)


def test_compact_template_everywhere():
    from verifiers_ext.dataset_rows import PuzzleSource

    task = CountdownTask(n_numbers=3, template="compact")
    env = gym.make("Countdown-v0", template="compact", n_numbers=3)
    obs, info = env.reset(options={"index": 0})
    assert obs == task.prompt_text(task.puzzle(0)) and obs.startswith("Numbers: ")
    assert PuzzleSource.from_options("compact", n_numbers=3).rows(1)[0]["prompt"] == task.messages(task.puzzle(0))
