"""``countdown warm-start``: the shipped SFT warm start of the embedded tiny model, its recipe and its report.

The recipe (:data:`RECIPE`) is the calibrated one (docs/warm_start.md has the table of recipes tried); the report
(:mod:`.warm_start_report`) holds the four figures that say whether RL can start from it. The result ships inside
the package (:data:`SHIPPED_DIR`: safetensors weights, the character tokenizer, the task it was trained on,
``recipe.json`` and ``eval_report.json``); :func:`load_warm_start` loads it offline in one call, and ``countdown
warm-start --from-scratch`` rebuilds it with the recipe.

A second one, for multi-step reasoning (:data:`MULTI_STEP_RECIPE`: the first SFT'd further on ``search`` traces
with dead ends and backtracking, ~4.5 paragraphs and ~230 tokens per completion), ships in
``models.SHIPPED_MULTI_STEP_DIR`` (model name ``warm-start-multistep``; ``countdown warm-start --multi-step``). Its
report adds to the four figures the shape of the completions: paragraphs per completion and mean length.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data import tiny_task
from ..models import SHIPPED_DIR, WARM_START, resolve_model
from .lora import LORA_ALL_LINEAR, lora_config
from .warm_start_report import EVAL_SET, group_puzzles, measure_warm_start

RECIPE_FILE = "recipe.json"
REPORT_FILE = "eval_report.json"
WARM_START_OUTPUTS = ("config.json", "generation_config.json", "model*.safetensors*", "tokenizer*.json",
                      "adapter_config.json", "adapter_model.safetensors",
                      "special_tokens_map.json", "chat_template.jinja", "countdown_task.json", "training_args.bin",
                      "README.md", "runs", RECIPE_FILE, REPORT_FILE, "sft_log_history.json",
                      "checkpoint_manifest.json")  # fmt: skip
"""Every entry a warm-start build writes: ``--overwrite`` replaces a folder holding nothing else."""


@dataclass(frozen=True)
class WarmStartRecipe:
    """Everything that determines the warm start: model size, SFT data and optimisation (fixed step counts).

    ``init``: ``"tiny"`` SFTs a freshly initialised tiny model of the given size; ``"warm-start"`` (or a model
    folder) SFTs that checkpoint further (the size fields are then unused). ``lora_rank > 0`` trains a LoRA adapter
    (alpha ``lora_alpha``, default ``2 x rank``, on ``lora_targets``) instead of every weight; the warm start is then
    the adapter alone, saved in ``save_dtype`` (:mod:`learners.pipeline.models.adapters` merges it onto its base)."""

    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 512
    init: str = "tiny"
    styles: dict[str, float] = field(default_factory=lambda: {"direct": 1.0})
    sft_size: int = 20_000
    steps: int = 1100
    batch_size: int = 64
    learning_rate: float = 1.5e-3
    warmup_steps: int = 30
    min_lr_rate: float = 0.1
    save_dtype: str = "float32"
    seed: int = 0
    lora_rank: int = 0
    lora_alpha: int | None = None
    lora_targets: tuple[str, ...] = LORA_ALL_LINEAR

    def peft_config(self):
        """The ``peft.LoraConfig`` of a LoRA recipe (``lora_rank > 0``; alpha ``2 x rank`` unless set), else ``None``
        (every weight is trained)."""
        return lora_config(self.lora_rank, tuple(self.lora_targets), self.lora_alpha) if self.lora_rank > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WarmStartRecipe:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown warm-start recipe keys {unknown}")
        if "lora_targets" in data:
            data = {**data, "lora_targets": tuple(data["lora_targets"])}
        return cls(**data)


RECIPE = WarmStartRecipe(learning_rate=2e-3)
"""The calibrated recipe (docs/warm_start.md): the 1.07 M-parameter model, 1100 steps x 64 "direct" traces,
peak lr 2e-3 with 30 warmup steps and cosine decay to 10 %."""

QUICK_RECIPE = replace(RECIPE, sft_size=16, steps=2, batch_size=8)
""":data:`RECIPE` shrunk to a smoke test (``demo-train --quick --from-scratch``)."""

MULTI_STEP_RECIPE = WarmStartRecipe(
    init=WARM_START,
    styles={"search": 1.0},
    sft_size=16_000,
    steps=500,
    batch_size=32,
    learning_rate=1e-3,
    warmup_steps=20,
)
"""The multi-step warm start (docs/warm_start.md): the shipped :data:`RECIPE` model SFT'd further on 500 x 32
``search`` traces (a restatement, 1-2 dead ends with near misses, a back-up half the time, a full check: ~4.5
paragraphs, ~230 tokens); ``long`` traces (~390 tokens, up to ~600) overrun SFT's 512-token budget and this
machine's time. From a fresh model such traces teach little arithmetic (the ``short`` row of the table)."""

