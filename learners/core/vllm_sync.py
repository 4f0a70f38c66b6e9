"""Weight sync of TRL's colocated vLLM engine where vLLM runs on the CPU.

TRL 1.16's colocate mode copies the policy into its ``vllm.LLM`` before each generation with
``model_runner.model.load_weights([(name, param)])``, one parameter at a time. That needs every vLLM parameter's
``weight_loader``. On the CPU, vLLM's linear layers repack their weights into a kernel layout after loading and
drop the original parameters (``vllm/model_executor/layers/linear.py`` → ``dispatch_cpu_unquantized_gemm(...,
remove_weight=True)``), so TRL's first sync raises ``AttributeError: 'Parameter' object has no attribute
'weight_loader'``.

vLLM's own layer-wise reload, ``model_runner.reload_weights(weights_iterator=..., is_checkpoint_format=True)``,
restores the checkpoint layout, loads the given tensors through the usual loaders and re-runs the CPU repacking.
That reload misses one case: a layer whose CPU method packs a copy *and keeps* its weight (vocabulary embeddings
and the LM head, ``remove_weight=False``) and that loads no tensor of its own, i.e. an LM head tied to the input
embedding. Its packed copy stays the one built at engine start, so after a few optimiser steps vLLM samples
from new hidden states through the initial output matrix (measured on the tiny model: max |Δ log p| 1.49 against
the trainer after perturbing the embedding, 1.4e-6 once re-packed). :func:`layerwise_sync_weights` therefore
re-packs every such layer after the reload.

:func:`colocated_engine_settings` makes the colocated engine on the CPU load the policy in float32
(:data:`CPU_ENGINE_DTYPE`), in bf16 runs too: vLLM's ``"auto"`` would load it in bfloat16, so that the engine
samples from a rounded policy; and it lets the engine decode :data:`COLOCATED_MAX_NUM_SEQS` sequences at once, not
TRL's one generation's rows, so that an eval through it runs at full batches.

:func:`use_layerwise_sync` replaces the ``sync_weights`` of one trainer's ``VLLMGeneration`` with that call; the
parameters come from :func:`merged_named_params` (TRL's naming, with a PEFT adapter merged out of place: TRL's
in-place merge and unmerge moved a bfloat16 base at every sync), and the prefix cache is reset as TRL does. It is
installed only where it is needed: colocate mode on a vLLM CPU platform. On a GPU TRL's stock path runs unchanged
(there a bf16 LoRA run's base still moves at each sync: TRL's behaviour, not changed here).
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Mapping, MutableMapping
from typing import Any

CPU_ENGINE_DTYPE = "float32"
"""What a vLLM engine on the CPU loads a policy in when none is asked for, and what a trainer's colocated engine holds
there whatever the run's precision. In a bf16 run an engine in bfloat16 holds ``bf16(W + delta)``: once the trained
delta is small against the spacing of bfloat16 numbers near ``W``, the rounding keeps only part of each update, so the
engine samples from a policy that drifts away from the one trained. ``demo-train --model smollm2-135m --precision bf16``
collapsed that way twice (the engine-trainer mean |delta log p| per token grew 0.003 -> 0.03-0.04 within 20 steps;
completions ran to the 128-token cap, format 0.24-0.38 after 24 steps); the same run with the engine in float32 kept
0.004-0.012 and a training format of 0.95-1.0 (``benchmarks/results/demo_smollm2/bf16/``). Keeping the adapter apart
from a bfloat16 base instead (vLLM's ``enable_lora``) is slower than float32 on vLLM 0.31's CPU build: 0.30x its
tokens/s, its CPU kernels gathering the adapter's matrices for every token (``benchmarks/results/eval_batch/``). The
trainer still computes in bfloat16; an eval's or ``serve``'s engine, which samples a fixed model, loads in the run's
precision (:func:`learners.pipeline.precision.engine_dtype`)."""


CPU_STEP_TIMEOUT_S = "3600"
"""``VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS`` when the user set none (vLLM's default, 300 s, is a GPU's scale)."""

CPU_KV_CACHE_GIB = "1"
"""``VLLM_CPU_KVCACHE_SPACE`` when the user set none: the KV cache of a CPU engine, in GiB (the tiny model's batches
need a few MB; vLLM's own default would reserve several GiB per engine on a 24 GiB machine)."""


def cpu_engine_defaults(env: MutableMapping[str, str] | None = None) -> None:
    """Environment defaults of a vLLM CPU engine (set only where unset) in ``env`` (default: this process's
    ``os.environ``; a child's environment for ``countdown serve``): a 1 GiB KV cache, an hour for one model step, a
    free port for the colocated engine's process group (``MASTER_PORT``), and no core reserved for the engine's front
    end (vLLM keeps one core out of its compute threads by default; on 2 cores that halves its compute:
    ``benchmarks/bench_generation.py`` measured the 43.7 M model at 546 tok/s with one core reserved and 937 tok/s
    with none, against 466 and 449 for HF ``generate``)."""
    env = os.environ if env is None else env
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)
    env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    # vLLM gives a model step 300 s before it declares its engine dead; on a CPU shared by many jobs one step of a
    # 135 M model (up to 4096 prompt tokens at once) took longer (an eval died at load ~35 on 2 cores)
    env.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", CPU_STEP_TIMEOUT_S)
    if not env.get("MASTER_PORT"):
        # TRL's colocate mode takes the first free port of a fixed list (29500, 23456, ...): a second colocated run
        # started on the same machine meanwhile could take the same one and fail with EADDRINUSE (seen here)
        env["MASTER_PORT"] = str(free_port())
    check_kv_cache_space(env)


def check_kv_cache_space(env: Mapping[str, str] | None = None) -> None:
    """``VLLM_CPU_KVCACHE_SPACE`` (in ``env``, default this process's) must be a whole number of GiB that this machine
    has (0: vLLM's default); otherwise one line now, instead of vLLM's "Engine core initialization failed. See root
    cause above" after the engine start."""
    raw = (os.environ if env is None else env).get("VLLM_CPU_KVCACHE_SPACE")
    if raw is None:
        return
    try:
        gib = int(raw)
    except ValueError:
        raise ValueError(f"VLLM_CPU_KVCACHE_SPACE={raw!r} must be a whole number of GiB (e.g. 1)") from None
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if hasattr(os, "sysconf") else float("inf")
    if not 0 <= gib < total:
        raise ValueError(
            f"VLLM_CPU_KVCACHE_SPACE={gib} GiB does not fit this machine's {total:.0f} GiB of memory: give 1 to "
            f"{max(1, int(total) - 1)} (the KV cache of a CPU engine)"
        )


def vllm_sampling_kwargs(*, read_prefix_cache: bool = True) -> dict[str, Any]:
    """``vllm.SamplingParams`` keywords of a scoring request: one dummy output token, the logprob of each prompt
    token (``prompt_logprobs=0``: the actual token only), no detokenization (cached rows are never decoded). The
    contrastive scorer's requests and the async rollouts' sync probe."""
    return dict(
        max_tokens=1,
        temperature=0.0,
        prompt_logprobs=0,
        detokenize=False,
        skip_reading_prefix_cache=not read_prefix_cache,
    )


def free_port() -> int:
    """A TCP port free on this machine now (the kernel's choice of an ephemeral port)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


COLOCATED_MAX_NUM_SEQS = 128
"""The fewest sequences a trainer's colocated engine on the CPU decodes at once. TRL caps it at one generation's rows
(``per_device_train_batch_size x steps_per_generation``: 32 in R2 and R3), which a training batch never exceeds but an
eval through the same engine does (256 puzzles x 16 samples in R3). A CPU decode step is matmul-bound, and wider
batches use the matrix units better: SmolLM2-135M's warm start, 32 puzzles x 8 samples of up to 128 tokens, one thread,
vLLM 0.31's CPU build, ``max_num_seqs`` 32 -> 128: float32 100 -> 147 tokens/s, bfloat16 197 -> 360 (256 gave
float32 174). 128 is what the default 1 GiB KV cache holds in float32 at such lengths (23 296 tokens / ~180 a
sequence); past it vLLM preempts and recomputes. A training generation is scheduled as before (it fits either cap)."""


@contextlib.contextmanager
def colocated_engine_settings():
    """While a trainer is built, TRL's colocated ``vllm.LLM`` on the CPU gets :data:`CPU_ENGINE_DTYPE` and at least
    :data:`COLOCATED_MAX_NUM_SEQS` sequences. TRL passes no dtype, and vLLM's ``"auto"`` downcasts a float32
    checkpoint to bfloat16, so the engine would sample from a rounded copy of the policy: on SmolLM2-135M (2 of its
    layers) its log-probabilities of the sampled tokens differed from a float32 trainer's by up to 0.18 per token (max)
    with the sync working, against < 0.02 in float32. (The tiny model's errors in bfloat16 stay under that tolerance,
    which is why its tests never showed it.)"""
    import trl.generation.vllm_generation as trl_generation

    original = getattr(trl_generation, "LLM", None)
    if original is None:  # vLLM not installed: TRL refuses use_vllm itself, in its own words
        yield
        return

    def build(*args: Any, **kwargs: Any):
        kwargs.setdefault("dtype", CPU_ENGINE_DTYPE)
        kwargs["max_num_seqs"] = max(kwargs.get("max_num_seqs") or 0, COLOCATED_MAX_NUM_SEQS)
        return original(*args, **kwargs)

    trl_generation.LLM = build
    try:
        yield
    finally:
        trl_generation.LLM = original


def vllm_runs_on_cpu() -> bool:
    """Whether the installed vLLM is a CPU build (its current platform is the CPU)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def layerwise_sync_weights(generation) -> None:
    """Copy the policy's weights into ``generation.llm`` (a TRL ``VLLMGeneration``) with vLLM's layer-wise reload."""
    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=merged_named_params(generation), is_checkpoint_format=True)
    repack_kept_weights(runner.get_model())
    generation.llm.reset_prefix_cache()


