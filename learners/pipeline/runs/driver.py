"""The one run driver: data, task, model, trainer and callbacks of a learner's run, its folder and its end.

Every run is a :class:`~learners.pipeline.runs.run_config.RunConfig`: ``countdown train`` and ``countdown demo-train``
run it with :func:`train` (:func:`build_trainer`), and each run of ``countdown compare`` (one per learner and seed)
builds its trainer with :func:`make_trainer` from its own. Without a ``task`` section the task recorded with the model
(``countdown_task.json``) is used, else ``CountdownTask()``; the base trainer records it in every checkpoint and
:func:`train` in ``final/``, so that ``countdown eval`` and ``--resume`` prompt and score exactly as training did.
On a machine without a GPU the CPU settings are forced (``use_cpu``, no bf16, no gradient checkpointing);
``use_vllm`` runs there in ``vllm_mode: colocate`` with the CPU build of vLLM (``cpu-tiny-vllm.yaml``; the weight
sync goes through :mod:`learners.core.vllm_sync`), while ``vllm_mode: server`` is refused in one line (TRL syncs a
server's weights through NCCL, i.e. CUDA). :func:`train` writes ``OUTPUT/final`` (model + tokenizer + task),
``OUTPUT/log_history.json``, ``OUTPUT/training.png``, ``OUTPUT/resolved_config.json`` and TRL's ``checkpoint-N``
folders (each with a manifest of sha256s, :mod:`learners.core.checkpoints`); the folder's rules (``--resume``,
``--overwrite``) are :mod:`learners.pipeline.runs.folder`. Under ``accelerate launch`` with several processes the
main process alone claims and writes the folder, and every process starts from the checkpoint it chose
(:mod:`learners.pipeline.runs.processes`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..models import resolve_model
from .config import RESOLVED_CONFIG
from .record import check_resume, identity_writer, merged_record, run_record
from .run_config import RunConfig
from .sections import DataSection


def load_data(data: DataSection, task, work_dir: Path) -> tuple[list[dict], list[dict]]:
    """``(train_rows, eval_rows)`` (dicts with ``numbers``/``target``): split files, or a split of ``task``'s
    puzzles built now (``train_size``/``eval_size``; eval disjoint from train) and written to ``work_dir``."""
    from countdown_env.splits.folders import read_split_rows

    if data.train_size is not None:
        if data.train is not None or data.eval is not None:
            raise ValueError("give data.train/data.eval files or data.train_size/eval_size, not both")
        from countdown_env.helpers.jsonl import write_jsonl
        from countdown_env.splits import build_split_records

        built = build_split_records(task_split_spec(task, data.train_size, data.eval_size))
        work_dir.mkdir(parents=True, exist_ok=True)
        for name, rows in built.items():
            write_jsonl(rows, work_dir / f"{name}.jsonl")
        return built.get("train", []), built.get("test", [])
    if data.train is None:
        raise ValueError("the config needs data.train (a jsonl split) or data.train_size (a split of the task)")
    train_rows = read_split_rows(data.train)  # checked against a manifest.json beside it, if any
    eval_rows = read_split_rows(data.eval) if data.eval else []
    return train_rows, eval_rows


def check_async_precision(run: RunConfig) -> None:
    """Async rollouts prove after every weight sync that the engine holds the trainer's weights by comparing their
    log-probabilities of a probe within 0.02 (:mod:`learners.core.async_rollouts`). In bf16 the two differ by more
    from rounding alone (0.09 on the tiny model at step 0), as much as a stale engine does, so the proof cannot be
    made: refused before anything is claimed, instead of stopping at the first sync."""
    if run.async_rollouts is not None and run.resolved_precision == "bf16":
        raise ValueError(
            "--async needs precision fp32 (give --precision fp32): in bf16 the engine's and the trainer's "
            "log-probabilities differ by rounding as much as a stale engine's do, so the weight-sync check cannot pass"
        )


def check_split_settings(run: RunConfig) -> None:
    """The split a run without data files builds, checked without building it (its task's counts and sizes): one
    line before anything is claimed or loaded."""
    if run.data.train:
        return
    from countdown_env.task import CountdownTask

    from ..data import model_task

    model = resolve_model(run.model)
    task = run.task if run.task is not None else (model_task(model) if model != "tiny" else None) or CountdownTask()
    task_split_spec(task, run.data.train_size, run.data.eval_size)


def task_split_spec(task, train_size: int, eval_size: int):
    """The :class:`~countdown_env.splits.SplitSpec` of ``task``'s puzzles with these sizes."""
    from countdown_env.splits import SplitSpec

    return SplitSpec(task=task, train_size=train_size, eval_size=eval_size)


def rows_to_puzzles(rows: list[dict], where: str = "data.train"):
    """The puzzles of split rows, the first bad row named in one line (:func:`countdown_env.puzzle.puzzles_from_rows`;
    :func:`validate_config` has checked a config's data files this way before any model loaded)."""
    from countdown_env.puzzle import puzzles_from_rows

    return puzzles_from_rows(rows, where)


def build_trainer(run: RunConfig, output_dir: str | Path):
    """Everything up to ``trainer.train()`` of a run: model, tokenizer, task, data, callbacks and the trainer
    (:func:`make_trainer`), the learner's config built once."""
    from countdown_env.task import CountdownTask

    from ..data import model_task, prompt_dataset
    from ..evaluation.callback import EvalCallback
    from ..models.tiny import build_tiny_model
    from ..models.tokenizer_io import load_tokenizer
    from .curriculum_callback import CurriculumCallback
    from .processes import run_processes
    from .trainer_progress import line_progress

    out = Path(output_dir)
    curriculum = _curriculum(run)  # `curriculum:` section: levels raised on train accuracy (procedural.py)
    given = {"output_dir": str(out), "disable_tqdm": run.trainer.get("disable_tqdm")}  # None is TRL's default
    if curriculum is not None:
        given["shuffle_dataset"] = False  # no shuffle buffer reading ahead at the old level
    progress = line_progress(given, f"{run.learner} RL")  # plain lines instead of TRL's bar into a log
    args = run.learner_config(**given)  # the learner's own checks (TRL's too), before anything is written
    processes = run_processes()  # the main process writes the init model and the data; every process reads them
    model = resolve_model(run.model)
    if model == "tiny":
        if processes.is_main:
            print(
                "countdown train: warning: model 'tiny' is a RANDOMLY INITIALISED model (smoke tests); "
                "train from an SFT'd checkpoint with --model warm-start or --model DIR",
                file=sys.stderr,
            )
        init = out / "init-model"
        model = processes.decide(
            lambda: init if (init / "config.json").is_file() else build_tiny_model(init, **run.tiny)
        )
    tokenizer = load_tokenizer(model)
    task = run.task if run.task is not None else (model_task(model) or CountdownTask())
    train_rows, eval_rows = processes.decide(lambda: load_data(run.data, task, out / "data"))
    if not train_rows and curriculum is None:
        raise ValueError("no training puzzles")

    train_puzzles = rows_to_puzzles(train_rows)
    eval_callback = EvalCallback(eval_rows, run.eval, task, tokenizer)
    trainer = make_trainer(
        run.learner,
        args,
        model=model,
        task=task,
        tokenizer=tokenizer,
        train_dataset=curriculum.train_dataset(task) if curriculum is not None else prompt_dataset(train_puzzles, task),
        train_puzzles=train_puzzles,
        rollouts=run.rollouts,
        callbacks=[eval_callback, *progress] + ([CurriculumCallback(curriculum)] if curriculum is not None else []),
        peft_config=run.lora.peft_config() if run.lora is not None else None,
    )
    trainer.curriculum = curriculum
    trainer.eval_callback = eval_callback
    eval_callback.trainer = trainer
    return trainer


def make_trainer(
    learner: str,
    args,
    *,
    model: str | Path,
    task,
    tokenizer,
    train_dataset,
    train_puzzles,
    rollouts: str = "dataset",
    callbacks: Sequence[Any] = (),
    wrap: Callable[[type], type] | None = None,
    peft_config: Any = None,
):
    """The registered learner's trainer, as every run builds it (``train``, ``demo-train``, each run of
    ``compare``): ``args``, its config (:meth:`RunConfig.learner_config`), the rollout route's arguments
    (:func:`learners.pipeline.rollouts.route_kwargs`), the task, ``wrap`` applied to the trainer class (compare's
    counting subclass) and ``peft_config`` (a ``peft`` config, e.g. :func:`lora_config`: TRL wraps the model and
    trains the adapter only)."""
    from ...core.registry import get_learner
    from ..rollouts import route_kwargs
    from .processes import sharding_problem

    _, trainer_class = get_learner(learner).load()
    if wrap is not None:
        trainer_class = wrap(trainer_class)
    trainer = trainer_class(
        model=str(model),
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        task=task,
        callbacks=list(callbacks),
        peft_config=peft_config,
        **route_kwargs(rollouts, task, tokenizer, train_puzzles, args),
    )
    kind = str(trainer.accelerator.distributed_type)
    problem = sharding_problem(os.environ, trainer.is_fsdp_enabled, trainer.is_deepspeed_enabled, kind)
    if problem is not None and trainer.is_world_process_zero():
        print(f"countdown: warning: {problem}", file=sys.stderr)
    return trainer


def save_final(trainer, final: Path, *, lora: bool) -> None:
    """Save the trained policy into ``final``. A LoRA run saves its adapter into ``final/adapter`` and the adapter
    merged into the weights into ``final`` itself, so that ``final`` loads as a plain model everywhere (eval, serve,
    a next run's ``model``); every other run saves its weights there."""
    if not lora:
        trainer.save_model(str(final))
        return
    trainer.save_model(str(final / "adapter"))
    if trainer.is_world_process_zero():
        merged = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()  # the run is over: in place
        merged.save_pretrained(final, safe_serialization=True)


def write_run_record(out: Path, record: dict[str, Any]) -> Path:
    """``out/resolved_config.json``: the learner and its config as run (preset, YAML and ``--set`` applied), so that
    the run can be redone from its folder."""
    from countdown_env.helpers.atomic import write_text

    return write_text(out / RESOLVED_CONFIG, json.dumps(record, indent=2, default=str) + "\n")


def _curriculum(run: RunConfig):
    """The :class:`~countdown_env.procedural.CountdownCurriculum` of the ``curriculum:`` section, or ``None``. With
    one, training prompts come from the curriculum's level (``data`` gives the eval rows only)."""
    if not run.curriculum:
        return None
    from countdown_env.procedural import CountdownCurriculum

    return CountdownCurriculum.from_dict(dict(run.curriculum))


def run_inputs(run: RunConfig) -> list[Path]:
    """The paths a run reads: its model folder (``tiny`` and Hub ids read none) and its data files."""
    model = resolve_model(run.model)
    folder = Path(str(model)).expanduser()
    paths = [folder] if model != "tiny" and folder.exists() else []
    return paths + [Path(str(name)) for name in (run.data.train, run.data.eval) if name]


def train(
    run: RunConfig,
    output_dir: str | Path,
    resume: str | bool | None = None,
    *,
    overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
    allow_changes: bool = False,
) -> dict:
    """Train, save ``final/``, the log history and the PNG; return a small summary dict.

    The run folder's rules (:mod:`learners.pipeline.runs.folder`): held exclusively for the whole run (under several
    processes, by the main one: :mod:`learners.pipeline.runs.processes`); never one of the run's inputs (its model
    folder, data files, or ``inputs`` such as the config file), nor inside or around one; a non-empty folder needs
    ``resume`` (continue from the newest complete checkpoint, or the checkpoint ``resume`` names) or ``overwrite``
    (start again); resuming a run that already reached ``max_steps`` trains nothing and returns its summary;
    resuming with another learner, task or setting than the run's is refused unless ``allow_changes``
    (:mod:`learners.pipeline.runs.record`)."""
    from countdown_env.helpers.atomic import check_output

    from .folder import prepare_run_folder
    from .processes import run_processes

    out = Path(output_dir)
    check_split_settings(run)  # a refusal of the settings comes before the folder is claimed
    check_async_precision(run)
    check_output(out, [*run_inputs(run), *inputs], overwrite=True, what="--output-dir")
    # under several processes the main one claims and prepares the folder; every rank starts where it decided
    processes = run_processes(run.trainer.get("ddp_timeout"))
    with processes.claim(out):
        start = processes.decide(
            lambda: prepare_run_folder(out, resume=resume, overwrite=overwrite, max_steps=run.max_steps)
        )
        record = run_record(run)
        check = lambda: check_resume(out, record, allow_changes=allow_changes, checkpoint=start.checkpoint)  # noqa: E731
        changes = processes.decide(check) if resume else {}
        if start.finished is not None:
            if processes.is_main:
                print(f"countdown train: {out} already finished at step {start.finished['steps']}; nothing to do",
                      file=sys.stderr)  # fmt: skip
            return start.finished
        return _train(run, out, start.checkpoint, changes)


def _train(run: RunConfig, out: Path, checkpoint: Path | None, changes=None) -> dict:
    from countdown_env.helpers.atomic import write_text

    from ...core.checkpoints import checkpoint_step, write_checkpoint_manifest
    from ..models.tiny import save_tokenizer
    from .plotting import plot_training

    restore = checkpoint is not None and 0 < run.max_steps <= checkpoint_step(checkpoint)
    # a run killed after its last checkpoint: finish from that checkpoint without training (TRL would train a step
    # more); its weights are the model, its trainer state the history
    before = {p.name for p in out.iterdir()} if out.is_dir() else set()
    try:
        trainer = build_trainer(run.replace(model=str(checkpoint)) if restore else run, out)
    except BaseException:
        # nothing trained yet: what the build wrote (data/, init-model/) goes, so the folder is not left stuck
        # between "holds no countdown run" (--overwrite) and "no checkpoint" (--resume)
        if checkpoint is None and out.is_dir():
            for path in out.iterdir():
                if path.name in before:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        raise
    if trainer.is_world_process_zero():
        # the task as trained (the model's own when the config has none); a resume's allowed changes kept with it
        record = {**run_record(run), "task": trainer.task.to_dict()}
        step = checkpoint_step(checkpoint) if checkpoint is not None else 0
        record = merged_record(out, record, changes or {}, step, checkpoint)
        write_run_record(out, record)
        trainer.checkpoint_writers.append(identity_writer(record))  # each checkpoint says which run it belongs to
    try:
        if restore:
            from transformers import TrainerState

            if trainer.is_world_process_zero():
                print(f"countdown train: {checkpoint} is the last step; finishing the run from it", file=sys.stderr)
            trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))
            trainer.eval_callback.finish_restored(trainer.state)
        else:
            if checkpoint is not None and trainer.is_world_process_zero():
                print(f"countdown train: resuming from {checkpoint}", file=sys.stderr)
            trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    finally:
        trainer.release_generation_engine()  # a colocated vLLM engine's KV cache outlived the trainer otherwise
    final = out / "final"
    save_final(trainer, final, lora=run.lora is not None)
    summary: dict[str, Any] = {"learner": run.learner, "steps": trainer.state.global_step, "final": str(final)}
    if trainer.is_world_process_zero():
        save_tokenizer(trainer.processing_class, final)
        trainer.task.save(final)
        write_checkpoint_manifest(final)  # verified like a checkpoint's: by --resume, and by countdown eval
        history = trainer.state.log_history
        write_text(out / "log_history.json", json.dumps(history, indent=1) + "\n")
        if getattr(trainer, "curriculum", None) is not None:
            summary["curriculum"] = trainer.curriculum.to_dict()
        summary["plot"] = str(plot_training(history, out / "training.png", title=f"{run.learner} on Countdown"))
        evals = [e for e in history if "eval_pass@1" in e]
        if evals:
            summary["eval_pass@1_first"] = evals[0]["eval_pass@1"]
            summary["eval_pass@1_last"] = evals[-1]["eval_pass@1"]
        write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
