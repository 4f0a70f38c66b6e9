"""Rewards for Countdown completions: binary correctness, an optional format bonus, an optional partial credit.

``reward = 1.0 if the answer is correct else partial``, plus ``format_bonus`` when the completion is exactly one
reasoning block followed by one answer block (:func:`~countdown_env.expressions.answers.has_valid_format`).

Partial credit (``partial_credit = w``, default 0: off; ``0 <= w < 1``) rewards a wrong answer by how close its
exact value comes to the target: ``partial = w * max(0, 1 - |value - target| / target)``. Only an answer that is a
real attempt earns it: the verifier read it and found no fault but the value (reason ``wrong_value``: every number
given, none reused, ``use_all_numbers`` / ``integer_intermediates`` honoured, no false ``= N``), and it combines at
least two of the numbers. A formatted non-answer earns nothing: the bare target (``unknown_number``), a rule-breaking
expression (``reused_number``, ``unused_number``, ...), one given number alone, no answer block. A correct answer
(1.0) always beats a close one (< w < 1).

Format score (``format_score = f``, default 0: off; ``0 <= f < 1``): a wrong answer that sits in an answer block
earns ``f`` instead of 0 (or its partial credit, when that is larger); a completion with no complete answer block
earns 0. This is TinyZero's reward (``format_score=0.1`` in ``verl/utils/reward_score/countdown.py`` of
https://github.com/Jiayi-Pan/TinyZero: 1 correct, 0.1 an answer that is wrong, misuses the numbers or does not
evaluate, 0 no answer), which unlike ``format_bonus`` is not added to a correct answer. TinyZero reads the answer
only on the completion's last line; here the last complete answer block anywhere counts.

:func:`countdown_reward` and the callables from :func:`make_reward_function` follow TRL's reward-function
signature, ``f(prompts, completions, **columns) -> list[float]``: they read the dataset columns ``numbers`` (or
``nums``, TinyZero's and the common Hub Countdown sets' name) and ``target`` (one entry per completion, as TRL
passes them) and accept completions as plain strings or as chat
messages (``[{"role": "assistant", "content": "..."}]``). Nothing here imports TRL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .expressions.answers import extract_answer, has_valid_format
from .expressions.verifier import Verification, verify
from .messages import completion_text
from .puzzle import Puzzle

__all__ = [
    "RewardConfig",
    "ScoredCompletion",
    "closeness",
    "completion_text",
    "score_completion",
    "countdown_reward",
    "make_reward_function",
]


@dataclass(frozen=True)
class RewardConfig:
    """How completions are scored. ``format_bonus`` is added (also to wrong answers) when the format is valid."""

    format_bonus: float = 0.0
    answer_tag: str = "solution"
    reasoning_tag: str = "reasoning"
    use_all_numbers: bool = False
    integer_intermediates: bool = False
    partial_credit: float = 0.0
    format_score: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.format_bonus, bool) or not isinstance(self.format_bonus, (int, float)):
            raise ValueError(f"format_bonus must be a number, got {self.format_bonus!r}")
        if self.format_bonus != self.format_bonus or abs(self.format_bonus) == float("inf"):
            raise ValueError(f"format_bonus must be finite, got {self.format_bonus!r}")
        credit = self.partial_credit
        if isinstance(credit, bool) or not isinstance(credit, (int, float)) or not 0.0 <= credit < 1.0:
            raise ValueError(f"partial_credit must be a number in [0, 1) (a correct answer earns 1), got {credit!r}")
        score = self.format_score
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score < 1.0:
            raise ValueError(f"format_score must be a number in [0, 1) (a correct answer earns 1), got {score!r}")


DEFAULT_CONFIG = RewardConfig()


@dataclass(frozen=True)
class ScoredCompletion:
    """The reward of one completion with the verdict and format check it came from."""

    reward: float
    verification: Verification
    format_ok: bool


def score_completion(completion: Any, puzzle: Puzzle, config: RewardConfig | None = None) -> ScoredCompletion:
    """Verify the last answer block of ``completion`` (text or chat messages) and compute its reward."""
    config = config or DEFAULT_CONFIG
    text = completion_text(completion)
    answer = extract_answer(text, tag=config.answer_tag)
    verification = verify(
        answer,
        puzzle,
        use_all_numbers=config.use_all_numbers,
        integer_intermediates=config.integer_intermediates,
    )
    format_ok = has_valid_format(text, reasoning_tag=config.reasoning_tag, answer_tag=config.answer_tag)
    if verification.correct:
        answer_reward = 1.0
    else:
        answered = float(config.format_score) if answer is not None else 0.0
        answer_reward = max(config.partial_credit * closeness(verification, puzzle), answered)
    reward = answer_reward + (float(config.format_bonus) if format_ok else 0.0)
    return ScoredCompletion(reward=reward, verification=verification, format_ok=format_ok)


PARTIAL_CREDIT_REASON = "wrong_value"
"""The only verdict that earns partial credit: the verifier found no fault but the value."""


def closeness(verification: Verification, puzzle: Puzzle) -> float:
    """``max(0, 1 - |value - target| / target)`` for a wrong answer that is a real attempt (the verdict
    ``wrong_value`` and at least two numbers combined), else 0.0; exact until the final float."""
    if verification.reason != PARTIAL_CREDIT_REASON or verification.value is None:
        return 0.0
    if len(verification.numbers_used) < 2:
        return 0.0
    target = puzzle.target
    return float(max(0, 1 - abs(verification.value - target) / target))


def _rewards(config: RewardConfig, completions, numbers, target, nums=None) -> list[float]:
    if numbers is None:
        numbers = nums
    if numbers is None or target is None:
        raise ValueError("the reward function needs the dataset columns 'numbers' (or 'nums') and 'target'")
    if not (len(completions) == len(numbers) == len(target)):
        raise ValueError(
            f"got {len(completions)} completions but {len(numbers)} 'numbers' and {len(target)} 'target' entries"
        )
    rewards = []
    for completion, nums, tgt in zip(completions, numbers, target, strict=True):
        rewards.append(score_completion(completion, Puzzle(nums, tgt), config).reward)
    return rewards


def countdown_reward(prompts, completions, numbers=None, target=None, nums=None, **kwargs) -> list[float]:
    """TRL reward function with the default :class:`RewardConfig`: 1.0 for a correct answer, else 0.0.

    ``nums`` is an alias of ``numbers``. Extra keyword arguments that TRL passes (``completion_ids``,
    ``trainer_state``, other columns) are ignored.
    """
    return _rewards(DEFAULT_CONFIG, completions, numbers, target, nums)


def make_reward_function(
    config: RewardConfig | None = None, name: str = "countdown_reward"
) -> Callable[..., list[float]]:
    """A TRL reward function for ``config``; its ``__name__`` is ``name`` (TRL logs rewards under it)."""
    config = config or DEFAULT_CONFIG
    if not isinstance(config, RewardConfig):
        raise TypeError(f"config must be a RewardConfig, got {type(config).__name__}")

    def reward_function(prompts, completions, numbers=None, target=None, nums=None, **kwargs) -> list[float]:
        return _rewards(config, completions, numbers, target, nums)

    reward_function.__name__ = name
    reward_function.__qualname__ = name
    reward_function.__doc__ = f"Countdown reward with {config!r} (TRL reward-function signature)."
    reward_function.config = config  # type: ignore[attr-defined]
    return reward_function
