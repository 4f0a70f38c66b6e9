"""Where an environment's episode puzzles come from (:class:`EpisodePuzzles`: its task's generator, a ready generator
or a fixed list) and how reset picks one; :func:`episode_task` builds an env's task and source.

Shared by ``Countdown-v0`` and ``CountdownTokens-v0`` so both read ``reset(options=...)`` the same way and build
their task and puzzle source from their common arguments the same way (:func:`episode_task`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..puzzle import Puzzle, as_puzzle
from ..task import CountdownTask, task_from

# Upper bound (exclusive) for the puzzle index a reset draws from the environment's RNG when puzzles come from a
# generator: the generator is index-addressable, so any index in range names one reproducible puzzle.
GENERATOR_INDEX_SPACE = 2**31

RESET_OPTIONS = ("puzzle", "index")


class EpisodePuzzles:
    """Puzzles by index from a generator (``gen[i] -> Puzzle``) or a fixed list.

    Args:
        generator: an index-addressable generator (the task's, or a ready one).
        puzzles: a fixed list of puzzles (or ``{"numbers", "target"}`` mappings); reset draws among them.
    """

    def __init__(self, generator: Any = None, puzzles: Sequence[Puzzle | Mapping[str, Any]] | None = None) -> None:
        if (generator is None) == (puzzles is None):
            raise ValueError("a puzzle source needs either a generator or a puzzle list")
        self.puzzles: tuple[Puzzle, ...] | None = None
        self.generator = None
        if puzzles is not None:
            self.puzzles = tuple(as_puzzle(p) for p in puzzles)
            if not self.puzzles:
                raise ValueError("puzzles must not be empty")
        else:
            if not callable(getattr(generator, "__getitem__", None)):
                raise TypeError(f"generator must be index-addressable (gen[i] -> Puzzle), got {type(generator)}")
            self.generator = generator

    @property
    def size(self) -> int:
        """How many indices reset draws from."""
        return len(self.puzzles) if self.puzzles is not None else GENERATOR_INDEX_SPACE

    def __getitem__(self, index: int) -> Puzzle:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"puzzle index must be an integer, got {type(index).__name__}")
        index = int(index)
        if self.puzzles is not None:
            if not 0 <= index < len(self.puzzles):
                raise IndexError(f"puzzle index {index} out of range for {len(self.puzzles)} puzzles")
            return self.puzzles[index]
        if index < 0:
            raise IndexError(f"puzzle index must be non-negative, got {index}")
        return self.generator[index]

    def select(self, rng: np.random.Generator, options: Mapping[str, Any] | None) -> tuple[Puzzle, int | None]:
        """The puzzle for a reset, and its index (None for a puzzle pinned by value).

        ``options`` may pin a puzzle: ``{"puzzle": Puzzle | {"numbers", "target"}}`` or ``{"index": i}``;
        otherwise an index is drawn from ``rng`` (the env's seeded ``np_random``).
        """
        options = {} if options is None else options
        if not isinstance(options, Mapping):
            raise TypeError(f"reset options must be a dict, got {type(options).__name__}")
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: {list(RESET_OPTIONS)}")
        if "puzzle" in options and "index" in options:
            raise ValueError("reset options may pin a puzzle by 'puzzle' or by 'index', not both")
        if "puzzle" in options:
            return as_puzzle(options["puzzle"]), None
        if "index" in options:
            index = options["index"]
            return self[index], int(index)
        index = int(rng.integers(0, self.size))
        return self[index], index


RULE_AND_PROMPT_FIELDS = frozenset({"use_all_numbers", "integer_intermediates", "template", "format_bonus"})
"""Task fields that apply to an env whose puzzles come from ``generator=`` or ``puzzles=`` (the others only shape
the puzzles the task's own generator draws)."""


def episode_task(
    task: CountdownTask | None,
    generator: Any,
    puzzles: Sequence[Puzzle | Mapping[str, Any]] | None,
    task_fields: dict[str, Any],
    what: str,
) -> tuple[CountdownTask, EpisodePuzzles]:
    """The task of an env and its puzzle source, from the constructor arguments both envs share.

    The task is ``task`` or built from ``task_fields`` (the old keyword form: template, format_bonus, rules and
    generator settings). Puzzles come from ``puzzles``, else ``generator``, else the task's own generator (which
    follows the task's rules, so every puzzle it draws is solvable under them).
    """
    if generator is not None and puzzles is not None:
        raise ValueError("pass either generator or puzzles, not both")
    if generator is not None or puzzles is not None:
        misplaced = sorted(set(task_fields) - RULE_AND_PROMPT_FIELDS)
        if misplaced:
            raise ValueError(f"generator arguments {misplaced} only apply when the env builds its own generator")
    task = task_from(task, task_fields, what)
    if puzzles is None and generator is None:
        generator = task.generator()
    return task, EpisodePuzzles(generator, puzzles)
