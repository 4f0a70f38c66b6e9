"""``countdown warm-start``: the shipped SFT warm start's report, ``--measure`` a checkpoint the same way, or
``--from-scratch`` rebuild it (:mod:`learners.pipeline.warm_start`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..pipeline.models import SHIPPED_DIR, check_model
from ..pipeline.warm_start import RECIPE, REPORT_FILE, build_warm_start, measure_warm_start

HELP = "the shipped SFT warm start: its report, --measure, --from-scratch"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-scratch",
        action="store_true",
        help="rebuild the warm start with the shipped recipe (~27 CPU-minutes on one thread)",
    )
    parser.add_argument("--out", default="runs/warm-start", help="where --from-scratch writes the new checkpoint")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out (refused otherwise)")
    parser.add_argument("--measure", metavar="MODEL", help="measure a checkpoint folder with the warm-start figures")
    parser.add_argument("--eval-limit", type=int, help="measure on the first N puzzles of tiny_n3 only")


def run(args: argparse.Namespace) -> int:
    if args.from_scratch:
        path = build_warm_start(
            args.out, RECIPE, log=lambda m: print(m, file=sys.stderr, flush=True), overwrite=args.overwrite
        )
        report = json.loads((path / REPORT_FILE).read_text())
    elif args.measure:
        check_model(args.measure, allow_hub=False)  # a missing folder fails here in one line, not at the Hub
        report = measure_warm_start(args.measure, eval_limit=args.eval_limit)
        path = Path(args.measure)
    else:
        path = SHIPPED_DIR
        if not (path / REPORT_FILE).is_file():
            print(f"countdown warm-start: error: no shipped warm start at {path}", file=sys.stderr)
            return 2
        report = json.loads((path / REPORT_FILE).read_text())
    print(json.dumps({"path": str(path), **{k: v for k, v in report.items() if k != "task"}}, indent=2))
    return 0
