"""The step oracle against the solver (every puzzle of a committed eval set, random integer states) and against an
independent value-set brute force (random states with fractions, zeros and negative values; fewest steps)."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from countdown_env.puzzle import Puzzle
from countdown_env.solving.distinct_solutions import count_solutions
from countdown_env.solving.oracle import OracleLimitError, OracleLimits, StepOracle
from countdown_env.solving.solver import solve
from tests.brute_force import fewest as _brute_fewest

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATASETS / f"{name}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("use_all", [False, True])
def test_every_puzzle_of_tiny_n3_agrees_with_the_solver(use_all):
    for row in _rows("tiny_n3"):
        puzzle = Puzzle(row["numbers"], row["target"])
        oracle = StepOracle(puzzle.target, use_all_numbers=use_all)
        expected = solve(puzzle, use_all_numbers=use_all) is not None
        assert oracle.reachable(puzzle.numbers) == expected, row
        assert oracle.solutions_left(puzzle.numbers) == count_solutions(puzzle, use_all_numbers=use_all), row
        if not use_all:
            assert oracle.solutions_left(puzzle.numbers) == row["num_solutions"]


@pytest.mark.parametrize("use_all,integer", [(False, False), (True, False), (False, True), (True, True)])
def test_random_integer_states_agree_with_the_solver(use_all, integer):
    rng = random.Random(7)
    for _ in range(150):
        state = [rng.randint(1, 30) for _ in range(rng.randint(1, 4))]
        target = rng.randint(1, 120)
        oracle = StepOracle(target, use_all_numbers=use_all, integer_intermediates=integer)
        expected = solve(Puzzle(state, target), use_all_numbers=use_all, integer_intermediates=integer) is not None
        assert oracle.reachable(state) == expected, (state, target)
        assert (oracle.fewest_steps(state) is not None) == expected


@pytest.mark.parametrize("use_all,integer", [(False, False), (True, False), (False, True), (True, True)])
def test_random_states_with_fractions_and_signs_agree_with_brute_force(use_all, integer):
    rng = random.Random(11)
    pool = [Fraction(p, q) for p in range(0, 13) for q in (1, 2, 3)] + [Fraction(-v) for v in range(1, 9)]
    pool += [Fraction(-3, 2), Fraction(-5, 3)]
    if integer:
        pool = [Fraction(v) for v in range(1, 13)]
    for _ in range(300):
        state = tuple(sorted(rng.choice(pool) for _ in range(rng.randint(1, 4))))
        target = rng.randint(1, 40)
        oracle = StepOracle(target, use_all_numbers=use_all, integer_intermediates=integer)
        fewest = _brute_fewest(state, target, use_all, integer)
        assert oracle.reachable(state) == (fewest is not None), (state, target)
        assert oracle.fewest_steps(state) == fewest, (state, target)
        if all(v >= 0 for v in state):
            assert (oracle.solutions_left(state) > 0) == (fewest is not None), (state, target)


def test_the_memo_is_shared_across_states_and_order_does_not_matter():
    oracle = StepOracle(82)
    assert oracle.reachable([4, 7, 75])
    visited = oracle.states
    assert oracle.reachable([75, 4, 7]) and oracle.states == visited  # same multiset: no new search
    assert oracle.reachable([Fraction(75), 7, Fraction(8, 2)])  # 8/2 is the value 4


def test_limits_refuse_with_a_clear_error():
    with pytest.raises(OracleLimitError, match="at most 6 values"):
        StepOracle(10).reachable([1] * 7)
    with pytest.raises(OracleLimitError, match="gave up after 5 states"):
        StepOracle(10**9, limits=OracleLimits(max_states=5)).reachable([3, 5, 7, 11])
    with pytest.raises(OracleLimitError, match="positive integer"):
        StepOracle(10, integer_intermediates=True).reachable([Fraction(1, 2), 3])
    with pytest.raises(ValueError, match="target"):
        StepOracle(0)
    # a combination past the magnitude bound is refused as the verifier would refuse it (too_large)
    assert StepOracle(10_000, limits=OracleLimits(max_magnitude=9_999)).reachable([100, 100]) is False
    assert StepOracle(10_000).reachable([100, 100]) is True
