"""The Countdown puzzle: a multiset of positive integers and a positive integer target."""

from __future__ import annotations

import json
import numbers as _numbers
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_NUMBERS = 32
"""Most numbers a puzzle may hold (the exact solver handles far fewer; see solver.py)."""

MAX_VALUE = 10**12
"""Largest number or target accepted; anything larger is an input error, not a puzzle."""


class PuzzleError(ValueError):
    """Raised when a puzzle's numbers or target are not valid."""


def _as_positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        # A float is refused even when integral ("82.0"): numbers are read one way everywhere, as the verifier and
        # the command line read them.
        hint = f" (write it as {int(value)})" if isinstance(value, float) and value.is_integer() else ""
        raise PuzzleError(f"{what} must be a positive integer, got {value!r}{hint}")
    value = int(value)
    if value <= 0:
        raise PuzzleError(f"{what} must be a positive integer, got {value}")
    if value > MAX_VALUE:
        raise PuzzleError(f"{what} must be at most {MAX_VALUE}, got {value}")
    return value


@dataclass(frozen=True, init=False)
class Puzzle:
    """Given ``numbers`` (a multiset, order kept as given) reach ``target`` with + - * / and parentheses.

    >>> p = Puzzle([25, 3, 7], 82)
    >>> p.key
    ((3, 7, 25), 82)
    >>> Puzzle.from_json(p.to_json()) == p
    True
    """

    numbers: tuple[int, ...]
    target: int

    def __init__(self, numbers, target) -> None:
        if isinstance(numbers, (str, bytes)) or not hasattr(numbers, "__iter__"):
            raise PuzzleError(f"numbers must be a sequence of positive integers, got {numbers!r}")
        values = tuple(numbers)
        if not values:
            raise PuzzleError("numbers must not be empty")
        if len(values) > MAX_NUMBERS:
            raise PuzzleError(f"a puzzle holds at most {MAX_NUMBERS} numbers, got {len(values)}")
        checked = tuple(_as_positive_int(v, f"numbers[{i}]") for i, v in enumerate(values))
        object.__setattr__(self, "numbers", checked)
        object.__setattr__(self, "target", _as_positive_int(target, "target"))

    @property
    def key(self) -> tuple[tuple[int, ...], int]:
        """Canonical identity: sorted numbers and target (a permutation of the numbers is the same puzzle)."""
        return tuple(sorted(self.numbers)), self.target

    @property
    def n_numbers(self) -> int:
        return len(self.numbers)

    def to_dict(self) -> dict[str, Any]:
        return {"numbers": list(self.numbers), "target": self.target}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Puzzle:
        """The puzzle of a row with ``numbers`` (or ``nums``, TinyZero's and the common Hub sets' name) and
        ``target``."""
        try:
            return cls(data["numbers"] if "numbers" in data else data["nums"], data["target"])
        except (KeyError, TypeError) as exc:
            raise PuzzleError(f"expected a mapping with 'numbers' (or 'nums') and 'target', got {data!r}") from exc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Puzzle:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PuzzleError(f"not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise PuzzleError(f"expected a JSON object, got {type(data).__name__}")
        return cls.from_dict(data)

    def __str__(self) -> str:
        return f"{list(self.numbers)} -> {self.target}"


def as_puzzle(value: Puzzle | Mapping[str, Any]) -> Puzzle:
    """A :class:`Puzzle` as is, or the puzzle of a mapping with ``numbers`` (or ``nums``) and ``target``."""
    if isinstance(value, Puzzle):
        return value
    if isinstance(value, Mapping):
        return Puzzle.from_dict(value)
    raise PuzzleError(f"expected a Puzzle or a mapping with 'numbers' and 'target', got {type(value).__name__}")


MAX_ROW_ERROR = 200
"""Longest message of a bad row kept in :func:`puzzles_from_rows`' error (a row may quote megabytes)."""


def puzzles_from_rows(rows: Iterable[Any], where: str | os.PathLike) -> list[Puzzle]:
    """The puzzle of every row (mappings with ``numbers`` or ``nums``, and ``target``), checked all before any work
    uses them: the first bad row (``"target": "six"``, 500 000 numbers, ``10**100``, ``1e999``, not a mapping) is a
    :class:`PuzzleError` in one line, ``WHERE: row N: why`` (``N`` counts rows from 1). Callers run it before a model
    loads, so a bad split costs no weights' load time."""
    puzzles = []
    for index, row in enumerate(rows, 1):
        try:
            puzzles.append(as_puzzle(row))
        except PuzzleError as exc:
            why = str(exc)
            why = why if len(why) <= MAX_ROW_ERROR else why[: MAX_ROW_ERROR - 3] + "..."
            raise PuzzleError(f"{os.fspath(where)}: row {index}: {why}") from None
    return puzzles


def is_trivial(puzzle: Puzzle) -> bool:
    """The task rule's test for a trivial puzzle: its target is one of its numbers, so writing that number down
    (answer ``"23"`` for ``[46, 89, 47, 23] -> 23``) solves it. Every consumer (generator, splits, SFT traces,
    curriculum, envs, verifiers, ``create_dataset``, ``countdown generate``) asks this one function; tasks leave
    such puzzles out unless ``CountdownTask(allow_trivial=True)``.

    >>> is_trivial(Puzzle([46, 89, 47, 23], 23)), is_trivial(Puzzle([25, 3, 7], 82))
    (True, False)
    """
    return puzzle.target in puzzle.numbers
