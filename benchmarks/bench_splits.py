"""Split and SFT build throughput: puzzles/s with solution counts for n = 3..6, traces/s per style, and the
speed-up of ``num_proc=2`` over one process on the same build.

Baseline in the same run: drawing the same puzzles without a solution count (``PuzzleGenerator[i]``), so the
ratio shows what counting costs; ``count_solutions`` alone per number count (ms per puzzle). Wall-clock and
CPU-time rates are both printed (a shared box inflates the first).
Usage: ``python benchmarks/bench_splits.py [--scale 1.0] [--only parallel]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from countdown_env.sft import build_sft_records
from countdown_env.sft.traces import STYLES, make_trace
from countdown_env.solving.distinct_solutions import count_solutions
from countdown_env.splits import SplitSpec, build_split_records, stream_seed
from countdown_env.task import PuzzleGenerator

ROWS = {3: 400, 4: 200, 5: 60, 6: 16}


def bench_splits(scale: float) -> None:
    print("split build (eval rows, verified solution + solution count + difficulty per row)")
    print(f"{'n':>2} {'rows':>5} {'puzzles/s':>10} {'per CPU-s':>10} {'draw-only/s':>12} {'ratio':>7}")
    for n, rows in ROWS.items():
        rows = max(2, int(rows * scale))
        spec = SplitSpec(n_numbers=(n,), train_size=0, eval_size=rows, seed=0)
        start, cpu = time.perf_counter(), time.process_time()
        built = build_split_records(spec, progress=False)["test"]
        full = len(built) / (time.perf_counter() - start)
        per_cpu = len(built) / (time.process_time() - cpu)
        gen = PuzzleGenerator(n_numbers=n, seed=stream_seed(0, n, "eval"))
        start = time.perf_counter()
        gen.generate(rows)
        draw = rows / (time.perf_counter() - start)
        print(f"{n:>2} {len(built):>5} {full:>10.1f} {per_cpu:>10.1f} {draw:>12.1f} {draw / full:>6.1f}x")


def bench_counting(scale: float) -> None:
    print("\ncount_solutions per number count (numbers 1..100, targets 10..1000, CPU ms per puzzle)")
    print(f"{'n':>2} {'puzzles':>7} {'median':>8} {'p90':>8} {'puzzles/CPU-s':>14}")
    for n, rows in {3: 200, 4: 100, 5: 40, 6: 12}.items():
        puzzles = PuzzleGenerator(n_numbers=n, seed=11).generate(max(3, int(rows * scale)))
        times = []
        for puzzle in puzzles:
            start = time.process_time()
            count_solutions(puzzle)
            times.append(time.process_time() - start)
        times.sort()
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        print(f"{n:>2} {len(times):>7} {1e3 * statistics.median(times):>8.2f} {1e3 * p90:>8.2f} "
              f"{len(times) / sum(times):>14.1f}")  # fmt: skip


def bench_parallel(scale: float) -> None:
    """The same build (4 and 5 numbers) on 1 and 2 processes: wall-clock speed-up."""
    spec = SplitSpec(n_numbers=(4, 5), train_size=max(8, int(240 * scale)), eval_size=8, seed=0)
    print(f"\nbuild_split_records, n_numbers (4, 5), {spec.train_size + spec.eval_size} rows: num_proc 1 vs 2 (wall)")
    timings = {}
    for num_proc in (1, 2):
        start = time.perf_counter()
        rows = build_split_records(spec, progress=False, num_proc=num_proc)
        timings[num_proc] = time.perf_counter() - start
        print(f"  num_proc={num_proc}: {timings[num_proc]:.2f} s")
        if num_proc == 1:
            reference = rows
        else:
            assert rows == reference, "num_proc=2 must give the rows of one process"
    print(f"  speed-up {timings[1] / timings[2]:.2f}x (same rows)")


def bench_traces(scale: float) -> None:
    count = max(10, int(300 * scale))
    puzzles = [
        p
        for p in PuzzleGenerator(n_numbers=3, value_range=(1, 20), target_range=(10, 200), seed=3).generate(2 * count)
        if p.target not in p.numbers
    ][:count]
    print(f"\ntraces for {len(puzzles)} three-number puzzles (numbers 1..20, targets 10..200)")
    print(f"{'style':>7} {'traces/s':>9} {'median chars':>13} {'max chars':>10}")
    for style in STYLES:
        start = time.perf_counter()
        lengths = sorted(len(make_trace(p, style=style, seed=0).completion()) for p in puzzles)
        rate = len(puzzles) / (time.perf_counter() - start)
        print(f"{style:>7} {rate:>9.0f} {lengths[len(lengths) // 2]:>13} {lengths[-1]:>10}")
    for n in (4, 5, 6):
        ps = [p for p in PuzzleGenerator(n_numbers=n, seed=3).generate(20) if p.target not in p.numbers][:10]
        start = time.perf_counter()
        for p in ps:
            make_trace(p, style="search", seed=0)
        print(f"  n={n} (1..100, 10..1000) search style: {len(ps) / (time.perf_counter() - start):.1f} traces/s")
    start = time.perf_counter()
    rows = build_sft_records((3,), count, seed=0, style="mixed", progress=False)
    rate = len(rows) / (time.perf_counter() - start)
    print(f"build_sft_records((3,), {count}, style='mixed'): {rate:.0f} rows/s (generate + trace + verify)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the row counts")
    parser.add_argument("--only", choices=("splits", "counting", "parallel", "traces"), help="run one part")
    args = parser.parse_args()
    parts = {"splits": bench_splits, "counting": bench_counting, "parallel": bench_parallel, "traces": bench_traces}
    for name, part in parts.items():
        if args.only in (None, name):
            part(args.scale)
