"""``countdown warm-start``: the shipped SFT warm start's report, ``--measure`` a checkpoint the same way, or
``--from-scratch`` rebuild it (:mod:`learners.pipeline.warm_start`); ``--multi-step`` does the same for the
multi-step warm start (``warm-start-multistep``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..pipeline.models import SHIPPED_DIR, SHIPPED_MULTI_STEP_DIR, check_model
from ..pipeline.warm_start import (
    MULTI_STEP_MEASURE,
    MULTI_STEP_RECIPE,
    RECIPE,
    REPORT_FILE,
    build_warm_start,
    measure_warm_start,
)

HELP = "the shipped SFT warm start: its report, --measure, --from-scratch (--multi-step: the multi-step one)"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.threads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-scratch",
        action="store_true",
        help="rebuild the warm start with the shipped recipe (~27 CPU-minutes on one thread)",
    )
    parser.add_argument(
        "--multi-step",
        action="store_true",
        help="the multi-step warm start (search traces, several paragraphs): its report, or --from-scratch with its "
        "recipe (~21 minutes) into --out (default runs/warm-start-multistep)",
    )
    parser.add_argument("--out", help="where --from-scratch writes the new checkpoint (default runs/warm-start)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out (refused otherwise)")
    parser.add_argument("--measure", metavar="MODEL", help="measure a checkpoint folder with the warm-start figures")
    parser.add_argument("--eval-limit", type=int, help="measure on the first N puzzles of tiny_n3 only")
    parser.add_argument(
        "--max-new-tokens", type=int, help="--measure's generation budget (default 256; 384 with --multi-step)"
    )


def run(args: argparse.Namespace) -> int:
    measure = dict(MULTI_STEP_MEASURE) if args.multi_step else {}
    if args.eval_limit is not None:
        measure["eval_limit"] = args.eval_limit
    if args.max_new_tokens is not None:
        measure["max_new_tokens"] = args.max_new_tokens
    if args.from_scratch:
        out = args.out or ("runs/warm-start-multistep" if args.multi_step else "runs/warm-start")
        recipe = MULTI_STEP_RECIPE if args.multi_step else RECIPE
        path = build_warm_start(
            out,
            recipe,
            measure=measure or None,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            overwrite=args.overwrite,
        )
        report = json.loads((path / REPORT_FILE).read_text())
    elif args.measure:
        check_model(args.measure, allow_hub=False)  # a missing folder fails here in one line, not at the Hub
        report = measure_warm_start(args.measure, **measure)
        path = Path(args.measure)
    else:
        path = SHIPPED_MULTI_STEP_DIR if args.multi_step else SHIPPED_DIR
        if not (path / REPORT_FILE).is_file():
            print(f"countdown warm-start: error: no shipped warm start at {path}", file=sys.stderr)
            return 2
        report = json.loads((path / REPORT_FILE).read_text())
    print(json.dumps({"path": str(path), **{k: v for k, v in report.items() if k != "task"}}, indent=2))
    return 0
