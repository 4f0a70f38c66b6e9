"""What defines a comparison: :class:`CompareSettings` (recorded in ``DIR/compare.json``), the sizes (:data:`FULL`,
:data:`QUICK`), the trainer settings every learner shares (:func:`shared_trainer_settings`), the eval protocol, and the
``--set [LEARNER.]trainer.key=value`` overrides that turn them into one learner's config."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..evaluation.protocol import EVAL_SAMPLES, EVAL_TEMPERATURE

BASELINE = "grpo"
EVAL_SET = "tiny_n3"


def default_learners() -> tuple[str, ...]:
    """The learners ``countdown compare`` runs without ``--learners``: those whose spec says so (``compare_default``),
    the baseline first, then in the registry's order."""
    from ...core.registry import LEARNERS

    chosen = [name for name, spec in LEARNERS.items() if spec.compare_default]
    return tuple(sorted(chosen, key=lambda name: name != BASELINE))

SETTINGS_FILE = "compare.json"

COMPARE_PRESET = "compare"
"""The preset whose ``trainer`` section every learner of a comparison shares (``learners/pipeline/configs/``)."""


def shared_trainer_settings() -> dict[str, Any]:
    """The trainer settings every learner of a comparison shares: the :data:`COMPARE_PRESET` preset's trainer
    section (a learner's registry defaults win over these where they overlap; ``--set`` wins over both)."""
    from ..runs.config import load_config

    return dict(load_config(COMPARE_PRESET)["trainer"])


@dataclasses.dataclass
class CompareSize:
    """The sizes of a comparison, each a ``countdown compare`` flag of the same name (``--max-steps``, ...):
    :data:`FULL` by default, :data:`QUICK` with ``--quick``; a flag given wins over both. ``was`` names a field's
    earlier flag, still read (the registered commands of R1-R3 wrote ``--steps``)."""

    max_steps: int = dataclasses.field(metadata={"help": "optimiser steps per run", "was": "steps"})
    eval_every: int = dataclasses.field(metadata={"help": "eval and checkpoint period"})
    train_size: int = dataclasses.field(metadata={"help": "training puzzles per seed"})
    eval_limit: int | None = dataclasses.field(metadata={"help": f"first N puzzles of {EVAL_SET}"})
    max_new_tokens: int = dataclasses.field(metadata={"help": "completion budget, training and evals"})
    prompts_per_step: int = dataclasses.field(metadata={"help": "prompts per training step"})
    num_generations: int = dataclasses.field(metadata={"help": "group size (completions per prompt)"})


FULL = CompareSize(max_steps=200, eval_every=50, train_size=2000, eval_limit=None, max_new_tokens=128,
                   prompts_per_step=2, num_generations=8)  # fmt: skip
QUICK = CompareSize(max_steps=2, eval_every=1, train_size=16, eval_limit=4, max_new_tokens=16, prompts_per_step=2,
                    num_generations=4)  # fmt: skip


