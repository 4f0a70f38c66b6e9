"""count_solutions speed per number count (numbers 1..100, targets 10..1000): median CPU ms per puzzle of a baseline
implementation loaded from git history (``--baseline REV``, default e6ec602, the last commit before the int/pair
values and point look-ups) and of the current code, measured in the same run on the same puzzles (alternating per
puzzle, so both share the machine's load), with the ratio; the counts of the two must agree.

    python benchmarks/bench_solution_count.py [--puzzles 20] [--n 3 4 5 6] [--baseline e6ec602] [--seed 0]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from countdown_env.puzzle import Puzzle
from countdown_env.solving import distinct_solutions

ROOT = Path(__file__).resolve().parent.parent


def load_baseline(rev: str):
    """``countdown_env/solving/distinct_solutions.py`` at ``rev`` as a module inside the countdown_env package."""
    source = subprocess.run(
        ["git", "show", f"{rev}:countdown_env/solving/distinct_solutions.py"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    name = "countdown_env._baseline_distinct_solutions"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "countdown_env"
    exec(compile(source, f"{rev}:distinct_solutions.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    sys.modules[name] = module
    return module


def measure(counters, puzzles) -> tuple[list[float], list[list[int]]]:
    """Median CPU ms per puzzle of each counter, and its counts; the counters take turns on each puzzle."""
    times: list[list[float]] = [[] for _ in counters]
    counts: list[list[int]] = [[] for _ in counters]
    for puzzle in puzzles:
        for i, count in enumerate(counters):
            start = time.process_time()
            counts[i].append(count(puzzle))
            times[i].append(time.process_time() - start)
    return [1e3 * statistics.median(t) for t in times], counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puzzles", type=int, default=20)
    parser.add_argument("--n", type=int, nargs="+", default=[3, 4, 5, 6], help="number counts to time")
    parser.add_argument("--baseline", default="e6ec602", help="git revision of the baseline implementation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    baseline = load_baseline(args.baseline)
    print(f"count_solutions, {args.puzzles} puzzles per number count, median CPU ms per puzzle")
    print(f"  n   before ({args.baseline})   after    ratio")
    for n in args.n:
        rng = np.random.default_rng([args.seed, n])
        puzzles = [
            Puzzle([int(x) for x in rng.integers(1, 101, size=n)], int(rng.integers(10, 1001)))
            for _ in range(args.puzzles)
        ]
        (before, after), (old_counts, new_counts) = measure(
            [baseline.count_solutions, distinct_solutions.count_solutions], puzzles
        )
        assert old_counts == new_counts, f"the counts must not change ({n} numbers)"
        print(f"  {n}   {before:8.1f} ms{'':8}{after:6.1f} ms   {before / after:5.2f}x")


if __name__ == "__main__":
    main()
