"""The exact step oracle: the value of any partial Countdown state, memoised on the multiset.

After ``25 * 3 = 75`` the state of ``[25, 3, 7, 4] -> 82`` is the multiset ``{75, 7, 4}``, and whether the target is
still reachable from it has a definite answer. :class:`StepOracle` answers it for any multiset of exact values
(``int`` or ``Fraction``; a state reached through a division may hold fractions, one reached through a
subtraction may hold 0 or, when a model writes ``3 - 7 = -4``, negative values), under the task's rules:

- ``use_all_numbers``: the state is solved only when it is the single value ``target`` (every value used exactly
  once); otherwise when ``target`` is among its values (each value at most once);
- ``integer_intermediates``: every combination must be a positive integer (as the verifier demands);
- ``operators``: any subset allowed by :func:`~countdown_env.solving.solver_common.check_operators`.

Three questions, each memoised on the sorted multiset (the order of the values never matters):

- :meth:`StepOracle.reachable`: can the target still be reached? An exhaustive search over the moves "replace two
  values by one combination". On states of non-negative values the moves are the solver's own non-negative
  combinations (``a + b``, ``|a - b|``, ``a * b``, ``a / b``, ``b / a``: ``solver._combine``), which lose nothing
  for a positive target (the argument of :mod:`countdown_env.solving.solver`); a state holding a negative value also
  gets the other sign of each difference, so it is searched exactly too.
- :meth:`StepOracle.solutions_left`: how many distinct solutions remain: the distinct-solution count of
  :mod:`countdown_env.solving.distinct_solutions` with the state's values as the numbers (the values already
  computed are atoms). Defined for states of non-negative values (its canonical forms move signs outwards).
- :meth:`StepOracle.fewest_steps`: the fewest further operations that reach the target (``None`` when it is not
  reachable): ``len(values) - 1`` under ``use_all_numbers``, else the size of the smallest sub-multiset that reaches
  it with all its values, minus one (0 when the target is already a value).

Bounds, as the verifier's :class:`~countdown_env.expressions.expression.Limits`: at most ``max_values`` values
(the counting's ``MAX_COUNT_NUMBERS``), combinations whose numerator or denominator exceed ``max_magnitude`` are
refused (the verifier would refuse such an expression as ``too_large``), and one oracle visits at most
``max_states`` multisets and searches at most ``max_seconds`` per question: past either, :class:`OracleLimitError`
(a ``ValueError``), never a hang. A cold oracle per puzzle is the plain use; keeping it across the states of one
puzzle (a completion's steps, a group of completions) is what the memo is for.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from ..expressions.expression import DEFAULT_LIMITS
from .distinct_solutions import MAX_COUNT_NUMBERS, _Counter
from .solver import _combine
from .solver_common import check_operators

__all__ = ["OracleLimitError", "OracleLimits", "StateValue", "StepOracle", "combine_step"]

Value = int | Fraction
Key = tuple[Value, ...]


class OracleLimitError(ValueError):
    """A question the oracle refuses: too many values, or past its state or time budget."""


@dataclass(frozen=True)
class OracleLimits:
    """The oracle's bounds (see the module docstring). With the defaults a question ends within ``max_seconds`` (30 s):
    most answer in well under a second, but a hostile pass measured six unreachable values that took 10.5-25.7 s."""

    max_values: int = MAX_COUNT_NUMBERS
    max_states: int = 2_000_000
    max_seconds: float = 30.0
    max_magnitude: int = DEFAULT_LIMITS.max_magnitude

    def __post_init__(self) -> None:
        for name in ("max_values", "max_states", "max_magnitude"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"OracleLimits.{name} must be a positive integer, got {value!r}")
        if not self.max_seconds > 0:
            raise ValueError(f"OracleLimits.max_seconds must be positive, got {self.max_seconds!r}")


@dataclass(frozen=True)
class StateValue:
    """The oracle's answers for one state: ``solutions`` and ``fewest_steps`` are ``None`` when not asked for
    (``fewest_steps`` is also ``None`` when the target is unreachable)."""

    reachable: bool
    solutions: int | None = None
    fewest_steps: int | None = None


def _exact(value: Value) -> Value:
    """An ``int`` for an integral value, else the reduced ``Fraction`` (ints and Fractions hash and compare alike,
    so keys mixing them are the same multisets; ints keep the common case fast)."""
    if type(value) is int:
        return value
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else value
    raise TypeError(f"state values must be int or Fraction, got {type(value).__name__}")


def combine_step(
    a: Value, op: str, b: Value, *, ops: frozenset[str], integer: bool, max_magnitude: int
) -> Value | None:
    """``a op b`` exactly under the rules, or ``None`` when the rules refuse it: an operator not allowed, a division
    by zero, under ``integer`` a result that is not a positive integer, or a numerator/denominator over
    ``max_magnitude``. The one rule check of a single step (step labels) and of the oracle's search."""
    if op not in ops:
        return None
    if op == "+":
        value = a + b
    elif op == "-":
        value = a - b
    elif op == "*":
        value = a * b
    else:
        if b == 0:
            return None
        value = Fraction(a) / b
    return _admissible(_exact(value), integer, max_magnitude)


def _admissible(value: Value, integer: bool, max_magnitude: int) -> Value | None:
    if type(value) is int:
        if integer and value <= 0:
            return None
        return value if abs(value) <= max_magnitude else None
    if integer:
        return None
    return value if abs(value.numerator) <= max_magnitude and value.denominator <= max_magnitude else None