SMOLLM2_RECIPE = WarmStartRecipe(
    init="smollm2-135m",
    styles={"direct": 1.0},
    sft_size=1280,
    steps=160,
    batch_size=8,
    learning_rate=1e-3,
    warmup_steps=10,
    lora_rank=16,
    save_dtype="bfloat16",
)
"""The warm start of the real pretrained SmolLM2-135M-Instruct (``countdown models install smollm2-135m``;
docs/warm_start.md), shipped as ``smollm2-135m-warm-start``: a LoRA adapter of rank 16 (alpha 32) on every linear
layer, trained on 160 x 8 ``direct`` traces (each of 1 280 puzzles seen once) in its own ChatML template with the
compact prompt, peak lr 1e-3 (ten times the earlier full fine-tune's 1e-4, the usual LoRA-to-full ratio), 10 warmup
steps, cosine to 10 %; saved in bfloat16: 4.9 M parameters, 9.8 MB, small enough to ship in the package."""

PRETRAINED_RECIPES: dict[str, WarmStartRecipe] = {"smollm2-135m": SMOLLM2_RECIPE}
"""``countdown warm-start --from-scratch --base NAME``: the recipe of each installable pretrained model."""

MULTI_STEP_MEASURE: dict[str, Any] = {"max_new_tokens": 384, "eval_limit": 256}
""":func:`measure_warm_start` settings of the multi-step warm start (its traces run to ~340 tokens)."""


# --------------------------------------------------------------------------------------------------- loading
def load_warm_start(directory: str | Path | None = None, *, device: str = "cpu"):
    """``(model, tokenizer, task)`` of the shipped warm start (or of ``directory``), offline, in fp32."""
    import torch
    from transformers import AutoModelForCausalLM

    from ..data import model_task
    from ..models.tokenizer_io import load_tokenizer

    folder = Path(directory) if directory is not None else SHIPPED_DIR
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"no warm start at {folder} (build one: countdown warm-start --from-scratch)")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device)
    return model, load_tokenizer(folder), model_task(folder) or tiny_task()


# -------------------------------------------------------------------------------------------------- building
def sft_records(recipe: WarmStartRecipe, task, exclude) -> list[dict[str, Any]]:
    """Solver-derived traces of ``task``'s puzzles in the recipe's style mix, none of them in ``exclude``."""
    import random

    from countdown_env.sft import build_sft_records

    total = sum(recipe.styles.values())
    records: list[dict[str, Any]] = []
    taken = list(exclude)
    for i, (style, weight) in enumerate(recipe.styles.items()):
        size = (
            recipe.sft_size - len(records) if i == len(recipe.styles) - 1 else round(recipe.sft_size * weight / total)
        )
        rows = build_sft_records(
            task.counts,
            size,
            seed=recipe.seed + 1 + 1000 * i,
            style=style,
            value_range=task.value_range,
            target_range=task.target_range,
            exclude=taken,
            progress=False,
        )
        taken += [(tuple(sorted(r["numbers"])), r["target"]) for r in rows]
        records += rows
    if len(recipe.styles) > 1:
        random.Random(recipe.seed).shuffle(records)
    return records


