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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from countdown_env.helpers.atomic import write_bytes, write_text

from ...core.checkpoints import checkpoint_step, checkpoints, newest_complete_checkpoint
from ..runs.warm_start import SHIPPED_DIR
from .counting import Tally, instrumented
from .results import rows_to_csv
from .run_progress import Progress
from .settings import CompareSettings, run_config

STATE_FILE = "compare_state.json"

STEP0_DIR = "step0-evals"
"""``DIR/step0-evals/seed-N.json``: seed N's step-0 eval report, written by the first run of the seed that evaluates
it and read back by every later process of the comparison (a ``--resume`` in another session), so that a seed's step
0 is computed once however many processes its runs take (a 256 x 16 eval of SmolLM2 is ~40 minutes of a core)."""

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
    from ..models.tiny import build_tiny_model

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


def run_name(learner: str, seed: int) -> str:
    return f"{learner}-s{seed}"


@dataclasses.dataclass
class Comparison:
    """What every run of one comparison shares: its folder, the model every run starts from, the task and tokenizer,
    the eval rows, the training puzzles of a seed, the progress display, every run's eval rows (``rows``, for
    ``results.csv``, rewritten through ``on_row`` after each eval) and the step-0 eval of each seed (those of earlier
    processes from :func:`saved_step0_reports`)."""

    settings: CompareSettings
    out: Path
    model: Path
    task: Any
    tokenizer: Any
    eval_rows: list[dict]
    train_puzzles: Callable[[int], list]
    progress: Progress
    on_row: Callable[[], None]
    rows: dict[tuple[str, int], list[dict]] = dataclasses.field(default_factory=dict)
    initial_evals: dict[int, dict] = dataclasses.field(default_factory=dict)
    saved_step0: set[int] = dataclasses.field(default_factory=set)  # seeds whose step-0 report is in STEP0_DIR


