"""Exact solver: every answer verifies, "None" agrees with an independent brute force, options are honoured."""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_env.expressions.verifier import verify
from countdown_env.puzzle import Puzzle, PuzzleError
from countdown_env.solving.distinct_solutions import count_solutions, solutions
from countdown_env.solving.solver import solve


@cache
def _brute_force(numbers: tuple, target: int, use_all: bool, integer: bool, ops: str) -> bool:
    """Classic search over signed exact values: combine any two values with any operator, in both orders.

    Independent of the solver: it allows negative intermediates (the solver never builds them) and tries
    every order of operands.
    """
    values = tuple(sorted(Fraction(x) for x in numbers))
    return _reachable(values, Fraction(target), use_all, integer, ops)


@cache
def _reachable(values: tuple, target: Fraction, use_all: bool, integer: bool, ops: str) -> bool:
    if (len(values) == 1 or not use_all) and target in values:
        return True
    for i in range(len(values)):
        for j in range(len(values)):
            if i == j:
                continue
            a, b = values[i], values[j]
            rest = [values[k] for k in range(len(values)) if k not in (i, j)]
            results = []
            if "+" in ops and i < j:
                results.append(a + b)
            if "-" in ops:
                results.append(a - b)
            if "*" in ops and i < j:
                results.append(a * b)
            if "/" in ops and b != 0:
                results.append(a / b)
            for r in results:
                if integer and (r.denominator != 1 or r <= 0):
                    continue
                if _reachable(tuple(sorted([*rest, r])), target, use_all, integer, ops):
                    return True
    return False


def _check(puzzle: Puzzle, **options) -> str | None:
    answer = solve(puzzle, **options)
    if answer is not None:
        kwargs = {k: v for k, v in options.items() if k != "operators"}
        verdict = verify(answer, puzzle, **kwargs)
        assert verdict.correct, (puzzle, options, answer, verdict)
        assert set(answer) <= set("0123456789 ()") | set(options.get("operators", "+-*/")), answer
    return answer


def test_known_solution_verifies():
    assert _check(Puzzle([25, 3, 7], 82)) == "25 * 3 + 7"
    assert _check(Puzzle([75, 50, 2, 3, 8, 7], 812)) is not None


@pytest.mark.parametrize(
    ("numbers", "target", "options"),
    [
        ((2, 3), 7, {}),
        ((2, 2), 5, {}),
        ((1, 1, 1, 1), 100, {}),
        ((3, 100), 3, {"use_all_numbers": True}),  # 3 alone is a solution, but not with all numbers
        ((1, 3, 4, 6), 24, {"integer_intermediates": True, "use_all_numbers": True}),  # only 6 / (1 - 3 / 4)
        ((4, 5, 6), 26, {"operators": "+-"}),  # needs * (4 * 5 + 6)
        ((7, 2), 5, {"operators": "+*"}),
    ],
)
def test_known_unsolvable_returns_none(numbers, target, options):
    assert solve(Puzzle(numbers, target), **options) is None


def test_fractional_intermediates_found_when_allowed():
    answer = _check(Puzzle([1, 3, 4, 6], 24), use_all_numbers=True)
    assert answer is not None and "/" in answer


def test_use_all_numbers_uses_every_number():
    puzzle = Puzzle([3, 100], 3)
    assert _check(puzzle) == "3"
    answer = _check(Puzzle([5, 5, 1], 10), use_all_numbers=True)
    assert sorted(verify(answer, Puzzle([5, 5, 1], 10)).numbers_used) == [1, 5, 5]


@settings(max_examples=250, deadline=None)
@given(
    numbers=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    target=st.integers(1, 80),
    use_all=st.booleans(),
    integer=st.booleans(),
    ops=st.sampled_from(["+-*/", "+-*", "+-", "+*", "+", "+*/"]),
)
def test_solver_agrees_with_brute_force_and_verifies(numbers, target, use_all, integer, ops):
    puzzle = Puzzle(numbers, target)
    answer = _check(puzzle, use_all_numbers=use_all, integer_intermediates=integer, operators=ops)
    assert (answer is not None) == _brute_force(tuple(numbers), target, use_all, integer, ops)


@settings(max_examples=25, deadline=None)
@given(
    numbers=st.lists(st.integers(1, 100), min_size=5, max_size=6),
    target=st.integers(10, 1000),
    use_all=st.booleans(),
    integer=st.booleans(),
)
def test_six_number_answers_verify(numbers, target, use_all, integer):
    _check(Puzzle(numbers, target), use_all_numbers=use_all, integer_intermediates=integer)


def test_eight_numbers_find_one():
    puzzle = Puzzle([3, 7, 11, 25, 50, 75, 100, 9], 937)
    assert _check(puzzle) is not None
    assert _check(puzzle, use_all_numbers=True) is not None


