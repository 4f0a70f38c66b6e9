"""One run (one learner, one seed): its warm start, its trainer with the counting subclass and the callback that
times steps and evaluates at step 0 / every ``--eval-every`` steps / the end; the counters are snapshotted into every
checkpoint before its manifest (``--resume`` takes the newest complete one), and its files are in
``DIR/runs/LEARNER-sSEED/``."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from countdown_env.atomic import write_bytes, write_text

from ...core.checkpoints import checkpoint_step, checkpoints, newest_complete_checkpoint
from ..warm_start import SHIPPED_DIR
from .counting import Tally, instrumented
from .progress import Progress
from .results import rows_to_csv
from .settings import EVAL_SAMPLES, EVAL_TEMPERATURE, CompareSettings, learner_trainer_kwargs

STATE_FILE = "compare_state.json"

# The shipped warm start; a checkout without it (a stripped wheel) falls back in default_warm_start().
SHIPPED_WARM_START = SHIPPED_DIR


def has_shipped_warm_start() -> bool:
    """Whether the shipped warm start (:data:`SHIPPED_WARM_START`) exists."""
    return (SHIPPED_WARM_START / "config.json").is_file()


def default_warm_start(work_dir: str | Path) -> Path:
    """The model folder every run starts from when ``--model`` is not given.

    The shipped warm start (:data:`SHIPPED_WARM_START`); where it is missing, a *randomly initialised* tiny model
    built into ``work_dir/init-model`` (with a loud warning: nothing can be learned from it).
    """
    if has_shipped_warm_start():
        return SHIPPED_WARM_START
    from ..tiny import build_tiny_model

    init = Path(work_dir) / "init-model"
    message = (
        "countdown compare: NO SHIPPED WARM START — every run starts from a RANDOMLY INITIALISED tiny model "
        f"({init}); the figures measure plumbing and cost, not learning. Pass --model PATH (an SFT'd checkpoint)."
    )
    warnings.warn(message, stacklevel=2)
    print(f"WARNING: {message}", file=sys.stderr, flush=True)
    if not (init / "config.json").is_file():
        build_tiny_model(init, seed=0)
    return init


def evaluate_policy(model, tokenizer, rows, task, *, max_new_tokens: int, seed: int, batch_size: int):
    """``learners.pipeline.evaluate`` of the live policy (per-puzzle results kept), leaving the training RNG and
    the train/eval mode as they were."""
    import torch

    from ...sampling import HFSampler
    from ..evaluate import evaluate

    was_training = model.training
    device = next(model.parameters()).device
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        sampler = HFSampler(model, tokenizer, batch_size=batch_size, device=device)
        report = evaluate(
            sampler,
            tokenizer,
            rows,
            task=task,
            samples=EVAL_SAMPLES,
            temperature=EVAL_TEMPERATURE,
            max_new_tokens=max_new_tokens,
            seed=seed,
            per_puzzle=True,
        )
    if was_training:
        model.train()
    return report


def run_name(learner: str, seed: int) -> str:
    return f"{learner}-s{seed}"


def _make_callback(trainer, tally: Tally, rows: list[dict], evaluated: set[int], context: dict[str, Any]):
    from transformers import TrainerCallback

    run_dir: Path = context["run_dir"]
    progress: Progress = context["progress"]
    every, max_steps = context["eval_every"], context["steps"]

    class CompareCallback(TrainerCallback):
        """Times the optimiser steps, evaluates at step 0 / every K / the end, snapshots counters on save."""

        started: float | None = None

        def evaluate(self, step: int) -> None:
            if step in evaluated:
                return
            # Every run of a seed starts from the same model and samples its eval with the same seed: step 0's
            # report is the same for all learners, so it is computed once per seed.
            initial = context["initial_evals"]
            if step == 0 and context["seed"] in initial:
                report = initial[context["seed"]]
            else:
                report = evaluate_policy(
                    trainer.model,
                    context["tokenizer"],
                    context["eval_rows"],
                    context["task"],
                    max_new_tokens=context["max_new_tokens"],
                    seed=context["seed"],
                    batch_size=context["eval_batch_size"],
                )
                if step == 0:
                    initial[context["seed"]] = report
            overall = report["overall"]
            row = {
                "learner": context["learner"],
                "seed": context["seed"],
                "step": step,
                "pass@1": overall["pass@1"],
                f"pass@{EVAL_SAMPLES}": overall.get(f"pass@{EVAL_SAMPLES}", math.nan),
                "format_rate": overall["format_rate"],
                "mean_completion_tokens": overall["mean_completion_tokens"],
                "train_reward": tally.take_reward(),
                "wall_seconds": tally.wall_seconds,
                "generated_tokens": tally.generated_tokens,
                "loss_tokens": tally.loss_tokens,
                "forward_tokens": tally.forward_tokens,
            }
            lines = "".join(json.dumps(p, separators=(",", ":")) + "\n" for p in report["puzzles"])
            write_text(run_dir / "evals" / f"step-{step}.jsonl", lines)
            rows.append(row)
            evaluated.add(step)
            write_text(run_dir / "rows.csv", rows_to_csv(rows))
            progress.eval(row)
            context["on_row"]()

        def on_train_begin(self, args, state, control, **kwargs):
            self.evaluate(state.global_step)

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.started is not None:
                tally.wall_seconds += time.perf_counter() - self.started
                self.started = None
            progress.step()
            if state.global_step % every == 0 or state.global_step >= max_steps:
                self.evaluate(state.global_step)

        def on_train_end(self, args, state, control, **kwargs):
            self.evaluate(state.global_step)

    return CompareCallback()


def train_one(learner: str, seed: int, settings: CompareSettings, shared: dict[str, Any], resume: bool) -> dict:
    """Train and evaluate one (learner, seed) run in ``DIR/runs/NAME``; returns its ``DONE`` record."""
    from transformers import PrinterCallback

    from ...core.registry import get_learner
    from ..data import prompt_dataset

    run_dir: Path = shared["out"] / "runs" / run_name(learner, seed)
    progress: Progress = shared["progress"]
    checkpoint, skipped = None, []
    if resume:  # the newest checkpoint whose files (counters included) match its manifest; damaged ones named
        checkpoint = newest_complete_checkpoint(run_dir, warn=skipped.append)
    if checkpoint is None and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "ERROR").unlink(missing_ok=True)

    tally, rows, evaluated = Tally(), [], set()
    if checkpoint is not None:
        snapshot = json.loads((checkpoint / STATE_FILE).read_text())
        tally = Tally(**snapshot["tally"])
        rows = snapshot["rows"]
        evaluated = set(snapshot["evaluated"])
        for stale in (run_dir / "evals").glob("step-*.jsonl"):
            if int(stale.stem.split("-")[1]) not in evaluated:
                stale.unlink()
        write_text(run_dir / "rows.csv", rows_to_csv(rows))
    shared["rows"][(learner, seed)] = rows
    progress.start(learner, seed, settings.steps, int(checkpoint.name.split("-")[-1]) if checkpoint else 0)
    for message in skipped:
        progress.line(f"warning: {message}")
    if checkpoint is not None:
        progress.line(f"resuming from {checkpoint.name}")

    spec = get_learner(learner)
    config = spec.make_config(**learner_trainer_kwargs(settings, learner, seed, run_dir))
    _, trainer_class = spec.load()
    train_rows = shared["train_rows"](seed)
    from ..rollouts import route_kwargs

    routed = route_kwargs(settings.rollouts, shared["task"], shared["tokenizer"], train_rows, config)
    trainer = instrumented(trainer_class)(
        model=str(shared["model"]),
        args=config,
        train_dataset=prompt_dataset(train_rows, shared["task"]),
        processing_class=shared["tokenizer"],
        task=shared["task"],
        **routed,
    )
    trainer.compare_tally = tally
    trainer.remove_callback(PrinterCallback)
    context = dict(
        shared,
        run_dir=run_dir,
        learner=learner,
        seed=seed,
        steps=settings.steps,
        eval_every=settings.eval_every,
        max_new_tokens=settings.max_new_tokens,
        eval_batch_size=settings.eval_batch_size,
    )
    trainer.add_callback(_make_callback(trainer, tally, rows, evaluated, context))

    def snapshot(folder: Path) -> None:  # the counters and eval rows up to this checkpoint, inside its manifest
        state = {"tally": dataclasses.asdict(tally), "rows": rows, "evaluated": sorted(evaluated)}
        write_text(folder / STATE_FILE, json.dumps(state, indent=1) + "\n")

    trainer.checkpoint_writers.append(snapshot)
    if checkpoint is not None and checkpoint_step(checkpoint) >= settings.steps and settings.steps in evaluated:
        # killed after the last checkpoint, before DONE: nothing left to train (TRL would train one step more)
        log_history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
        final_step = checkpoint_step(checkpoint)
    else:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        final_step, log_history = trainer.state.global_step, trainer.state.log_history
    if final_step != settings.steps:
        raise RuntimeError(f"training stopped at step {final_step} of {settings.steps}")
    write_bytes(run_dir / "final_eval.jsonl", (run_dir / "evals" / f"step-{final_step}.jsonl").read_bytes())
    write_text(run_dir / "log_history.json", json.dumps(log_history, indent=1) + "\n")
    final = rows[-1]
    record = {
        "learner": learner,
        "seed": seed,
        "steps": final_step,
        "pass@1": final["pass@1"],
        f"pass@{EVAL_SAMPLES}": final[f"pass@{EVAL_SAMPLES}"],
        "wall_seconds": tally.wall_seconds,
        "prompt_digest": tally.prompt_digest,
        "config": {k: v for k, v in learner_trainer_kwargs(settings, learner, seed, run_dir).items()},
    }
    if not settings.keep_checkpoints:
        for folder in checkpoints(run_dir):
            shutil.rmtree(folder, ignore_errors=True)
    write_text(run_dir / "DONE", json.dumps(record, indent=2, default=str) + "\n")
    return record
