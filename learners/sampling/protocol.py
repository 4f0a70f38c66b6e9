"""The sampler protocol: token-id prompts in, sampled token ids and their sampling log-probabilities out.

A sampler is an engine (a model and its stop rule) that draws continuations of token-id prompts under per-call
:class:`Sampling` settings. ``sample(prompts, sampling, n=, max_new_tokens=)`` returns, per prompt, ``n``
:class:`Sample` s: the generated ids, cut after the first stop id (kept) and at the prompt's budget, and the
log-probability of each id **under the distribution actually sampled** (after temperature, top-k, top-p, min-p;
TRL's and vLLM's ``logprobs_mode="processed_logprobs"``). Under greedy decoding (``temperature == 0``) the
log-probabilities are those of the unscaled distribution.

The backends: :class:`~learners.sampling.hf.HFSampler` (``transformers`` ``generate``),
:class:`~learners.sampling.vllm_engine.VLLMSampler` (a ``vllm.LLM``: an engine of its own or a trainer's colocated
one) and :class:`~learners.sampling.vllm_server.VLLMServerSampler` (TRL's ``VLLMClient`` to ``trl vllm-serve``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Sampling:
    """Per-call sampling settings.

    Attributes:
        temperature: softmax temperature; 0 means greedy decoding.
        top_p: nucleus mass (1.0: off).
        top_k: keep the k most likely tokens (0: off).
        min_p: drop tokens below ``min_p`` times the top probability (0.0: off).
        repetition_penalty: CTRL-style penalty on tokens already present (1.0: off).
        seed: the call's seed (HF: ``torch.manual_seed``; vLLM on a GPU: per request. The CPU build of vLLM cannot
            seed a request, so there the engine's own seed, set when it is built, makes runs repeatable).
            ``None``: no reseeding, the random streams go on (inside training, where a fixed seed per call would
            repeat the same draws every step).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: off), got {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def vllm_kwargs(self) -> dict:
        """The distribution settings as vLLM's ``SamplingParams`` (and TRL's ``VLLMClient.generate``) name them."""
        return dict(
            temperature=float(self.temperature),
            top_p=float(self.top_p),
            top_k=int(self.top_k),
            min_p=float(self.min_p),
            repetition_penalty=float(self.repetition_penalty),
        )


@dataclass
class Sample:
    """One sampled continuation: its ids and the sampling log-probability of each (same length)."""

    ids: list[int]
    logprobs: list[float] = field(default_factory=list)


@runtime_checkable
class Sampler(Protocol):
    """What eval, env rollouts, T-SPMO replay and the warm-start measurement draw completions from."""

    name: str
    stop_ids: tuple[int, ...]

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: Sampling,
        *,
        n: int = 1,
        max_new_tokens: int | Sequence[int],
    ) -> list[list[Sample]]:
        """``n`` samples per prompt; ``max_new_tokens`` is one budget or one per prompt."""
        ...


def budgets_of(max_new_tokens: int | Sequence[int], count: int, n: int = 1) -> list[int]:
    """One budget per prompt (a single int is repeated); every budget and ``n`` (samples per prompt) must be >= 1."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    budgets = [int(max_new_tokens)] * count if isinstance(max_new_tokens, int) else [int(b) for b in max_new_tokens]
    if len(budgets) != count:
        raise ValueError(f"{len(budgets)} budgets for {count} prompts")
    if any(b < 1 for b in budgets):
        raise ValueError(f"every max_new_tokens must be >= 1, got {min(budgets)}")
    return budgets


def stop_ids_of(tokenizer, extra: Iterable[int] = ()) -> tuple[int, ...]:
    """The tokenizer's eos id(s) plus ``extra``, sorted and distinct."""
    eos = getattr(tokenizer, "eos_token_id", None)
    eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    return tuple(sorted({int(t) for t in (*eos, *extra)}))


def cut(ids: Sequence[int], logprobs: Sequence[float], budget: int, stop_ids: Iterable[int]) -> Sample:
    """The sample kept of a raw continuation: at most ``budget`` ids, ending at the first stop id (kept)."""
    ids, logprobs = list(ids)[:budget], list(logprobs)[:budget]
    stops = set(stop_ids)
    end = next((i + 1 for i, t in enumerate(ids) if t in stops), len(ids))
    logprobs = [float(x) for x in logprobs[:end]]
    return Sample(ids[:end], logprobs + [0.0] * (end - len(logprobs)))
