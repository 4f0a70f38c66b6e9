"""A task's puzzles as `verifiers` dataset rows (:class:`PuzzleSource`): where the `verifiers` environments get
their puzzles, a :class:`~countdown_env.task.CountdownTask`.

Both the classic (0.3.x) environment and the v1 (0.4) taskset build one task from their options (the task's
fields: generator settings, rules, ``template``, ``format_bonus``) and ask, grade and draw through it, so a puzzle
is always asked and graded under the rules it was generated for, with the template's tags. Imports no `verifiers`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from countdown_env.prompts import PromptTemplate
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig
from countdown_env.task import CountdownTask, PuzzleGenerator, task_from


@dataclass(frozen=True)
class PuzzleSource:
    """A task's puzzles as `verifiers` dataset rows (the task is validated when it is built, so a bad option fails
    when the environment is built, not at the first rollout)."""

    task: CountdownTask

    @classmethod
    def from_options(cls, template: str | None = "default", *, task: CountdownTask | None = None, **task_fields: Any):
        """The source of ``task``, or of the task built from ``template`` and the other task fields."""
        if task is None:
            task_fields["template"] = "default" if template is None else template
        return cls(task_from(task, task_fields, "verifiers_ext"))

    @property
    def generator(self) -> PuzzleGenerator:
        return self.task.generator()

    @property
    def template(self) -> PromptTemplate:
        return self.task.prompt_template

    @property
    def reward_config(self) -> RewardConfig:
        return self.task.reward_config

    def messages(self, puzzle: Puzzle) -> list[dict[str, str]]:
        """Chat messages asking ``puzzle`` (system turn when the template has one, then the user turn)."""
        return self.task.messages(puzzle)

    def puzzles(self, count: int | None, start: int = 0) -> Iterator[tuple[int, Puzzle]]:
        """``(index, puzzle)`` for task indices ``start, start + 1, ...``; ``count=None`` never ends.

        The arguments are checked at the call (``ValueError``); puzzles are drawn lazily as the iterator advances.
        """
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"the number of puzzles must be None or an integer >= 0, got {count!r}")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise ValueError(f"start must be an integer >= 0, got {start!r}")
        return self._draw(count, start)

    def _draw(self, count: int | None, start: int) -> Iterator[tuple[int, Puzzle]]:
        index = start
        while count is None or index < start + count:
            yield index, self.task.puzzle(index)
            index += 1

    def reference_solution(self, index: int) -> str:
        """One correct expression for puzzle ``index`` (:func:`countdown_env.procedural.reference_solution`: the
        generator's witness, no solution counting); ``""`` for an unsolvable puzzle."""
        from countdown_env.procedural import reference_solution

        return reference_solution(self.task, index)

    def rows(self, count: int, start: int = 0) -> list[dict]:
        """Dataset rows in the classic `verifiers` layout: ``prompt`` (chat messages), ``answer`` (a reference
        solution, :meth:`reference_solution`; any correct expression scores, the reference is for display and
        for tools that expect the column filled) and ``info`` (``numbers``, ``target``, ``index``)."""
        return [
            {
                "prompt": self.messages(puzzle),
                "answer": self.reference_solution(index),
                "info": {"numbers": list(puzzle.numbers), "target": puzzle.target, "index": index},
            }
            for index, puzzle in self.puzzles(count, start)
        ]