def test_huge_numbers_take_the_exact_fallback(monkeypatch):
    import countdown_env.solving.solver as solver_module

    calls = []
    original = solver_module._python_solve
    monkeypatch.setattr(solver_module, "_python_solve", lambda *a: calls.append(a) or original(*a))
    big = 10**12
    puzzle = Puzzle([big, big - 1, 7, 3], 22)  # products of 10**12-sized values would overflow int64
    answer = _check(puzzle, use_all_numbers=True)
    assert calls and answer is not None
    assert solve(Puzzle([big, big - 1, 7, 3], 11), operators="+*") is None


def test_hash_collisions_never_decide(monkeypatch):
    import numpy as np

    import countdown_env.solving.solver as solver_module

    # every value hashes to 0 or 1: tables see colliding keys and must fall back to the exact search
    monkeypatch.setattr(solver_module, "_hash", lambda p, q: (p % 2).astype(np.uint64))
    calls = []
    original = solver_module._python_solve
    monkeypatch.setattr(solver_module, "_python_solve", lambda *a: calls.append(a) or original(*a))
    assert _check(Puzzle([25, 3, 7, 2], 152)) is not None
    assert solve(Puzzle([2, 2], 5)) is None
    assert len(calls) == 2  # both searches fell back


def test_deterministic():
    puzzle = Puzzle([8, 4, 9, 75, 2, 6], 523)
    assert solve(puzzle) == solve(Puzzle([8, 4, 9, 75, 2, 6], 523))


@pytest.mark.parametrize("operators", ["", "-", "+/", "+x", 5, "+-*/^"])
def test_bad_operators_raise(operators):
    with pytest.raises(ValueError):
        solve(Puzzle([1, 2], 3), operators=operators)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="at most 8"):
        solve(Puzzle(list(range(1, 10)), 5))
    with pytest.raises(PuzzleError):
        solve([1, 2, 3])
    assert solve({"numbers": [1, 2], "target": 3}) == "1 + 2"


# ----------------------------------------------------------------------------------------------------------
# Counting: an independent statement of "the same solution" (canonical key of an expression tree), applied to
# every expression a brute force writes; count_solutions must equal the number of distinct keys.
# ----------------------------------------------------------------------------------------------------------
def _canon(tree):
    """(sign, key, |value|): +/- chains flattened to (added, subtracted) multisets, * / chains to (multiplied,
    divided) multisets, signs of negative subexpressions moved outwards."""
    if isinstance(tree, int):
        return 1, ("n", tree), Fraction(tree)
    if tree[0] in "+-":
        terms = []
        _flat(tree, 1, terms, "+-")
        pos = tuple(sorted(k for s, k, _ in terms if s > 0))
        neg = tuple(sorted(k for s, k, _ in terms if s < 0))
        value = sum((s * v for s, _, v in terms), Fraction(0))
        return (-1, ("s", neg, pos), -value) if value < 0 else (1, ("s", pos, neg), value)
    factors = []
    sign = _flat(tree, 1, factors, "*/")
    mul = tuple(sorted(k for d, k, _ in factors if d > 0))
    div = tuple(sorted(k for d, k, _ in factors if d < 0))
    value = Fraction(1)
    for d, _, v in factors:
        value = value * v if d > 0 else value / v
    return (1 if value == 0 else sign), ("p", mul, div), value


def _flat(tree, mark, out, ops):
    if not isinstance(tree, int) and tree[0] in ops:
        left = _flat(tree[1], mark, out, ops)
        right = _flat(tree[2], mark if tree[0] in "+*" else -mark, out, ops)
        return left * right
    s, k, v = _canon(tree)
    if ops == "+-":
        out.append((mark * s, k, v))
        return 1
    out.append((mark, k, v))
    return s


@cache
def _all_trees(numbers: tuple, integer: bool, ops: str) -> list:
    if len(numbers) == 1:
        return [(Fraction(numbers[0]), numbers[0])]
    out = []
    for r in range(1, len(numbers)):
        for left_idx in itertools.combinations(range(len(numbers)), r):
            left = tuple(numbers[i] for i in left_idx)
            right = tuple(numbers[i] for i in range(len(numbers)) if i not in left_idx)
            for a, ta in _all_trees(left, integer, ops):
                for b, tb in _all_trees(right, integer, ops):
                    for op in ops:
                        if op == "/" and b == 0:
                            continue
                        v = {"+": a + b, "-": a - b, "*": a * b}[op] if op != "/" else a / b
                        if integer and (v.denominator != 1 or v <= 0):
                            continue
                        out.append((v, (op, ta, tb)))
    return out


