"""``countdown build-sft``: SFT warm-start rows with solver-derived reasoning traces (:mod:`countdown_env.sft`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..sft.traces import MIXED, STYLES
from .options import (
    add_exclude_argument,
    add_range_arguments,
    add_rule_arguments,
    add_template_argument,
    claiming_out,
    excluded_keys,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", required=True, help="a .jsonl file, or a folder (gets train.jsonl, an HF copy and a card)"
    )
    parser.add_argument("--n-numbers", type=int, nargs="+", default=[3], help="number counts (rows shared evenly)")
    parser.add_argument("--size", type=int, default=2000, help="rows in total, shared across counts")
    parser.add_argument("--seed", type=int, default=0, help="build seed (the same seed gives the same rows)")
    parser.add_argument(
        "--style", default="short", choices=[*STYLES, MIXED], help="trace style (mixed: a style drawn per row)"
    )
    add_range_arguments(parser, value_range=[1, 20], target_range=[10, 200])
    add_template_argument(parser)
    add_rule_arguments(parser)
    add_exclude_argument(parser, help="puzzles to keep out")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")


def _build(args: argparse.Namespace) -> int:
    from ..helpers.atomic import check_output
    from ..helpers.jsonl import write_jsonl
    from ..sft import SFT_FOLDER_FILES, build_sft_records

    folder = Path(args.out).suffix != ".jsonl"
    out = check_output(args.out, args.exclude, overwrite=args.overwrite, owned=SFT_FOLDER_FILES if folder else None)
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
    target = out if out.suffix == ".jsonl" else out / "train.jsonl"
    if out.suffix == ".jsonl":
        digest = write_jsonl(records, target)
    else:  # the split folders' layout: DatasetDict {"train"} at the root, train.jsonl, README.md card
        from ..sft import write_sft_folder

        settings = {k: v for k, v in vars(args).items() if k not in ("out", "exclude", "no_progress", "overwrite")}
        digest = write_sft_folder(records, out, {**settings, "exclude": list(args.exclude)}, overwrite=args.overwrite)
    lengths = sorted(len(r["completion"][0]["content"]) for r in records)
    print(f"wrote {len(records)} SFT rows to {target} (sha256 {digest})")
    print(f"  completion chars: min {lengths[0]}, median {lengths[len(lengths) // 2]}, max {lengths[-1]}")
    return 0


run = claiming_out(_build)
