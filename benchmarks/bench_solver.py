"""Solver speed: median time to find one solution or prove there is none, n = 4, 5, 6 (solvable and unsolvable
reported separately), against the pure-Python exact subset search measured in the same run; and count_solutions.

Puzzles: numbers uniform on 1..100, targets uniform on 10..1000 (default ranges), drawn until each class has
enough cases. One core: numpy runs single-threaded here; times are this process's CPU time
(``time.process_time``), so that other jobs on a shared machine do not inflate them.

    python benchmarks/bench_solver.py [--cases 40] [--baseline-cases 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from countdown_env.puzzle import Puzzle  # noqa: E402
from countdown_env.solving.distinct_solutions import count_solutions  # noqa: E402
from countdown_env.solving.solver import _check_operators, _python_solve, solve  # noqa: E402


def draw_cases(n: int, wanted: int, rng: np.random.Generator, max_draws: int = 4000):
    """Up to ``wanted`` solvable and ``wanted`` unsolvable puzzles (classified by solve(), not timed here)."""
    cases: dict[bool, list[Puzzle]] = {True: [], False: []}
    for _ in range(max_draws):
        puzzle = Puzzle([int(x) for x in rng.integers(1, 101, size=n)], int(rng.integers(10, 1001)))
        found = solve(puzzle) is not None
        if len(cases[found]) < wanted:
            cases[found].append(puzzle)
        if all(len(v) >= wanted for v in cases.values()):
            break
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--baseline-cases", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    ops = _check_operators("+-*/")
    print("solve(): find one or prove none; numbers 1..100, targets 10..1000, median over cases (ms)")
    print(f"{'n':>2} {'class':>10} {'cases':>5} {'median':>8} {'p90':>8} {'baseline':>9} {'speed-up':>8}")
    for n in (4, 5, 6):
        cases = draw_cases(n, args.cases, rng)
        for solvable in (True, False):
            group = cases[solvable]
            if not group:
                print(f"{n:>2} {'solvable' if solvable else 'unsolvable':>10} {0:>5}  (none drawn)")
                continue
            # timed apart from the drawing (which interleaves the classes and warms caches)
            times = []
            for puzzle in group:
                start = time.process_time()
                solve(puzzle)
                times.append(time.process_time() - start)
            base = []
            for puzzle in group[: args.baseline_cases if n < 6 else min(2, args.baseline_cases)]:
                start = time.process_time()
                _python_solve(puzzle.numbers, puzzle.target, ops, False, False)
                base.append(time.process_time() - start)
            median = statistics.median(times)
            p90 = float(np.percentile(times, 90))
            base_median = statistics.median(base)
            ratio = base_median / statistics.median(times[: len(base)])
            label = "solvable" if solvable else "unsolvable"
            print(
                f"{n:>2} {label:>10} {len(group):>5} {median * 1e3:>8.2f} {p90 * 1e3:>8.2f} "
                f"{base_median * 1e3:>9.1f} {ratio:>7.1f}x"
            )
    print("\ncount_solutions(): exact count of distinct solutions (canonical forms), median over cases (ms)")
    for n, k in ((4, 20), (5, 10), (6, 3)):
        times = []
        for _ in range(k):
            puzzle = Puzzle([int(x) for x in rng.integers(1, 101, size=n)], int(rng.integers(10, 1001)))
            start = time.process_time()
            count_solutions(puzzle)
            times.append(time.process_time() - start)
        print(f"{n:>2} {k:>5} cases  median {statistics.median(times) * 1e3:>9.1f}")


if __name__ == "__main__":
    main()
