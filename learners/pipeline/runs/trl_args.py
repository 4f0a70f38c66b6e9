"""TRL's spellings for ``countdown train``: command-line flags as ``trl grpo`` takes them (``--learning_rate 1e-5
--report_to tensorboard --output_dir DIR``) and a ``--config`` that is a plain TRL ``GRPOConfig`` YAML (flat keys,
no sections), turned into the run config's settings (:class:`~learners.pipeline.runs.run_config.RunConfig`).

What is understood, in either form:

- every option of a registered learner's config (``GRPOConfig`` fields and the learners' own) -> ``trainer.NAME``;
  a flag without a value is ``true`` (``--bf16``), several values a list (``--report_to tensorboard wandb``);
- ``output_dir`` -> the run folder (``--output-dir`` wins);
- ``model_name_or_path`` -> ``model``;
- ``dataset_name DIR`` (a ``build-splits`` folder) -> ``data.train`` = ``DIR/{dataset_train_split}.jsonl`` and, when
  present, ``data.eval`` = ``DIR/{dataset_test_split}.jsonl`` (TRL's defaults ``train`` and ``test``).

Anything else TRL's scripts take (``reward_funcs``, ``use_peft``, ``dataset_config`` ...) is refused in one line: the
reward is the task's verifier, LoRA is ``countdown compare --lora-rank``. A flat YAML is applied on top of the
packaged ``cpu-tiny`` preset (task, data, eval sections), as the flags are applied on top of ``--config``. Option
names come from :mod:`learners.core.trainer_fields` (cached): nothing here imports TRL once the cache holds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCRIPT_KEYS = ("output_dir", "model_name_or_path", "dataset_name", "dataset_train_split", "dataset_test_split")
"""The non-trainer keys of ``trl grpo`` this command understands (its ``ScriptArguments`` and ``ModelConfig``)."""

FLAT_BASE_PRESET = "cpu-tiny"
"""The preset whose sections a flat TRL YAML is applied to."""


def trainer_option_names() -> set[str]:
    """Every option of every registered learner's config class (:mod:`learners.core.trainer_fields`; names only:
    the values are checked later against the chosen learner's own fields)."""
    from ...core.trainer_fields import all_fields

    return set().union(*(set(fields) for fields in all_fields().values()))


def known_keys() -> set[str]:
    return trainer_option_names() | set(SCRIPT_KEYS)


def yaml_value(values: list[str]) -> str:
    """A flag's values as one YAML value: none -> ``true``, one -> itself, several -> a YAML list."""
    if not values:
        return "true"
    if len(values) == 1:
        return values[0]
    return "[" + ", ".join(values) + "]"


def to_settings(options: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``({"trainer": {"learning_rate": 1e-5}, "model": ..., "data": {...}}, output_dir or None)``: a layer of settings
    nested as the YAML, for TRL-spelled options
    (values as command-line text, read as YAML, or already parsed from a YAML file); unknown keys are refused with a
    "did you mean"."""
    from countdown_env.helpers.keys import refuse_unknown

    from .config import parse_override_value

    refuse_unknown("TRL option (countdown train takes GRPOConfig fields and " + ", ".join(SCRIPT_KEYS) + ")",
                   options, known_keys())  # fmt: skip
    options = dict(options)
    output_dir = options.pop("output_dir", None)
    settings: dict[str, Any] = {}
    model = options.pop("model_name_or_path", None)
    if model is not None:
        settings["model"] = str(model)
    train_split = str(options.pop("dataset_train_split", "train"))
    test_split = str(options.pop("dataset_test_split", "test"))
    dataset = options.pop("dataset_name", None)
    if dataset is not None:
        settings["data"] = dataset_files(str(dataset), train_split, test_split)
    trainer = {name: parse_override_value(f"trainer.{name}", value) if isinstance(value, str) else value
               for name, value in options.items()}  # fmt: skip
    if trainer:
        settings["trainer"] = trainer
    return settings, None if output_dir is None else str(output_dir)


def dataset_files(folder: str, train_split: str, test_split: str) -> dict[str, str]:
    """``{"train": FOLDER/train.jsonl, "eval": FOLDER/test.jsonl}`` of a split folder (``eval`` only when that file
    exists; a folder of the old naming has ``eval.jsonl`` for ``test``)."""
    from countdown_env.splits.folders import split_file

    path = Path(folder)
    if not path.is_dir():
        raise FileNotFoundError(f"--dataset_name {folder}: no such folder (a build-splits folder)")
    files = {"train": str(split_file(path, train_split))}
    try:
        files["eval"] = str(split_file(path, test_split))
    except FileNotFoundError:
        pass
    return files


def flat_trl_yaml(name_or_path: str | Path) -> dict[str, Any] | None:
    """The mapping of a ``--config`` file that is a plain TRL YAML (a mapping with no run-config section), else
    ``None`` (a preset name, or a YAML with sections)."""
    from .config import SECTIONS, _parse_yaml_file, find_config

    path = Path(name_or_path)
    if not path.is_file():
        return None
    config = _parse_yaml_file(find_config(path))
    if not isinstance(config, dict) or set(config) & set(SECTIONS) or not set(config) & known_keys():
        return None  # sections, or no TRL key at all (a misspelt section is the run config's error to name)
    return config
