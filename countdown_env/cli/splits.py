"""``countdown build-splits``: reproducible train/eval splits (jsonl + ``save_to_disk``) in one folder."""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .options import add_exclude_argument, add_range_arguments, excluded_keys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (created); gets {train,eval}.jsonl, HF copy")
    parser.add_argument("--n-numbers", type=int, nargs="+", default=[3, 4, 5], help="number counts (1..6)")
    parser.add_argument("--train", type=int, default=50_000, help="train rows in total, shared across counts")
    parser.add_argument("--eval", type=int, default=512, help="eval rows in total, shared across counts")
    parser.add_argument("--seed", type=int, default=0)
    add_range_arguments(parser, value_range=[1, 100], target_range=[10, 1000])
    parser.add_argument("--use-all-numbers", action="store_true", help="every number exactly once")
    parser.add_argument("--integer-intermediates", action="store_true", help="every intermediate a whole number")
    parser.add_argument("--min-solutions", type=int, default=None)
    parser.add_argument("--max-solutions", type=int, default=None)
    parser.add_argument("--template", default="default", help="prompt template name (default, tinyzero, compact)")
    add_exclude_argument(parser, help="keep the puzzles of this jsonl (numbers, target) out of both splits; repeatable")
    parser.add_argument("--jsonl-only", action="store_true", help="skip the HF save_to_disk copy")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from ..splits import SplitSpec, build_split_records, write_splits

    spec = SplitSpec(
        n_numbers=tuple(args.n_numbers),
        train_size=args.train,
        eval_size=args.eval,
        seed=args.seed,
        value_range=tuple(args.value_range),
        target_range=tuple(args.target_range),
        use_all_numbers=args.use_all_numbers,
        integer_intermediates=args.integer_intermediates,
        min_solutions=args.min_solutions,
        max_solutions=args.max_solutions,
        template=args.template,
        exclude=frozenset(excluded_keys(args.exclude)),
    )
    start = time.perf_counter()
    records = build_split_records(spec, progress=False if args.no_progress else None)
    built = time.perf_counter() - start
    hashes = write_splits(records, args.out, spec=spec, save_to_disk=not args.jsonl_only)
    total = sum(len(rows) for rows in records.values())
    print(f"built {total} puzzles in {built:.1f} s ({total / max(built, 1e-9):.0f} puzzles/s) -> {args.out}")
    for name, rows in records.items():
        by_n = Counter(r["n_numbers"] for r in rows)
        by_difficulty = Counter(r["difficulty"] for r in rows)
        print(f"  {name}: {len(rows)} rows, by n {dict(sorted(by_n.items()))}, by difficulty {dict(by_difficulty)}")
        print(f"    {name}.jsonl sha256 {hashes[name]}")
    return 0
