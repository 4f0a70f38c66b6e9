"""Sampling through a vLLM server with TRL's ``VLLMClient`` (``trl vllm-serve`` or ``vllm serve``).

The client posts to the server's OpenAI-compatible ``/v1/completions`` with token-id prompts. Start the server with
``--logprobs-mode processed_logprobs`` (``trl vllm-serve`` does) for sampling log-probabilities. No per-request
seed is sent (the CPU build of vLLM refuses one): the server's ``--seed`` makes a fresh server repeatable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .protocol import Sample, Sampling, budgets_of, cut, stop_ids_of


class VLLMServerSampler:
    """A :class:`~learners.sampling.protocol.Sampler` over a ``trl.generation.vllm_client.VLLMClient``.

    One request per distinct budget (the client's ``max_tokens`` is per request); ``stop_token_ids`` travels in
    ``generation_kwargs``.
    """

    name = "vllm-server"

    def __init__(self, client, *, stop_ids: Iterable[int] = (), tokenizer=None) -> None:
        self.client = client
        self.stop_ids = stop_ids_of(tokenizer, stop_ids)

    @classmethod
    def connect(cls, base_url: str, tokenizer, *, timeout: float = 60.0) -> VLLMServerSampler:
        """A sampler on the server at ``base_url`` (e.g. ``http://127.0.0.1:8000``), waiting up to ``timeout`` s."""
        from learners.core.trl_vllm_import import load_trl_vllm

        load_trl_vllm()  # the client's module as TRL wrote it, with vLLM (core/trl_vllm_import.py)
        from trl.generation.vllm_client import VLLMClient

        return cls(VLLMClient(base_url=base_url, connection_timeout=timeout), tokenizer=tokenizer)

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: Sampling,
        *,
        n: int = 1,
        max_new_tokens: int | Sequence[int],
    ) -> list[list[Sample]]:
        budgets = budgets_of(max_new_tokens, len(prompts), n)
        out: list[list[Sample]] = [[] for _ in prompts]
        for budget in sorted(set(budgets)):
            which = [i for i, b in enumerate(budgets) if b == budget]
            result = self.client.generate(
                prompts=[[int(t) for t in prompts[i]] for i in which],
                n=n,
                **sampling.vllm_kwargs(),
                max_tokens=int(budget),
                logprobs=0,
                generation_kwargs={"stop_token_ids": list(self.stop_ids)},
            )
            ids, logps = result["completion_ids"], result["logprobs"]  # prompt-major: n per prompt
            for j, i in enumerate(which):
                for k in range(j * n, (j + 1) * n):
                    steps = [float(lp[0]) if lp and lp[0] is not None else 0.0 for lp in logps[k]]
                    out[i].append(cut(ids[k], steps, budget, self.stop_ids))
        return out