@dataclasses.dataclass
class CompareSettings(CompareSize):
    """Everything that defines a comparison (recorded in ``DIR/compare.json``): its sizes, learners and seeds, and the
    settings below."""

    learners: list[str]
    seeds: list[int]
    model: str | None = None
    overrides: list[str] = dataclasses.field(default_factory=list)
    quick: bool = False
    eval_batch_size: int = 128
    keep_checkpoints: bool = False
    rollouts: str = "dataset"  # learners.pipeline.rollouts.ROUTES: dataset, env (token-MDP episodes), tools
    lora_rank: int | None = None  # train a LoRA adapter of this rank (runs.lora.lora_config), not every weight
    lora_targets: str = "attention"  # runs.lora.LORA_TARGET_SETS: attention or all-linear
    train_file: str | None = None  # JSONL of training puzzles (numbers/target) instead of a generated split
    async_max_staleness: int | None = None  # every run's async section (learners/core/async_rollouts.py); None: off
    precision: str = "auto"  # every run's precision (learners/pipeline/precision.py)
    eval_samples: int = EVAL_SAMPLES  # completions per eval puzzle: pass@1 and pass@eval_samples are reported

    # fields that may change between a run and its --resume
    RESUMABLE = ("learners", "seeds", "eval_batch_size", "keep_checkpoints")

    def __post_init__(self):
        from ...core.registry import get_learner

        if not self.learners or not self.seeds:
            raise ValueError("give at least one learner and one seed")
        for name in self.learners:
            get_learner(name)
        if len(set(self.learners)) != len(self.learners) or len(set(self.seeds)) != len(self.seeds):
            raise ValueError("learners and seeds must not repeat")
        if any(seed < 0 for seed in self.seeds):
            raise ValueError(f"--seeds must be >= 0 (numpy seeds), got {min(self.seeds)}")
        for name in ("max_steps", "eval_every", "train_size", "max_new_tokens", "prompts_per_step", "eval_batch_size",
                     "eval_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        if self.num_generations < 2:
            raise ValueError("--num-generations must be >= 2 (group-relative advantages)")
        if self.eval_limit is not None and self.eval_limit < 1:
            raise ValueError("--eval-limit must be >= 1")
        if self.lora_rank is not None and self.lora_rank < 1:
            raise ValueError("--lora-rank must be >= 1")
        from ..runs.lora import LORA_TARGET_SETS

        if self.lora_targets not in LORA_TARGET_SETS:
            raise ValueError(f"--lora-targets must be one of {sorted(LORA_TARGET_SETS)}, got {self.lora_targets!r}")
        if self.async_max_staleness is not None and self.async_max_staleness < 0:
            raise ValueError("--max-staleness must be >= 0")
        if self.train_file is not None:
            from countdown_env.helpers.jsonl import records_path

            if not records_path(self.train_file).is_file():  # X.jsonl committed as X.jsonl.gz reads as printed
                raise ValueError(f"--train-file {self.train_file}: no such file")
        self.overrides = [canonical_override(item) for item in self.overrides]
        parse_overrides(self.overrides, self.learners)
        from ..rollouts import ROUTES

        if self.rollouts not in ROUTES:
            raise ValueError(f"--rollouts must be one of {list(ROUTES)}, got {self.rollouts!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def upgraded(recorded: dict[str, Any]) -> dict[str, Any]:
        """A ``compare.json`` in today's names: a field's earlier name (``steps``, before ``max_steps``) read as its
        new one, so that a comparison recorded before the rename resumes."""
        recorded = dict(recorded)
        for item in dataclasses.fields(CompareSize):
            was = item.metadata.get("was")
            if was in recorded and item.name not in recorded:
                recorded[item.name] = recorded.pop(was)
        return recorded

    def command(self) -> str:
        """The full command line that reproduces this comparison (every size explicit)."""
        parts = ["countdown", "compare", "--learners", *self.learners, "--seeds", *map(str, self.seeds)]
        parts += ["--max-steps", str(self.max_steps), "--eval-every", str(self.eval_every)]
        parts += ["--train-size", str(self.train_size), "--max-new-tokens", str(self.max_new_tokens)]
        parts += ["--prompts-per-step", str(self.prompts_per_step), "--num-generations", str(self.num_generations)]
        if self.eval_limit is not None:
            parts += ["--eval-limit", str(self.eval_limit)]
        if self.eval_samples != EVAL_SAMPLES:
            parts += ["--eval-samples", str(self.eval_samples)]
        if self.model:
            parts += ["--model", self.model]
        for item in self.overrides:
            parts += ["--set", item]
        if self.quick:
            parts.append("--quick")
        if self.rollouts != "dataset":
            parts += ["--rollouts", self.rollouts]
        if self.lora_rank is not None:
            parts += ["--lora-rank", str(self.lora_rank)]
            if self.lora_targets != "attention":
                parts += ["--lora-targets", self.lora_targets]
        if self.train_file is not None:
            parts += ["--train-file", self.train_file]
        if self.async_max_staleness is not None:
            parts += ["--async", "--max-staleness", str(self.async_max_staleness)]
        return shlex.join(parts)


def split_override(item: str) -> tuple[str, str, str]:
    """``(learner or "all", trainer key, value text)`` of one ``--set`` item of a comparison.

    The grammar is ``countdown train``'s, ``trainer.KEY=VALUE`` (every learner's runs), with a learner's name in front
    for its runs alone (``grpo.trainer.beta=0.01``); a comparison sets the trainer section only (its sizes, LoRA, eval
    and async settings are its flags). The earlier form, ``LEARNER.KEY=VALUE`` and ``all.KEY=VALUE`` (the registered
    commands of R1-R3), reads the same; :func:`canonical_override` writes the new one."""
    from ...core.registry import LEARNERS
    from ..runs.config import SECTIONS

    key, sep, raw = item.partition("=")
    parts = key.split(".")
    if not sep or "" in parts or len(parts) < 2:
        raise ValueError(f"--set {item!r} is not of the form [LEARNER.]trainer.key=value")
    prefix = parts.pop(0) if parts[0] == "all" or parts[0] in LEARNERS else None
    if len(parts) == 2 and parts[0] == "trainer":
        return prefix or "all", parts[1], raw
    if prefix is not None and len(parts) == 1 and parts[0] not in SECTIONS:  # the earlier form
        return prefix, parts[0], raw
    if parts[0] == "trainer":
        raise ValueError(f"--set {item!r}: a trainer key is one name (trainer.KEY=VALUE)")
    if parts[0] in SECTIONS:
        raise ValueError(f"--set {item!r}: a comparison sets trainer keys only (its other settings are its flags)")
    raise ValueError(f"--set {item!r}: {parts[0]!r} is neither 'trainer' nor a learner ({', '.join(LEARNERS)})")


def canonical_override(item: str) -> str:
    """``item`` in the grammar of ``countdown train`` (``all.beta=0.01`` -> ``trainer.beta=0.01``, ``grpo.beta=0``
    -> ``grpo.trainer.beta=0``), as a comparison records and prints it."""
    prefix, name, raw = split_override(item)
    return f"{'' if prefix == 'all' else prefix + '.'}trainer.{name}={raw}"


def parse_overrides(items: Sequence[str], learners: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["grpo.trainer.learning_rate=1e-5", "trainer.beta=0.01"]`` -> ``{"grpo": {...}, "all": {...}}`` (values as
    YAML; :func:`split_override`). A learner not in ``learners`` is kept apart: its runs are not part of this
    invocation."""
    from ..runs.config import parse_override_value

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        prefix, name, raw = split_override(item)
        out.setdefault(prefix, {})[name] = parse_override_value(item.partition("=")[0], raw)
    return out


def learner_trainer_kwargs(settings: CompareSettings, learner: str, seed: int, output_dir: Path) -> dict[str, Any]:
    """The keyword arguments of ``get_learner(learner).make_config``: the shared settings (minus the keys the
    learner's registry defaults set), then ``all.*`` and ``learner.*`` overrides. Under N processes each process
    holds ``prompts_per_step * num_generations / N`` rows per step (the same global batch)."""
    from ...core.registry import get_learner
    from ..runs.processes import run_processes

    spec = get_learner(learner)
    rows, processes = settings.prompts_per_step * settings.num_generations, run_processes().num_processes
    if rows % processes:  # --prompts-per-step is the global batch, whatever the number of processes
        raise ValueError(
            f"{processes} processes cannot share {settings.prompts_per_step} prompts x {settings.num_generations} "
            "completions per step evenly: change --prompts-per-step"
        )
    common = dict(
        shared_trainer_settings(),
        max_steps=settings.max_steps,
        save_steps=settings.eval_every,
        per_device_train_batch_size=rows // processes,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_new_tokens,
        seed=seed,
    )
    kwargs = {k: v for k, v in common.items() if k not in spec.defaults}
    overrides = parse_overrides(settings.overrides, settings.learners)
    kwargs.update(overrides.get("all", {}))
    kwargs.update(overrides.get(learner, {}))
    kwargs["output_dir"] = str(output_dir)
    return kwargs


def trainer_values(settings: CompareSettings, learner: str, keys: Sequence[str]) -> dict[str, Any]:
    """What ``learner``'s runs were given for each of ``keys``, in the order :func:`learner_trainer_kwargs` and
    ``make_config`` apply them: its own ``--set``, then ``all.*``, then its registry defaults, then
    :func:`shared_trainer_settings`, then its config class's default (:mod:`learners.core.trainer_fields`)."""
    from ...core.registry import get_learner
    from ...core.trainer_fields import trainer_fields

    spec = get_learner(learner)
    given = {**spec.defaults, **learner_trainer_kwargs(settings, learner, settings.seeds[0], Path("."))}
    fields = trainer_fields(spec)
    return {key: given[key] if key in given else fields.get(key) for key in keys}


def run_config(
    settings: CompareSettings, learner: str, seed: int, run_dir: Path, *, model: Path, task, train_file: Path
):
    """The :class:`~learners.pipeline.runs.run_config.RunConfig` of one run of the comparison (``learner``, ``seed``):
    its model and task, the seed's training split (``train_file``), the eval protocol (``eval_samples`` per puzzle
    at :data:`EVAL_TEMPERATURE`), the learner's trainer settings (:func:`learner_trainer_kwargs`), its rollout route and
    LoRA adapter. Built, and so checked, before the run's trainer is."""
    from ..runs.run_config import RunConfig

    lora = {"rank": settings.lora_rank, "targets": settings.lora_targets} if settings.lora_rank else None
    return RunConfig.from_mapping(learner, {
        "model": str(model),
        "precision": settings.precision,
        "task": task.to_dict(),
        "data": {"train": str(train_file)},
        "eval": {"every": settings.eval_every, "samples": settings.eval_samples, "temperature": EVAL_TEMPERATURE,
                 "max_new_tokens": settings.max_new_tokens, "limit": settings.eval_limit,
                 "batch_size": settings.eval_batch_size, "seed": seed},
        "trainer": learner_trainer_kwargs(settings, learner, seed, run_dir),
        "rollouts": settings.rollouts,
        "lora": lora,
        "async": {"max_staleness": settings.async_max_staleness} if settings.async_max_staleness is not None else None,
    })  # fmt: skip
