"""Where the `verifiers` environments get their puzzles: the project's seeded generator and prompt templates.

Both the classic (0.3.x) environment and the v1 (0.4) taskset take the same options, the keyword arguments of
:class:`countdown_env.generator.PuzzleGenerator` plus ``template``; the rules (``use_all_numbers``,
``integer_intermediates``) go to the generator, the prompt's rule sentence and the scorer alike, so a puzzle is
always asked and graded under the rules it was generated for. Imports no `verifiers`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from countdown_env.generator import PuzzleGenerator
from countdown_env.prompts import PromptTemplate, chat_messages, get_template
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import RewardConfig


@dataclass(frozen=True)
class PuzzleSource:
    """A generator, a prompt template and the reward configuration that matches them.

    ``generator_options`` are :class:`PuzzleGenerator` keyword arguments (validated here, so a bad option fails
    when the environment is built, not at the first rollout).
    """

    generator: PuzzleGenerator
    template: PromptTemplate
    reward_config: RewardConfig = field(repr=False)

    @classmethod
    def from_options(cls, template: str | PromptTemplate | None = "default", **generator_options) -> PuzzleSource:
        generator = PuzzleGenerator(**generator_options)
        resolved = get_template(template)
        config = RewardConfig(
            answer_tag=resolved.answer_tag,
            reasoning_tag=resolved.reasoning_tag,
            use_all_numbers=generator.use_all_numbers,
            integer_intermediates=generator.integer_intermediates,
        )
        return cls(generator, resolved, config)

    def messages(self, puzzle: Puzzle) -> list[dict[str, str]]:
        """Chat messages asking ``puzzle`` (system turn when the template has one, then the user turn)."""
        return chat_messages(puzzle, self.template, use_all_numbers=self.generator.use_all_numbers)

    def puzzles(self, count: int | None, start: int = 0) -> Iterator[tuple[int, Puzzle]]:
        """``(index, puzzle)`` for generator indices ``start, start + 1, ...``; ``count=None`` never ends.

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
            yield index, self.generator[index]
            index += 1

    def rows(self, count: int, start: int = 0) -> list[dict]:
        """Dataset rows in the classic `verifiers` layout: ``prompt`` (chat messages), ``answer`` (empty: any
        correct expression counts, the verifier needs no reference) and ``info`` (``numbers``, ``target``,
        ``index``)."""
        return [
            {
                "prompt": self.messages(puzzle),
                "answer": "",
                "info": {"numbers": list(puzzle.numbers), "target": puzzle.target, "index": index},
            }
            for index, puzzle in self.puzzles(count, start)
        ]
