r"""``countdown compare``: registered learners side by side, from one warm start, on the same prompts and eval.

::

    countdown compare --learners grpo dr_grpo dapo prime_rl contrastive ps_ppo s_grpo t_spmo \
        --seeds 0 1 2 --steps 200 --eval-every 50 --out runs/compare [--set grpo.learning_rate=1e-5] [--resume]

Every run (one learner, one seed) starts from the same model folder (``--model``; default
:func:`default_warm_start`), trains on the same prompts in the same order for a given seed (a split of the model's
task built from the seed, disjoint from the eval set; TRL's sampler shuffles it with the seed), with the same
group size, generation settings and learning rate (:data:`COMMON_TRAINER`), and is evaluated the same way:
``datasets/tiny_n3.jsonl``, 4 samples per puzzle at T=0.8, at step 0, every ``--eval-every`` steps and at the
end (the eval's sampling seed is the run's seed, and the eval does not disturb the training RNG). A learner's own
settings are its registry defaults (``learners.core.registry``) unless ``--set LEARNER.key=value`` (or
``all.key=value``) says otherwise.

Output (``DIR``)
----------------
- ``results.csv``: one row per (learner, seed, eval step), columns :data:`CSV_COLUMNS`; the last four are
  cumulative over the run's training steps (eval excluded):

  - ``wall_seconds``: time inside the optimiser steps (``on_step_begin`` to ``on_step_end``: generation, scoring,
    the learner's seams, forward/backward, optimiser), eval and checkpointing excluded;
  - ``generated_tokens``: completion tokens sampled by TRL (the env's trajectory lengths, eos included);
  - ``loss_tokens``: the non-zero entries of the loss mask (``completion_mask * tool_mask``) after the learner's
    ``select_loss_tokens``, summed over every loss call — the tokens the update actually trained on;
  - ``forward_tokens``: completion columns the loss's forward/backward actually ran (rows × padded width of each
    micro-batch, times the base trainer's ``loss/forward_token_frac`` for learners that truncate to their loss
    tokens: PS-PPO, T-SPMO, S-GRPO with ``truncate_after_last_selected``). Prompt tokens, TRL's no-grad old/ref
    log-prob passes and learners' own extra passes (PS-PPO's proxy, T-SPMO's replay) are not counted; they
    show in ``wall_seconds``.

  ``train_reward`` is the mean env reward of the completions generated since the previous eval row (empty at
  step 0); ``pass@1``/``pass@4``/``format_rate``/``mean_completion_tokens`` come from the eval.
- ``summary.md``: the command and machine; per learner the final pass@1 and pass@4 (mean over seeds, 95 % CI:
  Student t over the seeds' means, or the puzzle bootstrap for a single seed), the difference to ``grpo`` with
  a paired bootstrap 95 % CI (paired by seed and puzzle: per seed, puzzles are resampled with replacement and the
  per-puzzle differences averaged; the estimate is the mean over seeds), seconds per step and its ratio to
  ``grpo``, tokens per step; ranked by pass@1; failed runs with their error.
- ``curves.png``: pass@1 against step and against training wall-clock seconds, mean completion length and
  cumulative forward/loss tokens against step; one line per learner (mean over seeds), band min-max over seeds.
- ``runs/LEARNER-sSEED/``: ``rows.csv``, ``evals/step-N.jsonl`` (per-puzzle correctness of every eval),
  ``final_eval.jsonl`` (the last one), ``log_history.json``, ``DONE`` (a JSON record) or ``ERROR`` (traceback),
  and TRL checkpoints (every ``--eval-every`` steps; removed after ``DONE`` unless ``--keep-checkpoints``).

A failing run is reported (``ERROR``, the summary) and the others go on; the command then exits with 1.
``--resume`` skips runs with ``DONE``, continues the others from their newest checkpoint
(``trainer.train(resume_from_checkpoint=...)``, counters restored from the checkpoint's ``compare_state.json``)
and rewrites the results; without ``--resume`` or ``--overwrite`` a non-empty ``DIR`` is refused. Files are
written atomically (temporary file, then ``os.replace``). ``--quick``: tiny sizes for tests.

Runs are sequential, in one process (seed-major: every learner of seed 0 first), on one device; the token
counters are this process's (no accelerate multi-process support here).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import io
import json
import math
import os
import platform
import shlex
import shutil
import sys
import time
import traceback
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .warm_start import SHIPPED_DIR, tiny_task

CSV_COLUMNS: tuple[str, ...] = (
    "learner",
    "seed",
    "step",
    "pass@1",
    "pass@4",
    "format_rate",
    "mean_completion_tokens",
    "train_reward",
    "wall_seconds",
    "generated_tokens",
    "loss_tokens",
    "forward_tokens",
)
CUMULATIVE_COLUMNS: tuple[str, ...] = ("wall_seconds", "generated_tokens", "loss_tokens", "forward_tokens")
DEFAULT_LEARNERS: tuple[str, ...] = ("grpo", "dr_grpo", "dapo", "prime_rl", "contrastive", "ps_ppo", "s_grpo", "t_spmo")
BASELINE = "grpo"
EVAL_SET = "tiny_n3"
EVAL_SAMPLES = 4
EVAL_TEMPERATURE = 0.8
FORWARD_FRAC_METRIC = "loss/forward_token_frac"
STATE_FILE = "compare_state.json"
SETTINGS_FILE = "compare.json"

# The settings every learner shares (a learner's registry defaults win over these where they overlap; --set wins
# over both). Calibration (design.md): lr 2e-5 lifts the 1 M tiny model a little; >= 5e-5 degrades it.
COMMON_TRAINER: dict[str, Any] = dict(
    learning_rate=2e-5,
    lr_scheduler_type="constant",
    warmup_steps=0,
    temperature=0.8,
    top_k=0,
    max_grad_norm=1.0,
    logging_steps=1,
    save_strategy="steps",
    save_total_limit=2,
    disable_tqdm=True,
    dataloader_num_workers=0,
    report_to="none",
    gradient_checkpointing=False,
)

# Sizes: the full comparison and --quick (tests). Explicit command-line values win over both.
FULL: dict[str, Any] = dict(
    steps=200,
    eval_every=50,
    train_size=2000,
    eval_limit=None,
    max_new_tokens=128,
    prompts_per_step=2,
    num_generations=8,
)
QUICK: dict[str, Any] = dict(
    steps=2,
    eval_every=1,
    train_size=16,
    eval_limit=4,
    max_new_tokens=16,
    prompts_per_step=2,
    num_generations=4,
)

# The shipped warm start (issue 14, item 1) will live here; until it exists, default_warm_start() falls back.
SHIPPED_WARM_START = SHIPPED_DIR


def default_warm_start(work_dir: str | Path) -> Path:
    """The model folder every run starts from when ``--model`` is not given.

    The shipped warm start (:data:`SHIPPED_WARM_START`) once it exists; until then a *randomly initialised* tiny
    model built into ``work_dir/init-model`` (with a loud warning: nothing can be learned from it).
    """
    if (SHIPPED_WARM_START / "config.json").is_file():
        return SHIPPED_WARM_START
    from .tiny import build_tiny_model

    init = Path(work_dir) / "init-model"
    message = (
        "countdown compare: NO SHIPPED WARM START YET — every run starts from a RANDOMLY INITIALISED tiny model "
        f"({init}); the figures measure plumbing and cost, not learning. Pass --model PATH (an SFT'd checkpoint)."
    )
    warnings.warn(message, stacklevel=2)
    print(f"WARNING: {message}", file=sys.stderr, flush=True)
    if not (init / "config.json").is_file():
        build_tiny_model(init, seed=0)
    return init


# --------------------------------------------------------------------------------------------- atomic I/O
def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, str):
        tmp.write_text(data, encoding="utf-8")
    else:
        tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if not value.is_integer() or abs(value) < 1e15 else str(int(value))
    return str(value)


def rows_to_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([_fmt(row.get(c)) for c in CSV_COLUMNS])
    return buffer.getvalue()


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``results.csv``/``rows.csv``: numbers as ``int``/``float`` (empty cells as NaN)."""
    out = []
    with open(path, newline="", encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            row: dict[str, Any] = {"learner": raw["learner"], "seed": int(raw["seed"]), "step": int(raw["step"])}
            for column in CSV_COLUMNS[3:]:
                row[column] = float(raw[column]) if raw[column] != "" else math.nan
            out.append(row)
    return out


# ------------------------------------------------------------------------------------------------ settings
@dataclasses.dataclass
class CompareSettings:
    """Everything that defines a comparison (recorded in ``DIR/compare.json``)."""

    learners: list[str]
    seeds: list[int]
    steps: int
    eval_every: int
    train_size: int
    eval_limit: int | None
    max_new_tokens: int
    prompts_per_step: int
    num_generations: int
    model: str | None = None
    overrides: list[str] = dataclasses.field(default_factory=list)
    quick: bool = False
    eval_batch_size: int = 128
    keep_checkpoints: bool = False
    rollouts: str = "dataset"  # learners.pipeline.rollouts.ROUTES: dataset, env (token-MDP episodes), tools

    # fields that may change between a run and its --resume
    RESUMABLE = ("learners", "seeds", "eval_batch_size", "keep_checkpoints")

    def __post_init__(self):
        from ..core.registry import get_learner

        if not self.learners or not self.seeds:
            raise ValueError("give at least one learner and one seed")
        for name in self.learners:
            get_learner(name)
        if len(set(self.learners)) != len(self.learners) or len(set(self.seeds)) != len(self.seeds):
            raise ValueError("learners and seeds must not repeat")
        for name in ("steps", "eval_every", "train_size", "max_new_tokens", "prompts_per_step", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        if self.num_generations < 2:
            raise ValueError("--num-generations must be >= 2 (group-relative advantages)")
        if self.eval_limit is not None and self.eval_limit < 1:
            raise ValueError("--eval-limit must be >= 1")
        parse_overrides(self.overrides, self.learners)
        from .rollouts import ROUTES

        if self.rollouts not in ROUTES:
            raise ValueError(f"--rollouts must be one of {list(ROUTES)}, got {self.rollouts!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def command(self) -> str:
        """The full command line that reproduces this comparison (every size explicit)."""
        parts = ["countdown", "compare", "--learners", *self.learners, "--seeds", *map(str, self.seeds)]
        parts += ["--steps", str(self.steps), "--eval-every", str(self.eval_every)]
        parts += ["--train-size", str(self.train_size), "--max-new-tokens", str(self.max_new_tokens)]
        parts += ["--prompts-per-step", str(self.prompts_per_step), "--num-generations", str(self.num_generations)]
        if self.eval_limit is not None:
            parts += ["--eval-limit", str(self.eval_limit)]
        if self.model:
            parts += ["--model", self.model]
        for item in self.overrides:
            parts += ["--set", item]
        if self.quick:
            parts.append("--quick")
        if self.rollouts != "dataset":
            parts += ["--rollouts", self.rollouts]
        return shlex.join(parts)


def parse_overrides(items: Sequence[str], learners: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["grpo.learning_rate=1e-5", "all.beta=0.01"]`` -> ``{"grpo": {...}, "all": {...}}`` (values as YAML).

    The prefix must be ``all`` or a registered learner (a learner not in ``learners`` is ignored: its runs are
    not part of this invocation); anything else is a ``ValueError``.
    """
    from ..core.registry import LEARNERS
    from .train import parse_yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        prefix, dot, name = key.partition(".")
        if not sep or not dot or not prefix or not name:
            raise ValueError(f"--set {item!r} is not of the form LEARNER.key=value (or all.key=value)")
        if prefix != "all" and prefix not in LEARNERS:
            raise ValueError(f"--set {item!r}: {prefix!r} is neither 'all' nor a learner ({', '.join(LEARNERS)})")
        out.setdefault(prefix, {})[name] = parse_yaml(raw)
    return out


def learner_trainer_kwargs(settings: CompareSettings, learner: str, seed: int, output_dir: Path) -> dict[str, Any]:
    """The keyword arguments of ``get_learner(learner).make_config``: the shared settings (minus the keys the
    learner's registry defaults set), then ``all.*`` and ``learner.*`` overrides."""
    import torch

    from ..core.registry import get_learner
    from .train import CPU_SETTINGS

    spec = get_learner(learner)
    common = dict(
        COMMON_TRAINER,
        max_steps=settings.steps,
        save_steps=settings.eval_every,
        per_device_train_batch_size=settings.prompts_per_step * settings.num_generations,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_new_tokens,
        seed=seed,
    )
    if not torch.cuda.is_available():
        common.update(CPU_SETTINGS)
    kwargs = {k: v for k, v in common.items() if k not in spec.defaults}
    overrides = parse_overrides(settings.overrides, settings.learners)
    kwargs.update(overrides.get("all", {}))
    kwargs.update(overrides.get(learner, {}))
    kwargs["output_dir"] = str(output_dir)
    return kwargs


# ------------------------------------------------------------------------------------------------ counting
@dataclasses.dataclass
class Tally:
    """Cumulative counters of one run (snapshotted into every checkpoint for ``--resume``)."""

    wall_seconds: float = 0.0
    generated_tokens: int = 0
    loss_tokens: int = 0
    forward_tokens: float = 0.0
    reward_sum: float = 0.0  # since the previous eval row
    reward_count: int = 0
    prompt_digest: str = ""  # chained sha256 of the puzzles of every generation batch (same prompts <=> same)

    def see_rollout(self, batch: Mapping[str, Any], rollout) -> None:
        trajectories = rollout.trajectories
        if trajectories is not None:
            self.generated_tokens += sum(len(t.completion_ids) for t in trajectories)
            rewards = [float(t.reward) for t in trajectories]
        else:
            self.generated_tokens += int(batch["completion_mask"].sum())
            rewards = [float(r) for r in rollout.local_rewards.tolist()]
        finite = [r for r in rewards if not math.isnan(r)]
        self.reward_sum += sum(finite)
        self.reward_count += len(finite)
        puzzles = [[list(map(int, row["numbers"])), int(row["target"])] for row in rollout.inputs]
        text = self.prompt_digest + json.dumps(puzzles, separators=(",", ":"))
        self.prompt_digest = hashlib.sha256(text.encode()).hexdigest()

    def take_reward(self) -> float:
        """Mean train reward since the last call (NaN when nothing was generated), and reset the window."""
        value = self.reward_sum / self.reward_count if self.reward_count else math.nan
        self.reward_sum, self.reward_count = 0.0, 0
        return value


def instrumented(trainer_class: type) -> type:
    """A subclass of a learner's trainer that counts, without changing anything it computes, what each step
    generated (seam 1), which tokens its loss used (after seam 2's ``select_loss_tokens``) and how many
    completion columns the loss's forward ran (``loss/forward_token_frac`` of truncating learners)."""

    class Instrumented(trainer_class):
        compare_tally: Tally

        def shape_batch(self, batch, rollout):
            if rollout.mode == "train":
                self.compare_tally.see_rollout(batch, rollout)
            return super().shape_batch(batch, rollout)

        def select_loss_tokens(self, inputs):
            out = super().select_loss_tokens(inputs)
            if out is not None:
                mask = self.loss_mask(out)
                self._compare_call = (int((mask != 0).sum()), int(out["completion_ids"].numel()))
            return out

        def log_metric(self, name, value, mode=None):
            if name == FORWARD_FRAC_METRIC:
                self._compare_frac = float(value)
            super().log_metric(name, value, mode)

        def _compute_loss(self, model, inputs):
            self._compare_call, self._compare_frac = None, None
            loss = super()._compute_loss(model, inputs)
            if self.model.training and self._compare_call is not None:
                loss_tokens, full = self._compare_call
                frac = 1.0 if self._compare_frac is None else self._compare_frac
                self.compare_tally.loss_tokens += loss_tokens
                self.compare_tally.forward_tokens += round(full * frac)
            return loss

    Instrumented.__name__ = Instrumented.__qualname__ = f"Compare{trainer_class.__name__}"
    return Instrumented


# ----------------------------------------------------------------------------------------------------- eval
def evaluate_policy(model, tokenizer, rows, task, *, max_new_tokens: int, seed: int, batch_size: int):
    """``learners.pipeline.evaluate`` of the live policy (per-puzzle results kept), leaving the training RNG and
    the train/eval mode as they were."""
    import torch

    from .evaluate import HFBackend, evaluate

    was_training = model.training
    device = next(model.parameters()).device
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        backend = HFBackend(model, tokenizer, batch_size=batch_size, device=device)
        report = evaluate(
            backend,
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


# ---------------------------------------------------------------------------------------------- one run
def run_name(learner: str, seed: int) -> str:
    return f"{learner}-s{seed}"


class Progress:
    """One line per eval and per finished run on stderr; a tqdm bar per run when stderr is a terminal."""

    def __init__(self, total_runs: int):
        self.total = total_runs
        self.index = 0
        self.tty = sys.stderr.isatty()
        self.bar = None

    def start(self, learner: str, seed: int, steps: int, first_step: int = 0) -> None:
        self.index += 1
        self.label = f"[{self.index}/{self.total}] {learner} seed {seed}"
        self.steps = steps
        if self.tty:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=steps, initial=first_step, desc=self.label, file=sys.stderr, leave=True)

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def eval(self, row: Mapping[str, Any]) -> None:
        text = (
            f"step {row['step']}/{self.steps} pass@1 {row['pass@1']:.3f} pass@4 {row['pass@4']:.3f} "
            f"reward {row['train_reward']:.3f} train {row['wall_seconds']:.1f}s"
        )
        if self.bar is not None:
            self.bar.set_postfix_str(text.split(" ", 2)[2])
        else:
            self.line(text)

    def line(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(f"{self.label}: {text}", file=sys.stderr)
        else:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)

    def finish(self, text: str) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        print(f"{self.label}: {text}", file=sys.stderr, flush=True)


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
            write_atomic(run_dir / "evals" / f"step-{step}.jsonl", lines)
            rows.append(row)
            evaluated.add(step)
            write_atomic(run_dir / "rows.csv", rows_to_csv(rows))
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

        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                snapshot = {"tally": dataclasses.asdict(tally), "rows": rows, "evaluated": sorted(evaluated)}
                write_atomic(folder / STATE_FILE, json.dumps(snapshot, indent=1) + "\n")
                context["task"].save(folder)

    return CompareCallback()


def _checkpoints(run_dir: Path) -> list[Path]:
    found = [p for p in run_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def train_one(learner: str, seed: int, settings: CompareSettings, shared: dict[str, Any], resume: bool) -> dict:
    """Train and evaluate one (learner, seed) run in ``DIR/runs/NAME``; returns its ``DONE`` record."""
    from transformers import PrinterCallback

    from ..core.registry import get_learner
    from .data import prompt_dataset

    run_dir: Path = shared["out"] / "runs" / run_name(learner, seed)
    progress: Progress = shared["progress"]
    checkpoint = None
    if resume:
        usable = [c for c in _checkpoints(run_dir) if (c / STATE_FILE).is_file()]
        checkpoint = usable[-1] if usable else None
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
        write_atomic(run_dir / "rows.csv", rows_to_csv(rows))
    shared["rows"][(learner, seed)] = rows
    progress.start(learner, seed, settings.steps, int(checkpoint.name.split("-")[-1]) if checkpoint else 0)
    if checkpoint is not None:
        progress.line(f"resuming from {checkpoint.name}")

    spec = get_learner(learner)
    config = spec.make_config(**learner_trainer_kwargs(settings, learner, seed, run_dir))
    _, trainer_class = spec.load()
    train_rows = shared["train_rows"](seed)
    from .rollouts import route_kwargs

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
    trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    final_step = trainer.state.global_step
    if final_step != settings.steps:
        raise RuntimeError(f"training stopped at step {final_step} of {settings.steps}")
    shutil.copyfile(run_dir / "evals" / f"step-{final_step}.jsonl", run_dir / ".final_eval.jsonl.tmp")
    os.replace(run_dir / ".final_eval.jsonl.tmp", run_dir / "final_eval.jsonl")
    write_atomic(run_dir / "log_history.json", json.dumps(trainer.state.log_history, indent=1) + "\n")
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
        for folder in _checkpoints(run_dir):
            shutil.rmtree(folder, ignore_errors=True)
    write_atomic(run_dir / "DONE", json.dumps(record, indent=2, default=str) + "\n")
    return record


# --------------------------------------------------------------------------------------------- statistics
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}
"""Two-sided 95 % Student t quantiles by degrees of freedom (1.96 beyond)."""


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the Student t 95 % interval of the mean of ``values`` (n >= 2; else NaN bounds)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, math.nan, math.nan)
    half = T_975.get(x.size - 1, 1.96) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean, mean - half, mean + half)


def puzzle_scores(path: str | Path, k: int = 1) -> tuple[list[tuple[tuple[int, ...], int]], np.ndarray]:
    """``(puzzles, scores)`` of an ``evals/step-N.jsonl``/``final_eval.jsonl``: per puzzle its unbiased pass@k."""
    from .evaluate import pass_at_k

    keys, scores = [], []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        keys.append((tuple(item["numbers"]), int(item["target"])))
        correct = item["correct"]
        scores.append(pass_at_k(len(correct), int(sum(correct)), k))
    return keys, np.asarray(scores, dtype=np.float64)


def paired_bootstrap_diff(
    learner: Mapping[int, np.ndarray],
    baseline: Mapping[int, np.ndarray],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float, int]:
    """``(difference, low, high, seeds)``: mean over the shared seeds of the mean per-puzzle difference
    ``learner - baseline``, with a percentile-bootstrap CI that resamples puzzles with replacement within each
    seed (paired: the same puzzle indices for both models). Arrays of one seed must be aligned by puzzle."""
    seeds = sorted(set(learner) & set(baseline))
    if not seeds:
        return (math.nan, math.nan, math.nan, 0)
    diffs = []
    for s in seeds:
        a, b = np.asarray(learner[s], dtype=np.float64), np.asarray(baseline[s], dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1 or a.size == 0:
            raise ValueError(f"seed {s}: per-puzzle scores must be two equal-length vectors, got {a.shape}, {b.shape}")
        diffs.append(a - b)
    estimate = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(seed)
    boot = np.zeros(resamples)
    for d in diffs:
        boot += d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    boot /= len(diffs)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return (estimate, float(low), float(high), len(seeds))


def bootstrap_puzzles(scores: np.ndarray, *, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    from .evaluate import bootstrap_ci

    return bootstrap_ci(scores.tolist(), resamples=resamples, seed=seed)


# ------------------------------------------------------------------------------------------------ summary
def machine_lines() -> list[str]:
    import torch

    parts = [
        f"platform {platform.platform()}",
        f"python {platform.python_version()}",
        f"{os.cpu_count()} CPUs ({torch.get_num_threads()} torch threads)",
        f"torch {torch.__version__}",
    ]
    for name in ("transformers", "trl"):
        try:
            parts.append(f"{name} {__import__(name).__version__}")
        except ImportError:  # pragma: no cover
            pass
    if torch.cuda.is_available():
        parts.append(f"GPU {torch.cuda.get_device_name(0)}")
    else:
        parts.append("no GPU")
    return parts


def _cell(mean: float, low: float, high: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(low):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _signed(mean: float, low: float, high: float) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def learner_table(out: Path, settings: CompareSettings, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per learner: final pass@1/pass@4 with CIs, paired differences to grpo, speed and tokens (finished runs)."""
    finished: dict[str, dict[int, Path]] = {}
    for learner in settings.learners:
        for seed in settings.seeds:
            run_dir = out / "runs" / run_name(learner, seed)
            if (run_dir / "DONE").is_file() and (run_dir / "final_eval.jsonl").is_file():
                finished.setdefault(learner, {})[seed] = run_dir
    final_rows = {}
    for row in rows:
        key = (row["learner"], row["seed"])
        if row["step"] == settings.steps:
            final_rows[key] = row

    scores: dict[str, dict[int, dict[int, np.ndarray]]] = {}
    puzzles_of: dict[tuple[str, int], list] = {}
    for learner, runs in finished.items():
        for seed, run_dir in runs.items():
            for k in (1, EVAL_SAMPLES):
                keys, values = puzzle_scores(run_dir / "final_eval.jsonl", k)
                scores.setdefault(learner, {}).setdefault(k, {})[seed] = values
                puzzles_of[(learner, seed)] = keys

    def speed(learner: str) -> dict[str, float]:
        figures: dict[str, list[float]] = {c: [] for c in CUMULATIVE_COLUMNS}
        for seed in finished.get(learner, {}):
            row = final_rows.get((learner, seed))
            if row is None:
                continue
            for column in CUMULATIVE_COLUMNS:
                figures[column].append(row[column] / max(row["step"], 1))
        return {c: float(np.mean(v)) if v else math.nan for c, v in figures.items()}

    base_speed = speed(BASELINE) if BASELINE in finished else None
    table = []
    for learner in settings.learners:
        runs = finished.get(learner, {})
        entry: dict[str, Any] = {"learner": learner, "finished": len(runs), "runs": len(settings.seeds)}
        for k in (1, EVAL_SAMPLES):
            per_seed = scores.get(learner, {}).get(k, {})
            means = [float(v.mean()) for v in per_seed.values()]
            if len(means) == 1:
                only = next(iter(per_seed.values()))
                entry[f"pass@{k}"] = (means[0], *bootstrap_puzzles(only))
            else:
                entry[f"pass@{k}"] = mean_ci(means)
            base = scores.get(BASELINE, {}).get(k, {})
            if learner != BASELINE and per_seed and base:
                for s in set(per_seed) & set(base):
                    if puzzles_of[(learner, s)] != puzzles_of[(BASELINE, s)]:
                        raise ValueError(f"seed {s}: {learner} and {BASELINE} were evaluated on different puzzles")
                entry[f"diff@{k}"] = paired_bootstrap_diff(per_seed, base)[:3]
            else:
                entry[f"diff@{k}"] = (math.nan, math.nan, math.nan)
        entry["speed"] = speed(learner)
        entry["base_speed"] = base_speed
        table.append(entry)
    table.sort(key=lambda e: (-(e["pass@1"][0] if not math.isnan(e["pass@1"][0]) else -1.0), e["learner"]))
    return table


def summary_markdown(out: Path, settings: CompareSettings, rows, failures: Mapping[tuple[str, int], str], info) -> str:
    """``summary.md`` (see the module docstring)."""
    table = learner_table(out, settings, rows)
    k = EVAL_SAMPLES
    shown = ("learning_rate", "lr_scheduler_type", "temperature", "top_k", "max_grad_norm")
    shared = {key: COMMON_TRAINER[key] for key in shown}
    lines = [
        "# Learner comparison on Countdown",
        "",
        f"Command: `{settings.command()}`",
        "",
        "Machine: " + ", ".join(machine_lines()),
        "",
        f"Model: `{info['model']}`{' (RANDOMLY INITIALISED — no warm start)' if info.get('random_model') else ''}; "
        f"task: {json.dumps(info['task'])}.",
        "",
        f"Training: {settings.steps} steps x {settings.prompts_per_step} prompts x {settings.num_generations} "
        f"completions, up to {settings.max_new_tokens} new tokens, {settings.train_size} training puzzles per "
        f"seed; shared trainer settings {json.dumps(shared)}"
        + (f"; overrides {settings.overrides}" if settings.overrides else "")
        + ".",
        "",
        f"Eval: `{EVAL_SET}` ({info['eval_puzzles']} puzzles), {k} samples each at T={EVAL_TEMPERATURE}, at step 0 "
        f"and every {settings.eval_every} steps. Final figures at step {settings.steps}: mean over seeds with a 95 % "
        "CI (Student t over seeds; puzzle bootstrap when one seed); Δ vs grpo: paired bootstrap over puzzles within "
        "each seed (2000 resamples). s/step: training wall time per step (eval excluded); tokens per step "
        "(generated / in the loss / completion columns forwarded by the loss).",
        "",
        f"| rank | learner | seeds | pass@1 | Δ pass@1 vs grpo | pass@{k} | Δ pass@{k} vs grpo | s/step | × grpo "
        "| gen tok/step | loss tok/step | fwd tok/step | fwd × grpo |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rank = 0
    for entry in table:
        speed, base = entry["speed"], entry["base_speed"]
        if entry["finished"]:
            rank += 1

        def ratio(column: str, speed=speed, base=base) -> str:
            if base is None or math.isnan(speed[column]) or not base[column]:
                return "-"
            return f"{speed[column] / base[column]:.2f}"

        def num(value: float, digits: int = 0) -> str:
            return "-" if math.isnan(value) else f"{value:.{digits}f}"

        lines.append(
            f"| {rank if entry['finished'] else '-'} | {entry['learner']} | {entry['finished']}/{entry['runs']} "
            f"| {_cell(*entry['pass@1'])} | {_signed(*entry['diff@1'])} | {_cell(*entry[f'pass@{k}'])} "
            f"| {_signed(*entry[f'diff@{k}'])} | {num(speed['wall_seconds'], 3)} | {ratio('wall_seconds')} "
            f"| {num(speed['generated_tokens'])} | {num(speed['loss_tokens'])} | {num(speed['forward_tokens'])} "
            f"| {ratio('forward_tokens')} |"
        )
    if failures:
        lines += ["", "## Failed runs", "", "| learner | seed | error |", "| --- | --- | --- |"]
        for (learner, seed), error in sorted(failures.items()):
            text = error.strip().splitlines()[-1] if error.strip() else "unknown error"
            lines.append(f"| {learner} | {seed} | {text.replace('|', '/')} |")
    digests: dict[int, set[str]] = {}
    for learner in settings.learners:
        for seed in settings.seeds:
            done = out / "runs" / run_name(learner, seed) / "DONE"
            if done.is_file():
                digests.setdefault(seed, set()).add(json.loads(done.read_text()).get("prompt_digest", ""))
    same = all(len(v) == 1 for v in digests.values())
    lines += [
        "",
        "Same training prompts in the same order for every learner of a seed: "
        + ("yes (prompt digests agree)." if same else "NO — prompt digests differ between learners of a seed."),
        "",
        "![pass@1 and completion length against steps and wall-clock seconds](curves.png)",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------- plot
def plot_curves(rows: Sequence[Mapping[str, Any]], path: str | Path, learners: Sequence[str], title: str = "") -> Path:
    """``curves.png``: 2 x 2 panels (see the module docstring); mean over seeds with a min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8), dpi=110)
    colours = plt.get_cmap("tab10")
    order = list(dict.fromkeys([*DEFAULT_LEARNERS, *learners]))
    for learner in learners:
        mine = [r for r in rows if r["learner"] == learner]
        if not mine:
            continue
        colour = colours(order.index(learner) % 10)
        steps = sorted({r["step"] for r in mine})

        def stats(column: str, mine=mine, steps=steps):
            values = [[r[column] for r in mine if r["step"] == s] for s in steps]
            arr = [np.asarray(v, dtype=np.float64) for v in values]
            return (
                np.array([np.nanmean(a) for a in arr]),
                np.array([np.nanmin(a) for a in arr]),
                np.array([np.nanmax(a) for a in arr]),
            )

        wall = stats("wall_seconds")[0]
        for ax, x, column in (
            (axes[0, 0], np.asarray(steps), "pass@1"),
            (axes[0, 1], wall, "pass@1"),
            (axes[1, 0], np.asarray(steps), "mean_completion_tokens"),
        ):
            mean, low, high = stats(column)
            ax.plot(x, mean, "o-", color=colour, label=learner, markersize=3)
            ax.fill_between(x, low, high, color=colour, alpha=0.15, linewidth=0)
        for column, style in (("forward_tokens", "-"), ("loss_tokens", ":")):
            mean, low, high = stats(column)
            axes[1, 1].plot(steps, mean, style, color=colour, label=learner if style == "-" else None)
            axes[1, 1].fill_between(steps, low, high, color=colour, alpha=0.1, linewidth=0)
    labels = (
        ("step", f"pass@1 ({EVAL_SET}, T={EVAL_TEMPERATURE})"),
        ("training wall-clock seconds (eval excluded)", "pass@1"),
        ("step", "mean completion tokens (eval)"),
        ("step", "cumulative tokens: forward (solid), loss (dotted)"),
    )
    for ax, (xlabel, ylabel) in zip(axes.flat, labels, strict=True):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    for ax in (axes[0, 0], axes[0, 1]):
        low, high = ax.get_ylim()
        ax.set_ylim(0.0, max(high, 0.05))
    axes[1, 1].set_ylim(bottom=0.0)
    axes[0, 0].legend(loc="best", fontsize=8)
    fig.suptitle(title or "Learner comparison (mean over seeds; band: min-max over seeds)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return write_atomic(path, buffer.getvalue())


# ------------------------------------------------------------------------------------------------- driver
def quiet_libraries() -> None:
    """No per-checkpoint progress bars or deprecation chatter from transformers between the progress lines."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=r".*gradient_checkpointing.*deprecated", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*deprecated", category=FutureWarning)


def _relevant(overrides: Sequence[str], learners: Sequence[str]) -> list[str]:
    """The ``--set`` items that apply to ``learners`` (``all.*`` and theirs), in order."""
    return [item for item in overrides if item.split(".", 1)[0] in ("all", *learners)]


def prepare_dir(out: Path, settings: CompareSettings, *, resume: bool, overwrite: bool) -> None:
    """Refuse a non-empty ``out`` unless resuming (same settings) or overwriting (a compare output only)."""
    settings_path = out / SETTINGS_FILE
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file")
    non_empty = out.is_dir() and any(out.iterdir())
    if non_empty and resume:
        if settings_path.is_file():
            old = json.loads(settings_path.read_text())
            new = settings.to_dict()
            changed = [k for k in new if k not in CompareSettings.RESUMABLE and old.get(k) != new[k]]
            if "overrides" in changed and _relevant(old.get("overrides", []), settings.learners) == _relevant(
                settings.overrides, settings.learners
            ):
                changed.remove("overrides")
            if changed:
                raise ValueError(
                    f"--resume: {out} was run with different {changed} "
                    f"({', '.join(f'{k}={old.get(k)!r}' for k in changed)}); use a new --out or --overwrite"
                )
    elif non_empty and overwrite:
        if not settings_path.is_file():
            raise ValueError(
                f"--overwrite: {out} has no {SETTINGS_FILE}; refusing to delete a folder compare did not write"
            )
        for child in out.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    elif non_empty:
        raise ValueError(f"{out} is not empty: pass --resume to continue it or --overwrite to start again")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(settings_path, json.dumps(settings.to_dict(), indent=2) + "\n")


def train_split(task, size: int, seed: int, exclude) -> list:
    """``size`` distinct training puzzles of ``task`` drawn with ``seed``, none of them in ``exclude``."""
    from countdown_env import Puzzle
    from countdown_env.splits import SplitSpec, build_split_records

    spec = SplitSpec(task=dataclasses.replace(task, seed=seed), train_size=size, eval_size=0, exclude=exclude)
    rows = build_split_records(spec, progress=False).get("train", [])
    return [Puzzle.from_dict(r) for r in rows]


def run_compare(settings: CompareSettings, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> dict:
    """Run (or resume) the comparison into ``out``; returns ``{"failures": {...}, "finished": n, ...}``."""
    from countdown_env.eval_sets import load_eval_set
    from countdown_env.splits import write_jsonl

    from .data import model_task
    from .tiny import load_tokenizer

    out = Path(out)
    prepare_dir(out, settings, resume=resume, overwrite=overwrite)
    random_model = settings.model is None and not (SHIPPED_WARM_START / "config.json").is_file()
    model = Path(settings.model) if settings.model else default_warm_start(out)
    if not (model / "config.json").is_file():
        raise FileNotFoundError(f"--model {model}: no config.json (give a checkpoint folder)")
    task = model_task(model) or tiny_task()
    tokenizer = load_tokenizer(model)
    eval_rows = load_eval_set(EVAL_SET, as_dataset=False)
    if settings.eval_limit:
        eval_rows = eval_rows[: settings.eval_limit]
    exclude = [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]
    train_cache: dict[int, list] = {}

    def train_rows(seed: int):
        if seed not in train_cache:
            puzzles = train_split(task, settings.train_size, seed, exclude)
            if not puzzles:
                raise ValueError("no training puzzles")
            path = out / "data" / f"train-s{seed}.jsonl"
            if not path.is_file():
                write_jsonl([{"numbers": list(p.numbers), "target": p.target} for p in puzzles], path)
            train_cache[seed] = puzzles
        return train_cache[seed]

    all_rows: dict[tuple[str, int], list[dict]] = {}
    runs = [(learner, seed) for seed in settings.seeds for learner in settings.learners]

    def rewrite_results() -> None:
        ordered = [row for key in runs for row in all_rows.get(key, [])]
        write_atomic(out / "results.csv", rows_to_csv(ordered))

    progress = Progress(len(runs))
    shared = dict(
        out=out,
        model=model,
        task=task,
        tokenizer=tokenizer,
        eval_rows=eval_rows,
        train_rows=train_rows,
        progress=progress,
        rows=all_rows,
        on_row=rewrite_results,
        initial_evals={},
    )
    failures: dict[tuple[str, int], str] = {}
    skipped = 0
    quiet_libraries()
    for learner, seed in runs:
        run_dir = out / "runs" / run_name(learner, seed)
        if resume and (run_dir / "DONE").is_file():
            all_rows[(learner, seed)] = read_rows(run_dir / "rows.csv")
            skipped += 1
            progress.index += 1
            print(f"[{progress.index}/{progress.total}] {learner} seed {seed}: done before, skipped", file=sys.stderr)
            continue
        started = time.perf_counter()
        try:
            record = train_one(learner, seed, settings, shared, resume)
        except Exception:  # noqa: BLE001 - a failing run is reported and the others go on
            error = traceback.format_exc()
            failures[(learner, seed)] = error
            write_atomic(run_dir / "ERROR", error)
            if progress.index < runs.index((learner, seed)) + 1:
                progress.index = runs.index((learner, seed)) + 1
                progress.label = f"[{progress.index}/{progress.total}] {learner} seed {seed}"
            progress.finish(f"FAILED: {error.strip().splitlines()[-1]}")
        else:
            progress.finish(
                f"done: pass@1 {record['pass@1']:.3f}, {record['wall_seconds']:.1f} s training, "
                f"{time.perf_counter() - started:.1f} s with evals"
            )
        rewrite_results()

    rows = [row for key in runs for row in all_rows.get(key, [])]
    rewrite_results()
    info = dict(model=str(model), random_model=random_model, task=task.to_dict(), eval_puzzles=len(eval_rows))
    write_atomic(out / "summary.md", summary_markdown(out, settings, rows, failures, info))
    plot_curves(rows, out / "curves.png", settings.learners)
    return {
        "out": str(out),
        "finished": len(runs) - len(failures),
        "skipped": skipped,
        "failures": {run_name(*key): text.strip().splitlines()[-1] for key, text in failures.items()},
    }


# -------------------------------------------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..core.registry import LEARNERS

    parser.add_argument(
        "--learners", nargs="+", default=list(DEFAULT_LEARNERS), choices=list(LEARNERS), help="registered learners"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="seeds: one run per learner and seed")
    parser.add_argument("--steps", type=int, help=f"training steps per run (default {FULL['steps']})")
    parser.add_argument("--eval-every", type=int, help=f"eval and checkpoint period (default {FULL['eval_every']})")
    parser.add_argument("--out", default="runs/compare", help="output folder")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="LEARNER.KEY=VALUE",
        help="a learner's config value (YAML), e.g. grpo.learning_rate=1e-5; all.KEY=VALUE for every learner",
    )  # fmt: skip
    parser.add_argument("--model", help="model folder every run starts from (default: the shipped warm start)")
    parser.add_argument("--resume", action="store_true", help="skip finished runs, continue the others")
    parser.add_argument("--overwrite", action="store_true", help="delete a previous comparison in --out first")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (tests): 2 steps, 4 eval puzzles, 16 tokens")
    parser.add_argument("--train-size", type=int, help=f"training puzzles per seed (default {FULL['train_size']})")
    parser.add_argument("--eval-limit", type=int, help=f"first N puzzles of {EVAL_SET} (default: all 512)")
    parser.add_argument("--max-new-tokens", type=int, help=f"train and eval (default {FULL['max_new_tokens']})")
    parser.add_argument("--prompts-per-step", type=int, help=f"default {FULL['prompts_per_step']}")
    parser.add_argument("--num-generations", type=int, help=f"group size (default {FULL['num_generations']})")
    parser.add_argument("--eval-batch-size", type=int, default=128, help="rows per HF generate call in evals")
    parser.add_argument("--keep-checkpoints", action="store_true", help="keep TRL checkpoints of finished runs")
    parser.add_argument(
        "--rollouts",
        choices=("dataset", "env", "tools"),
        default="dataset",
        help="dataset (TRL generates), env (CountdownTokens-v0 episodes via rollout_func), tools (check tool)",
    )


def settings_from_args(args: argparse.Namespace) -> CompareSettings:
    sizes = dict(QUICK if args.quick else FULL)
    for key in sizes:
        value = getattr(args, key, None)
        if value is not None:
            sizes[key] = value
    return CompareSettings(
        learners=list(args.learners),
        seeds=list(args.seeds),
        model=args.model,
        overrides=list(args.overrides),
        quick=bool(args.quick),
        eval_batch_size=args.eval_batch_size,
        keep_checkpoints=bool(args.keep_checkpoints),
        rollouts=getattr(args, "rollouts", "dataset"),
        **sizes,
    )


def run(args: argparse.Namespace) -> int:
    if args.resume and args.overwrite:
        print("countdown compare: error: --resume and --overwrite exclude each other", file=sys.stderr)
        return 2
    try:
        settings = settings_from_args(args)
        result = run_compare(settings, args.out, resume=args.resume, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"countdown compare: error: {exc}", file=sys.stderr)
        return 2
    print((Path(args.out) / "summary.md").read_text())
    print(json.dumps(result))
    return 1 if result["failures"] else 0
