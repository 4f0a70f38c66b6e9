"""Scoring one model reply for the `verifiers` environments, with the project's verifier (imports no `verifiers`).

`verifiers` hands completions over as plain strings, as lists of dict messages, or as lists of pydantic message
objects (attributes ``role``/``content``, content possibly a list of text parts); :func:`reply_text` reads all
three. Correctness is :func:`countdown_env.rewards.score_completion`'s verdict (the last answer block, verified
exactly; never eval'd); the format metric is :func:`countdown_env.expressions.answers.has_valid_format` (one reasoning
block, then one non-empty answer block, nothing else).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from countdown_env.expressions.answers import has_valid_format
from countdown_env.messages import completion_text
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig, ScoredCompletion, score_completion


def reply_text(completion: Any) -> str:
    """The model's reply: :func:`countdown_env.messages.completion_text` (the last assistant message; ``None`` is
    ``""``)."""
    return "" if completion is None else completion_text(completion)


def puzzle_from_info(info: Any) -> Puzzle:
    """The puzzle of a dataset row's ``info`` (``numbers`` or ``nums``, ``target``); a clear error when they are
    missing."""
    if not isinstance(info, Mapping) or not ("numbers" in info or "nums" in info) or "target" not in info:
        raise ValueError(f"the row's info must hold 'numbers' (or 'nums') and 'target', got {info!r}")
    return Puzzle.from_dict(info)


def score_reply(completion: Any, puzzle: Puzzle, config: RewardConfig) -> ScoredCompletion:
    """Verdict, format check and reward of the reply in ``completion`` (see :func:`reply_text`)."""
    return score_completion(reply_text(completion), puzzle, config)


def correctness(completion: Any, puzzle: Puzzle, config: RewardConfig) -> float:
    """1.0 when the reply's last answer block is a correct solution of ``puzzle``, else 0.0."""
    return 1.0 if score_reply(completion, puzzle, config).verification.correct else 0.0


def format_score(completion: Any, config: RewardConfig) -> float:
    """1.0 when the reply is exactly one reasoning block then one non-empty answer block, else 0.0."""
    text = reply_text(completion)
    return 1.0 if has_valid_format(text, reasoning_tag=config.reasoning_tag, answer_tag=config.answer_tag) else 0.0
