"""Countdown for the `verifiers` v1 API (verifiers 0.4: ``verifiers.v1`` Taskset/Task, ``@vf.reward``, ``@vf.stop``).

- :class:`CountdownTasksetConfig` (``--env.taskset.*``): every :class:`~countdown_env.task.CountdownTask` field
  (generator settings, rules, the prompt ``template``) but those of :data:`TASK_FIELDS_LEFT_OUT`, and which task
  indices become tasks (``start``, ``num_tasks``; ``None`` = endless stream).
- :class:`CountdownTaskset`: ``load()`` yields one :class:`CountdownTaskRow` per generator index, lazily.
- :class:`CountdownTaskRow`: one puzzle as a ``vf.Task``: single turn (``@vf.stop`` refuses a second model turn);
  reward ``correct_answer`` (weight 1: the last answer block verified exactly under the generator's rules) and metric
  ``valid_format`` (one reasoning block then one non-empty answer block).
- :class:`CountdownHarness`: the built-in tool-less chat loop (``null``), bundled so that ``vf-eval countdown``
  does not give the model the default ``bash`` harness's shell.

This module imports ``verifiers.v1`` at import time; nothing else in the project imports this module.
"""

from dataclasses import MISSING, fields
from typing import get_type_hints

import verifiers.v1 as vf
from pydantic import Field, create_model, field_validator
from verifiers.v1.harnesses.null import NullHarness

import countdown_env.task as task_definition
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig

from .dataset_rows import PuzzleSource
from .reply_scoring import correctness, format_score

__all__ = ["CountdownData", "CountdownHarness", "CountdownTaskRow", "CountdownTaskset", "CountdownTasksetConfig"]


class CountdownData(vf.TaskData):
    """One puzzle and the rules and tags it is graded under (recorded with every trace)."""

    numbers: list[int]
    target: int
    index: int
    """The puzzle's index in the generator stream (``PuzzleGenerator(...)[index]``)."""
    use_all_numbers: bool = False
    integer_intermediates: bool = False
    reasoning_tag: str = "reasoning"
    answer_tag: str = "solution"

    @property
    def puzzle(self) -> Puzzle:
        return Puzzle(tuple(self.numbers), self.target)

    @property
    def reward_config(self) -> RewardConfig:
        return RewardConfig(
            answer_tag=self.answer_tag,
            reasoning_tag=self.reasoning_tag,
            use_all_numbers=self.use_all_numbers,
            integer_intermediates=self.integer_intermediates,
        )


class CountdownTaskRow(vf.Task[CountdownData]):
    """A single-turn Countdown puzzle: reward 1 for a correct expression, format as a metric."""

    @vf.stop
    async def single_turn(self, trace: vf.Trace) -> bool:
        """The model answers once: a second turn is refused."""
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def correct_answer(self, trace: vf.Trace) -> float:
        """1.0 when the reply's last answer block solves the puzzle, else 0.0."""
        return correctness(trace.last_reply, self.data.puzzle, self.data.reward_config)

    @vf.metric
    async def valid_format(self, trace: vf.Trace) -> float:
        """1.0 when the reply is one reasoning block then one non-empty answer block, else 0.0."""
        return format_score(trace.last_reply, self.data.reward_config)


TASK_FIELDS_LEFT_OUT = frozenset(
    {"format_bonus", "partial_credit", "format_score", "max_turns", "turn_discount", "feedback"}
)
"""Task fields the taskset does not take: its reward is ``correct_answer`` alone (the format is a metric, so no
``format_bonus``; no ``partial_credit`` or ``format_score``) and it is single-turn (no ``max_turns``,
``turn_discount``, ``feedback``)."""

TASK_OPTIONS = tuple(f.name for f in fields(task_definition.CountdownTask) if f.name not in TASK_FIELDS_LEFT_OUT)
"""The task fields that are config options: all but :data:`TASK_FIELDS_LEFT_OUT`, so a new task field is one too."""


def _task_options() -> dict:
    """The pydantic fields of the task options: the task's dataclass fields' names, types and defaults."""
    types = get_type_hints(task_definition.CountdownTask)
    options = {}
    for spec in fields(task_definition.CountdownTask):
        if spec.name in TASK_OPTIONS:
            default = spec.default_factory() if spec.default is MISSING else spec.default
            description = f"countdown_env.task.CountdownTask.{spec.name}"
            options[spec.name] = (types[spec.name], Field(default=default, description=description))
    return options


class CountdownTasksetConfig(create_model("CountdownTaskOptions", __base__=vf.TasksetConfig, **_task_options())):
    """Taskset options (``--env.taskset.<name>``; dashes or underscores): the task's fields (:data:`TASK_OPTIONS`)
    and the range of generator indices."""

    num_tasks: int | None = 1000
    """How many puzzles (generator indices ``start .. start + num_tasks - 1``); None streams without end."""
    start: int = 0
    """First generator index (e.g. 100000 for a held-out range)."""

    def countdown_task(self) -> task_definition.CountdownTask:
        """The :class:`~countdown_env.task.CountdownTask` these options describe (``format_bonus`` stays 0: the
        format is a metric here)."""
        return task_definition.CountdownTask(**{name: getattr(self, name) for name in TASK_OPTIONS})

    @field_validator("value_range", "target_range", mode="before")
    @classmethod
    def _range_from_text(cls, value):
        """The CLI passes ranges as text: accept "1,20", "1-20" and "[1, 20]" besides a pair."""
        if isinstance(value, str):
            parts = [p for p in value.strip().strip("[]()").replace("-", ",").split(",") if p.strip()]
            if len(parts) != 2:
                raise ValueError(f"a range is two integers 'low,high', got {value!r}")
            return tuple(int(p) for p in parts)
        return value


class CountdownTaskset(vf.Taskset[CountdownTaskRow, CountdownTasksetConfig]):
    """Countdown puzzles from the project's seeded generator; bad options raise ``ValueError`` on construction."""

    def __init__(self, config: CountdownTasksetConfig) -> None:
        super().__init__(config)
        self.source = PuzzleSource(config.countdown_task())
        self.source.puzzles(config.num_tasks, config.start)  # checks the index range now, draws nothing
        self.INFINITE = config.num_tasks is None

    def task(self, index: int, puzzle: Puzzle | None = None, position: int | None = None) -> CountdownTaskRow:
        """The task for generator index ``index`` (``idx``: its position in ``load()``)."""
        puzzle = self.source.task.puzzle(index) if puzzle is None else puzzle
        messages = self.source.messages(puzzle)
        system = next((m["content"] for m in messages if m["role"] == "system"), None)
        user = next(m["content"] for m in messages if m["role"] == "user")
        rules = self.source.reward_config
        data = CountdownData(
            idx=index - self.config.start if position is None else position,
            name=f"countdown-{index}",
            prompt=user,
            system_prompt=system,
            numbers=list(puzzle.numbers),
            target=puzzle.target,
            index=index,
            use_all_numbers=rules.use_all_numbers,
            integer_intermediates=rules.integer_intermediates,
            reasoning_tag=rules.reasoning_tag,
            answer_tag=rules.answer_tag,
        )
        return CountdownTaskRow(data, self.config.task)

    def load(self):
        """Tasks for generator indices ``start, start + 1, ...`` (``num_tasks`` of them, or endless), lazily."""
        for position, (index, puzzle) in enumerate(self.source.puzzles(self.config.num_tasks, self.config.start)):
            yield self.task(index, puzzle, position)


class CountdownHarness(NullHarness):
    """The tool-less chat loop (verifiers' ``null`` harness): the model gets the prompt and answers, no tools."""

