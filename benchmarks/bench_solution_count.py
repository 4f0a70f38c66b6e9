"""count_solutions speed for 6 numbers (numbers 1..100, targets 10..1000): median CPU ms per puzzle of the current
implementation and, in the same run on the same puzzles, of a baseline implementation loaded from git history
(``--baseline REV``, default the last commit before the speed-up), so that both figures share the machine's load.

    python benchmarks/bench_solution_count.py [--puzzles 12] [--n 6] [--baseline 9a4343e]
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

from countdown_env import distinct_solutions
from countdown_env.puzzle import Puzzle

ROOT = Path(__file__).resolve().parent.parent


def load_baseline(rev: str):
    """``countdown_env/distinct_solutions.py`` at ``rev`` as a module inside the countdown_env package."""
    source = subprocess.run(
        ["git", "show", f"{rev}:countdown_env/distinct_solutions.py"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    name = "countdown_env._baseline_distinct_solutions"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "countdown_env"
    exec(compile(source, f"{rev}:distinct_solutions.py", "exec"), module.__dict__)  # noqa: S102 - our own history
    sys.modules[name] = module
    return module


def median_ms(count, puzzles) -> tuple[float, list[int]]:
    times, counts = [], []
    for puzzle in puzzles:
        start = time.process_time()
        counts.append(count(puzzle))
        times.append(time.process_time() - start)
    return 1e3 * statistics.median(times), counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puzzles", type=int, default=12)
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--baseline", default="9a4343e", help="git revision of the baseline implementation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    puzzles = [
        Puzzle([int(x) for x in rng.integers(1, 101, size=args.n)], int(rng.integers(10, 1001)))
        for _ in range(args.puzzles)
    ]
    baseline = load_baseline(args.baseline)
    before, old_counts = median_ms(baseline.count_solutions, puzzles)
    after, new_counts = median_ms(distinct_solutions.count_solutions, puzzles)
    assert old_counts == new_counts, "the counts must not change"
    print(f"count_solutions, {args.n} numbers, {len(puzzles)} puzzles, median CPU ms per puzzle")
    print(f"  baseline ({args.baseline}): {before:.1f} ms")
    print(f"  current:            {after:.1f} ms   ({before / after:.2f}x)")


if __name__ == "__main__":
    main()