def merged_named_params(generation):
    """The policy's parameters under the names vLLM expects, a PEFT adapter merged *out of place*.

    TRL's ``_iter_named_params`` merges the adapter into the frozen base in place and takes it out again
    (``merge_adapter()`` ... ``unmerge_adapter()``). With the base in bfloat16 (a bf16 LoRA run,
    :mod:`learners.pipeline.precision`) that is not the identity: PEFT adds and subtracts the delta rounded to
    bfloat16, so every sync moved the "frozen" base by a rounding of the adapter's delta (on a SmolLM2-shaped layer
    with the adapter moving each step, 28 % of the base's entries had changed after 24 syncs). Here each wrapped
    weight is sent as ``W + delta`` in float32, rounded only by the engine's loader into the engine's own dtype, and
    nothing of the model is written. Without PEFT it is TRL's own iterator. Only for a single-process or DDP model
    (whole parameters): the path that installs it, colocate mode on a CPU engine, has no FSDP or ZeRO-3 sharding."""
    from accelerate.utils import is_peft_model
    from peft.tuners.lora import LoraLayer

    model = generation.model
    if not is_peft_model(model):
        yield from generation._iter_named_params()
        return
    layers = {
        f"{name}.base_layer.weight": module
        for name, module in model.named_modules()
        if isinstance(module, LoraLayer) and not module.merged
    }
    for name, param in model.named_parameters():
        vllm_name = name.removeprefix("base_model.model.").replace(".base_layer", "")
        if model.prefix in vllm_name or "original_module" in vllm_name:  # adapter tensors; a saved module's original
            continue
        data = param.data
        layer = layers.get(name)
        if layer is not None:
            adapters = [adapter for adapter in layer.active_adapters if adapter in layer.lora_A]
            if adapters:
                delta = sum(layer.get_delta_weight(adapter).float() for adapter in adapters)
                data = data.float() + delta
        yield generation._fix_param_name_to_vllm(vllm_name, extra_prefixes=["modules_to_save.default."]), data


def repack_kept_weights(model) -> int:
    """Re-run the CPU packing of every layer that keeps its weight beside a packed copy (embeddings, LM heads);
    returns how many layers were re-packed."""
    count = 0
    for module in model.modules():
        weight = getattr(module, "weight", None)
        method = getattr(module, "quant_method", None)
        if hasattr(module, "cpu_linear") and method is not None and weight is not None and weight.numel():
            method.process_weights_after_loading(module)
            count += 1
    return count


def use_layerwise_sync(trainer) -> bool:
    """Install :func:`layerwise_sync_weights` on ``trainer.vllm_generation`` when the trainer generates with a
    colocated vLLM engine on the CPU; returns whether it did."""
    if not (getattr(trainer, "use_vllm", False) and trainer.vllm_mode == "colocate" and vllm_runs_on_cpu()):
        return False
    generation = trainer.vllm_generation
    generation.sync_weights = types.MethodType(layerwise_sync_weights, generation)
    return True
