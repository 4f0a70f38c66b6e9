"""``CountdownTask``: one Countdown task definition, the object every consumer builds from; and
``PuzzleGenerator``, its index-addressable puzzle stream (built from a task or from the task's fields).

A task is four things, written once and serialisable (``to_dict`` / ``from_dict``, ``save`` / ``load``):

- generator settings: ``n_numbers`` (an int; a ``(lo, hi)`` range drawn uniformly per index; or
  ``((n, weight), ...)`` drawn per index with probability ``weight / sum(weights)``), ``value_range``,
  ``target_range``, ``operators``, ``require_solvable``, ``min_solutions`` / ``max_solutions``, ``target_mode``,
  ``min_steps`` / ``max_steps`` (certified difficulty: solution count and fewest steps),
  ``seed`` (see :mod:`countdown_env.solving.generator` for how a puzzle is drawn), ``allow_trivial`` (default False: no
  puzzle whose target is one of its numbers, :func:`countdown_env.puzzle.is_trivial`; one rule for every consumer);
- rules: ``use_all_numbers`` (every number exactly once instead of at most once), ``integer_intermediates``
  (every intermediate a positive integer). They reach the generator, the prompt's rule sentence and the verifier
  alike, so a puzzle is always asked and graded under the rules it was generated for;
- the prompt template (``"default"``, ``"tinyzero"``, ``"compact"``; :data:`countdown_env.prompts.TEMPLATES`);
- reward settings: the answer/reasoning tags come from the template, plus ``format_bonus``, ``partial_credit`` and
  ``format_score``: ``reward = 1[correct] + format_bonus * 1[format ok]``, a wrong real attempt earning
  ``partial_credit * closeness`` instead of 0, a wrong answer in an answer block at least ``format_score``
  (TinyZero's 0.1) (:func:`countdown_env.rewards.score_completion`);
- turns: ``max_turns`` answers per episode (default 1: the first answer ends it). A wrong or malformed answer
  before the last turn is answered with a feedback message built from the verifier's verdict in the
  ``feedback`` template (:mod:`countdown_env.feedback`: the value reached, the numbers misused, why it could not
  be read; never a solution), and the episode's reward is ``turn_discount ** (t - 1) * score`` of the answer
  that ended it at turn ``t`` (:meth:`CountdownTask.turn_reward`).

Puzzle ``i`` of a task is ``task.generator(task.n_numbers_at(i))[i]``: for an int ``n_numbers`` exactly
``PuzzleGenerator(n, ..., seed=seed)[i]``; for mixed counts the count of index ``i`` is drawn from its own
``numpy.random.default_rng([seed, i, COUNT_STREAM])``, independent of the puzzle stream and of other indices.
:class:`PuzzleGenerator` lives here, beside the task that builds it and that it is built from: the drawing itself
(:class:`countdown_env.solving.generator.PuzzleDraws`, one count) reads the task's settings and imports no task.

>>> task = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 100), template="tinyzero")
>>> puzzle = task.puzzle(0)
>>> task.score(task.format_completion("", task.record(0).solution), puzzle).reward
1.0
>>> CountdownTask.from_dict(task.to_dict()) == task
True
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .feedback import FeedbackTemplate, get_feedback_template
from .feedback import feedback_text as _feedback_text
from .prompts import PromptTemplate, chat_messages, get_template
from .prompts import format_completion as _format_completion
from .prompts import prompt_text as _prompt_text
from .puzzle import MAX_NUMBERS, MAX_VALUE, Puzzle
from .rewards import RewardConfig, ScoredCompletion, make_reward_function, score_completion
from .solving.generator import GeneratedPuzzle, PuzzleDraws

if TYPE_CHECKING:
    from .expressions.verifier import Verification

TASK_FILE = "countdown_task.json"
"""The file :meth:`CountdownTask.save` writes in a folder (a checkpoint, a split)."""

COUNT_STREAM = 0x636F756E74
"""Third word of the seed of the per-index count draw (mixed ``n_numbers``), so that it never coincides with the
generator's ``default_rng([seed, index])`` stream."""

