"""``countdown build-splits``: reproducible train/test splits (jsonl + ``save_to_disk``) in one folder.

``--num-proc N`` computes the rows on N processes; ``--shard K/N`` computes every N-th row (one command per machine
or scheduler task) into a shard folder that ``countdown merge-splits`` combines. Either gives the bytes of a
one-process build. The folder is written atomically; an existing non-empty ``--out`` needs ``--overwrite``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .options import (
    add_exclude_argument,
    add_range_arguments,
    add_rule_arguments,
    add_template_argument,
    claiming_out,
    excluded_keys,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (created); gets {train,test}.jsonl, HF copy")
    parser.add_argument("--n-numbers", type=int, nargs="+", default=[3, 4, 5], help="number counts (1..6; 8 with "
                        "--no-counts)")  # fmt: skip
    parser.add_argument("--train", type=int, default=50_000, help="train rows in total, shared across counts")
    parser.add_argument("--eval", type=int, default=512, help="rows of the held-out split 'test', shared across counts")
    parser.add_argument("--seed", type=int, default=0, help="build seed (the same seed gives the same bytes)")
    add_range_arguments(parser, value_range=[1, 100], target_range=[10, 1000])
    add_rule_arguments(parser)
    parser.add_argument("--min-solutions", type=int, default=None, help="keep puzzles with at least N solutions")
    parser.add_argument("--max-solutions", type=int, default=None, help="keep puzzles with at most N solutions")
    add_template_argument(parser)
    add_exclude_argument(parser, help="keep the puzzles of this jsonl (numbers, target) out of both splits; repeatable")
    parser.add_argument("--no-counts", action="store_true", help="skip solution counts (no num_solutions/difficulty "
                        "columns; much faster for 5-6 numbers; allows up to 8 numbers)")  # fmt: skip
    parser.add_argument("--num-proc", type=int, default=1, help="processes computing rows (same bytes as 1)")
    parser.add_argument("--shard", metavar="K/N", help="compute shard K of N (0-based) into --out; combine the N "
                        "shard folders with countdown merge-splits")  # fmt: skip
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --out")
    parser.add_argument("--jsonl-only", action="store_true", help="skip the HF save_to_disk copy")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")


def _build(args: argparse.Namespace) -> int:
    from ..helpers.atomic import check_output
    from ..splits import SplitSpec, build_split_records
    from ..splits.folders import SPLIT_FOLDER_FILES, write_splits
    from ..splits.shards import SHARD_FOLDER_FILES, build_shard, parse_shard, write_shard

    # every check before any work: the output, the inputs, the settings (and the generator's probe, at first draw)
    owned = SHARD_FOLDER_FILES if args.shard else SPLIT_FOLDER_FILES
    check_output(args.out, args.exclude, overwrite=args.overwrite, owned=owned)
    shard = parse_shard(args.shard) if args.shard else None
    if args.num_proc < 1:
        raise ValueError(f"--num-proc must be >= 1, got {args.num_proc}")
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
        counts=not args.no_counts,
    )
    for n in spec.n_numbers:  # unsatisfiable settings fail here, in about a second, before the build
        spec.stream_task(n, "test").generator().check_satisfiable()
    progress = False if args.no_progress else None
    start = time.perf_counter()
    if shard is not None:
        info, rows = build_shard(spec, *shard, num_proc=args.num_proc, progress=progress)
        write_shard(info, rows, args.out, overwrite=args.overwrite)
        built = time.perf_counter() - start
        print(f"built shard {shard[0]}/{shard[1]}: {len(rows)} rows in {built:.1f} s -> {args.out}")
        return 0
    records = build_split_records(spec, progress=progress, num_proc=args.num_proc)
    built = time.perf_counter() - start
    hashes = write_splits(
        records, args.out, spec=spec, save_to_disk=not args.jsonl_only, overwrite=args.overwrite, progress=progress
    )
    print_summary(records, hashes, built, args.out)
    return 0


def print_summary(records: dict, hashes: dict, seconds: float | None, out: str) -> None:
    total = sum(len(rows) for rows in records.values())
    timing = f" in {seconds:.1f} s ({total / max(seconds, 1e-9):.0f} puzzles/s)" if seconds is not None else ""
    print(f"built {total} puzzles{timing} -> {out}")
    for name, rows in records.items():
        by_n = Counter(r["n_numbers"] for r in rows)
        line = f"  {name}: {len(rows)} rows, by n {dict(sorted(by_n.items()))}"
        if rows and "difficulty" in rows[0]:
            line += f", by difficulty {dict(Counter(r['difficulty'] for r in rows))}"
        print(line)
        print(f"    {name}.jsonl sha256 {hashes[name]}")


run = claiming_out(_build)
