"""The sampler and sampling settings that match a TRL ``GRPOTrainer``'s own generation.

``use_vllm=True`` with ``vllm_mode="colocate"``: the trainer's colocated ``vllm.LLM``; ``"server"``: its
``VLLMClient``; otherwise ``transformers`` ``generate`` on the unwrapped policy. TRL syncs the weights of a vLLM
engine before each generation batch, so a sampler used inside the generation step (a ``rollout_func``, T-SPMO's
replay in seam 1) samples from the current policy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .protocol import Sampler, Sampling


def trainer_sampling(trainer) -> Sampling:
    """The trainer's temperature, top-p, top-k, min-p and repetition penalty; no reseeding (the trainer's random
    streams go on, as in TRL's own generation). ``generation_kwargs: {do_sample: false}`` makes TRL's own
    generation greedy, and so this sampling (temperature 0)."""
    greedy = (getattr(trainer.args, "generation_kwargs", None) or {}).get("do_sample") is False
    return Sampling(
        temperature=0.0 if greedy else float(trainer.temperature),
        top_p=float(trainer.top_p),
        top_k=int(getattr(trainer, "top_k", 0) or 0),
        min_p=float(getattr(trainer, "min_p", 0.0) or 0.0),
        repetition_penalty=float(getattr(trainer, "repetition_penalty", 1.0) or 1.0),
    )


def trainer_sampler(trainer, model=None) -> Sampler:
    """The backend that generates like ``trainer`` (module docstring); ``model`` replaces the unwrapped policy of
    the HF backend (e.g. one gathered for generation)."""
    stops = list(trainer.eos_token_ids)
    if getattr(trainer, "use_vllm", False):
        generation = trainer.vllm_generation
        if trainer.vllm_mode == "colocate":
            from .vllm_engine import VLLMSampler

            return VLLMSampler(generation.llm, stop_ids=stops)
        from .vllm_server import VLLMServerSampler

        return VLLMServerSampler(generation.vllm_client, stop_ids=stops)
    from .hf import HFSampler

    policy = model if model is not None else trainer.accelerator.unwrap_model(trainer.model_wrapped)
    return HFSampler(
        policy, trainer.processing_class, stop_ids=stops, batch_size=trainer.args.per_device_train_batch_size
    )


def lockstep_forward(trainer) -> bool:
    """Whether a forward pass of the policy may be a collective operation of all processes, so that every process
    must run the same forwards, in step: FSDP (each layer gathers its shards) and DeepSpeed ZeRO-3 (inside TRL's
    gather too: deepspeed 0.19's start-of-forward hook, which TRL 1.16 leaves in place, compares the module trace
    across processes until the trace is complete; an eval on the main process alone hung there)."""
    if trainer.is_fsdp_enabled:
        return True
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    return bool(trainer.is_deepspeed_enabled and plugin is not None and plugin.zero_stage == 3)


@contextlib.contextmanager
def gathered_policy(trainer) -> Iterator:
    """The trainer's policy with its full parameters, for sampling outside TRL's own generation (an eval, a replay):
    TRL's ``unwrap_model_for_generation``, which under DeepSpeed ZeRO-3 gathers the partitioned parameters into
    every process. That gather is a collective operation: every process enters this context, one that samples
    nothing included; inside it, sampling is local to each process unless :func:`lockstep_forward`."""
    from trl.models import unwrap_model_for_generation

    with unwrap_model_for_generation(
        trainer.model_wrapped,
        trainer.accelerator,
        gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
        gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
    ) as model:
        yield model
