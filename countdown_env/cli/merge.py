"""``countdown merge-splits SHARD_DIR... --out DIR``: combine the shard folders of ``build-splits --shard K/N``
into the split folder a one-process build writes (the same bytes)."""

from __future__ import annotations

import argparse

from .options import claiming_out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", help="the N shard folders (any order)")
    parser.add_argument("--out", required=True, help="output split folder")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --out")
    parser.add_argument("--jsonl-only", action="store_true", help="skip the HF save_to_disk copy")


def _build(args: argparse.Namespace) -> int:
    from ..helpers.atomic import check_output
    from ..splits.folders import SPLIT_FOLDER_FILES, write_splits
    from ..splits.shards import merge_shards
    from .build_splits import print_summary

    check_output(args.out, args.shards, overwrite=args.overwrite, owned=SPLIT_FOLDER_FILES)
    records, info = merge_shards(args.shards)
    hashes = write_splits(records, args.out, spec=info, save_to_disk=not args.jsonl_only, overwrite=args.overwrite)
    print_summary(records, hashes, None, args.out)
    return 0


run = claiming_out(_build)
