"""An independent brute force over Countdown states for the oracle's and the step labels' tests: the set of every
value an expression over a multiset can take, built split by split (signed values, both operand orders), with no
code shared with the oracle or the solver."""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import cache


@cache
def values(state: tuple, integer: bool) -> frozenset:
    """Every value of an expression using each value of ``state`` (sorted) exactly once."""
    if len(state) == 1:
        return frozenset(Fraction(v) for v in state)
    found = set()
    n = len(state)
    for size in range(1, n // 2 + 1):
        for left_idx in itertools.combinations(range(n), size):
            left = tuple(sorted(state[i] for i in left_idx))
            right = tuple(sorted(state[i] for i in range(n) if i not in left_idx))
            for a in values(left, integer):
                for b in values(right, integer):
                    results = [a + b, a - b, b - a, a * b]
                    results += [a / b] if b else []
                    results += [b / a] if a else []
                    for r in results:
                        if integer and (r.denominator != 1 or r <= 0):
                            continue
                        found.add(r)
    return frozenset(found)


def fewest(state, target: int, use_all: bool, integer: bool) -> int | None:
    """Fewest operations: the smallest sub-multiset (all of it under use_all) whose values include the target."""
    state = tuple(sorted(Fraction(v) for v in state))
    sizes = [len(state)] if use_all else range(1, len(state) + 1)
    for size in sizes:
        for sub in itertools.combinations(state, size):
            if Fraction(target) in values(tuple(sorted(sub)), integer):
                return size - 1
    return None


def reachable(state, target: int, use_all: bool, integer: bool) -> bool:
    return fewest(state, target, use_all, integer) is not None