def _distinct_solutions(numbers, target, use_all=False, integer=False, ops="+-*/") -> set:
    keys = set()
    sizes = [len(numbers)] if use_all else range(1, len(numbers) + 1)
    for r in sizes:
        for idx in itertools.combinations(range(len(numbers)), r):
            for value, tree in _all_trees(tuple(sorted(numbers[i] for i in idx)), integer, ops):
                if value == target:
                    sign, key, _ = _canon(tree)
                    assert sign == 1
                    keys.add(key)
    return keys


@pytest.mark.parametrize(
    ("numbers", "target", "use_all", "expected"),
    [
        ((1, 2, 3), 6, False, 4),  # 2 * 3, 1 + 2 + 3, 1 * 2 * 3, 2 * 3 / 1
        ((1, 2, 3), 6, True, 3),
        ((2, 2), 4, False, 2),  # 2 + 2, 2 * 2: which copy of 2 does not matter
        ((2, 2, 2, 2), 8, True, 3),  # 2 + 2 + 2 + 2, 2 + 2 + 2 * 2, 2 * 2 + 2 * 2
        ((2, 2, 2, 2), 8, False, 5),  # and 2 * 2 * 2, (2 + 2) * 2
        ((5,), 5, False, 1),
        ((3, 4), 5, False, 0),
    ],
)
def test_count_hand_checked(numbers, target, use_all, expected):
    puzzle = Puzzle(numbers, target)
    assert count_solutions(puzzle, use_all_numbers=use_all) == expected
    listed = solutions(puzzle, use_all_numbers=use_all)
    assert len(listed) == expected == len(_distinct_solutions(numbers, target, use_all))


def test_commutativity_associativity_and_signs_are_one_solution():
    keys = {_canon(tree)[1] for tree in [("-", ("*", 3, 5), ("-", 2, 9)), ("+", ("*", 5, 3), ("-", 9, 2))]}
    assert len(keys) == 1  # 3 * 5 - (2 - 9) == 5 * 3 + (9 - 2)
    assert count_solutions(Puzzle([3, 5, 2, 9], 22), use_all_numbers=True) == len(
        _distinct_solutions((3, 5, 2, 9), 22, True)
    )


@settings(max_examples=120, deadline=None)
@given(
    numbers=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    target=st.integers(1, 40),
    use_all=st.booleans(),
    integer=st.booleans(),
    ops=st.sampled_from(["+-*/", "+-*", "+-", "+*", "+*/", "*/"]),
)
def test_count_and_list_match_the_brute_force_definition(numbers, target, use_all, integer, ops):
    puzzle = Puzzle(numbers, target)
    options = {"use_all_numbers": use_all, "integer_intermediates": integer, "operators": ops}
    count = count_solutions(puzzle, **options)
    assert count == len(_distinct_solutions(tuple(numbers), target, use_all, integer, ops))
    assert (count > 0) == (solve(puzzle, **options) is not None)
    listed = solutions(puzzle, **options)
    assert len(listed) == count and len(set(listed)) == count
    for text in listed:
        assert verify(text, puzzle, use_all_numbers=use_all, integer_intermediates=integer).correct, text
    assert solutions(puzzle, limit=1, **options) == listed[:1]


@pytest.mark.slow
def test_count_five_numbers_with_repeats_matches_brute_force():
    for numbers, target in [((2, 3, 3, 1, 1), 11), ((3, 3, 2, 2, 2), 9)]:
        assert count_solutions(Puzzle(numbers, target)) == len(_distinct_solutions(numbers, target))


def test_count_rejects_too_many_numbers():
    with pytest.raises(ValueError, match="at most 6"):
        count_solutions(Puzzle([1] * 7, 3))
    with pytest.raises(ValueError, match="limit"):
        solutions(Puzzle([1, 2], 3), limit=-1)


@pytest.mark.parametrize("seed", range(6))
def test_canonical_form_agrees_with_the_solution_count(seed):
    """canonical_form's identity is the counting's: the listed solutions are canonical forms, pairwise distinct, and
    a regrouped or sign-flipped variant of a solution maps back onto it."""
    import random

    from countdown_env.expressions.expression import canonical_form

    rng = random.Random(seed)
    for _ in range(4):
        numbers = [rng.randint(1, 12) for _ in range(4)]
        puzzle = Puzzle(numbers, rng.randint(1, 60))
        listed = solutions(puzzle)
        assert len(listed) == count_solutions(puzzle)
        assert [canonical_form(s) for s in listed] == listed
    puzzle = Puzzle([2, 3, 5, 9], 14)  # (3 - 5) * (2 - 9) = 14
    listed = set(solutions(puzzle))
    assert canonical_form("(3 - 5) * (2 - 9)") in listed and canonical_form("(5 - 3) * (9 - 2)") in listed
