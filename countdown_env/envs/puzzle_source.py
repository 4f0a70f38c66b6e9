"""Where an environment's puzzles come from: a seeded generator or a fixed list, and how reset picks one.

Shared by ``Countdown-v0`` and ``CountdownTokens-v0`` so both read ``reset(options=...)`` the same way and build
their template, reward rules and puzzle source from their common arguments the same way (:func:`episode_rules`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..prompts import PromptTemplate, get_template
from ..puzzle import Puzzle
from ..rewards import RewardConfig
from ..trajectory import as_puzzle

# Upper bound (exclusive) for the puzzle index a reset draws from the environment's RNG when puzzles come from a
# generator: the generator is index-addressable, so any index in range names one reproducible puzzle.
GENERATOR_INDEX_SPACE = 2**31

RESET_OPTIONS = ("puzzle", "index")


class PuzzleSource:
    """Puzzles by index from a :class:`~countdown_env.generator.PuzzleGenerator` or a fixed list.

    Args:
        generator: a ready generator (``generator_kwargs`` must then be empty).
        puzzles: a fixed list of puzzles (or ``{"numbers", "target"}`` mappings); reset draws among them.
        generator_kwargs: arguments for a new ``PuzzleGenerator`` when neither of the above is given.
    """

    def __init__(
        self,
        generator: Any = None,
        puzzles: Sequence[Puzzle | Mapping[str, Any]] | None = None,
        **generator_kwargs: Any,
    ) -> None:
        if generator is not None and puzzles is not None:
            raise ValueError("pass either generator or puzzles, not both")
        if (generator is not None or puzzles is not None) and generator_kwargs:
            raise ValueError(
                f"generator arguments {sorted(generator_kwargs)} only apply when the env builds its own generator"
            )
        self.puzzles: tuple[Puzzle, ...] | None = None
        self.generator = None
        if puzzles is not None:
            self.puzzles = tuple(as_puzzle(p) for p in puzzles)
            if not self.puzzles:
                raise ValueError("puzzles must not be empty")
        elif generator is not None:
            if not callable(getattr(generator, "__getitem__", None)):
                raise TypeError(f"generator must be index-addressable (gen[i] -> Puzzle), got {type(generator)}")
            self.generator = generator
        else:
            from ..generator import PuzzleGenerator

            self.generator = PuzzleGenerator(**generator_kwargs)

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


def episode_rules(
    template: Any,
    *,
    format_bonus: float,
    use_all_numbers: bool,
    integer_intermediates: bool,
    generator: Any,
    puzzles: Sequence[Puzzle | Mapping[str, Any]] | None,
    **generator_kwargs: Any,
) -> tuple[PromptTemplate, RewardConfig, PuzzleSource]:
    """The prompt template, reward rules and puzzle source of an env, from the constructor arguments both envs share.

    The reward config takes its tags from the template. A generator the env builds itself (neither ``generator``
    nor ``puzzles`` given) follows the env's rules, so every puzzle it draws is solvable under them.
    """
    template = get_template(template)
    reward_config = RewardConfig(
        format_bonus=float(format_bonus),
        answer_tag=template.answer_tag,
        reasoning_tag=template.reasoning_tag,
        use_all_numbers=bool(use_all_numbers),
        integer_intermediates=bool(integer_intermediates),
    )
    if generator is None and puzzles is None:
        generator_kwargs = dict(
            generator_kwargs, use_all_numbers=use_all_numbers, integer_intermediates=integer_intermediates
        )
    return template, reward_config, PuzzleSource(generator, puzzles, **generator_kwargs)
