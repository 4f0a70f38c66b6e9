"""Trajectories: the record a learner consumes, and batched scoring of generated token ids.

A :class:`Trajectory` is one finished episode of the token-level MDP: the prompt ids, the completion ids the
policy emitted, the decoded completion, the reward and the :class:`~countdown_env.expressions.verifier.Verification`
behind it. :func:`score_trajectories` builds a batch of them straight from generated ids (no token-by-token stepping),
and the token environment calls the very same function at the end of each episode, so a rollout engine, the
environment and a trainer's reward function can never disagree on a reward.

Episode end rules (shared with ``CountdownTokens-v0``):

- A completion *terminates* at its first EOS or stop id within the first ``max_new_tokens`` ids; that id stays
  in ``completion_ids`` (the policy chose it and the reward lands on it) but is not decoded into
  ``completion_text``. Ids after it (padding) are dropped.
- Otherwise, when ``max_new_tokens`` is given and the completion has at least that many ids, it is *truncated*
  to ``max_new_tokens`` ids; its reward is ``0.0`` (``truncation_reward="zero"``, the default) or the score of
  the truncated text (``"score"``). The verification is computed either way.
- Otherwise (the generation engine stopped on its own, e.g. on a stop string) it is complete as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .expressions.verifier import Verification
from .puzzle import Puzzle, as_puzzle
from .rewards import RewardConfig, score_completion

TRUNCATION_REWARDS = ("zero", "score")


@dataclass(frozen=True, eq=False)
class Trajectory:
    """One scored episode: ``prompt_ids`` + ``completion_ids`` and what they earned.

    Attributes:
        puzzle: the puzzle the prompt asked.
        prompt_ids: prompt token ids, int64 (empty when the caller did not give them).
        completion_ids: generated ids, int64, cut at the episode end (terminating EOS/stop id included).
        completion_text: the decoded completion, without the terminating EOS/stop id.
        reward: the episode return (all of it on the last completion token, see :attr:`token_rewards`).
        verification: the verifier's verdict on ``completion_text``.
        format_ok: whether the completion follows the template's tag format.
        truncated: True when the episode hit ``max_new_tokens`` without an EOS/stop id.
        logprobs: optional per-token log-probabilities aligned with ``completion_ids`` (float64).
        env_mask: optional 0/1 int64 mask aligned with ``completion_ids``: 1 on the policy's ids, 0 on ids the
            environment inserted (feedback between turns); ``None`` means every id is the policy's.
        turns: how many answers (turns) the episode took; ``completion_text``, ``verification`` and
            ``format_ok`` are those of the last one when ``turns > 1``.

    Arrays are read-only. Equality compares every field (arrays element-wise).
    """

    puzzle: Puzzle
    prompt_ids: np.ndarray
    completion_ids: np.ndarray
    completion_text: str
    reward: float
    verification: Verification
    format_ok: bool
    truncated: bool
    logprobs: np.ndarray | None = None
    env_mask: np.ndarray | None = None
    turns: int = 1

    @property
    def token_rewards(self) -> np.ndarray:
        """Per-token rewards aligned with ``completion_ids``: zeros, with :attr:`reward` on the last token."""
        rewards = np.zeros(len(self.completion_ids), dtype=np.float64)
        if len(rewards):
            rewards[-1] = self.reward
        return rewards

    @property
    def input_ids(self) -> np.ndarray:
        """Prompt and completion ids concatenated (what the policy saw plus what it emitted)."""
        return np.concatenate([self.prompt_ids, self.completion_ids])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trajectory):
            return NotImplemented
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None  # mutable-looking arrays inside: not hashable

    def __repr__(self) -> str:
        return (
            f"Trajectory(puzzle={self.puzzle}, prompt={len(self.prompt_ids)} ids, "
            f"completion={len(self.completion_ids)} ids, reward={self.reward}, reason={self.verification.reason!r}, "
            f"format_ok={self.format_ok}, truncated={self.truncated}, completion_text={self.completion_text!r})"
        )


def token_ids(values: Any, what: str) -> np.ndarray:
    """``values`` as a 1-D int64 array; raises TypeError/ValueError naming ``what`` on anything else."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a 1-D sequence of token ids, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what} must hold integer token ids, got dtype {arr.dtype}")
    if arr.min() < 0:
        raise ValueError(f"{what} holds a negative token id {int(arr.min())}")
    return arr.astype(np.int64, copy=False)


def stop_id_set(tokenizer: Any, stop_ids: Sequence[int] | int | None = None) -> frozenset[int]:
    """The ids that end an episode: the tokenizer's ``eos_token_id`` (int, list or None) plus ``stop_ids``."""
    found: set[int] = set()
    for source in (getattr(tokenizer, "eos_token_id", None), stop_ids):
        if source is None:
            continue
        values = [source] if isinstance(source, (int, np.integer)) else list(source)
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"stop/EOS ids must be non-negative integers, got {value!r}")
            found.add(int(value))
    return frozenset(found)


