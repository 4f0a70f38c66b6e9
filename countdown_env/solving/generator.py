"""How a Countdown puzzle is drawn: the seeded, index-addressable draws of one number count (:class:`PuzzleDraws`),
solution-count difficulty labels (:func:`difficulty_label`) and the settings probe (:class:`UnsatisfiableSettings`).

:class:`~countdown_env.task.PuzzleGenerator`, the stream users build (from a task or its fields as keywords, mixed
number counts included), subclasses :class:`PuzzleDraws` in :mod:`countdown_env.task`, beside the task that builds
it: this module reads a task's generator settings from the object it is given and imports no task.

``gen[i]`` is drawn from its own ``numpy.random.default_rng([seed, i])`` (a ``SeedSequence`` over the pair), so
the i-th puzzle is the same on any machine and does not depend on which other indices were generated. The global
``random`` module is never used.

How a puzzle is drawn
---------------------
Numbers: ``n_numbers`` integers, independently uniform on ``value_range`` (inclusive; repeats allowed).

Target, ``target_mode="expression"`` (default, fast): a random expression over all the numbers: a random order,
the last value paired with a uniformly random other one, a uniformly random operator (the next allowed one when
it is invalid for the pair: zero divisor, or a non-integer or non-positive result under
``integer_intermediates``; ``-`` is taken as larger minus smaller, ``/`` in a random direction), until one value
is left. The target is the root's value when it is an integer in ``target_range``; with
``use_all_numbers=False`` the most recently built subexpression in range is taken instead (so most targets still
need several numbers). Otherwise the expression is redrawn (numbers too after 32 misses). Solvability is proven
by the expression, kept as the witness ``solution``. The target distribution is that of random expressions, not
uniform: for 6 numbers on 1..100 and targets 10..1000 the median target is about 100 and the 90th percentile
about 530 (measured on 2000 puzzles); use ``target_mode="uniform"`` when the target distribution matters.

Target, ``target_mode="uniform"``: a uniform integer on ``target_range``; with ``require_solvable`` the target is
redrawn (for the same numbers, up to 64 times, then the numbers too) until ``solver.solve`` finds a solution, so
given the numbers the target is uniform over the solvable targets in range. Slower (one complete search per
draw), exact distribution.

``require_solvable=False`` draws a uniform target and does not check it (``solution`` is then ``None``).
``min_solutions``/``max_solutions`` redraw until ``count_solutions`` (same options) lies in range (slower);
``min_steps``/``max_steps`` likewise until the fewest operations that reach the target
(:meth:`~countdown_env.solving.oracle.StepOracle.fewest_steps`, same options) lie in range: together a curriculum by
certified difficulty rather than by number count alone.

Trivial puzzles (the target is one of the numbers, :func:`countdown_env.puzzle.is_trivial`) are redrawn unless
``allow_trivial``: index ``i`` keeps drawing candidates from its own ``default_rng([seed, i])`` until one is not
trivial (before any solution count is asked). So index ``i`` still names one reproducible puzzle, unchanged from
``allow_trivial=True`` wherever that puzzle is not trivial; where it is (about 2 % of indices for 3 and 4 numbers
with the default ranges), index ``i`` names the next non-trivial candidate of the same stream, and no other index
moves. The split builder and the SFT traces draw with ``allow_trivial=True`` and skip a trivial index instead
(:mod:`countdown_env.splits`), which keeps their rows as they were built before this rule.

Settings that cannot be met fail fast with :class:`UnsatisfiableSettings` (a ``ValueError`` naming the setting):
a target range beyond any value the numbers can reach is refused at once (``|value| <= 2**(n-1) * high**n`` for
``n`` numbers of at most ``high``); otherwise, on first use, a probe on its own random stream (it does not change
any puzzle) draws a fixed number of candidates, scaled by the cost of one ``solve``/``count_solutions`` at this
size so that the probe takes about a second at most, and refuses settings that none of them meets (a setting met
by none of the probe's draws is unreachable or too rare to be practical). The search for one puzzle is bounded by
attempts too (:data:`_MAX_DRAWS` number draws).

Difficulty labels (``difficulty_label``) come from the number of distinct solutions
(``distinct_solutions.count_solutions``; see there for what counts as distinct) with thresholds per ``n_numbers`` in
``DIFFICULTY_THRESHOLDS``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..puzzle import Puzzle, is_trivial
from . import solver
from .distinct_solutions import count_solutions
from .oracle import StepOracle

DIFFICULTY_THRESHOLDS: dict[int, tuple[int, int]] = {
    1: (1, 1),
    2: (1, 1),
    3: (1, 2),
    4: (1, 2),
    5: (1, 3),
    6: (9, 18),
}
"""Per ``n_numbers``: (most solutions for "hard", most for "medium"); more is "easy", none is "unsolvable".
Set near the terciles of ``count_solutions`` over default-generator puzzles (numbers 1..100, targets 10..1000,
seed 123; 300/200/40/8 puzzles for n = 3/4/5/6, where the medians were 1/1/2/11 and the 90th percentiles
1/3/7/49). With few numbers most such puzzles have exactly one solution, so "hard" dominates there. Beyond 6
numbers the 6-number thresholds apply."""

_TRIES_PER_NUMBERS = 32
_UNIFORM_TRIES_PER_NUMBERS = 64
_MAX_DRAWS = 2_000  # then the options are declared unsatisfiable (clear error, no hang)

PROBE_STREAM = 0x70726F6265
"""Second word of the probe's seed (``default_rng([seed, PROBE_STREAM])``): never a puzzle index's stream."""

_SOLVE_MS = {1: 0.1, 2: 0.5, 3: 0.6, 4: 1.0, 5: 1.5, 6: 13.0, 7: 200.0, 8: 2000.0}
_COUNT_MS = {1: 0.1, 2: 0.3, 3: 0.8, 4: 3.0, 5: 20.0, 6: 250.0}
"""Measured worst-case milliseconds of one solve (target out of reach) and one count (numbers 1..100), one core;
they size the probe, deterministically (a budget of attempts, not of time)."""

_PROBE_MS = 800.0


class UnsatisfiableSettings(ValueError):
    """Generator settings that no puzzle (or none in a practical number of draws) can meet."""


def reach_bound(n_numbers: int, high: int, operators: str = "+-*/") -> int:
    """An upper bound on ``|value|`` of any expression over at most ``n_numbers`` numbers of at most ``high``:
    ``n * high`` with ``+ -`` only, else ``2**(n-1) * high**n`` (numerator and denominator of every subexpression
    over k numbers are at most ``2**(k-1)`` times their product)."""
    if not set(operators) & {"*", "/"}:
        return n_numbers * high
    return 2 ** (n_numbers - 1) * max(high, 1) ** n_numbers


def _probe_attempts(table: dict[int, float], n: int, least: int) -> int:
    return max(least, int(_PROBE_MS / table.get(n, max(table.values()))))


def difficulty_label(num_solutions: int, n_numbers: int) -> str:
    """``"unsolvable"``, ``"hard"``, ``"medium"`` or ``"easy"`` from a solution count (see DIFFICULTY_THRESHOLDS)."""
    if num_solutions < 0:
        raise ValueError(f"num_solutions must be >= 0, got {num_solutions}")
    if num_solutions == 0:
        return "unsolvable"
    hard, medium = DIFFICULTY_THRESHOLDS[min(max(n_numbers, 1), 6)]
    if num_solutions <= hard:
        return "hard"
    if num_solutions <= medium:
        return "medium"
    return "easy"


@dataclass(frozen=True)
class GeneratedPuzzle:
    """A generated puzzle with its index, one solution (``None`` if none was asked for), and its solution count
    and difficulty (``None`` when the puzzle has more than ``solver.MAX_COUNT_NUMBERS`` numbers)."""

    puzzle: Puzzle
    index: int
    solution: str | None
    num_solutions: int | None
    difficulty: str | None


class PuzzleDraws:
    """The seeded puzzles of one number count under a task's generator settings: ``draws[i]``, ``iter(draws)``,
    ``draws.generate(n, start)``, ``draws.record(i)`` (module docstring: how puzzle ``i`` is drawn).

    ``settings`` is an object with the :class:`~countdown_env.task.CountdownTask` generator and rule fields as
    attributes (a task; validated there). Users build :class:`~countdown_env.task.PuzzleGenerator` (this class
    with a task, its fields as keywords, and mixed number counts), which ``task.generator()`` returns.

    The stream is infinite: ``len(draws)`` raises ``TypeError``; iterate with ``itertools.islice`` or ``generate``.
    """

    def __init__(self, settings: Any) -> None:
        self.n_numbers = settings.n_numbers
        self.value_range = settings.value_range
        self.target_range = settings.target_range
        self.operators = settings.operators
        self.ops = solver.check_operators(settings.operators)
        self.require_solvable = settings.require_solvable
        self.use_all_numbers = settings.use_all_numbers
        self.integer_intermediates = settings.integer_intermediates
        self.min_solutions = settings.min_solutions
        self.max_solutions = settings.max_solutions
        self.min_steps = settings.min_steps
        self.max_steps = settings.max_steps
        self.seed = settings.seed
        self.target_mode = settings.target_mode
        self.allow_trivial = settings.allow_trivial
        self._op_list = sorted(self.ops)

    # -- sequence protocol ----------------------------------------------------------------------------------
    def __getitem__(self, index):
        if isinstance(index, slice):
            if index.stop is None or index.stop < 0 or (index.start or 0) < 0:
                raise IndexError("the stream is infinite: slice with explicit non-negative bounds")
            return [self[i] for i in range(*index.indices(index.stop))]
        return self._draw(self._check_index(index))[0]

    def __iter__(self) -> Iterator[Puzzle]:
        index = 0
        while True:
            yield self[index]
            index += 1

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} is an infinite stream; use generate(n) or itertools.islice")

    def generate(self, n: int, start: int = 0) -> list[Puzzle]:
        """Puzzles ``start, ..., start + n - 1``."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self._check_index(start)
        return [self._draw(i)[0] for i in range(start, start + n)]

    def record(self, index: int, count: bool = True) -> GeneratedPuzzle:
        """``gen[index]`` with a solution, its solution count and difficulty label (``count=False``: without the
        count and label, unless the settings' own solution-count filter computed them)."""
        index = self._check_index(index)
        want_count = count
        puzzle, solution, count = self._draw(index)
        if self.require_solvable and solution is None:
            solution = self._solve(puzzle)
        if want_count and count is None and self.n_numbers <= solver.MAX_COUNT_NUMBERS:
            count = self._count(puzzle)
        if solution is None and count:
            solution = self._solve(puzzle)
        difficulty = None if count is None else difficulty_label(count, self.n_numbers)
        return GeneratedPuzzle(puzzle, index, solution, count, difficulty)

    @staticmethod
    def _check_index(index) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"puzzle index must be an integer, got {type(index).__name__}")
        if index < 0:
            raise IndexError(f"puzzle index must be >= 0 (the stream is infinite), got {index}")
        return int(index)

    # -- drawing ----------------------------------------------------------------------------------------------
    def _options(self) -> dict:
        return {
            "use_all_numbers": self.use_all_numbers,
            "integer_intermediates": self.integer_intermediates,
            "operators": self.operators,
        }

    def _solve(self, puzzle: Puzzle) -> str | None:
        return solver.solve(puzzle, **self._options())

    def _count(self, puzzle: Puzzle) -> int:
        return count_solutions(puzzle, **self._options())

    def _count_bounds(self) -> tuple[int, float]:
        low = self.min_solutions if self.min_solutions is not None else 0
        high = self.max_solutions if self.max_solutions is not None else math.inf
        return low, high

    def _settings(self, *names: str) -> str:
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in names)

    def check_satisfiable(self) -> None:
        """Raise :class:`UnsatisfiableSettings` (naming the setting) when the settings cannot be met: at once for a
        target range out of reach, else when none of a fixed number of probe draws (about a second at most) meets
        them. Runs once, on the first draw; the probe has its own random stream."""
        counting = self.min_solutions is not None or self.max_solutions is not None
        if getattr(self, "_checked", False) or not (self.require_solvable or counting or self._by_steps):
            self._checked = True
            return
        rng = np.random.default_rng([self.seed, PROBE_STREAM])
        n = self.n_numbers
        if self.require_solvable:
            self._check_targets(rng)
        if self.min_solutions is not None or self.max_solutions is not None:
            low, high = self._count_bounds()
            attempts = _probe_attempts(_COUNT_MS, n, 4)
            seen = []
            for _ in range(attempts):
                puzzle, _ = self._draw_candidate(rng)
                if not self._allowed(puzzle):
                    continue
                count = self._count(puzzle)
                if low <= count <= high:
                    break
                seen.append(count)
            else:
                counts = f"their solution counts: {min(seen)}..{max(seen)}" if seen else "all of them trivial"
                raise UnsatisfiableSettings(
                    f"{self._settings('min_solutions', 'max_solutions')} is met by none of {attempts} probe puzzles "
                    f"({counts}; n_numbers={n}, value_range={self.value_range}, target_range={self.target_range}, "
                    f"allow_trivial={self.allow_trivial}): unreachable or too rare"
                )
        if self._by_steps:
            self._probe_steps(rng)
        self._checked = True

    @property
    def _by_steps(self) -> bool:
        return self.min_steps is not None or self.max_steps is not None

    def _steps_in_range(self, puzzle: Puzzle) -> tuple[bool, int | None]:
        """Whether the puzzle's fewest steps lie in ``[min_steps, max_steps]``, and that number."""
        steps = StepOracle(puzzle.target, **self._options()).fewest_steps(puzzle.numbers)
        low = self.min_steps if self.min_steps is not None else 0
        high = self.max_steps if self.max_steps is not None else math.inf
        return steps is not None and low <= steps <= high, steps

    def _probe_steps(self, rng: np.random.Generator) -> None:
        attempts = _probe_attempts(_COUNT_MS, self.n_numbers, 4)  # one oracle question costs about one count
        seen = set()
        for _ in range(attempts):
            puzzle, _ = self._draw_candidate(rng)
            if not self._allowed(puzzle):
                continue
            ok, steps = self._steps_in_range(puzzle)
            if ok:
                return
            seen.add(steps)
        raise UnsatisfiableSettings(
            f"{self._settings('min_steps', 'max_steps')} is met by none of {attempts} probe puzzles (their fewest "
            f"steps: {sorted(seen, key=lambda s: -1 if s is None else s)}; n_numbers={self.n_numbers}, "
            f"use_all_numbers={self.use_all_numbers}): unreachable or too rare"
        )

    def _check_targets(self, rng: np.random.Generator) -> None:
        n, (_, v_hi), (t_lo, t_hi) = self.n_numbers, self.value_range, self.target_range
        bound = reach_bound(n, v_hi, self.operators)
        if t_lo > bound:
            raise UnsatisfiableSettings(
                f"target_range={self.target_range} cannot be reached: {n} numbers of at most {v_hi} "
                f"(value_range={self.value_range}, operators {self.operators!r}) make values of at most {bound}"
            )
        candidates: list[Puzzle] = []
        if self.target_mode == "uniform":
            attempts = _probe_attempts(_SOLVE_MS, n, 4)
            for _ in range(attempts):
                puzzle = Puzzle(self._draw_numbers(rng), int(rng.integers(t_lo, t_hi + 1)))
                if self._allowed(puzzle) and self._solve(puzzle) is not None:
                    candidates.append(puzzle)
                    break
        else:
            attempts = 256 * _TRIES_PER_NUMBERS
            for _ in range(256):
                numbers = self._draw_numbers(rng)
                for _ in range(_TRIES_PER_NUMBERS):
                    found = _random_expression(
                        numbers, rng, self._op_list, self.use_all_numbers, self.integer_intermediates, t_lo, t_hi
                    )
                    if found is not None and self._allowed(Puzzle(numbers, found[0])):
                        candidates.append(Puzzle(numbers, found[0]))
                        break
                if candidates:
                    break
        if not candidates:
            rules = ("use_all_numbers", "integer_intermediates", "operators", "allow_trivial")
            raise UnsatisfiableSettings(
                f"target_range={self.target_range} is not met by any of {attempts} probe puzzles "
                f"({self._settings('target_mode', 'n_numbers', 'value_range', *rules)}): widen target_range or "
                "value_range"
            )

    def _draw(self, index: int) -> tuple[Puzzle, str | None, int | None]:
        self.check_satisfiable()
        rng = np.random.default_rng([self.seed, index])
        counting = self.min_solutions is not None or self.max_solutions is not None
        low, high = self._count_bounds()
        for _ in range(_MAX_DRAWS):
            puzzle, solution = self._draw_candidate(rng)
            if not self._allowed(puzzle):  # the same index's stream draws the next candidate
                continue
            if self._by_steps and not self._steps_in_range(puzzle)[0]:
                continue
            if not counting:
                return puzzle, solution, None
            count = self._count(puzzle)
            if low <= count <= high:
                return puzzle, solution, count
        raise UnsatisfiableSettings(
            f"no puzzle {index} met "
            f"{self._settings('min_solutions', 'max_solutions', 'min_steps', 'max_steps', 'allow_trivial')} in "
            f"{_MAX_DRAWS} draws: too rare for these settings"
        )

    def _allowed(self, puzzle: Puzzle) -> bool:
        """The task's trivial-puzzle rule: a trivial puzzle only with ``allow_trivial``."""
        return self.allow_trivial or not is_trivial(puzzle)

    def _draw_numbers(self, rng: np.random.Generator) -> tuple[int, ...]:
        lo, hi = self.value_range
        return tuple(int(x) for x in rng.integers(lo, hi + 1, size=self.n_numbers))

    def _draw_candidate(self, rng: np.random.Generator) -> tuple[Puzzle, str | None]:
        t_lo, t_hi = self.target_range
        if not self.require_solvable:
            return Puzzle(self._draw_numbers(rng), int(rng.integers(t_lo, t_hi + 1))), None
        for _ in range(_MAX_DRAWS):
            numbers = self._draw_numbers(rng)
            if self.target_mode == "uniform":
                for _ in range(_UNIFORM_TRIES_PER_NUMBERS):
                    puzzle = Puzzle(numbers, int(rng.integers(t_lo, t_hi + 1)))
                    solution = self._solve(puzzle)
                    if solution is not None:
                        return puzzle, solution
                continue
            for _ in range(_TRIES_PER_NUMBERS):
                found = _random_expression(
                    numbers, rng, self._op_list, self.use_all_numbers, self.integer_intermediates, t_lo, t_hi
                )
                if found is not None:
                    return Puzzle(numbers, found[0]), solver.tree_to_infix(found[1])
        raise UnsatisfiableSettings(
            f"no puzzle met {self._settings('target_range', 'target_mode', 'value_range')} in {_MAX_DRAWS} draws"
        )


