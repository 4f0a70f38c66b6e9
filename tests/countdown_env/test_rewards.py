"""Binary reward, format bonus, and the TRL reward-function signature (without importing TRL)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from countdown_env.puzzle import Puzzle, PuzzleError
from countdown_env.rewards import (
    RewardConfig,
    completion_text,
    countdown_reward,
    make_reward_function,
    score_completion,
)

P = Puzzle([25, 3, 7], 154)
GOOD = "<reasoning>\n25 - 3 = 22, 22 * 7 = 154\n</reasoning>\n<solution>(25 - 3) * 7</solution>"
WRONG_FORMATTED = "<reasoning>\nhmm\n</reasoning>\n<solution>25 * 7</solution>"
RIGHT_UNFORMATTED = "The answer is <solution>(25 - 3) * 7</solution>"


def test_score_completion_binary_and_bonus():
    assert score_completion(GOOD, P).reward == 1.0
    assert score_completion(WRONG_FORMATTED, P).reward == 0.0
    assert score_completion(RIGHT_UNFORMATTED, P).reward == 1.0
    bonus = RewardConfig(format_bonus=0.1)
    scored = score_completion(GOOD, P, bonus)
    assert scored.reward == pytest.approx(1.1) and scored.format_ok and scored.verification.correct
    scored = score_completion(WRONG_FORMATTED, P, bonus)
    assert scored.reward == pytest.approx(0.1) and scored.verification.reason == "wrong_value"
    scored = score_completion(RIGHT_UNFORMATTED, P, bonus)
    assert scored.reward == 1.0 and not scored.format_ok
    assert score_completion("no answer", P, bonus).verification.reason == "no_answer"


def test_config_options_reach_the_verifier():
    puzzle = Puzzle([25, 3, 7, 2], 154)
    assert score_completion(GOOD, puzzle).reward == 1.0
    assert score_completion(GOOD, puzzle, RewardConfig(use_all_numbers=True)).verification.reason == "unused_number"
    fractional = "<solution>7 / 2 * 2 * 22</solution>"
    puzzle = Puzzle([7, 2, 2, 22], 154)
    assert score_completion(fractional, puzzle).reward == 1.0
    strict = RewardConfig(integer_intermediates=True)
    assert score_completion(fractional, puzzle, strict).verification.reason == "non_integer_intermediate"
    tagged = RewardConfig(answer_tag="answer", reasoning_tag="think", format_bonus=0.5)
    scored = score_completion("<think>x</think><answer>(25-3)*7</answer>", P, tagged)
    assert scored.reward == 1.5


def test_config_validation():
    with pytest.raises(ValueError):
        RewardConfig(format_bonus=float("nan"))
    with pytest.raises(ValueError):
        RewardConfig(format_bonus="0.1")


def test_completion_text_forms():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "abc"}]) == "abc"
    assert completion_text({"role": "assistant", "content": "abc"}) == "abc"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert completion_text(parts) == "ab"
    mixed = [
        {"role": "assistant", "content": "<solution>1"},
        {"role": "tool", "content": "ignored"},
        {"role": "assistant", "content": "</solution>"},
    ]
    assert completion_text(mixed) == "</solution>"  # the last assistant message (countdown_env.messages)
    assert completion_text([{"content": "x"}, {"content": "y"}]) == "y"  # role-less: the last message
    assert completion_text([{"role": "user", "content": "q"}]) == ""
    assert completion_text([{"role": "assistant", "content": None}]) == ""
    with pytest.raises(TypeError):
        completion_text(42)
    with pytest.raises(TypeError):
        completion_text(["not a message"])


def test_countdown_reward_trl_signature_plain_and_chat():
    completions = [GOOD, WRONG_FORMATTED, [{"role": "assistant", "content": GOOD}], "garbage"]
    prompts = ["p"] * 4
    rewards = countdown_reward(
        prompts=prompts,
        completions=completions,
        completion_ids=[[1]] * 4,
        numbers=[[25, 3, 7]] * 4,
        target=[154, 154, 154, 154],
        trainer_state=None,
        log_extra=None,
        log_metric=None,
        other_column=["x"] * 4,
    )
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    assert all(isinstance(r, float) for r in rewards)


def test_rows_use_their_own_puzzle():
    rewards = countdown_reward(
        ["p", "p"], ["<solution>1+2</solution>", "<solution>1+2</solution>"], numbers=[[1, 2], [1, 2]], target=[3, 4]
    )
    assert rewards == [1.0, 0.0]


def test_make_reward_function():
    f = make_reward_function(RewardConfig(format_bonus=0.25), name="countdown_with_format")
    assert f.__name__ == "countdown_with_format"
    assert f.config.format_bonus == 0.25
    assert f(["p", "p"], [GOOD, WRONG_FORMATTED], numbers=[[25, 3, 7]] * 2, target=[154, 154]) == [1.25, 0.25]
    assert make_reward_function().__name__ == "countdown_reward"
    with pytest.raises(TypeError):
        make_reward_function({"format_bonus": 1})


def test_bad_columns_are_clear_errors():
    with pytest.raises(ValueError, match="numbers"):
        countdown_reward(["p"], [GOOD])
    with pytest.raises(ValueError, match="completions"):
        countdown_reward(["p"], [GOOD, GOOD], numbers=[[1]], target=[1])
    with pytest.raises(PuzzleError):
        countdown_reward(["p"], [GOOD], numbers=[[0, 3]], target=[3])


def test_importable_without_trl_or_torch():
    code = (
        "import sys; import countdown_env.rewards as r; "
        "assert not {'trl', 'torch', 'transformers', 'datasets', 'sympy'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reward_rubric_and_env_judge_the_same_text_of_a_conversation():
    """The one completion-text rule (countdown_env.messages): the TRL reward, the verifiers rubric, the text env
    and the SFT cleaner read the same text from the same multi-turn conversations; verdicts worked out by hand."""
    import gymnasium as gym

    from countdown_env import Puzzle
    from countdown_env.rewards import RewardConfig, countdown_reward
    from countdown_env.sft.cleaning import response_text
    from verifiers_ext.reply_scoring import correctness

    right, wrong = (
        "<reasoning>r</reasoning>\n<solution>3 * 7</solution>",
        "<reasoning>r</reasoning>\n<solution>3 + 7</solution>",
    )
    conversations = {
        "answered last": (
            [
                {"role": "assistant", "content": wrong},
                {"role": "user", "content": "Value: 10"},
                {"role": "assistant", "content": right},
            ],
            1.0,
        ),
        "wrong last": (
            [
                {"role": "assistant", "content": right},
                {"role": "user", "content": "?"},
                {"role": "assistant", "content": wrong},
            ],
            0.0,
        ),
        "tool call then answer": (
            [
                {"role": "assistant", "content": "let me check"},
                {"role": "tool", "content": "<solution>3 * 7</solution>"},
                {"role": "assistant", "content": [{"type": "text", "text": right}]},
            ],
            1.0,
        ),
        "no reply": ([{"role": "user", "content": right}], 0.0),
    }
    puzzle = Puzzle([3, 7, 11], 21)
    env = gym.make("Countdown-v0", puzzles=[puzzle], template="compact")
    for name, (messages, expected) in conversations.items():
        reward = countdown_reward(None, [messages], numbers=[[3, 7, 11]], target=[21])[0]
        rubric = correctness(messages, puzzle, RewardConfig())
        env.reset(seed=0)
        env_reward = env.step(messages)[1] if messages[-1]["role"] == "assistant" else 0.0
        cleaned = response_text(messages)
        assert reward == rubric == env_reward == expected, name
        assert cleaned == completion_text(messages), name


# ------------------------------------------------------------------------------------------------ partial credit
def _answer(expression: str) -> str:
    return f"<reasoning>\ntry\n</reasoning>\n<solution>{expression}</solution>"


def test_partial_credit_is_the_closeness_of_a_real_attempt():
    """Issue 36 item 8: a wrong answer the verifier faults only for its value earns w·max(0, 1 - |v - t|/t); a
    correct one earns exactly 1 (never 1 plus credit). Values worked out here: 25·7 = 175, 25·7 - 3 = 172,
    25 + 3·7 = 46, 25/7 + 3 = 46/7, target 154."""
    w = 0.5
    config = RewardConfig(partial_credit=w)
    cases = {
        "25 * 7": w * (1 - 21 / 154),
        "25 * 7 - 3": w * (1 - 18 / 154),
        "25 + 3 * 7": w * (1 - 108 / 154),
        "25 / 7 + 3": w * (1 - (154 - 46 / 7) / 154),
        "(25 + 3) * 7 * 7 / 7": 0.0,  # 7 used three times: reused_number, whatever its value
        "(25 - 3) * 7": 1.0,
    }
    for expression, expected in cases.items():
        assert score_completion(_answer(expression), P, config).reward == pytest.approx(expected, abs=1e-12), expression
    far = Puzzle([1, 2, 3], 100)  # 1 + 2 + 3 = 6: |6 - 100| / 100 < 1; 1 - 2 - 3 < 0: nothing
    assert score_completion(_answer("1 + 2 + 3"), far, config).reward == pytest.approx(w * 0.06)
    assert score_completion(_answer("1 - 2 - 3"), far, config).reward == 0.0
    # the format bonus adds to it; partial credit 0 (the default) leaves the binary reward
    both = RewardConfig(partial_credit=w, format_bonus=0.1)
    assert score_completion(_answer("25 * 7"), P, both).reward == pytest.approx(w * (1 - 21 / 154) + 0.1)
    assert score_completion(_answer("25 * 7"), P).reward == 0.0


def test_partial_credit_cannot_be_earned_by_a_formatted_non_answer():
    """The bare target, a number outside the puzzle, one given number alone, a rule-breaking expression, a false
    stated result, an empty or missing answer block: 0, however close their value is to the target."""
    config = RewardConfig(partial_credit=0.9, use_all_numbers=False)
    non_answers = [
        "154",  # the target itself: unknown_number
        "150 + 4",  # numbers that are not given
        "25 * 6 + 4",
        "25",  # one given number (value 25, wrong_value, but no operation)
        "(25)",
        "7 * 7 * 3",  # 7 reused
        "25 * 7 = 150",  # a false stated value (wrong_stated_value), even with a close expression
        "",
        "25 * 7 + ",  # parse error
        "25 ** 2",  # forbidden token
    ]
    for expression in non_answers:
        scored = score_completion(_answer(expression), P, config)
        assert scored.reward == 0.0, (expression, scored.verification.reason)
    assert score_completion("25 * 7 - 3", P, config).reward == 0.0  # no answer block at all
    everything = RewardConfig(partial_credit=0.9, use_all_numbers=True)
    assert score_completion(_answer("25 * 7"), P, everything).reward == 0.0  # 3 unused under the rule
    assert score_completion(_answer("25 * 7 - 3"), P, everything).reward == pytest.approx(0.9 * (1 - 18 / 154))
    integer = RewardConfig(partial_credit=0.9, integer_intermediates=True)
    assert score_completion(_answer("25 / 7 + 3"), P, integer).reward == 0.0  # non-integer intermediate


def test_partial_credit_setting_reaches_every_scorer_and_is_checked():
    from countdown_env.task import CountdownTask

    task = CountdownTask(n_numbers=3, partial_credit=0.25)
    assert task.reward_config.partial_credit == 0.25
    assert CountdownTask.from_dict(task.to_dict()) == task
    assert (
        CountdownTask.from_dict({k: v for k, v in task.to_dict().items() if k != "partial_credit"}).partial_credit == 0
    )
    reward = task.reward_function()
    assert reward([None], [_answer("25 * 7")], [[25, 3, 7]], [154]) == [pytest.approx(0.25 * (1 - 21 / 154))]
    for bad in (1.0, -0.1, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="partial_credit must be a number in"):
            CountdownTask(partial_credit=bad)


def test_format_score_is_tinyzeros_reward_one_correct_a_tenth_for_an_answer_zero_without():
    """TinyZero's ``compute_score(format_score=0.1)``: 1 correct, 0.1 for any wrong answer it could extract (wrong
    value, numbers misused, not an expression), 0 with no answer; unlike ``format_bonus`` nothing is added to 1."""
    tz = RewardConfig(format_score=0.1, use_all_numbers=True, answer_tag="answer", reasoning_tag="think")
    cases = {
        "<think>x</think><answer>(25 - 3) * 7</answer>": 1.0,
        "no tags at all: (25 - 3) * 7": 0.0,
        "<think>x</think><answer>25 * 7</answer>": 0.1,  # leaves 3 unused: misuses the numbers
        "<think>x</think><answer>25 + 3 + 7</answer>": 0.1,  # every number once, wrong value
        "<think>x</think><answer>twenty five</answer>": 0.1,  # not an expression
        "<answer>(25 - 3) * 7": 0.0,  # an unclosed block is no answer
    }
    for text, reward in cases.items():
        assert score_completion(text, P, tz).reward == pytest.approx(reward), text
    # with partial credit too, a wrong real attempt earns the larger of the two
    both = RewardConfig(format_score=0.1, partial_credit=0.5)
    near = "<reasoning>x</reasoning><solution>25 * 3 + 7 * 11</solution>"  # 152 of 154: partial 0.5 * (1 - 2/154)
    assert score_completion(near, Puzzle([25, 3, 7, 11], 154), both).reward == pytest.approx(0.5 * (1 - 2 / 154))
    far = "<reasoning>x</reasoning><solution>25 - 3 - 7 - 11</solution>"  # 4 of 154: partial 0.013 < 0.1
    assert score_completion(far, Puzzle([25, 3, 7, 11], 154), both).reward == pytest.approx(0.1)
    for bad in (-0.1, 1.0, True, "0.1"):
        with pytest.raises(ValueError, match="format_score"):
            RewardConfig(format_score=bad)


def test_the_tinyzero_task_preset_scores_as_tinyzero_and_round_trips():
    from countdown_env.task import CountdownTask
    from countdown_env.task_presets import task_preset

    task = task_preset("tinyzero-3to4")
    assert (task.value_range, task.counts, task.use_all_numbers, task.format_score) == ((1, 99), (3, 4), True, 0.1)
    puzzle = Puzzle([25, 3, 7], 154)
    assert task.score("<think>x</think><answer>(25 - 3) * 7</answer>", puzzle).reward == 1.0
    assert task.score("<think>x</think><answer>25 * 7 - 3</answer>", puzzle).reward == pytest.approx(0.1)
    assert CountdownTask.from_dict(task.to_dict()) == task
    assert CountdownTask.from_dict({k: v for k, v in task.to_dict().items() if k != "format_score"}).format_score == 0
    with pytest.raises(ValueError, match="unknown task preset 'tinyzero'; choose one of"):
        task_preset("tinyzero")
