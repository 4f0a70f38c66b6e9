"""Split and SFT build throughput: puzzles/s with solution counts for n = 3..6, traces/s per style.

Baseline in the same run: drawing the same puzzles without a solution count (``PuzzleGenerator[i]``), so the
ratio shows what counting costs. Wall-clock and CPU-time rates are both printed (a shared box inflates the
first). Usage: ``python benchmarks/bench_splits.py [--scale 1.0]``.
"""

from __future__ import annotations

import argparse
import time

from countdown_env.generator import PuzzleGenerator
from countdown_env.sft import build_sft_records
from countdown_env.splits import SplitSpec, build_split_records, stream_seed
from countdown_env.traces import STYLES, make_trace

ROWS = {3: 400, 4: 200, 5: 60, 6: 16}


def bench_splits(scale: float) -> None:
    print("split build (eval rows, verified solution + solution count + difficulty per row)")
    print(f"{'n':>2} {'rows':>5} {'puzzles/s':>10} {'per CPU-s':>10} {'draw-only/s':>12} {'ratio':>7}")
    for n, rows in ROWS.items():
        rows = max(2, int(rows * scale))
        spec = SplitSpec(n_numbers=(n,), train_size=0, eval_size=rows, seed=0)
        start, cpu = time.perf_counter(), time.process_time()
        built = build_split_records(spec, progress=False)["eval"]
        full = len(built) / (time.perf_counter() - start)
        per_cpu = len(built) / (time.process_time() - cpu)
        gen = PuzzleGenerator(n_numbers=n, seed=stream_seed(0, n, "eval"))
        start = time.perf_counter()
        gen.generate(rows)
        draw = rows / (time.perf_counter() - start)
        print(f"{n:>2} {len(built):>5} {full:>10.1f} {per_cpu:>10.1f} {draw:>12.1f} {draw / full:>6.1f}x")


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
    args = parser.parse_args()
    bench_splits(args.scale)
    bench_traces(args.scale)
