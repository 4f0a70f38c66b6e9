"""A run's numeric precision: ``precision: auto | fp32 | bf16`` (``--precision`` on the commands that load a model).

``auto`` is ``fp32`` for the tiny models (under :data:`BF16_FROM_PARAMETERS`: their matmuls are too small for bfloat16
units to pay: ``benchmarks/bench_precision.py --model tiny`` measured the 1 M-parameter warm start's GRPO step at
0.67x over 2 steps and 1.13x over 10, within noise, and their float32 figures are the project's calibration), and for
real models ``bf16`` where the hardware multiplies bfloat16 natively and ``fp32`` elsewhere:
- a CUDA GPU that supports bfloat16 (``torch.cuda.is_bf16_supported()``);
- a CPU with AMX-BF16 (``amx_bf16``: Sapphire Rapids and later Xeons; on this project's Xeon, one thread, torch 2.13,
  ``bench_precision.py`` measured a 2048 x 576 x 1536 matmul at 149 GFLOPS in float32 against 1 357 in bfloat16) or
  AVX512-BF16 (``avx512_bf16``: its
  dot-product instructions; a CPU with that flag but no AMX has not been measured by this project);
- any other CPU (e.g. an AVX2-only EPYC) emulates bfloat16 and would get slower: ``fp32``.

What ``bf16`` means for a run (:func:`trainer_settings`):
- the forward and backward run under bfloat16 autocast (``GRPOConfig.bf16``: accelerate's ``autocast``), the trained
  parameters, their gradients and AdamW's state stay float32;
- a LoRA run also keeps its frozen base weights in bfloat16 (``model_init_kwargs.dtype``): measured on SmolLM2-135M
  (one core, 4 x 200 tokens, LoRA r16 on every linear layer) forward + backward took 5.1-6.2 s in float32,
  2.9-3.8 s under autocast alone and 2.7-3.3 s with the base stored in bfloat16 (no per-step casts of frozen weights);
  a full fine-tune keeps float32 weights (the update needs them);
- ``countdown eval``'s and ``serve``'s vLLM engines load in bfloat16; a trainer's colocated engine on the CPU stays
  float32 (:data:`learners.core.vllm_sync.CPU_ENGINE_DTYPE`: a bfloat16 engine rounded away the policy's
  updates and the SmolLM2 demo collapsed);
- the base trainer's log-probabilities skip PEFT's input casts under autocast and run TRL's fused LM head on the
  completion tokens only (:meth:`learners.core.trainer.CountdownGRPOTrainer._get_per_token_logps_and_entropies`):
  on a CPU the LM head's full-vocabulary work, whose backward TRL keeps in float32 off CUDA, was the largest part
  of a bf16 update.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

PRECISIONS = ("auto", "fp32", "bf16")
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
"""CPU flags (``/proc/cpuinfo``) of native bfloat16 arithmetic."""
BF16_FROM_PARAMETERS = 40_000_000
"""``auto`` considers bf16 from this many parameters on (the tiny models stay float32; SmolLM2-135M has 134.5 M)."""
RECORDED_CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
"""The flags a run's record keeps beside its precision."""


def check_precision(setting: Any) -> str:
    """``setting`` as one of :data:`PRECISIONS`, or one line naming them."""
    if not isinstance(setting, str) or setting not in PRECISIONS:
        raise ValueError(f"precision: {setting!r} is not one of {', '.join(PRECISIONS)}")
    return setting


def resolve_precision(
    setting: str, *, flags: Iterable[str] | None = None, cuda_bf16: bool | None = None, parameters: int | None = None
) -> str:
    """``fp32`` or ``bf16`` for ``setting`` on this machine (``flags``: the CPU's flags; ``cuda_bf16``: whether a CUDA
    GPU with bfloat16 is present; both read from the machine when ``None``) for a model of ``parameters`` (``None``:
    unknown, e.g. a Hub id). ``bf16`` asked on a CPU without native bfloat16 still runs (emulated, slower), as the
    user asked."""
    setting = check_precision(setting)
    if setting != "auto":
        return setting
    if parameters is not None and parameters < BF16_FROM_PARAMETERS:
        return "fp32"
    if cuda_bf16 is None:
        cuda_bf16 = _cuda_bf16()
    if cuda_bf16:
        return "bf16"
    if flags is None:
        from .machine import cpu_flag_list

        flags = cpu_flag_list()
    flags = set(flags)
    return "bf16" if flags & set(BF16_CPU_FLAGS) else "fp32"


def model_precision(setting: str, model) -> str:
    """:func:`resolve_precision` for the model ``model`` (a folder, ``"tiny"`` (fp32 under ``auto``), or a Hub id)."""
    from .models.parameters import parameter_count

    if check_precision(setting) != "auto":
        return setting
    folder = Path(str(model)).expanduser()
    parameters = 0 if str(model) == "tiny" else (parameter_count(folder) if folder.is_dir() else None)
    return resolve_precision(setting, parameters=parameters)


def _cuda_bf16() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def precision_record(setting: str, resolved: str) -> dict[str, Any]:
    """What a run's record says of its precision: the ``resolved`` one, the ``setting``, and the CPU."""
    from .machine import cpu_record

    cpu = cpu_record()  # its vector extensions (avx*, amx*) hold every recorded flag
    flags = [f for f in RECORDED_CPU_FLAGS if f in cpu["vector_extensions"]]
    return {"precision": resolved, "precision_setting": setting, "cpu": {"model": cpu["model"], "flags": flags}}


def trainer_settings(precision: str, *, lora: bool) -> dict[str, Any]:
    """The learner config's keyword arguments for a resolved ``precision`` (see the module's docstring)."""
    if precision not in ("fp32", "bf16"):
        raise ValueError(f"trainer_settings takes a resolved precision (fp32 or bf16), got {precision!r}")
    settings: dict[str, Any] = {"bf16": precision == "bf16", "fp16": False}
    if precision == "bf16" and lora:
        settings["model_init_kwargs"] = {"dtype": "bfloat16"}
    return settings


def engine_dtype(precision: str) -> str:
    """The dtype an eval's or ``serve``'s vLLM engine loads in for a resolved ``precision`` (a trainer's colocated
    CPU engine stays float32: :data:`learners.core.vllm_sync.CPU_ENGINE_DTYPE`)."""
    return "bfloat16" if precision == "bf16" else "float32"
