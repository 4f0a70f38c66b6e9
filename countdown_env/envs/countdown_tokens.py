"""``CountdownTokens-v0``: Countdown as a token-level MDP (one action = one token id, or a chunk of ids)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ..puzzle import Puzzle
from ..task import CountdownTask
from ..trajectory import TRUNCATION_REWARDS, Trajectory, score_trajectories, stop_id_set
from .episode_puzzles import episode_task
from .shared_observations import TokenSequence
from .tokenizer_adapter import encode_text, feedback_suffix_text, render_chat, uses_chat_template, vocab_size_of

PROMPT_CACHE_SIZE = 4096
"""Tokenized prompts kept per env (GRPO groups reset to the same puzzle many times)."""

MAX_PROMPT_TOKENS = 4096
"""Default bound on a prompt's token count (Countdown prompts are a few hundred tokens); with ``max_new_tokens``
it bounds the observation length, which async vector envs need to share observations in memory."""

MAX_FEEDBACK_TOKENS = 256
"""Default bound on the ids of one feedback insertion (multi-turn tasks)."""


MAX_EPISODE_TOKENS = 1 << 20
"""Bound of ``max_new_tokens`` and ``max_prompt_tokens`` (a 10**12 budget failed with MemoryError at reset)."""


class CountdownTokensEnv(gym.Env[np.ndarray, "int | np.ndarray"]):
    """Countdown at the token level: the policy emits the completion one token id (or one chunk) per step.

    ## Description

    The same puzzles, prompts and rewards as ``Countdown-v0``, as the MDP a language model actually acts in:
    the state is the token sequence so far, an action appends token ids, and the episode ends at an EOS/stop
    id or at the ``max_new_tokens`` budget. The prompt is tokenized once per puzzle (cached); generated ids
    are appended to a preallocated buffer (amortised O(1) per token) and decoded once, at the end, by
    :func:`countdown_env.trajectory.score_trajectories`, the same function a trainer's reward uses. Decoded
    text is never re-tokenized.

    Several turns (``task.max_turns = N > 1``): when a turn ends (EOS/stop id) with a wrong or malformed answer
    before turn ``N``, the env scores that turn and appends the feedback ids itself (the verifier's verdict,
    ``task.feedback_text``, rendered as a user turn by the chat template and followed by the next assistant
    turn's opening, or between blank lines without a template), and the policy continues from there. Each turn
    has its own ``max_new_tokens`` budget. The feedback ids are environment tokens, not actions: the final
    trajectory's ``env_mask`` is 0 on them (TRL's ``env_mask``/``tool_mask`` convention).

    ## Action Space

    ``Discrete(vocab_size)`` (int64): one token id per step. ``step`` also takes a chunk: a 1-D integer array,
    list or tuple of ids, appended at once (what a rollout engine that generates many tokens per call sends).
    Ids after the first EOS/stop id of a chunk, or beyond the budget, are not appended (counted in the final
    ``info["ignored_tokens"]``). Errors: ``TypeError`` for a non-integer action (float, bool, str, float
    array), ``ValueError`` for an id outside ``[0, vocab_size)``, an empty chunk or an array of rank > 1,
    ``RuntimeError`` for a step before ``reset`` or after the episode ended.

    ## Observation Space

    ``TokenSequence(vocab_size, max_length=max_prompt_tokens + max_turns * max_new_tokens
    + (max_turns - 1) * max_feedback_tokens)``, a
    ``Sequence(Discrete(vocab_size), stack=True)`` of bounded length: a 1-D int64 array of the token ids so far
    (prompt, then completion). A new array each step by default; with ``copy_observations=False`` a read-only view
    of the episode's buffer (zero copy, still valid after later steps since each episode gets a fresh buffer), which
    ``check_env`` flags as shared data.

    ## Rewards

    0.0 on every step but the last. The last step's reward is the episode's score from
    :func:`countdown_env.rewards.score_completion` on the decoded completion (1.0 correct, else 0.0, plus
    ``format_bonus`` for the right format); a truncated episode gets 0.0 (``truncation_reward="zero"``) or its
    score (``"score"``). The per-token reward vector (the reward on the last token) is
    ``info["trajectory"].token_rewards``; it is not an ``info`` entry of its own because Gymnasium's vector envs
    batch ``info`` arrays into one fixed shape, and completions differ in length. Over several turns the last
    step's reward is ``task.turn_reward(score, t)`` for the turn ``t`` that ended the episode (the discount
    ``turn_discount ** (t - 1)``, also on a truncated turn's score).

    ## Starting State

    As ``Countdown-v0``: a puzzle drawn with the seeded RNG, or pinned by ``options={"puzzle": …}`` or
    ``{"index": i}``. The prompt is rendered with the tokenizer's ``apply_chat_template`` (system + user
    messages, generation prompt added) when it has one, else it is the plain ``prompt_text``; it is encoded
    without added special tokens. Reset ``info``: ``puzzle``, ``index``, ``messages``, ``prompt_length``.

    ## Episode End

    - Termination: the appended id is the tokenizer's ``eos_token_id`` (int or list) or one of ``stop_ids``.
      That id is part of the completion ids, not of the decoded text.
    - Truncation: ``max_new_tokens`` ids appended in one turn without an EOS/stop id (this ends the episode
      whatever turns are left).
    - Several turns: termination needs a correct answer or the last turn's EOS/stop id.

    Final ``info``: ``prompt_length``, ``completion`` (decoded text of the last turn), ``verification``,
    ``format_ok`` (both of the last turn), ``trajectory`` (the :class:`~countdown_env.trajectory.Trajectory`),
    ``puzzle``, ``index``, ``ignored_tokens``, ``turn``. A step that ends a failed turn and continues returns
    ``info`` with ``turn``, ``verification``, ``feedback`` (text) and ``feedback_length`` (ids appended); other
    intermediate steps return an empty ``info``.

    ## Arguments

    ``gym.make("CountdownTokens-v0", tokenizer=tok, **kwargs)`` with:

    - ``tokenizer`` (required): anything with ``encode``, ``decode`` and ``eos_token_id``
      (``apply_chat_template`` and ``batch_decode`` used when present).
    - ``max_new_tokens``: completion budget (default 256, at least 1).
    - ``stop_ids``: ids that end the episode besides ``eos_token_id``.
    - ``truncation_reward``: ``"zero"`` (default) or ``"score"``.
    - ``vocab_size``: override the tokenizer's (default ``len(tokenizer)``, counting added tokens).
    - ``use_chat_template``: True/False to force, None (default) to use it when available.
    - ``copy_observations``: see Observation Space (default True).
    - ``max_prompt_tokens``: the longest prompt allowed (default 4096; a longer one raises ``ValueError`` at reset).
    - ``max_feedback_tokens``: the longest feedback insertion (default 256); a verdict echoing more model text than
      fits is cut to fit (never an error on model text).
    - ``task`` or its fields as keywords, ``generator``, ``puzzles``: as ``Countdown-v0``.
    - ``render_mode``: None or ``"ansi"`` (``render()`` decodes the whole sequence so far).

    ## Vector Environments

    As ``Countdown-v0``: ``gym.make_vec("CountdownTokens-v0", ..., vectorization_mode="sync" | "async")`` resets a
    finished episode within the same step (``autoreset_mode="SameStep"``), and ``async`` mode shares the
    bounded-length observations in memory (:mod:`countdown_env.envs.shared_observations`); no extra vector keywords
    are needed. Stepping a whole completion as one chunk per env scores an episode at every step.

    ## Version History

    - v0: initial version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        tokenizer: Any,
        *,
        max_new_tokens: int = 256,
        stop_ids: Sequence[int] | int | None = None,
        truncation_reward: str = "zero",
        vocab_size: int | None = None,
        use_chat_template: bool | None = None,
        copy_observations: bool = True,
        max_prompt_tokens: int = MAX_PROMPT_TOKENS,
        max_feedback_tokens: int = MAX_FEEDBACK_TOKENS,
        task: CountdownTask | None = None,
        generator: Any = None,
        puzzles: Sequence[Puzzle | Mapping[str, Any]] | None = None,
        render_mode: str | None = None,
        **task_fields: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        if tokenizer is None or not callable(getattr(tokenizer, "decode", None)):
            raise TypeError("CountdownTokens-v0 needs a tokenizer with encode() and decode()")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        if isinstance(max_prompt_tokens, bool) or not isinstance(max_prompt_tokens, (int, np.integer)):
            raise ValueError(f"max_prompt_tokens must be a positive integer, got {max_prompt_tokens!r}")
        if max_prompt_tokens < 1:
            raise ValueError(f"max_prompt_tokens must be a positive integer, got {max_prompt_tokens!r}")
        if max_new_tokens > MAX_EPISODE_TOKENS or max_prompt_tokens > MAX_EPISODE_TOKENS:
            raise ValueError(
                f"max_new_tokens and max_prompt_tokens must be <= {MAX_EPISODE_TOKENS} (the episode's id buffer is "
                f"allocated at reset), got {max_new_tokens} and {max_prompt_tokens}"
            )
        if (
            isinstance(max_feedback_tokens, bool)
            or not isinstance(max_feedback_tokens, (int, np.integer))
            or max_feedback_tokens < 1
        ):
            raise ValueError(f"max_feedback_tokens must be a positive integer, got {max_feedback_tokens!r}")
        if truncation_reward not in TRUNCATION_REWARDS:
            raise ValueError(f"truncation_reward must be one of {TRUNCATION_REWARDS}, got {truncation_reward!r}")
        self.tokenizer = tokenizer
        self.max_new_tokens = int(max_new_tokens)
        self.truncation_reward = truncation_reward
        self.vocab_size = vocab_size_of(tokenizer, vocab_size)
        self.stop_ids = stop_id_set(tokenizer, stop_ids)
        bad = sorted(i for i in self.stop_ids if i >= self.vocab_size)
        if bad:
            raise ValueError(f"EOS/stop ids {bad} are outside the vocabulary [0, {self.vocab_size})")
        self._is_stop = np.zeros(self.vocab_size, dtype=bool)
        self._is_stop[list(self.stop_ids)] = True
        self.use_chat_template = uses_chat_template(tokenizer, use_chat_template)
        self.copy_observations = bool(copy_observations)

        self.max_prompt_tokens = int(max_prompt_tokens)
        self.max_feedback_tokens = int(max_feedback_tokens)
        self.task, self.source = episode_task(task, generator, puzzles, task_fields, "CountdownTokens-v0")
        self.max_turns = self.task.max_turns
        self.template = self.task.prompt_template
        self.reward_config = self.task.reward_config
        self.use_all_numbers = self.task.use_all_numbers
        self.render_mode = render_mode

        self.action_space = spaces.Discrete(self.vocab_size)
        self.max_length = (
            self.max_prompt_tokens
            + self.max_turns * self.max_new_tokens
            + (self.max_turns - 1) * self.max_feedback_tokens
        )
        self.observation_space = TokenSequence(self.vocab_size, self.max_length)

        self._prompt_cache: dict[Puzzle, np.ndarray] = {}
        self._buffer: np.ndarray | None = None
        self._length = 0
        self._prompt_length = 0
        self._end = self._prompt_length
        self._done = True
        self._puzzle: Puzzle | None = None
        self._index: int | None = None
        # Several turns: the current turn (1-based), where it started, which ids the env inserted, ids ignored.
        self._turn = 1
        self._turn_start = 0
        self._env_mask: np.ndarray | None = None
        self._ignored = 0

    # -- prompt -------------------------------------------------------------------------------------------------
    def prompt_ids(self, puzzle: Puzzle) -> np.ndarray:
        """The read-only int64 prompt ids for ``puzzle`` (tokenized once, then cached)."""
        ids = self._prompt_cache.get(puzzle)
        if ids is None:
            if self.use_chat_template:
                text = render_chat(self.tokenizer, self.task.messages(puzzle))
            else:
                text = self.task.prompt_text(puzzle)
            ids = encode_text(self.tokenizer, text)
            if len(ids) > self.max_prompt_tokens:
                raise ValueError(f"the prompt has {len(ids)} tokens, max_prompt_tokens is {self.max_prompt_tokens}")
            too_big = ids[ids >= self.vocab_size]
            if len(too_big):
                raise ValueError(f"the tokenizer encoded the prompt to id {int(too_big[0])} >= vocab_size")
            ids.flags.writeable = False
            if len(self._prompt_cache) >= PROMPT_CACHE_SIZE:
                self._prompt_cache.pop(next(iter(self._prompt_cache)))
            self._prompt_cache[puzzle] = ids
        return ids

    # -- Gymnasium API ------------------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._puzzle, self._index = self.source.select(self.np_random, options)
        prompt = self.prompt_ids(self._puzzle)
        self._prompt_length = len(prompt)
        self._end = self._prompt_length + self.max_new_tokens
        # A fresh buffer per episode: views handed out for an earlier episode stay valid.
        size = self._end if self.max_turns == 1 else self._prompt_length + self.max_length - self.max_prompt_tokens
        self._buffer = np.empty(size, dtype=np.int64)
        self._buffer[: self._prompt_length] = prompt
        self._length = self._prompt_length
        self._turn = 1
        self._turn_start = self._prompt_length
        self._env_mask = None if self.max_turns == 1 else np.ones(size, dtype=np.int64)
        self._ignored = 0
        self._done = False
        info = {
            "puzzle": self._puzzle,
            "index": self._index,
            "messages": self.task.messages(self._puzzle),
            "prompt_length": self._prompt_length,
        }
        return self._observation(), info

    def step(self, action: int | np.ndarray | Sequence[int]) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._done:
            if self._buffer is None:
                raise RuntimeError("CountdownTokens-v0: call reset() before step()")
            raise RuntimeError("CountdownTokens-v0: the episode has ended (terminated or truncated); call reset()")
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
            return self._append_one(int(action))
        return self._append_chunk(self._as_chunk(action))

    @property
    def tokens_left_in_turn(self) -> int:
        """Ids the current turn may still append before it is truncated (0 once the episode ended)."""
        return 0 if self._done else self._end - self._length

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._buffer is None:
            return None
        return self.tokenizer.decode(self._buffer[: self._length].tolist())

    # -- internals ----------------------------------------------------------------------------------------------
    def _observation(self) -> np.ndarray:
        view = self._buffer[: self._length]
        if self.copy_observations:
            return view.copy()
        view.flags.writeable = False
        return view

    def _append_one(self, token: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not 0 <= token < self.vocab_size:
            raise ValueError(f"token id {token} is outside the vocabulary [0, {self.vocab_size})")
        self._buffer[self._length] = token
        self._length += 1
        terminated = token in self.stop_ids
        truncated = not terminated and self._length == self._end
        if terminated or truncated:
            return self._finish(terminated, truncated, ignored=0)
        return self._observation(), 0.0, False, False, {}

    def _as_chunk(self, action: Any) -> np.ndarray:
        if isinstance(action, np.ndarray):
            chunk = action
        elif isinstance(action, (list, tuple)):
            if any(isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) for a in action):
                raise TypeError("CountdownTokens-v0: a chunk must hold integer token ids only")
            bad = next((int(a) for a in action if not 0 <= int(a) < self.vocab_size), None)
            if bad is not None:  # before the int64 conversion, which overflows on ids like 2**70
                raise ValueError(f"token id {bad} is outside the vocabulary [0, {self.vocab_size})")
            chunk = np.asarray(action, dtype=np.int64)
        else:
            raise TypeError(
                f"CountdownTokens-v0: an action is a token id (int) or a 1-D integer array/list of ids, "
                f"got {type(action).__name__}"
            )
        if chunk.dtype == np.bool_ or not np.issubdtype(chunk.dtype, np.integer):
            raise TypeError(f"CountdownTokens-v0: token ids must have an integer dtype, got {chunk.dtype}")
        if chunk.ndim == 0:
            return chunk.reshape(1)
        if chunk.ndim != 1:
            raise ValueError(f"CountdownTokens-v0: a chunk of ids must be 1-D, got shape {chunk.shape}")
        if chunk.size == 0:
            raise ValueError("CountdownTokens-v0: empty chunk of token ids")
        chunk = chunk.astype(np.int64, copy=False)
        # One reduction checks both bounds: as unsigned, a negative id is huge.
        if chunk.view(np.uint64).max() >= self.vocab_size:
            bad = int(chunk.min()) if chunk.min() < 0 else int(chunk.max())
            raise ValueError(f"token id {bad} is outside the vocabulary [0, {self.vocab_size})")
        return chunk

    def _append_chunk(self, chunk: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        room = self._end - self._length
        window = chunk[:room]
        is_stop = self._is_stop[window]
        first = int(is_stop.argmax())
        terminated = bool(is_stop[first])
        take = first + 1 if terminated else len(window)
        self._buffer[self._length : self._length + take] = window[:take]
        self._length += take
        truncated = not terminated and self._length == self._end
        if terminated or truncated:
            return self._finish(terminated, truncated, ignored=len(chunk) - take)
        return self._observation(), 0.0, False, False, {}

    def _finish(self, terminated: bool, truncated: bool, ignored: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self.max_turns > 1:
            return self._end_turn(terminated, truncated, ignored)
        self._done = True
        trajectory: Trajectory = score_trajectories(
            [self._puzzle],
            [self._buffer[self._prompt_length : self._length]],
            self.tokenizer,
            prompt_ids=[self._buffer[: self._prompt_length]],
            reward_config=self.reward_config,
            max_new_tokens=self.max_new_tokens,
            stop_ids=list(self.stop_ids),
            truncation_reward=self.truncation_reward,
        )[0]
        return self._observation(), trajectory.reward, terminated, truncated, self._final_info(trajectory, ignored)

    # -- several turns ------------------------------------------------------------------------------------------
    def _end_turn(self, terminated: bool, truncated: bool, ignored: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """A turn ended: finish the episode (correct, last turn or truncated) or append the feedback and go on."""
        self._ignored += ignored
        turn: Trajectory = score_trajectories(
            [self._puzzle],
            [self._buffer[self._turn_start : self._length]],
            self.tokenizer,
            reward_config=self.reward_config,
            max_new_tokens=self.max_new_tokens,
            stop_ids=list(self.stop_ids),
            truncation_reward=self.truncation_reward,
        )[0]
        if truncated or turn.verification.correct or self._turn >= self.max_turns:
            return self._finish_turns(turn, terminated, truncated)
        feedback, ids = self._bounded_feedback(turn.verification)
        if len(ids) and int(ids.max()) >= self.vocab_size:
            raise ValueError(f"the tokenizer encoded the feedback to id {int(ids.max())} >= vocab_size")
        start = self._length
        self._buffer[start : start + len(ids)] = ids
        self._env_mask[start : start + len(ids)] = 0
        self._length += len(ids)
        info = {
            "turn": self._turn,
            "verification": turn.verification,
            "feedback": feedback,
            "feedback_length": len(ids),
        }
        self._turn += 1
        self._turn_start = self._length
        self._end = self._length + self.max_new_tokens
        return self._observation(), 0.0, False, False, info

    def _feedback_ids(self, verification, max_verdict_chars: int | None) -> tuple[str, np.ndarray]:
        feedback = self.task.feedback_text(verification, self._puzzle, self._turn, max_verdict_chars)
        return feedback, encode_text(
            self.tokenizer, feedback_suffix_text(self.tokenizer, feedback, self.use_chat_template)
        )

    def _bounded_feedback(self, verification) -> tuple[str, np.ndarray]:
        """The feedback and its ids within ``max_feedback_tokens`` by construction: a verdict that echoes too much
        model text (a long expression, a 300-digit value, 60 unknown numbers) is cut, with the longest cut that
        fits found by bisection on its characters. Only a budget too small for the template itself is an error."""
        feedback, ids = self._feedback_ids(verification, None)
        if len(ids) <= self.max_feedback_tokens:
            return feedback, ids
        low, high = 0, len(feedback)  # verdict characters that fit: low does (checked below), high does not
        best = self._feedback_ids(verification, 0)
        if len(best[1]) > self.max_feedback_tokens:
            raise ValueError(
                f"max_feedback_tokens={self.max_feedback_tokens} is too small for the feedback template itself "
                f"({len(best[1])} tokens without any verdict)"
            )
        while high - low > 1:
            middle = (low + high) // 2
            candidate = self._feedback_ids(verification, middle)
            if len(candidate[1]) <= self.max_feedback_tokens:
                low, best = middle, candidate
            else:
                high = middle
        return best

    def _finish_turns(self, last: Trajectory, terminated: bool, truncated: bool) -> tuple:
        self._done = True
        completion = self._buffer[self._prompt_length : self._length].copy()
        mask = self._env_mask[self._prompt_length : self._length].copy()
        completion.flags.writeable = False
        mask.flags.writeable = False
        prompt = self._buffer[: self._prompt_length].copy()
        prompt.flags.writeable = False
        trajectory = Trajectory(
            puzzle=self._puzzle,
            prompt_ids=prompt,
            completion_ids=completion,
            completion_text=last.completion_text,
            reward=self.task.turn_reward(last.reward, self._turn),
            verification=last.verification,
            format_ok=last.format_ok,
            truncated=last.truncated,
            env_mask=mask,
            turns=self._turn,
        )
        info = {**self._final_info(trajectory, self._ignored), "turn": self._turn}
        return self._observation(), trajectory.reward, terminated, truncated, info

    def _final_info(self, trajectory: Trajectory, ignored: int) -> dict[str, Any]:
        """The info of an episode's last step (see the class docstring)."""
        return {
            "prompt_length": self._prompt_length,
            "completion": trajectory.completion_text,
            "verification": trajectory.verification,
            "format_ok": trajectory.format_ok,
            "trajectory": trajectory,
            "puzzle": self._puzzle,
            "index": self._index,
            "ignored_tokens": ignored,
        }
