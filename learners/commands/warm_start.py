"""``countdown warm-start``: the shipped SFT warm start's report, ``--measure`` a checkpoint the same way, or
``--from-scratch`` rebuild it (:mod:`learners.pipeline.runs.warm_start`); ``--multi-step`` does the same for the
multi-step warm start (``warm-start-multistep``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from countdown_env.splits.eval_sets import EVAL_SETS

from ..pipeline.evaluation.eval_models import BACKENDS
from ..pipeline.models import SHIPPED_DIR, SHIPPED_MULTI_STEP_DIR, check_model
from ..pipeline.runs.warm_start import (
    MULTI_STEP_MEASURE,
    MULTI_STEP_RECIPE,
    PRETRAINED_RECIPES,
    RECIPE,
    REPORT_FILE,
    build_warm_start,
)
from ..pipeline.runs.warm_start_report import measure_warm_start

HELP = "the shipped SFT warm start: its report, --measure, --from-scratch (--multi-step: the multi-step one)"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.helpers.threads)


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
    parser.add_argument(
        "--base",
        choices=sorted(PRETRAINED_RECIPES),
        help="--from-scratch: the warm start of this installed pretrained model (its recipe; default --out "
        "runs/warm-start-NAME)",
    )
    parser.add_argument("--no-measure", action="store_true", help="--from-scratch: train only (measure later)")
    parser.add_argument("--out", help="where --from-scratch writes the new checkpoint (default runs/warm-start)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out (refused otherwise)")
    parser.add_argument("--measure", metavar="MODEL", help="measure a checkpoint folder with the warm-start figures")
    parser.add_argument("--eval-limit", type=int, help="measure on the first N puzzles of tiny_n3 only")
    parser.add_argument(
        "--max-new-tokens", type=int, help="--measure's generation budget (default 256; 384 with --multi-step)"
    )
    parser.add_argument("--backend", choices=BACKENDS, help="--measure's sampler (default auto: vLLM from 40 M "
                        "parameters on, one engine for every figure; transformers below)")  # fmt: skip
    parser.add_argument("--eval-set", choices=sorted(EVAL_SETS), help="--measure on this committed set (default "
                        "tiny_n3; the group puzzles come from its train split)")  # fmt: skip
    parser.add_argument("--entropy-puzzles", type=int, help="--measure's entropy over N puzzles (default 128; 0: "
                        "skipped, paragraphs then counted on the T=0.8 samples)")  # fmt: skip
    parser.add_argument("--report", help="--measure: also write the report (JSON) here")


def run(args: argparse.Namespace) -> int:
    measure = dict(MULTI_STEP_MEASURE) if args.multi_step else {}
    if args.eval_limit is not None:
        measure["eval_limit"] = args.eval_limit
    for key in ("max_new_tokens", "backend", "eval_set", "entropy_puzzles"):
        if getattr(args, key, None) is not None:
            measure[key] = getattr(args, key)
    if args.from_scratch:
        if args.base:
            out, recipe = args.out or f"runs/warm-start-{args.base}", PRETRAINED_RECIPES[args.base]
        else:
            out = args.out or ("runs/warm-start-multistep" if args.multi_step else "runs/warm-start")
            recipe = MULTI_STEP_RECIPE if args.multi_step else RECIPE
        path = build_warm_start(
            out,
            recipe,
            measure=measure or None,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            overwrite=args.overwrite,
            measure_after=not args.no_measure,
        )
        if args.no_measure:
            print(path)
            return 0
        report = json.loads((path / REPORT_FILE).read_text())
    elif args.measure:
        check_model(args.measure, allow_hub=False)  # a missing folder fails here in one line, not at the Hub
        report = measure_warm_start(args.measure, **measure)
        path = Path(args.measure)
        if args.report:
            from countdown_env.helpers.atomic import write_text

            write_text(args.report, json.dumps(report, indent=2) + "\n")
    else:
        path = SHIPPED_MULTI_STEP_DIR if args.multi_step else SHIPPED_DIR
        if not (path / REPORT_FILE).is_file():
            print(f"countdown warm-start: error: no shipped warm start at {path}", file=sys.stderr)
            return 2
        report = json.loads((path / REPORT_FILE).read_text())
    print(json.dumps({"path": str(path), **{k: v for k, v in report.items() if k != "task"}}, indent=2))
    return 0
