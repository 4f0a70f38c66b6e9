"""``countdown build-sft``: SFT warm-start rows with solver-derived reasoning traces (see sft.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .options import add_exclude_argument, add_range_arguments, excluded_keys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="a .jsonl file, or a folder (gets sft.jsonl and an HF copy)")
    parser.add_argument("--n-numbers", type=int, nargs="+", default=[3])
    parser.add_argument("--size", type=int, default=2000, help="rows in total, shared across counts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--style", default="short", help="direct, short, search, long or mixed")
    add_range_arguments(parser, value_range=[1, 20], target_range=[10, 200])
    parser.add_argument("--template", default="default", help="prompt template name (default, tinyzero, compact)")
    parser.add_argument("--use-all-numbers", action="store_true")
    add_exclude_argument(parser, help="puzzles to keep out")
    parser.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace) -> int:
    from ..sft import build_sft_records
    from ..splits import write_jsonl

    records = build_sft_records(
        tuple(args.n_numbers),
        args.size,
        seed=args.seed,
        style=args.style,
        value_range=tuple(args.value_range),
        target_range=tuple(args.target_range),
        template=args.template,
        use_all_numbers=args.use_all_numbers,
        exclude=excluded_keys(args.exclude),
        progress=False if args.no_progress else None,
    )
    out = Path(args.out)
    target = out if out.suffix == ".jsonl" else out / "sft.jsonl"
    digest = write_jsonl(records, target)
    if out.suffix != ".jsonl":
        from ..sft import sft_features
        from ..splits import records_to_dataset

        records_to_dataset(records, sft_features()).save_to_disk(str(out / "hf"))
    lengths = sorted(len(r["completion"][0]["content"]) for r in records)
    print(f"wrote {len(records)} SFT rows to {target} (sha256 {digest})")
    print(f"  completion chars: min {lengths[0]}, median {lengths[len(lengths) // 2]}, max {lengths[-1]}")
    return 0