def _random_expression(numbers, rng: np.random.Generator, ops: list[str], use_all: bool, integer: bool, t_lo, t_hi):
    """(value, tree) of a random expression over all the numbers whose value is an integer in [t_lo, t_hi]; with
    ``use_all=False`` the last-built subexpression in range will do. None when there is none.

    Values stay ``int`` while integral (``Fraction`` only after an inexact division).
    """
    n = len(numbers)
    draws = rng.random(4 * n).tolist()
    order = sorted(range(n), key=draws.__getitem__)
    pool = [(numbers[i], numbers[i]) for i in order]
    made = []
    k = n
    while len(pool) > 1:
        # pair the last value with a random other one (the pool order is already random)
        a, ta = pool.pop()
        b, tb = pool.pop(int(draws[k] * len(pool)))
        first = int(draws[k + 1] * len(ops))
        flip = draws[k + 2] < 0.5
        k += 3
        result = None
        for step in range(len(ops)):
            result = _apply(ops[(first + step) % len(ops)], a, ta, b, tb, flip, integer)
            if result is not None:
                break
        if result is None:
            return None
        pool.append(result)
        made.append(result)
    if not made:  # a single number
        made = pool
    candidates = made[-1:] if use_all else reversed(made)
    for value, tree in candidates:
        if type(value) is int and t_lo <= value <= t_hi:
            return value, tree
    return None


def _apply(op: str, a, ta, b, tb, flip: bool, integer: bool):
    """One non-negative operation (``flip`` chooses b / a over a / b); None if not allowed."""
    if op == "+":
        return a + b, ("+", ta, tb)
    if op == "*":
        return a * b, ("*", ta, tb)
    if op == "-":
        if a == b and integer:
            return None
        return (a - b, ("-", ta, tb)) if a >= b else (b - a, ("-", tb, ta))
    if flip:
        a, ta, b, tb = b, tb, a, ta
    if b == 0:
        return None
    if type(a) is int and type(b) is int and a % b == 0:
        return a // b, ("/", ta, tb)
    if integer:
        return None
    value = Fraction(a) / b
    return (int(value) if value.denominator == 1 else value), ("/", ta, tb)