@dataclasses.dataclass
class RunState:
    """One run's counters, eval rows and evaluated steps: restored from a checkpoint on ``--resume`` and written
    into every checkpoint (``compare_state.json``)."""

    tally: Tally = dataclasses.field(default_factory=Tally)
    rows: list[dict] = dataclasses.field(default_factory=list)
    evaluated: set[int] = dataclasses.field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {"tally": dataclasses.asdict(self.tally), "rows": self.rows, "evaluated": sorted(self.evaluated)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(Tally(**data["tally"]), list(data["rows"]), set(data["evaluated"]))


def step0_report_path(out: Path, seed: int) -> Path:
    return Path(out) / STEP0_DIR / f"seed-{seed}.json"


def saved_step0_reports(out: Path) -> dict[int, dict]:
    """The step-0 eval reports that earlier processes of the comparison in ``out`` saved, by seed. A file that does
    not read as a report is left out (its seed's step 0 is evaluated again and the file rewritten)."""
    reports = {}
    for path in sorted((Path(out) / STEP0_DIR).glob("seed-*.json")):
        try:
            seed, report = int(path.stem.removeprefix("seed-")), json.loads(path.read_text())
        except (ValueError, OSError):
            continue
        if isinstance(report, dict) and "overall" in report and "puzzles" in report:
            reports[seed] = report
    return reports


def _make_callbacks(run, comparison: Comparison, run_state: RunState, learner: str, seed: int, run_dir: Path):
    """The run's eval callback (:class:`~learners.pipeline.evaluation.callback.EvalCallback` on the comparison's eval
    rows, every ``--eval-every`` steps and at the end; each report a row of ``rows.csv`` and ``evals/step-N.jsonl``)
    and the callback that times its optimiser steps."""
    from transformers import TrainerCallback

    from ..evaluation.callback import EvalCallback

    progress, tally = comparison.progress, run_state.tally
    k = comparison.settings.eval_samples

    def consume(step: int, report: dict | None) -> None:
        if report is None:  # not the main process
            tally.take_reward()
            return
        overall = report["overall"]
        row = {
            "learner": learner,
            "seed": seed,
            "step": step,
            "pass@1": overall["pass@1"],
            f"pass@{k}": overall.get(f"pass@{k}", math.nan),
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
        if step == 0 and seed not in comparison.saved_step0:
            write_text(step0_report_path(comparison.out, seed), json.dumps(report, separators=(",", ":")) + "\n")
            comparison.saved_step0.add(seed)
        run_state.rows.append(row)
        write_text(run_dir / "rows.csv", rows_to_csv(run_state.rows, comparison.settings.eval_samples))
        progress.eval(row)
        comparison.on_row()

    class StepTimer(TrainerCallback):
        """Times the optimiser steps (``wall_seconds`` of each row) and drives the progress display."""

        started: float | None = None

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.started is not None:
                tally.wall_seconds += time.perf_counter() - self.started
                self.started = None
            progress.step()

    # every run of a seed starts from the same model and samples its eval alike: step 0 is evaluated once per seed,
    # across processes too (STEP0_DIR)
    evals = EvalCallback(comparison.eval_rows, run.eval, comparison.task, comparison.tokenizer, consume=consume,
                         done=run_state.evaluated, shared_step0=comparison.initial_evals, step0_key=seed)  # fmt: skip
    return [StepTimer(), evals]


def train_one(learner: str, seed: int, comparison: Comparison, resume: bool) -> dict:
    """Train and evaluate one (learner, seed) run in ``DIR/runs/NAME``; returns its ``DONE`` record."""
    from ..data import prompt_dataset
    from ..runs.driver import make_trainer, write_run_record
    from ..runs.processes import run_processes

    settings, progress = comparison.settings, comparison.progress
    processes = run_processes()
    run_dir = comparison.out / "runs" / run_name(learner, seed)
    # the main process picks the checkpoint and prepares the folder; every process starts from what it read
    checkpoint, skipped, run_state = processes.decide(lambda: _prepare_run_dir(run_dir, resume, settings.eval_samples))
    comparison.rows[(learner, seed)] = run_state.rows
    progress.start(learner, seed, settings.max_steps, checkpoint_step(checkpoint) if checkpoint else 0)
    for message in skipped:
        progress.line(f"warning: {message}")
    if checkpoint is not None:
        progress.line(f"resuming from {checkpoint.name}")

    train_puzzles = comparison.train_puzzles(seed)
    train_file = comparison.out / "data" / f"train-s{seed}.jsonl"
    run = run_config(settings, learner, seed, run_dir, model=comparison.model, task=comparison.task,
                     train_file=train_file)  # fmt: skip
    trainer = make_trainer(
        learner,
        run.learner_config(),
        model=comparison.model,
        task=comparison.task,
        tokenizer=comparison.tokenizer,
        train_dataset=prompt_dataset(train_puzzles, comparison.task),
        train_puzzles=train_puzzles,
        rollouts=run.rollouts,
        wrap=instrumented,
        peft_config=run.lora.peft_config() if run.lora is not None else None,
    )
    if processes.is_main:
        write_run_record(run_dir, _run_record(run, learner, train_file, comparison))
    _attach(trainer, run, comparison, run_state, learner, seed, run_dir)
    final_step, log_history = _train_to_end(trainer, checkpoint, settings.max_steps, run_state)
    if final_step != settings.max_steps:
        raise RuntimeError(f"training stopped at step {final_step} of {settings.max_steps}")
    # the main process writes the run's last files; every process returns the DONE record
    return processes.decide(lambda: _finish(run_dir, learner, seed, final_step, log_history, run_state, run, settings))


def _run_record(run, learner: str, train_file: Path, comparison: Comparison) -> dict:
    """The run's ``resolved_config.json``: its settings, precision, CPU and library versions; the model as the user
    named it ("warm-start" for the shipped one) and the data inside the comparison's folder, so that no absolute path
    of this machine is in the record."""
    from ..machine import library_versions
    from ..precision import precision_record

    return {"learner": learner, **run.to_mapping(), **precision_record(run.precision, run.resolved_precision),
            "versions": library_versions(), "model": comparison.settings.model or "warm-start",
            "data": {"train": train_file.relative_to(comparison.out).as_posix()}}  # fmt: skip


def _attach(trainer, run, comparison: Comparison, run_state: RunState, learner: str, seed: int, run_dir: Path) -> None:
    """The comparison's callbacks (step timer, evals) and the checkpoint writer of the run's counters and eval rows
    (inside each checkpoint's manifest), in place of TRL's printer."""
    from transformers import PrinterCallback

    trainer.compare_tally = run_state.tally
    trainer.remove_callback(PrinterCallback)
    timer, evals = _make_callbacks(run, comparison, run_state, learner, seed, run_dir)
    trainer.add_callback(timer)
    trainer.add_callback(evals)
    evals.trainer = trainer

    def snapshot(folder: Path) -> None:
        write_text(folder / STATE_FILE, json.dumps(run_state.to_dict(), indent=1) + "\n")

    trainer.checkpoint_writers.append(snapshot)


def _train_to_end(trainer, checkpoint: Path | None, steps: int, run_state: RunState) -> tuple[int, list]:
    """``(final step, log history)`` after training from ``checkpoint`` (or the start) to ``steps``; a run killed
    after its last checkpoint and eval, before ``DONE``, is not trained again (TRL would train one step more)."""
    try:
        if checkpoint is not None and checkpoint_step(checkpoint) >= steps and steps in run_state.evaluated:
            log_history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
            return checkpoint_step(checkpoint), log_history
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        return trainer.state.global_step, trainer.state.log_history
    finally:
        trainer.release_generation_engine()  # --vllm: each run's engine kept its KV cache until the process ended


def _finish(run_dir: Path, learner: str, seed: int, final_step: int, log_history: list, run_state: RunState, run,
            settings: CompareSettings) -> dict:  # fmt: skip
    """The run's last files: its final eval, log history and ``DONE`` (checkpoints removed unless kept)."""
    write_bytes(run_dir / "final_eval.jsonl", (run_dir / "evals" / f"step-{final_step}.jsonl").read_bytes())
    write_text(run_dir / "log_history.json", json.dumps(log_history, indent=1) + "\n")
    final = run_state.rows[-1]
    done = {
        "learner": learner,
        "seed": seed,
        "steps": final_step,
        "pass@1": final["pass@1"],
        f"pass@{settings.eval_samples}": final[f"pass@{settings.eval_samples}"],
        "wall_seconds": run_state.tally.wall_seconds,
        "prompt_digest": run_state.tally.prompt_digest,
        "config": dict(run.trainer),
    }
    if not settings.keep_checkpoints:
        for folder in checkpoints(run_dir):
            shutil.rmtree(folder, ignore_errors=True)
    write_text(run_dir / "DONE", json.dumps(done, indent=2, default=str) + "\n")
    return done


def _prepare_run_dir(run_dir: Path, resume: bool, eval_samples: int) -> tuple[Path | None, list[str], RunState]:
    """Where a run starts: its newest complete checkpoint (``resume``; damaged ones named in the list) with the
    counters and eval rows saved in it, else an emptied folder and a fresh :class:`RunState`."""
    checkpoint, skipped = None, []
    if resume:  # the newest checkpoint whose files (counters included) match its manifest; damaged ones named
        checkpoint = newest_complete_checkpoint(run_dir, warn=skipped.append)
    if checkpoint is None and run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "ERROR").unlink(missing_ok=True)
    run_state = RunState()
    if checkpoint is not None:
        run_state = RunState.from_dict(json.loads((checkpoint / STATE_FILE).read_text()))
        for stale in (run_dir / "evals").glob("step-*.jsonl"):
            if int(stale.stem.split("-")[1]) not in run_state.evaluated:
                stale.unlink()
        write_text(run_dir / "rows.csv", rows_to_csv(run_state.rows, eval_samples))
    return checkpoint, skipped, run_state
