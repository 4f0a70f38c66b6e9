"""``Countdown-v0``: the Countdown puzzle as a text-level Gymnasium environment (one answer per step; one step per
episode unless the task allows several turns)."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from ..messages import completion_text
from ..puzzle import Puzzle
from ..task import CountdownTask
from .episode_puzzles import episode_task
from .shared_observations import PromptText

MAX_PROMPT_CHARS = 1 << 16
"""Bound of the observation space's text length (prompts are a few hundred characters)."""


MAX_RESPONSE_CHARS = 200_000
"""Default bound of a response's length in the action space (the verifier refuses longer *answers* at once)."""


class ResponseText(spaces.Text):
    """The action space: ``sample()`` draws printable ASCII as ``Text`` does, but ``contains`` holds every ``str``
    up to ``max_length`` characters, whatever its characters (``"<solution>3 × 7</solution>"`` is a reply the env
    accepts and scores, so the space contains it)."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def text_charset(*texts: str | None) -> frozenset[str]:
    """Printable ASCII plus every character of ``texts`` (a template may use non-ASCII wording)."""
    chars = set(string.printable)
    for text in texts:
        chars.update(text or "")
    return frozenset(chars)


def response_text(action: Any) -> str:
    """A response as text: a str, or chat messages (their last assistant message:
    :func:`countdown_env.messages.completion_text`)."""
    try:
        return completion_text(action)
    except TypeError:
        raise TypeError(
            f"Countdown-v0 actions are response text (str) or chat messages ending with the answer, got "
            f"{type(action).__name__}"
        ) from None


class CountdownEnv(gym.Env[str, str]):
    """Countdown at the text level: the observation is a prompt, the action the model's whole response.

    ## Description

    Given numbers and a target, write an expression with ``+ - * /`` and parentheses that equals the target,
    each number used at most once (exactly once with ``use_all_numbers=True``). Each episode is one puzzle; each
    step is one answer. The answer is read from the last ``<solution>…</solution>`` block (the template's answer
    tag) and checked by the safe verifier.

    With ``task.max_turns = 1`` (the default) the episode is one step. With ``max_turns = N > 1`` a wrong or
    malformed answer before turn ``N`` does not end the episode: the next observation is a feedback message built
    from the verifier's verdict (``task.feedback_text``: the value the answer reached, the numbers it misused, why
    it could not be read, and the attempts left; never a solution), and the agent answers again.

    ## Action Space

    :class:`ResponseText` ``(max_response_chars, min_length=0)``: every ``str`` of at most ``max_response_chars``
    characters (non-ASCII too); ``action_space.sample()`` draws printable ASCII. ``step`` accepts such a ``str``
    or chat messages (their last assistant message is the answer). Anything else raises ``TypeError``.

    ## Observation Space

    ``Text(65536)`` over printable ASCII plus the template's characters: the whole prompt as one plain string
    (system turn, blank line, user turn; see :func:`countdown_env.prompts.prompt_text`). The chat form is in
    ``info["messages"]``. After a failed turn that does not end the episode the observation is the feedback
    message, and ``info["messages"]`` is the whole conversation so far (prompt, each answer as an assistant turn,
    each feedback as a user turn), ready for ``apply_chat_template``. The observation after the episode's last
    step is the prompt again.

    ## Rewards

    ``task.score`` (:func:`countdown_env.rewards.score_completion` with the task's tags and rules): 1.0 for a
    correct answer, else 0.0, plus ``format_bonus`` when the response follows the template's tag format. Rewards
    come only from there, so this env and a trainer's reward function (``task.reward_function()``) agree.
    Over several turns, the step that ends the episode at turn ``t`` (a correct answer, or the last turn) earns
    ``task.turn_reward(score, t) = turn_discount ** (t - 1) * score``; the steps before it earn 0.0.

    ## Starting State

    ``reset`` draws a puzzle index from the env's seeded RNG and takes that puzzle from the generator (or the
    ``puzzles`` list). ``options={"puzzle": Puzzle | {"numbers", "target"}}`` or ``options={"index": i}`` pins
    it, e.g. so that all members of a GRPO group get the same puzzle. ``info``: ``puzzle``, ``index`` (None when
    pinned by value), ``messages`` (chat messages for ``apply_chat_template``).

    ## Episode End

    An episode terminates at a correct answer or after ``task.max_turns`` answers (default 1: after its one
    step); it is never truncated. Stepping again before ``reset`` raises ``RuntimeError``. Step ``info``:
    ``verification`` (a :class:`~countdown_env.expressions.verifier.Verification`), ``format_ok``, ``puzzle``,
    ``index``, ``turn`` (1-based), and after a failed turn that continues, ``feedback`` and ``messages``.

    ## Arguments

    ``gym.make("Countdown-v0", task=task)`` with a :class:`~countdown_env.task.CountdownTask`, or
    ``gym.make("Countdown-v0", **task_fields)`` with its fields as keywords (one task is built from them):

    - ``template``: ``"default"`` (``<reasoning>``/``<solution>``), ``"tinyzero"`` (``<think>``/``<answer>``) or
      ``"compact"`` (numbers and target only, the default's tags).
    - ``format_bonus``: added to the reward when the format is right (default 0.0).
    - ``max_turns``, ``turn_discount``, ``feedback``: answers per episode, the per-turn reward discount and the
      feedback template (see Description and Rewards).
    - ``use_all_numbers``, ``integer_intermediates``: the rules; they set the prompt, the verifier and the
      generator alike.
    - generator settings (``n_numbers`` — an int, a ``(lo, hi)`` range or weights —, ``value_range``,
      ``target_range``, ``operators``, ``require_solvable``, ``min_solutions``, ``max_solutions``, ``seed`` …):
      the task's ``seed`` fixes which puzzle each index names; ``reset(seed=…)`` fixes which indices are drawn.
    - ``generator``: a ready index-addressable generator; or ``puzzles``: a fixed list to draw from (then only
      the template, bonus and rules apply).
    - ``max_response_chars``: the action space's length bound (default 200 000).
    - ``render_mode``: None or ``"ansi"`` (``render()`` returns the conversation so far and, after a step, the
      verdict: ``[turn t: correct|wrong (reason, value v)]``).

    ## Vector Environments

    ``gym.make_vec("Countdown-v0", num_envs=4, vectorization_mode="sync" | "async", **kwargs)`` scores every
    step's actions: the registration passes ``vector_kwargs={"autoreset_mode": "SameStep"}``, so a finished
    episode is reset within the same step (its reply is scored, the next prompt is returned, and the step's
    ``info`` is in ``info["final_info"]``). Under Gymnasium's default next-step autoreset every other step would be
    a reset step whose replies are dropped. The registered ``vector_kwargs`` replace any passed to ``make_vec``;
    for other vector settings build the vector env yourself, e.g.
    ``gym.vector.SyncVectorEnv([lambda: gym.make("Countdown-v0", task=task)] * 4, autoreset_mode=...)``.
    ``async`` mode shares the prompts in memory (see :mod:`countdown_env.envs.shared_observations`).

    ## Version History

    - v0: initial version.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        *,
        task: CountdownTask | None = None,
        generator: Any = None,
        puzzles: Sequence[Puzzle | Mapping[str, Any]] | None = None,
        max_response_chars: int = MAX_RESPONSE_CHARS,
        render_mode: str | None = None,
        **task_fields: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.task, self.source = episode_task(task, generator, puzzles, task_fields, "Countdown-v0")
        self.template = self.task.prompt_template
        self.reward_config = self.task.reward_config
        self.use_all_numbers = self.task.use_all_numbers
        self.render_mode = render_mode
        feedback = self.task.feedback_template
        charset = text_charset(self.template.system, self.template.user, *vars(feedback).values())
        self.observation_space = PromptText(MAX_PROMPT_CHARS, min_length=1, charset=charset)
        self.action_space = ResponseText(int(max_response_chars), min_length=0, charset=text_charset())
        self._puzzle: Puzzle | None = None
        self._index: int | None = None
        self._prompt: str = ""
        self._response: str | None = None
        self._verdict: str = ""
        self._messages: list[dict[str, str]] = []
        self._turn = 0
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._puzzle, self._index = self.source.select(self.np_random, options)
        self._prompt = self.task.prompt_text(self._puzzle)
        self._response = None
        self._turn = 0
        self._done = False
        self._messages = self.task.messages(self._puzzle)
        messages = [dict(m) for m in self._messages]
        return self._prompt, {"puzzle": self._puzzle, "index": self._index, "messages": messages}

    def step(self, action: str | Sequence[Mapping[str, str]]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._puzzle is None:
            raise RuntimeError("Countdown-v0: call reset() before step()")
        if self._done:
            raise RuntimeError("Countdown-v0: the episode has terminated; call reset()")
        self._response = response_text(action)
        scored = self.task.score(self._response, self._puzzle)
        self._turn += 1
        verdict = scored.verification
        value = "" if verdict.value is None else f", value {verdict.value}"
        self._verdict = f"[turn {self._turn}: {'correct' if verdict.correct else 'wrong'} ({verdict.reason}{value})]"
        info = {
            "verification": scored.verification,
            "format_ok": bool(scored.format_ok),
            "puzzle": self._puzzle,
            "index": self._index,
            "turn": self._turn,
        }
        if scored.verification.correct or self._turn >= self.task.max_turns:
            self._done = True
            return self._prompt, self.task.turn_reward(scored.reward, self._turn), True, False, info
        feedback = self.task.feedback_text(scored.verification, self._puzzle, self._turn)
        self._messages += [{"role": "assistant", "content": self._response}, {"role": "user", "content": feedback}]
        info["feedback"] = feedback
        info["messages"] = [dict(m) for m in self._messages]
        return feedback, 0.0, False, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        if self._response is None:
            return self._prompt
        turns = [m["content"] for m in self._messages[len(self.task.messages(self._puzzle)) :]]
        if self._done:
            turns.append(self._response)
        return "\n\n".join([self._prompt, *turns, self._verdict])
