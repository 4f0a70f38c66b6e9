"""``countdown compare``: run learners side by side from one warm start (:mod:`learners.pipeline.compare`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from ..pipeline.compare import run_compare
from ..pipeline.compare.settings import FULL, QUICK, CompareSettings, CompareSize, default_learners
from ..pipeline.evaluation.protocol import EVAL_SAMPLES
from . import add_earlier_spelling, add_precision_option

HELP = "run learners side by side from one warm start: CSV, summary, curves"
USES_TORCH = True  # the `countdown` command adds --threads (countdown_env.helpers.threads)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..core.registry import LEARNERS

    parser.add_argument(
        "--learners", nargs="+", default=list(default_learners()), choices=list(LEARNERS), help="registered learners"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds: one run per learner and seed")
    parser.add_argument("--out", default="runs/compare", help="output folder")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="[LEARNER.]trainer.KEY=VALUE",
        help="a trainer option (YAML) of every learner's runs, e.g. trainer.learning_rate=1e-5, or of one learner's "
        "with its name in front: grpo.trainer.beta=0.01 (train's grammar)",
    )  # fmt: skip
    parser.add_argument(
        "--model",
        help="model every run starts from: a folder, 'warm-start' (default, the shipped one) or "
        "'warm-start-multistep' (with --max-new-tokens 384)",
    )
    parser.add_argument("--resume", action="store_true", help="skip finished runs, continue the others")
    parser.add_argument("--overwrite", action="store_true", help="delete a previous comparison in --out first")
    parser.add_argument(
        "--quick", action="store_true",
        help=f"tiny sizes (tests): {QUICK.max_steps} steps, {QUICK.eval_limit} eval puzzles, "
        f"{QUICK.max_new_tokens} tokens",
    )  # fmt: skip
    for item in dataclasses.fields(CompareSize):  # one flag per size, its help and default read from the field
        default = getattr(FULL, item.name)
        shown = "all" if default is None else default
        parser.add_argument(f"--{item.name.replace('_', '-')}", type=int,
                            help=f"{item.metadata['help']} (default {shown})")  # fmt: skip
        add_earlier_spelling(parser, item, int)
    parser.add_argument(
        "--eval-samples", type=int, default=EVAL_SAMPLES,
        help="completions per eval puzzle: pass@1 and pass@N are reported, each sample's verdict kept in evals/",
    )  # fmt: skip
    parser.add_argument("--eval-batch-size", type=int, default=128, help="rows per HF generate call in evals")
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep TRL checkpoints of finished runs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (shown when stderr is a terminal)")
    parser.add_argument(
        "--rollouts",
        choices=("dataset", "env", "tools"),
        default="dataset",
        help="dataset (TRL generates), env (CountdownTokens-v0 episodes via rollout_func), tools (check tool)",
    )
    parser.add_argument(
        "--lora-rank",
        type=int,
        help="train a LoRA adapter of this rank (alpha 2 x rank) on --lora-targets instead of every weight",
    )
    parser.add_argument(
        "--lora-targets",
        choices=("attention", "all-linear"),
        default="attention",
        help="--lora-rank's layers: the attention projections, or every linear layer",
    )
    parser.add_argument(
        "--train-file",
        help="JSONL of training puzzles (numbers, target) to draw each seed's --train-size from (shuffled per seed) "
        "instead of generating them; none may be an eval puzzle",
    )
    parser.add_argument(
        "--async",
        dest="async_rollouts",
        action="store_true",
        help="generation runs ahead of the update (with --vllm): each run's async section (core/async_rollouts.py)",
    )
    parser.add_argument("--max-staleness", type=int, help="with --async: samples at most this many versions old (1)")
    add_precision_option(parser, "every run's precision")
    parser.add_argument(
        "--vllm",
        action="store_true",
        help="generate with a colocated vLLM engine (CPU or GPU build): --set trainer.use_vllm=true "
        "trainer.vllm_mode=colocate",
    )


VLLM_OVERRIDES = ("trainer.use_vllm=true", "trainer.vllm_mode=colocate")


def settings_from_args(args: argparse.Namespace) -> CompareSettings:
    staleness = getattr(args, "max_staleness", None)
    if staleness is not None and not getattr(args, "async_rollouts", False):
        raise ValueError("--max-staleness is a setting of --async: give both")
    sizes = dataclasses.asdict(QUICK if args.quick else FULL)
    for key in sizes:
        value = getattr(args, key, None)
        if value is not None:
            sizes[key] = value
    return CompareSettings(
        learners=list(args.learners),
        seeds=list(args.seeds),
        model=args.model,
        overrides=[*(VLLM_OVERRIDES if getattr(args, "vllm", False) else []), *args.overrides],
        quick=bool(args.quick),
        eval_batch_size=args.eval_batch_size,
        eval_samples=getattr(args, "eval_samples", EVAL_SAMPLES),
        keep_checkpoints=bool(args.keep_checkpoints),
        rollouts=getattr(args, "rollouts", "dataset"),
        lora_rank=getattr(args, "lora_rank", None),
        lora_targets=getattr(args, "lora_targets", "attention"),
        train_file=getattr(args, "train_file", None),
        precision=getattr(args, "precision", "auto"),
        async_max_staleness=(1 if staleness is None else staleness) if getattr(args, "async_rollouts", False) else None,
        **sizes,
    )


def run(args: argparse.Namespace) -> int:
    if args.resume and args.overwrite:
        print("countdown compare: error: --resume and --overwrite exclude each other", file=sys.stderr)
        return 2
    try:
        settings = settings_from_args(args)
        result = run_compare(
            settings,
            args.out,
            resume=args.resume,
            overwrite=args.overwrite,
            progress_bars=False if args.no_progress else None,
        )
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"countdown compare: error: {exc}", file=sys.stderr)
        return 2
    from ..pipeline.runs.processes import run_processes

    if run_processes().is_main:  # under accelerate launch: one report, not one per process
        print((Path(args.out) / "summary.md").read_text())
        print(json.dumps(result))
        if result["prompt_digest_mismatches"]:
            seeds = ", ".join(map(str, result["prompt_digest_mismatches"]))
            print(f"countdown compare: error: the learners of seed {seeds} trained on different prompts (prompt "
                  "digests differ): the comparison is not paired; rerun those runs", file=sys.stderr)  # fmt: skip
    if result["prompt_digest_mismatches"]:
        return 1
    return 1 if result["failures"] else 0