TARGET_MODES = ("expression", "uniform")

NumberCounts = int | tuple[int, int] | tuple[tuple[int, float], ...]

MAX_TURNS = 64
"""Largest ``max_turns`` a task accepts (a bound on the token MDP's observation length)."""


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _integral(value: Any) -> Any:
    """An integral float (as YAML or JSON may give) as an int; anything else unchanged."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _check_count(n: Any, what: str) -> int:
    n = _integral(n)
    if not _is_int(n) or not 1 <= n <= MAX_NUMBERS:
        raise ValueError(f"{what} must be an integer in [1, {MAX_NUMBERS}], got {n!r}")
    return int(n)


def _as_tuple(value: Any) -> Any:
    """Lists (as JSON gives them) -> tuples, recursively; anything else unchanged."""
    if isinstance(value, (list, tuple)):
        return tuple(_as_tuple(v) for v in value)
    return value


def _check_number_counts(value: Any) -> NumberCounts:
    """``n_numbers`` in one of its three forms, normalised (ints, tuples, float weights)."""
    value = _as_tuple(value)
    if not isinstance(value, tuple):
        return _check_count(value, "n_numbers")
    if len(value) == 2 and all(not isinstance(v, tuple) for v in value):
        lo, hi = (_check_count(v, "n_numbers range bounds") for v in value)
        if lo > hi:
            raise ValueError(f"n_numbers range (lo, hi) needs lo <= hi, got {value!r}")
        return lo, hi
    pairs = []
    for pair in value:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(f"n_numbers must be an int, (lo, hi) or ((n, weight), ...), got {value!r}")
        n, weight = _check_count(pair[0], "n_numbers counts"), pair[1]
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
            raise ValueError(f"n_numbers weights must be finite numbers > 0, got {weight!r}")
        pairs.append((n, float(weight)))
    if not pairs or len({n for n, _ in pairs}) != len(pairs):
        raise ValueError(f"n_numbers weights need distinct counts and at least one entry, got {value!r}")
    return tuple(pairs)


def _check_range(value: Any, name: str) -> tuple[int, int]:
    value = _as_tuple(value)
    if isinstance(value, tuple):
        value = tuple(_integral(v) for v in value)
    if not isinstance(value, tuple) or len(value) != 2 or not all(_is_int(v) for v in value):
        raise ValueError(f"{name} must be a pair (low, high) of integers, got {value!r}")
    lo, hi = int(value[0]), int(value[1])
    if not 1 <= lo <= hi <= MAX_VALUE:
        raise ValueError(f"{name} must satisfy 1 <= low <= high <= {MAX_VALUE}, got {value!r}")
    return lo, hi


@dataclass(frozen=True)
class CountdownTask:
    """Generator settings, rules, prompt template and reward settings of one Countdown task (see module doc).

    Invalid settings raise a one-line ``ValueError`` on construction; lists (from JSON) become tuples.
    """

    n_numbers: NumberCounts = 4
    value_range: tuple[int, int] = (1, 100)
    target_range: tuple[int, int] = (10, 1000)
    operators: str = "+-*/"
    require_solvable: bool = True
    min_solutions: int | None = None
    max_solutions: int | None = None
    target_mode: str = "expression"
    seed: int = 0
    use_all_numbers: bool = False
    integer_intermediates: bool = False
    template: str = "default"
    format_bonus: float = 0.0
    max_turns: int = 1
    turn_discount: float = 1.0
    feedback: str = "default"
    allow_trivial: bool = False
    """Draw trivial puzzles too (the target is one of the numbers: answer ``"23"`` solves ``[46, 89, 47, 23] -> 23``;
    :func:`countdown_env.puzzle.is_trivial`). Default False: puzzle ``i`` redraws a trivial candidate from index
    ``i``'s own stream (:mod:`countdown_env.solving.generator`), so no env reset, verifiers dataset row,
    ``create_dataset`` entry, ``countdown generate`` line or curriculum row is trivial; splits and SFT traces skip the
    index instead (:mod:`countdown_env.splits`). A generator setting, last so that positional construction is unchanged;
    tasks saved before it load with False. Solvable 1-number tasks need True (every such puzzle is trivial)."""
    partial_credit: float = 0.0
    """Reward setting: a wrong answer that is a real attempt earns ``partial_credit * closeness`` of its value to the
    target (:func:`countdown_env.rewards.closeness`; 0 = off, below 1 so a correct answer always wins). Last, as
    ``allow_trivial``, so that positional construction is unchanged; tasks saved before it load with 0."""
    format_score: float = 0.0
    """Reward setting: a wrong answer inside an answer block earns ``format_score`` (TinyZero's reward: 1 correct, 0.1
    well-formed wrong, 0 no answer; :mod:`countdown_env.rewards`), not added to a correct one (unlike
    ``format_bonus``). 0 = off; below 1. Last, so that positional construction is unchanged; older tasks load with 0."""
    min_steps: int | None = None
    max_steps: int | None = None
    """Generator settings, certified difficulty by length: keep only puzzles whose fewest operations to the target
    (:meth:`countdown_env.solving.oracle.StepOracle.fewest_steps` on the numbers, under the task's rules) lie in
    ``[min_steps, max_steps]``; ``min_solutions``/``max_solutions`` select by solution count the same way. Last, so
    that positional construction is unchanged; tasks saved before them load with None (no filter)."""

    def __post_init__(self) -> None:
        from .solving.solver import MAX_COUNT_NUMBERS, MAX_SOLVE_NUMBERS, check_operators

        set_field = object.__setattr__
        set_field(self, "n_numbers", _check_number_counts(self.n_numbers))
        set_field(self, "value_range", _check_range(self.value_range, "value_range"))
        set_field(self, "target_range", _check_range(self.target_range, "target_range"))
        check_operators(self.operators)
        if self.target_mode not in TARGET_MODES:
            raise ValueError(f"target_mode must be one of {TARGET_MODES}, got {self.target_mode!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        for name in ("min_solutions", "max_solutions"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 0):
                raise ValueError(f"{name} must be None or a non-negative integer, got {value!r}")
        if self.min_solutions is not None and self.max_solutions is not None:
            if self.min_solutions > self.max_solutions:
                raise ValueError(f"min_solutions ({self.min_solutions}) > max_solutions ({self.max_solutions})")
        for name in ("min_steps", "max_steps"):
            value = getattr(self, name)
            if value is not None and (not _is_int(value) or value < 0):
                raise ValueError(f"{name} must be None or a non-negative integer, got {value!r}")
        if self.min_steps is not None and self.max_steps is not None and self.min_steps > self.max_steps:
            raise ValueError(f"min_steps ({self.min_steps}) > max_steps ({self.max_steps})")
        largest = max(self.counts)
        if (self.min_solutions is not None or self.max_solutions is not None) and largest > MAX_COUNT_NUMBERS:
            raise ValueError(f"min/max_solutions need counting: at most {MAX_COUNT_NUMBERS} numbers, got {largest}")
        if (self.min_steps is not None or self.max_steps is not None) and largest > MAX_COUNT_NUMBERS:
            raise ValueError(f"min/max_steps need the step oracle: at most {MAX_COUNT_NUMBERS} numbers, got {largest}")
        if self.require_solvable and self.target_mode == "uniform" and largest > MAX_SOLVE_NUMBERS:
            raise ValueError(f"target_mode='uniform' runs solve(): at most {MAX_SOLVE_NUMBERS} numbers, got {largest}")
        for name in ("require_solvable", "use_all_numbers", "integer_intermediates", "allow_trivial"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
            set_field(self, name, bool(getattr(self, name)))
        if self.require_solvable and 1 in self.counts and not self.allow_trivial:
            raise ValueError(
                "n_numbers=1 with require_solvable: every solvable 1-number puzzle is trivial (its target is its "
                "number); set allow_trivial=True to draw them"
            )
        if not isinstance(self.template, str):
            raise ValueError(f"template must be a template name, got {type(self.template).__name__}")
        get_template(self.template)  # one-line ValueError naming the known templates
        RewardConfig(  # one-line ValueErrors
            format_bonus=self.format_bonus, partial_credit=self.partial_credit, format_score=self.format_score
        )
        set_field(self, "format_bonus", float(self.format_bonus))
        set_field(self, "partial_credit", float(self.partial_credit))
        set_field(self, "format_score", float(self.format_score))
        max_turns = _integral(self.max_turns)
        if not _is_int(max_turns) or not 1 <= max_turns <= MAX_TURNS:
            raise ValueError(f"max_turns must be an integer in [1, {MAX_TURNS}], got {self.max_turns!r}")
        set_field(self, "max_turns", int(max_turns))
        discount = self.turn_discount
        if isinstance(discount, bool) or not isinstance(discount, (int, float)) or not 0 < discount <= 1:
            raise ValueError(f"turn_discount must be a number in (0, 1], got {discount!r}")
        set_field(self, "turn_discount", float(discount))
        if not isinstance(self.feedback, str):
            raise ValueError(f"feedback must be a feedback template name, got {type(self.feedback).__name__}")
        get_feedback_template(self.feedback)  # one-line ValueError naming the known feedback templates
        set_field(self, "_generators", {})  # count -> PuzzleGenerator, built on first use

    # -- number counts --------------------------------------------------------------------------------------
    @property
    def counts(self) -> tuple[int, ...]:
        """Every number count the task can draw (ascending for a range, as listed for weights)."""
        if isinstance(self.n_numbers, int):
            return (self.n_numbers,)
        if isinstance(self.n_numbers[0], int):
            lo, hi = self.n_numbers
            return tuple(range(lo, hi + 1))
        return tuple(n for n, _ in self.n_numbers)

    def n_numbers_at(self, i: int) -> int:
        """The number count of puzzle ``i``: fixed, or drawn from ``default_rng([seed, i, COUNT_STREAM])``
        (uniform over a range; by weight for a weighted list)."""
        if isinstance(self.n_numbers, int):
            return self.n_numbers
        if not _is_int(i) or i < 0:
            raise IndexError(f"puzzle index must be an integer >= 0, got {i!r}")
        rng = np.random.default_rng([self.seed, int(i), COUNT_STREAM])
        if isinstance(self.n_numbers[0], int):
            lo, hi = self.n_numbers
            return int(rng.integers(lo, hi + 1))
        weights = np.array([w for _, w in self.n_numbers])
        pick = int(np.searchsorted(np.cumsum(weights), rng.random() * weights.sum(), side="right"))
        return self.n_numbers[min(pick, len(weights) - 1)][0]

    # -- puzzles --------------------------------------------------------------------------------------------
    def generator(self, n_numbers: int | None = None) -> PuzzleGenerator:
        """The :class:`PuzzleGenerator` for one count (cached per count); without a count, the task's own stream
        (for mixed counts it draws each index's count with :meth:`n_numbers_at`)."""
        key = self.n_numbers if n_numbers is None else _check_count(n_numbers, "n_numbers")
        if key not in self.counts and n_numbers is not None:
            raise ValueError(f"this task draws {list(self.counts)} numbers, not {n_numbers}")
        cache: dict = self._generators  # type: ignore[attr-defined]
        found = cache.get(key)
        if found is None:
            task = self if n_numbers is None or key == self.n_numbers else replace(self, n_numbers=key)
            found = cache[key] = PuzzleGenerator(task=task)
        return found

    def record(self, i: int) -> GeneratedPuzzle:
        """Puzzle ``i`` with one solution, its solution count and difficulty."""
        return self.generator(self.n_numbers_at(i)).record(i)

    def puzzle(self, i: int) -> Puzzle:
        """Puzzle ``i`` (for an int ``n_numbers``: ``PuzzleGenerator(n, ..., seed=seed)[i]``)."""
        return self.generator(self.n_numbers_at(i))[i]

    # -- prompt ---------------------------------------------------------------------------------------------
    @property
    def prompt_template(self) -> PromptTemplate:
        return get_template(self.template)

    def messages(self, puzzle: Puzzle) -> list[dict[str, str]]:
        """Chat messages asking ``puzzle`` (system turn when the template has one, then the user turn with the
        task's rule sentence)."""
        return chat_messages(puzzle, self.prompt_template, use_all_numbers=self.use_all_numbers)

    def prompt_text(self, puzzle: Puzzle) -> str:
        """The prompt as one plain string (system turn, blank line, user turn) for models without a chat template."""
        return _prompt_text(puzzle, self.prompt_template, use_all_numbers=self.use_all_numbers)

    def format_completion(self, reasoning: str, expression: str) -> str:
        """An answer in the template's tags: reasoning block, then answer block."""
        return _format_completion(reasoning, expression, self.prompt_template)

    # -- reward ---------------------------------------------------------------------------------------------
    @property
    def reward_config(self) -> RewardConfig:
        """Tags from the template, the task's rules, format bonus and partial credit."""
        template = self.prompt_template
        return RewardConfig(
            format_bonus=self.format_bonus,
            answer_tag=template.answer_tag,
            reasoning_tag=template.reasoning_tag,
            use_all_numbers=self.use_all_numbers,
            integer_intermediates=self.integer_intermediates,
            partial_credit=self.partial_credit,
            format_score=self.format_score,
        )

    def score(self, completion: Any, puzzle: Puzzle) -> ScoredCompletion:
        """Reward, verdict and format check of ``completion`` (text or chat messages) for ``puzzle``."""
        return score_completion(completion, puzzle, self.reward_config)

    def reward_function(self) -> Callable[..., list[float]]:
        """A TRL reward function ``f(prompts, completions, numbers, target, **kw) -> list[float]`` scoring with
        this task's tags, rules and bonus; its ``__name__`` is ``"countdown_reward"``."""
        return make_reward_function(self.reward_config, name="countdown_reward")

    # -- turns ----------------------------------------------------------------------------------------------
    @property
    def feedback_template(self) -> FeedbackTemplate:
        return get_feedback_template(self.feedback)

    def feedback_text(
        self, verification: Verification, puzzle: Puzzle, turn: int, max_verdict_chars: int | None = None
    ) -> str:
        """The message answering a failed ``turn`` (1-based, ``turn < max_turns``): the verifier's verdict in the
        task's feedback template and the attempts left. Built from the verdict only: never a solution.
        ``max_verdict_chars`` cuts the verdict (see :func:`countdown_env.feedback.feedback_text`)."""
        if not 1 <= turn < self.max_turns:
            raise ValueError(f"feedback follows a turn in [1, {self.max_turns - 1}], got {turn}")
        return _feedback_text(
            verification,
            puzzle,
            self.feedback_template,
            turns_left=self.max_turns - turn,
            answer_tag=self.prompt_template.answer_tag,
            max_verdict_chars=max_verdict_chars,
        )

    def turn_reward(self, reward: float, turn: int) -> float:
        """The episode reward when the answer of ``turn`` (1-based) ended it with score ``reward``:
        ``turn_discount ** (turn - 1) * reward`` (exactly ``reward`` at turn 1)."""
        return float(reward) if turn == 1 else float(reward) * self.turn_discount ** (turn - 1)

    # -- serialisation --------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON types (tuples become lists)."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountdownTask:
        """The task of :meth:`to_dict`; unknown keys are refused (a typo would silently change the task)."""
        if not isinstance(data, dict):
            raise ValueError(f"a task is a mapping of its fields, got {type(data).__name__}")
        from .helpers.keys import refuse_unknown

        refuse_unknown("CountdownTask key", data, (f.name for f in fields(cls)))
        return cls(**data)

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``directory/countdown_task.json`` atomically (temporary file, then ``os.replace``)."""
        from .helpers.atomic import write_text

        return write_text(Path(directory) / TASK_FILE, json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory: str | os.PathLike) -> CountdownTask | None:
        """The task saved in ``directory``, or None when it has none."""
        path = Path(directory) / TASK_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc.msg})") from None
        return cls.from_dict(data)


def task_from(task: CountdownTask | None, fields_given: dict[str, Any], what: str) -> CountdownTask:
    """``task`` itself, or a task built from the keyword arguments a consumer received: the one place where
    consumers (generator, envs, verifiers environments, splits) turn task keywords into a task.

    Passing both a task and task keywords is refused, as is a keyword that is not a task field.
    """
    if task is not None:
        if not isinstance(task, CountdownTask):
            raise TypeError(f"{what}: task must be a CountdownTask, got {type(task).__name__}")
        if fields_given:
            raise ValueError(f"{what}: pass either task= or its fields {sorted(fields_given)}, not both")
        return task
    known = {f.name for f in fields(CountdownTask)}
    unknown = sorted(set(fields_given) - known)
    if unknown:
        raise TypeError(f"{what}: unexpected keyword arguments {unknown} (CountdownTask fields: {sorted(known)})")
    return CountdownTask(**fields_given)


class PuzzleGenerator(PuzzleDraws):
    """Deterministic stream of puzzles: ``gen[i]``, ``iter(gen)``, ``gen.generate(n, start)``, ``gen.record(i)``.

    Built from a :class:`CountdownTask` (``PuzzleGenerator(task=task)`` or ``PuzzleGenerator.from_task(task)``) or
    from the task's fields as keywords (``PuzzleGenerator(n_numbers=4, seed=7)``), which are validated by the task.
    One count's puzzles are drawn by :class:`~countdown_env.solving.generator.PuzzleDraws` (how: its module docstring);
    for a task with mixed number counts the stream is ``task.puzzle(i)``: index ``i`` is drawn by the generator of count
    ``task.n_numbers_at(i)``.

    The stream is infinite: ``len(gen)`` raises ``TypeError``; iterate with ``itertools.islice`` or ``generate``.

    >>> gen = PuzzleGenerator(n_numbers=4, seed=7)
    >>> gen[3] == PuzzleGenerator(n_numbers=4, seed=7)[3]
    True
    """

    def __init__(self, n_numbers: NumberCounts | None = None, *, task: CountdownTask | None = None, **task_fields):
        if n_numbers is not None:
            task_fields["n_numbers"] = n_numbers
        task = task_from(task, task_fields, "PuzzleGenerator")
        self.task = task
        super().__init__(task)
        self._mixed = not isinstance(task.n_numbers, int)

    @classmethod
    def from_task(cls, task: CountdownTask) -> PuzzleGenerator:
        """The generator of ``task`` (the same as ``task.generator()``, uncached)."""
        return cls(task=task)

    def __repr__(self) -> str:
        return f"PuzzleGenerator(task={self.task!r})"

    def record(self, index: int, count: bool = True) -> GeneratedPuzzle:
        """``gen[index]`` with a solution, its solution count and difficulty label (``count=False``: without the
        count and label, unless the settings' own solution-count filter computed them)."""
        if self._mixed:
            index = self._check_index(index)
            return self.task.generator(self.task.n_numbers_at(index)).record(index, count=count)
        return super().record(index, count=count)

    def check_satisfiable(self) -> None:
        """:meth:`PuzzleDraws.check_satisfiable <countdown_env.solving.generator.PuzzleDraws.check_satisfiable>`; for
        mixed counts nothing here (each count's generator checks its settings on its first draw)."""
        if self._mixed:
            self._checked = True
            return
        super().check_satisfiable()

    def _draw(self, index: int) -> tuple[Puzzle, str | None, int | None]:
        if self._mixed:
            return self.task.generator(self.task.n_numbers_at(index))._draw(index)
        return super()._draw(index)
