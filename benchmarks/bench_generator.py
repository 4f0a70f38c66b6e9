"""Generator speed: solvable puzzles per second with solvability proven, n = 4 and 6, against the same
generator proving each target with solve() (target_mode="uniform") measured in the same run. Rates use this
process's CPU time (``time.process_time``; one core), so other jobs on a shared machine do not deflate them.

    python benchmarks/bench_generator.py [--count 2000] [--baseline-count 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

from countdown_env.expressions.verifier import verify  # noqa: E402
from countdown_env.task import PuzzleGenerator  # noqa: E402


def rate(gen: PuzzleGenerator, count: int) -> tuple[float, list]:
    start = time.process_time()
    drawn = [gen._draw(i) for i in range(count)]
    return count / (time.process_time() - start), drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--baseline-count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("solvable puzzles/s, numbers 1..100, targets 10..1000, each with a verified witness")
    print(f"{'n':>2} {'use_all':>7} {'expression':>11} {'uniform+solve':>14} {'ratio':>7}")
    for n in (4, 6):
        for use_all in (False, True):
            fast, drawn = rate(PuzzleGenerator(n_numbers=n, use_all_numbers=use_all, seed=args.seed), args.count)
            assert all(verify(w, p, use_all_numbers=use_all).correct for p, w, _ in drawn)
            base_gen = PuzzleGenerator(n_numbers=n, use_all_numbers=use_all, seed=args.seed, target_mode="uniform")
            slow, drawn = rate(base_gen, args.baseline_count)
            assert all(verify(w, p, use_all_numbers=use_all).correct for p, w, _ in drawn)
            print(f"{n:>2} {use_all!s:>7} {fast:>11,.0f} {slow:>14,.0f} {fast / slow:>6.1f}x")


if __name__ == "__main__":
    main()
