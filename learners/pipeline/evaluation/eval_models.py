"""Evaluating a checkpoint folder: the task it is scored with, its sampler (``hf`` or ``vllm``), and the report of
:func:`~learners.pipeline.evaluation.evaluate.evaluate` on a split with where the prompt template came from."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..models.parameters import parameter_count
from .evaluate import evaluate, load_rows


def evaluate_model_dir(
    model_dir: str | Path,
    split: str | Path,
    *,
    backend: str = "hf",
    limit: int | None = None,
    batch_size: int = 64,
    template: str | None = None,
    progress: bool | None = False,
    precision: str = "auto",
    **kwargs: Any,
) -> dict[str, Any]:
    """Load a checkpoint folder and :func:`evaluate` it on the rows of ``split`` under :func:`eval_task`.

    The report states the prompt template (``template``), where it came from (``template_source``) and whether the
    split's own ``prompt`` column agreed with it (``split_prompts``: ``"none"``, ``"same"`` or ``"different"``;
    prompts are always rendered from the task, so a different column was ignored)."""
    from ..models import check_model, resolve_model
    from ..models.tokenizer_io import load_tokenizer

    name, model_dir = str(model_dir), resolve_model(model_dir)  # "warm-start": the shipped folder
    check_model(model_dir)  # a missing path or a broken folder fails at once (no Hub retries)
    rows = load_rows(split, limit)
    tokenizer = load_tokenizer(model_dir)
    task = eval_task(model_dir, split, template)
    from ..precision import model_precision

    precision = model_precision(precision, model_dir)  # resolved once: the sampler's and the report's
    sampler = model_sampler(
        model_dir, tokenizer, backend, batch_size=batch_size, progress=progress, seed=kwargs.get("seed", 0),
        precision=precision,
    )
    try:
        report = evaluate(sampler, tokenizer, rows, task=task, **kwargs)
    finally:
        getattr(sampler, "close", lambda: None)()
    report.update(model=name, split=str(split), precision=precision)
    report.update(template_source=template_source(model_dir, split, template), split_prompts=split_prompts(rows, task))
    return report


BACKENDS = ("auto", "hf", "vllm")

VLLM_FROM_PARAMETERS = 40_000_000
"""``"auto"`` generates with vLLM from this many parameters on. Measured on the 2-core CPU machines
(``benchmarks/bench_generation.py``; docs/scaling.md): vLLM / transformers tokens/s was 0.87-0.94x for the 1.07 M tiny
model (and its engine start costs 15-25 s), 2.09x at 43.7 M and 5.6x for SmolLM2-135M; sizes in between are
unmeasured and stay on transformers."""


def resolve_backend(backend: str, model_dir: str | Path) -> str:
    """``"hf"`` or ``"vllm"``; ``"auto"`` is ``"vllm"`` for a model of at least :data:`VLLM_FROM_PARAMETERS`
    parameters when vLLM is installed, else ``"hf"``."""
    if backend != "auto":
        return backend
    import importlib.util

    count = parameter_count(model_dir)
    large = count is not None and count >= VLLM_FROM_PARAMETERS
    return "vllm" if large and importlib.util.find_spec("vllm") is not None else "hf"


def model_sampler(model_dir, tokenizer, backend: str = "hf", *, batch_size: int = 64, progress=False, seed: int = 0,
                  precision: str = "auto"):  # fmt: skip
    """A :class:`~learners.sampling.Sampler` on a checkpoint folder: ``"hf"`` (``transformers``, this machine's
    device), ``"vllm"`` (an engine of its own, seeded with ``seed``; close it with ``.close()``) or ``"auto"``
    (:func:`resolve_backend`: vLLM for real models, transformers for the tiny ones); the weights in ``precision``
    (:func:`learners.pipeline.precision.model_precision`)."""
    from ..precision import engine_dtype, model_precision

    backend = resolve_backend(backend, model_dir)
    dtype = engine_dtype(model_precision(precision, model_dir))
    if backend == "hf":
        import torch
        from transformers import AutoModelForCausalLM

        from ...sampling import HFSampler

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
        return HFSampler(model, tokenizer, batch_size=batch_size, device=device, progress=progress)
    if backend == "vllm":
        from ...sampling import VLLMSampler

        return VLLMSampler.from_model_dir(model_dir, tokenizer, progress=progress, seed=seed, dtype=dtype)
    raise ValueError(f"unknown backend {backend!r}; choose one of {list(BACKENDS)}")


def template_source(model_dir: str | Path, split: str | Path, template: str | None = None) -> str:
    """Where :func:`eval_task`'s template comes from, in words."""
    from ..data import model_task

    if template is not None:
        return "--template"
    if model_task(model_dir) is not None:
        return "the checkpoint's task (countdown_task.json)"
    if split_task(split) is not None:
        return "the split's manifest.json"
    return "the default task"


def split_prompts(rows: Sequence[dict[str, Any]], task) -> str:
    """``"none"`` (rows without ``prompt``), ``"same"`` (every row's prompt is the task's) or ``"different"``."""
    from countdown_env import Puzzle

    with_prompt = [r for r in rows if r.get("prompt")]
    if not with_prompt:
        return "none"
    same = all(r["prompt"] == task.messages(Puzzle.from_dict(r)) for r in with_prompt)
    return "same" if same else "different"


def split_task(split: str | Path):
    """The task a split's ``manifest.json`` records (beside a jsonl file, or in a split folder), else ``None``."""
    from countdown_env.task import CountdownTask

    split = Path(split)
    manifest = (split if split.is_dir() else split.parent) / "manifest.json"
    if not manifest.is_file():
        return None
    task = json.loads(manifest.read_text()).get("task")
    return CountdownTask.from_dict(task) if task else None


def eval_task(model_dir: str | Path, split: str | Path, template: str | None = None):
    """The task ``countdown eval`` scores with: the one recorded with the checkpoint, else the split's manifest's,
    else ``CountdownTask()``; ``template`` (the ``--template`` flag) replaces its template."""
    from countdown_env.task import CountdownTask

    from ..data import model_task

    task = model_task(model_dir) or split_task(split) or CountdownTask()
    return task if template is None else dataclasses.replace(task, template=template)
