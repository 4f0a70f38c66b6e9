"""The one settings type of a training run: :class:`RunConfig`, built by ``countdown train``, ``countdown demo-train``
and each run of ``countdown compare``.

It is filled in one order, each layer over the one before and each nested as the YAML: the preset
(``learners/pipeline/configs/NAME.yaml``) or a YAML file -> ``--set section.key=value`` -> the command's own flags
(``--model``, ``--max-steps``, TRL's spellings such as ``--learning_rate``, each written into its section as it is
parsed: :class:`learners.commands.Setting`); and checked once, when it is built
(:func:`learners.pipeline.runs.checks.validate_config`: every check that needs no model weights, one line per
problem; the trainer section's values against the learner's option table). The run builds the learner's config class
from it in one call (:meth:`RunConfig.learner_config`), where TRL's own checks run.

Sections (the YAML keys, :mod:`learners.pipeline.runs.config`; the typed ones declared in :mod:`.sections`):
``model``, ``tiny``, ``task``, ``data`` (:class:`DataSection`), ``eval`` (:class:`EvalSection`), ``trainer``,
``curriculum``, ``rollouts``, ``lora`` (:class:`LoraSection`), ``async`` (:class:`AsyncSection`).
:meth:`RunConfig.to_mapping` gives them back in the YAML's shape, every default written out; the run folder records
that (``resolved_config.json``), so that a run can be redone from its folder.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import check_sections, load_config, merge_layer, parse_sets
from .sections import AsyncSection, DataSection, EvalSection, LoraSection


def _section(cls, values: Mapping[str, Any] | None):
    values = dict(values or {})
    if cls is LoraSection and isinstance(values.get("targets"), list):
        values["targets"] = tuple(values["targets"])
    return cls(**values)


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a training run (see the module's docstring for the order it is filled in)."""

    learner: str = "grpo"
    model: str = "tiny"
    precision: str = "auto"  # auto | fp32 | bf16 (learners/pipeline/precision.py)
    tiny: Mapping[str, Any] = field(default_factory=dict)
    task: Any = None  # a countdown_env.task.CountdownTask; None: the model's recorded task, else the default one
    data: DataSection = field(default_factory=DataSection)
    eval: EvalSection = field(default_factory=EvalSection)
    trainer: Mapping[str, Any] = field(default_factory=dict)
    curriculum: Mapping[str, Any] | None = None
    rollouts: str = "dataset"
    lora: LoraSection | None = None
    async_rollouts: AsyncSection | None = None  # the YAML's ``async`` section

    @classmethod
    def load(
        cls,
        preset: str,
        *,
        learner: str = "grpo",
        yaml: Mapping[str, Any] | None = None,
        sets: Sequence[str] = (),
        flags: Mapping[str, Any] | None = None,
    ) -> RunConfig:
        """The preset or YAML file ``preset``; then ``yaml`` (a second YAML's sections: a flat TRL one's); then
        ``sets`` (``section.key=value`` strings, values read as YAML); then ``flags`` (sections, values as given).
        Each layer is nested as the YAML and merges into the ones below (:func:`~.config.merge_layer`); checked once,
        at the end."""
        mapping = load_config(preset)
        for layer in (yaml or {}, parse_sets(sets), flags or {}):
            mapping = merge_layer(mapping, layer)
        check_sections(mapping)
        return cls.from_mapping(learner, mapping)

    @classmethod
    def from_mapping(cls, learner: str, mapping: Mapping[str, Any]) -> RunConfig:
        """A run of ``learner`` from sections in the YAML's shape, after every check
        (:func:`~learners.pipeline.runs.checks.validate_config`): one line on the first problem."""
        from countdown_env.task import CountdownTask

        from .checks import validate_config

        mapping = {key: value for key, value in mapping.items() if value is not None}
        validate_config(learner, mapping)
        return cls(
            learner=learner,
            model=str(mapping.get("model", "tiny")),
            precision=mapping.get("precision", "auto"),
            tiny=dict(mapping.get("tiny") or {}),
            task=CountdownTask.from_dict(mapping["task"]) if mapping.get("task") is not None else None,
            data=_section(DataSection, mapping.get("data")),
            eval=_section(EvalSection, mapping.get("eval")),
            trainer=dict(mapping.get("trainer") or {}),
            curriculum=dict(mapping["curriculum"]) if mapping.get("curriculum") else None,
            rollouts=mapping.get("rollouts") or "dataset",
            lora=_section(LoraSection, mapping["lora"]) if mapping.get("lora") else None,
            async_rollouts=_section(AsyncSection, mapping["async"]) if mapping.get("async") is not None else None,
        )

    def to_mapping(self) -> dict[str, Any]:
        """The sections in the YAML's shape (JSON values), every default written out; ``None`` ones left out."""
        sections = {
            "model": self.model,
            "precision": self.precision,
            "tiny": dict(self.tiny),
            "task": self.task.to_dict() if self.task is not None else None,
            "data": dataclasses.asdict(self.data),
            "eval": dataclasses.asdict(self.eval),
            "trainer": copy.deepcopy(dict(self.trainer)),
            "curriculum": dict(self.curriculum) if self.curriculum else None,
            "rollouts": self.rollouts,
            "lora": dataclasses.asdict(self.lora) if self.lora is not None else None,
            "async": dataclasses.asdict(self.async_rollouts) if self.async_rollouts is not None else None,
        }
        if sections["lora"] is not None and isinstance(self.lora.targets, tuple):
            sections["lora"]["targets"] = list(self.lora.targets)
        return {key: value for key, value in sections.items() if value is not None}

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` (e.g. ``model=`` a checkpoint), checked again."""
        mapping = self.to_mapping()
        mapping.update(changes)
        return RunConfig.from_mapping(self.learner, mapping)

    def learner_config(self, **given: Any):
        """The learner's config object (TRL's ``GRPOConfig`` or the learner's subclass; its own checks run here, one
        line on a bad value): the ``trainer`` section with ``given`` over it (``output_dir``, ...),
        ``async_max_staleness`` from the ``async`` section, and the resolved precision's settings
        (:func:`learners.pipeline.precision.trainer_settings`; a ``model_init_kwargs`` dtype given is kept).

        On a machine without a GPU the CPU settings are forced (``use_cpu``, no fp16, no gradient checkpointing).
        ``report_to`` is none and ``ddp_find_unused_parameters`` false unless given: every parameter of these models
        takes part in each loss, and DDP's search for unused ones costs a graph walk per step. With vLLM in bf16,
        TRL's importance-sampling correction is on unless the trainer section sets it (fp32 runs keep TRL's default):
        the engine's log-probabilities of the sampled tokens differ from the trainer's by p99 0.11 (max 0.73) in bf16
        against p99 1.5e-5 in fp32 (SmolLM2-135M, ``benchmarks/results/precision/``)."""
        import torch

        from ...core.registry import get_learner
        from ..precision import trainer_settings

        options = {**self.trainer, **given}
        if self.async_rollouts is not None:
            options["async_max_staleness"] = self.async_rollouts.max_staleness
        precision = self.resolved_precision
        settings = trainer_settings(precision, lora=self.lora is not None)
        init = {**settings.pop("model_init_kwargs", {}), **(options.get("model_init_kwargs") or {})}
        options.update(settings)
        if options.get("use_vllm") and precision == "bf16":  # the engine-trainer mismatch, unless the config says
            options.setdefault("vllm_importance_sampling_correction", True)
        if init:
            options["model_init_kwargs"] = init
        if not torch.cuda.is_available():  # forced on a machine without a GPU, whatever the config says
            options.update(use_cpu=True, fp16=False, gradient_checkpointing=False)
        options.setdefault("report_to", "none")
        options.setdefault("ddp_find_unused_parameters", False)
        return get_learner(self.learner).make_config(**options)

    @functools.cached_property
    def resolved_precision(self) -> str:
        """``fp32`` or ``bf16`` on this machine for this model (:func:`learners.pipeline.precision.model_precision`;
        resolved once per config). TRL's own spelling, ``trainer.bf16``, decides an ``auto`` precision when given
        (against an explicit one it was refused when the config was checked)."""
        from ..models import resolve_model
        from ..precision import model_precision

        asked = self.trainer.get("bf16")
        if asked is not None:
            return "bf16" if asked else "fp32"
        return model_precision(self.precision, resolve_model(self.model))

    @property
    def max_steps(self) -> int:
        """The optimiser steps the run plans: ``trainer.max_steps``, else the learner's default."""
        from ...core.registry import get_learner
        from ...core.trainer_fields import trainer_fields

        steps = self.trainer.get("max_steps")
        return int(steps if steps is not None else trainer_fields(get_learner(self.learner))["max_steps"])