def episode_end(ids: np.ndarray, stop_ids: np.ndarray, max_new_tokens: int | None) -> tuple[int, int, bool]:
    """Where an episode over ``ids`` ends: ``(n_kept, n_text, truncated)``.

    ``n_kept`` ids belong to the episode, the first ``n_text`` of them are decoded (the terminating stop id is
    not), and ``truncated`` says the budget ran out before any stop id.
    """
    window = ids if max_new_tokens is None else ids[:max_new_tokens]
    if len(stop_ids) and len(window):
        # A few equality passes beat np.isin's sort for the usual one to three stop ids.
        if len(stop_ids) <= 4:
            is_stop = window == stop_ids[0]
            for stop in stop_ids[1:]:
                is_stop |= window == stop
        else:
            is_stop = np.isin(window, stop_ids)
        end = int(is_stop.argmax())
        if is_stop[end]:
            return end + 1, end, False
    if max_new_tokens is not None and len(ids) >= max_new_tokens:
        return max_new_tokens, max_new_tokens, True
    return len(ids), len(ids), False


def decode_batch(tokenizer: Any, rows: list[list[int]]) -> list[str]:
    """Decode rows of ids with ``batch_decode`` when the tokenizer has it, else ``decode`` row by row."""
    if not rows:
        return []
    batch_decode = getattr(tokenizer, "batch_decode", None)
    texts = batch_decode(rows) if callable(batch_decode) else [tokenizer.decode(row) for row in rows]
    if len(texts) != len(rows) or not all(isinstance(t, str) for t in texts):
        raise TypeError("tokenizer decoding must return one str per row of ids")
    return list(texts)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, copy=True)
    arr.flags.writeable = False
    return arr


def score_trajectories(
    puzzles: Sequence[Puzzle | Mapping[str, Any]],
    completion_ids: Sequence[Sequence[int] | np.ndarray],
    tokenizer: Any,
    *,
    prompt_ids: Sequence[Sequence[int] | np.ndarray] | None = None,
    reward_config: RewardConfig | None = None,
    max_new_tokens: int | None = None,
    stop_ids: Sequence[int] | int | None = None,
    logprobs: Sequence[Sequence[float] | np.ndarray] | None = None,
    truncation_reward: str = "zero",
) -> list[Trajectory]:
    """Score a batch of generated completions into :class:`Trajectory` records, without stepping.

    Args:
        puzzles: one puzzle (or ``{"numbers", "target"}`` mapping) per row.
        completion_ids: generated ids per row (lists or 1-D integer arrays; trailing padding after an EOS/stop id
            is fine). Not re-tokenized: ids are decoded once, in one ``batch_decode`` call when available.
        tokenizer: anything with ``decode`` (``batch_decode`` is used when present); its ``eos_token_id``
            (int, list or None) ends an episode.
        prompt_ids: optional prompt ids per row, stored as given.
        reward_config: the :class:`~countdown_env.rewards.RewardConfig` for
            :func:`~countdown_env.rewards.score_completion` (default config when None).
        max_new_tokens: the generation budget; a row reaching it without an EOS/stop id is truncated.
        stop_ids: extra ids that end an episode like EOS (e.g. a second end-of-turn marker).
        logprobs: optional per-token log-probabilities per row, same length as that row's ``completion_ids``;
            cut with it.
        truncation_reward: ``"zero"`` (default) gives a truncated completion reward 0.0; ``"score"`` scores
            its text like any other.

    Returns:
        One :class:`Trajectory` per row, in order.
    """
    if truncation_reward not in TRUNCATION_REWARDS:
        raise ValueError(f"truncation_reward must be one of {TRUNCATION_REWARDS}, got {truncation_reward!r}")
    if max_new_tokens is not None and (
        isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1
    ):
        raise ValueError(f"max_new_tokens must be a positive integer or None, got {max_new_tokens!r}")
    n = len(puzzles)
    for name, column in (("completion_ids", completion_ids), ("prompt_ids", prompt_ids), ("logprobs", logprobs)):
        if column is not None and len(column) != n:
            raise ValueError(f"{name} has {len(column)} rows but puzzles has {n}")
    stops = np.fromiter(stop_id_set(tokenizer, stop_ids), dtype=np.int64)

    kept: list[np.ndarray] = []
    text_rows: list[list[int]] = []
    truncated_flags: list[bool] = []
    for i in range(n):
        ids = token_ids(completion_ids[i], f"completion_ids[{i}]")
        n_kept, n_text, truncated = episode_end(ids, stops, max_new_tokens)
        kept.append(ids[:n_kept])
        text_rows.append(ids[:n_text].tolist())
        truncated_flags.append(truncated)
    texts = decode_batch(tokenizer, text_rows)

    trajectories = []
    for i in range(n):
        puzzle = as_puzzle(puzzles[i])
        scored = score_completion(texts[i], puzzle, reward_config)
        reward = 0.0 if truncated_flags[i] and truncation_reward == "zero" else float(scored.reward)
        row_logprobs = None
        if logprobs is not None and logprobs[i] is not None:
            row_logprobs = np.asarray(logprobs[i], dtype=np.float64)
            if row_logprobs.ndim != 1 or len(row_logprobs) != len(completion_ids[i]):
                raise ValueError(
                    f"logprobs[{i}] must be 1-D with one value per completion id "
                    f"({len(completion_ids[i])}), got shape {row_logprobs.shape}"
                )
            row_logprobs = _readonly(row_logprobs[: len(kept[i])])
        prompt = token_ids(prompt_ids[i], f"prompt_ids[{i}]") if prompt_ids is not None else np.zeros(0, np.int64)
        trajectories.append(
            Trajectory(
                puzzle=puzzle,
                prompt_ids=_readonly(prompt),
                completion_ids=_readonly(kept[i]),
                completion_text=texts[i],
                reward=reward,
                verification=scored.verification,
                format_ok=bool(scored.format_ok),
                truncated=truncated_flags[i],
                logprobs=row_logprobs,
            )
        )
    return trajectories
