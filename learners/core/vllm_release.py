"""Give back a colocated vLLM engine's memory when its trainer is done.

TRL's colocate mode builds its ``vllm.LLM`` inside the training process. When the trainer is dropped the engine is
not freed: its attention layers, reachable from vLLM's ``static_forward_context``, stay in a reference cycle that the
garbage collector cannot see through (vLLM's ``msgspec`` structures are not tracked), and every layer keeps its KV
cache. On the CPU each engine's cache is ``VLLM_CPU_KVCACHE_SPACE`` GiB (1 here), so a process that trains several
runs one after another (``countdown compare --vllm``, the test suite) grew by 1 GiB per run: ``make test`` peaked at
15.4 GB, 1 GiB for each colocated run of ``tests/integration/test_vllm.py``. :func:`release_colocated_engine` drops
those
references (the layers' caches, the forward context, the runner's cache list) and the trainer's engine.

Under several processes the engine itself is kept alive (its caches still dropped): a colocated engine runs on the
launch's own process group (vLLM's ``external_launcher``), and its shutdown, which collecting it triggers, destroys
that group (``cleanup_dist_env_and_memory``), so the trainer's next collective (saving ``final/``) would fail.
"""

from __future__ import annotations

import gc
from typing import Any

_KEPT_ENGINES: list[Any] = []
"""Engines whose shutdown would destroy the launch's process group; the process ends with them."""


def release_colocated_engine(trainer) -> bool:
    """Free ``trainer``'s colocated vLLM engine and its KV cache (the trainer cannot generate with vLLM afterwards);
    returns whether there was one. A server-mode client or a trainer without vLLM is left as it is."""
    generation = getattr(trainer, "vllm_generation", None)
    llm = getattr(generation, "llm", None)
    if llm is None:
        return False
    generation.llm = None
    release_engine(llm)
    return True


def release_engine(llm) -> None:
    """Drop the references that keep a ``vllm.LLM``'s layers and KV cache alive (the layers' caches, the forward
    context, the runner's cache list), so that the engine's memory goes once its last owner lets go of it."""
    executor = getattr(getattr(llm, "llm_engine", None), "model_executor", None)
    runner = getattr(getattr(executor, "driver_worker", None), "model_runner", None)
    config = getattr(getattr(runner, "vllm_config", None), "compilation_config", None)
    context = getattr(config, "static_forward_context", None)
    if isinstance(context, dict):
        for layer in context.values():
            if hasattr(layer, "kv_cache"):
                layer.kv_cache = None
        context.clear()
    if runner is not None and hasattr(runner, "kv_caches"):
        runner.kv_caches = []
    if _shares_a_process_group():
        _KEPT_ENGINES.append(llm)
    del llm, executor, runner, config, context
    gc.collect()


def _shares_a_process_group() -> bool:
    """Whether this process is one of several in a torch process group (which a colocated engine shares)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