class StepOracle:
    """Reachability, solutions left and fewest further steps for the states of one target under one rule set.

    >>> oracle = StepOracle(82)
    >>> oracle.reachable([75, 7, 4]), oracle.reachable([100, 7]), oracle.fewest_steps([75, 7, 4])
    (True, False, 1)
    """

    def __init__(
        self,
        target: int,
        *,
        use_all_numbers: bool = False,
        integer_intermediates: bool = False,
        operators: str = "+-*/",
        limits: OracleLimits | None = None,
    ) -> None:
        if isinstance(target, bool) or not isinstance(target, int) or target <= 0:
            raise ValueError(f"target must be a positive integer, got {target!r}")
        self.target = target
        self.use_all = bool(use_all_numbers)
        self.integer = bool(integer_intermediates)
        self.ops = check_operators(operators)
        self.limits = limits or OracleLimits()
        self._any: dict[Key, bool] = {}  # reachable using each value at most once
        self._all: dict[Key, bool] = {}  # reachable using every value exactly once
        self._children: dict[Key, tuple[Key, ...]] = {}
        self._counts: dict[Key, int] = {}
        self._deadline = 0.0

    # -- public questions -----------------------------------------------------------------------------------
    def key(self, values: Iterable[Value]) -> Key:
        """The memo key of a state: its exact values, sorted; refuses states the oracle does not take."""
        key = tuple(sorted(_exact(v) for v in values))
        if not key:
            raise OracleLimitError("a state must hold at least one value")
        if len(key) > self.limits.max_values:
            raise OracleLimitError(f"the oracle takes at most {self.limits.max_values} values, got {len(key)}")
        if self.integer and any(type(v) is not int or v <= 0 for v in key):
            raise OracleLimitError("under integer_intermediates every value must be a positive integer")
        return key

    def reachable(self, values: Iterable[Value]) -> bool:
        """Whether the target can still be reached from ``values`` under the rules (exhaustive, memoised)."""
        key = self.key(values)
        self._start()
        return self._reach_all(key) if self.use_all else self._reach_any(key)

    def fewest_steps(self, values: Iterable[Value]) -> int | None:
        """The fewest further operations that reach the target, ``None`` when it cannot be reached."""
        key = self.key(values)
        self._start()
        if self.use_all:
            return len(key) - 1 if self._reach_all(key) else None
        if not self._reach_any(key):
            return None
        for size in range(1, len(key) + 1):
            for sub in dict.fromkeys(itertools.combinations(key, size)):
                if self._reach_all(sub):
                    return size - 1
        raise AssertionError("reachable but no sub-multiset reaches the target")  # pragma: no cover

    def solutions_left(self, values: Iterable[Value]) -> int:
        """Distinct solutions from ``values`` (the counting of ``count_solutions`` with the values as numbers)."""
        key = self.key(values)
        if any(v < 0 for v in key):
            raise OracleLimitError("solution counts are defined for states of non-negative values only")
        found = self._counts.get(key)
        if found is None:
            leaves = tuple(v if type(v) is int else (v.numerator, v.denominator) for v in key)
            counter = _Counter(leaves, self.ops, self.integer, sort_key=_leaf_order)
            found = self._counts[key] = counter.count(self.target, self.use_all)
        return found

    def value(self, values: Iterable[Value], *, solutions: bool = False, fewest_steps: bool = False) -> StateValue:
        """All three answers for one state; the two costlier ones only on request."""
        values = self.key(values)
        return StateValue(
            self.reachable(values),
            self.solutions_left(values) if solutions else None,
            self.fewest_steps(values) if fewest_steps else None,
        )

    @property
    def states(self) -> int:
        """Multisets visited so far (the memo's size)."""
        return len(self._children)

    # -- the search -----------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._deadline = time.monotonic() + self.limits.max_seconds

    def _reach_any(self, key: Key) -> bool:
        hit = self._any.get(key)
        if hit is None:
            hit = self.target in key or any(self._reach_any(child) for child in self._moves(key))
            self._any[key] = hit
        return hit

    def _reach_all(self, key: Key) -> bool:
        hit = self._all.get(key)
        if hit is None:
            if len(key) == 1:
                hit = key[0] == self.target
            else:
                hit = any(self._reach_all(child) for child in self._moves(key))
            self._all[key] = hit
        return hit

    def _moves(self, key: Key) -> tuple[Key, ...]:
        """The states one move away: two values replaced by each admissible combination (sorted keys)."""
        found = self._children.get(key)
        if found is not None:
            return found
        if len(self._children) >= self.limits.max_states:
            raise OracleLimitError(f"the oracle gave up after {self.limits.max_states} states")
        if time.monotonic() > self._deadline:
            raise OracleLimitError(f"the oracle gave up after {self.limits.max_seconds} s")
        signed = key[0] < 0
        limit = self.limits.max_magnitude
        children: dict[Key, None] = {}
        n = len(key)
        for i in range(n):
            if i and key[i] == key[i - 1]:
                continue  # the same values as the pairs of the copy just done
            for j in range(i + 1, n):
                if j > i + 1 and key[j] == key[j - 1]:
                    continue
                a, b = key[i], key[j]
                rest = key[:i] + key[i + 1 : j] + key[j + 1 :]
                results = [raw for raw, _ in _combine(Fraction(a), None, Fraction(b), None, self.ops)]
                if signed and "-" in self.ops:
                    results.append(-abs(Fraction(a) - b))  # the other sign of the difference
                for result in results:
                    value = _admissible(_exact(result), self.integer, limit)
                    if value is not None:
                        children[tuple(sorted((*rest, value)))] = None
        found = self._children[key] = tuple(children)
        return found


def _leaf_order(value) -> Fraction:
    """Sort key of a counting leaf (an int or a (numerator, denominator) pair)."""
    return Fraction(value) if type(value) is int else Fraction(*value)