def build_warm_start(
    out: str | Path,
    recipe: WarmStartRecipe = RECIPE,
    *,
    measure: dict[str, Any] | None = None,
    log=print,
    overwrite: bool = False,
    measure_after: bool = True,
) -> Path:
    """SFT the tiny model with ``recipe`` into ``out`` (built in a folder beside it and renamed in whole); measure and
    report it (``measure``: keyword arguments of :func:`measure_warm_start`, e.g. a smaller ``eval_limit``; nothing
    measured when ``measure_after`` is false). A non-empty ``out`` is refused at once unless ``overwrite`` (then
    replaced whole)."""
    import tempfile

    from countdown_env.helpers.atomic import atomic_dir
    from countdown_env.splits.eval_sets import load_eval_set

    out = Path(out)
    task = tiny_task()
    # the output is claimed first: a non-empty --out without --overwrite fails before ~27 minutes of work
    with (
        tempfile.TemporaryDirectory() as scratch,
        atomic_dir(out, overwrite=overwrite, owned=WARM_START_OUTPUTS) as model_dir,
    ):
        start = time.perf_counter()
        exclude = [(tuple(sorted(r["numbers"])), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]
        exclude += [(tuple(sorted(p.numbers)), p.target) for p in group_puzzles(task, 64)]
        records = sft_records(recipe, task, exclude)
        log(f"{len(records)} SFT traces ({time.perf_counter() - start:.0f} s)")
        _sft_and_measure(recipe, records, task, Path(scratch), model_dir, measure if measure_after else False, log)
    return out


def _sft_and_measure(recipe, records, task, scratch: Path, model_dir: Path, measure, log) -> None:
    """The recipe's SFT of a fresh tiny model (built in ``scratch``) into ``model_dir``, its recipe and report."""
    import torch
    from transformers import AutoModelForCausalLM

    from ..models.tiny import build_tiny_model
    from .sft_training import run_sft

    if recipe.init != "tiny":
        init = resolve_model(recipe.init)
    else:
        init = build_tiny_model(
            scratch / "init",
            seed=recipe.seed,
            hidden_size=recipe.hidden_size,
            num_layers=recipe.num_layers,
            num_heads=recipe.num_heads,
            intermediate_size=recipe.intermediate_size,
        )
    sft_start = time.perf_counter()
    run_sft(
        init,
        records,
        model_dir,
        task=task,
        max_steps=recipe.steps,
        seed=recipe.seed,
        per_device_train_batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate,
        warmup_steps=recipe.warmup_steps,
        lr_scheduler_kwargs={"min_lr_rate": recipe.min_lr_rate},
        logging_steps=max(1, recipe.steps // 20),
        disable_tqdm=not sys.stderr.isatty(),
        peft_config=recipe.peft_config(),
    )
    sft_minutes = (time.perf_counter() - sft_start) / 60
    if recipe.lora_rank:
        from ..models.adapters import cast_adapter

        cast_adapter(model_dir, recipe.save_dtype)
    elif recipe.save_dtype != "float32":
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        model.to(getattr(torch, recipe.save_dtype)).save_pretrained(model_dir)
    for leftover in ("training_args.bin",):
        (model_dir / leftover).unlink(missing_ok=True)
    (model_dir / RECIPE_FILE).write_text(json.dumps(recipe.to_dict(), indent=2) + "\n")
    from ...core.checkpoints import write_checkpoint_manifest

    if measure is False:
        write_checkpoint_manifest(model_dir)  # its files' sha256: a changed byte is named when the model is checked
        return
    if recipe.lora_rank:  # the adapter is measured as it ships: merged onto its base, from its saved dtype
        from ..models.adapters import merge_adapter

        measured = merge_adapter(model_dir, scratch / "merged", base=init)
    else:
        measured = model_dir
    report = measure_warm_start(measured, log=log, **(measure or {}))
    report["sft_minutes"] = round(sft_minutes, 2)
    (model_dir / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    write_checkpoint_manifest(model_dir)


# --------------------------------------------------------------------------------------------------- shipping
SLICE_FILE = "greedy_slice.json"
SLICE_PUZZLES = 32
SHIPPED_ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "countdown_task.json", RECIPE_FILE,
                         REPORT_FILE, "sft_log_history.json")  # fmt: skip
"""What ships of a LoRA warm start's build folder (the tokenizer is its base model's)."""


def greedy_slice(model_dir: str | Path, count: int = SLICE_PUZZLES, max_new_tokens: int = 128) -> dict[str, Any]:
    """Greedy answers of ``model_dir`` (``transformers``, deterministic) on the first ``count`` puzzles of the warm
    start's eval set: ``{"puzzles": count, "correct": [bool, ...], "pass@1": ...}``; the shipped adapter's test
    re-scores the same slice and compares."""
    from countdown_env.splits.eval_sets import load_eval_set

    from ..data import model_task
    from ..evaluation.eval_models import model_sampler
    from ..evaluation.evaluate import evaluate
    from ..models.tokenizer_io import load_tokenizer

    tokenizer = load_tokenizer(model_dir)
    task = model_task(model_dir) or tiny_task()
    rows = load_eval_set(EVAL_SET, as_dataset=False)[:count]
    sampler = model_sampler(model_dir, tokenizer, "hf", batch_size=count, precision="fp32")  # as recorded
    report = evaluate(sampler, tokenizer, rows, task=task, samples=1, temperature=0.0, max_new_tokens=max_new_tokens,
                      per_puzzle=True)  # fmt: skip
    correct = [bool(p["correct"][0]) for p in report["puzzles"]]
    return {"eval_set": EVAL_SET, "puzzles": count, "max_new_tokens": max_new_tokens, "backend": "hf",
            "correct": correct, "pass@1": sum(correct) / count}  # fmt: skip


def ship_warm_start(build_dir: str | Path, dest: str | Path, *, base: str) -> Path:
    """Copy a LoRA warm start's build (``countdown warm-start --from-scratch --base NAME``) into the package folder
    ``dest``: its :data:`SHIPPED_ADAPTER_FILES`, the greedy slice of it merged onto ``base`` (:data:`SLICE_FILE`),
    and a sha256 manifest written last; ``dest`` is replaced whole."""
    import shutil
    import tempfile

    from countdown_env.helpers.atomic import atomic_dir, write_text

    from ...core.checkpoints import write_checkpoint_manifest
    from ..models.adapters import merge_adapter

    build_dir = Path(build_dir)
    missing = [name for name in SHIPPED_ADAPTER_FILES if not (build_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{build_dir} lacks {missing}: not a measured LoRA warm-start build")
    with tempfile.TemporaryDirectory() as scratch, atomic_dir(dest, overwrite=True) as out:
        for name in SHIPPED_ADAPTER_FILES:
            shutil.copyfile(build_dir / name, out / name)
        config = json.loads((out / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = base  # the name it merges onto, not this machine's path to it
        write_text(out / "adapter_config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
        merged = merge_adapter(out, Path(scratch) / "merged", base=base)
        write_text(out / SLICE_FILE, json.dumps(greedy_slice(merged), indent=1) + "\n")
        write_checkpoint_manifest(out)
    return Path(dest)
