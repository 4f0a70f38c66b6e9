"""Warm starts shipped as LoRA adapters: a few MB in the package, merged onto an installed base model on first use.

A real model's fine-tuned weights do not belong in a repository (SmolLM2-135M in float32 is 517 MB), but a LoRA
adapter does: rank 16 on every linear layer of SmolLM2-135M is 4.9 M parameters, 9.8 MB in bfloat16. The package
ships such an adapter (:data:`SMOLLM2_WARM_START`: ``adapter_config.json``, ``adapter_model.safetensors``, the task
it was trained on, its recipe and calibration report, and a sha256 manifest), and ``--model
smollm2-135m-warm-start`` names it like any model: :func:`merged_model` checks the shipped files against their
manifest, merges the adapter onto the installed base (``countdown models install smollm2-135m``) into an ordinary
float32 model folder in the cache (``CACHE/models/NAME-<adapter sha256 prefix>``, built beside its place and
renamed in whole, with its own manifest), and returns that folder. Everything downstream (``transformers``, vLLM,
every learner) then loads a plain model; the merge runs once per adapter version (~20 s).

Merging is exact up to float32 rounding: ``W' = W + (alpha / r) B A`` with the bfloat16 ``A`` and ``B`` upcast to
float32, so the merged model is the one that was measured (the calibration is taken on the merged shipped adapter,
not on the float32 adapter before the cast).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


@dataclass(frozen=True)
class ShippedAdapter:
    """A warm start shipped in the package as a LoRA adapter of an installable base model."""

    name: str
    base: str
    folder: Path


SMOLLM2_WARM_START = ShippedAdapter(
    name="smollm2-135m-warm-start",
    base="smollm2-135m",
    folder=Path(__file__).resolve().parents[1] / "smollm2_warm_start",
)
"""SmolLM2-135M-Instruct's Countdown warm start (``warm_start.SMOLLM2_RECIPE``; calibration in docs/warm_start.md)."""

ADAPTERS: dict[str, ShippedAdapter] = {SMOLLM2_WARM_START.name: SMOLLM2_WARM_START}
"""Shipped adapters by the name ``--model`` takes."""


def cast_adapter(folder: str | Path, dtype: str) -> Path:
    """Rewrite ``folder``'s adapter weights in ``dtype`` (e.g. ``"bfloat16"``), atomically; returns the file."""
    import torch
    from safetensors.torch import load_file, save

    from countdown_env.helpers.atomic import write_bytes

    path = Path(folder) / ADAPTER_WEIGHTS
    target = getattr(torch, dtype)
    tensors = {k: (v.to(target) if v.is_floating_point() else v).contiguous() for k, v in load_file(path).items()}
    return write_bytes(path, save(tensors, metadata={"format": "pt"}))


def merge_adapter(adapter_dir: str | Path, out: str | Path, *, base: str | Path) -> Path:
    """Merge the LoRA adapter in ``adapter_dir`` onto ``base`` (an installable model's name or a model folder) and
    save the float32 result, its tokenizer (the base's) and the adapter's task into ``out`` (created). Returns
    ``out``."""
    import shutil

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from .pretrained import MODELS, installed_model
    from .tiny import save_tokenizer
    from .tokenizer_io import load_tokenizer

    base_dir = installed_model(str(base)) if str(base) in MODELS else Path(base)
    out = Path(out)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter_dir), torch_dtype=torch.float32).merge_and_unload()
    merged.save_pretrained(out, safe_serialization=True)
    save_tokenizer(load_tokenizer(base_dir), out)
    task_file = Path(adapter_dir) / "countdown_task.json"
    if task_file.is_file():
        shutil.copyfile(task_file, out / task_file.name)
    return out


def adapter_problem(adapter: ShippedAdapter) -> str | None:
    """Why the shipped adapter cannot be used (files missing or differing from its manifest), or ``None``."""
    from ...core.checkpoints import checkpoint_problem

    if not (adapter.folder / ADAPTER_WEIGHTS).is_file():
        return f"no {ADAPTER_WEIGHTS} in {adapter.folder}"
    return checkpoint_problem(adapter.folder)


def merged_folder(adapter: ShippedAdapter, cache: str | Path | None = None) -> Path:
    """Where :func:`merged_model` keeps ``adapter`` merged onto its base: one folder per adapter version."""
    from countdown_env.splits.manifest import file_sha256

    from .pretrained import cache_root

    digest = file_sha256(adapter.folder / ADAPTER_WEIGHTS)[:12]
    return Path(cache or cache_root()) / "models" / f"{adapter.name}-{digest}"


def merged_model(adapter: ShippedAdapter | str, cache: str | Path | None = None, *, log=None) -> Path:
    """The float32 model folder of the shipped adapter (or its name) merged onto its base, built on first use (module
    docstring). One line (``FileNotFoundError``/``ValueError``) when the base is not installed or the shipped files
    are damaged."""
    import sys

    from countdown_env.helpers.atomic import atomic_dir, output_claim

    from ...core.checkpoints import checkpoint_problem, write_checkpoint_manifest
    from .pretrained import MODELS, SHARED_BUILD_WAIT_SECONDS, installed_model

    adapter = ADAPTERS[adapter] if isinstance(adapter, str) else adapter
    problem = adapter_problem(adapter)
    if problem is not None:
        raise ValueError(f"the shipped warm start {adapter.name!r} is damaged ({problem}); reinstall countdown-rl")
    if adapter.base in MODELS:  # not installed: one line naming `countdown models install`
        base: Path = installed_model(adapter.base, cache)
    else:
        base = Path(adapter.base)
        if not base.is_dir():
            raise FileNotFoundError(f"{adapter.name}: its base model {adapter.base} is not a folder")
    target = merged_folder(adapter, cache)
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    with output_claim(target, wait=SHARED_BUILD_WAIT_SECONDS, on_wait=log):
        if target.is_dir() and checkpoint_problem(target) is None:
            return target
        log(f"merging the shipped {adapter.name} adapter onto {adapter.base} into {target} (once, ~20 s)")
        with atomic_dir(target, overwrite=True) as out:
            merge_adapter(adapter.folder, out, base=base)  # the base of this cache, resolved once
            write_checkpoint_manifest(out)
    return target
