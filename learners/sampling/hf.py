"""Sampling with ``transformers`` ``generate`` (left padding, KV cache, ``batch_size`` rows per call)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .protocol import Sample, Sampling, budgets_of, cut, stop_ids_of


def warpers(sampling: Sampling) -> list:
    """The sampling warpers of ``sampling`` in ``generate``'s order (temperature, top-k, top-p, min-p). They are passed
    as custom processors, with ``generate``'s own warpers switched off, because ``generate`` runs custom processors
    *before* its warpers and the log-probability recorder must see the final distribution."""
    from transformers.generation.logits_process import (
        MinPLogitsWarper,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    if sampling.greedy:
        return []
    out: list = []
    if sampling.temperature != 1.0:
        out.append(TemperatureLogitsWarper(sampling.temperature))
    if sampling.top_k:
        out.append(TopKLogitsWarper(top_k=sampling.top_k))
    if sampling.top_p < 1.0:
        out.append(TopPLogitsWarper(top_p=sampling.top_p))
    if sampling.min_p:
        out.append(MinPLogitsWarper(min_p=sampling.min_p))
    return out


class _SampledLogprobs:
    """A logits processor placed after the sampling warpers (:func:`warpers`): at each step it keeps
    the log-softmax of the processed scores, and at the next step reads off the log-probability of the id that
    was sampled from them. Memory is one (B, V) row block, not ``output_scores``' (B, T, V)."""

    def __init__(self) -> None:
        self.previous = None
        self.steps: list = []

    def __call__(self, input_ids, scores):
        self.take(input_ids)
        self.previous = scores.float().log_softmax(dim=-1)
        return scores

    def take(self, input_ids) -> None:
        if self.previous is not None:
            self.steps.append(self.previous.gather(-1, input_ids[:, -1:]).squeeze(-1))
            self.previous = None


class HFSampler:
    """A :class:`~learners.sampling.protocol.Sampler` over a ``transformers`` causal LM.

    Args:
        model: the model (put in eval mode for the call, then restored).
        tokenizer: its tokenizer (pad id; the eos id(s) stop generation).
        stop_ids: more ids that end a sample.
        batch_size: rows per ``generate`` call (a prompt's ``n`` samples are ``n`` rows).
        device: where to run (default: the model's device).
        progress: a bar over rows (``None``: when stderr is a terminal).
    """

    name = "hf"

    def __init__(
        self,
        model,
        tokenizer,
        *,
        stop_ids: Iterable[int] = (),
        batch_size: int = 64,
        device: str | None = None,
        progress: bool | None = False,
    ) -> None:
        if device is not None:
            model.to(device)
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids = stop_ids_of(tokenizer, stop_ids)
        self.batch_size = int(batch_size)
        self.progress = progress

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: Sampling,
        *,
        n: int = 1,
        max_new_tokens: int | Sequence[int],
    ) -> list[list[Sample]]:
        import torch
        from transformers import LogitsProcessorList

        from countdown_env.helpers.progress import progress_bar

        budgets = budgets_of(max_new_tokens, len(prompts), n)
        rows = [(list(p), b) for p, b in zip(prompts, budgets, strict=True) for _ in range(n)]
        model = self.model
        device = next(model.parameters()).device
        pad = self.tokenizer.pad_token_id
        settings = (
            dict(do_sample=False) if sampling.greedy else dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
        )
        if sampling.repetition_penalty != 1.0:
            settings["repetition_penalty"] = sampling.repetition_penalty
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)
        was_training = model.training
        model.eval()
        samples: list[Sample] = []
        bar = progress_bar(len(rows), "sampling", self.progress, unit="completion", leave=False)
        try:
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                width = max(len(p) for p, _ in chunk)
                ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for i, (p, _) in enumerate(chunk):
                    ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
                    mask[i, width - len(p) :] = 1
                recorder = _SampledLogprobs()
                processors = LogitsProcessorList([*warpers(sampling), recorder])
                with torch.no_grad():
                    out = model.generate(
                        input_ids=ids.to(device),
                        attention_mask=mask.to(device),
                        max_new_tokens=max(b for _, b in chunk),
                        eos_token_id=list(self.stop_ids) or None,
                        pad_token_id=pad,
                        logits_processor=processors,
                        **settings,
                    )
                recorder.take(out)
                new = out[:, width:].cpu()
                logps = (
                    torch.stack(recorder.steps, dim=1).cpu()
                    if recorder.steps
                    else torch.zeros_like(new, dtype=torch.float)
                )
                for i, (_, budget) in enumerate(chunk):
                    samples.append(cut(new[i].tolist(), logps[i].tolist(), budget, self.stop_ids))
                bar.update(len(chunk))
        finally:
            bar.close()
            model.train(was_training)
        return [samples[i * n : (i + 1) * n] for i in range(len(prompts))]
