"""The S-GRPO trainer: only its seam overrides; the equations are in the package docstring (:mod:`learners.s_grpo`)."""

from __future__ import annotations

import torch

from ..core.trainer import CountdownGRPOTrainer, Rollout
from .config import SGRPOConfig

__all__ = ["SGRPOConfig", "SGRPOTrainer", "s_grpo_token_mask"]


def s_grpo_token_mask(
    completion_mask: torch.Tensor,
    always_keep: int,
    max_tokens: int,
    keep_probability: float,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """S-GRPO's loss-token subset, a (B,T) 0/1 tensor of ``completion_mask``'s dtype.

    The first ``always_keep`` real tokens of each row (α), then each later real token with probability
    ``keep_probability`` (P), stopping at ``max_tokens`` (k) selected tokens per row. ``generator`` is a CPU
    generator for reproducible draws.
    """
    if always_keep < 0 or max_tokens < 1 or not (0.0 <= keep_probability <= 1.0):
        raise ValueError(
            f"need always_keep >= 0, max_tokens >= 1, 0 <= keep_probability <= 1; got "
            f"{always_keep}, {max_tokens}, {keep_probability}"
        )
    real = completion_mask != 0
    index = real.long().cumsum(dim=1) - 1  # position among the row's real tokens
    draws = torch.rand(completion_mask.shape, generator=generator).to(completion_mask.device)
    selected = real & ((index < always_keep) | (draws < keep_probability))
    selected &= selected.long().cumsum(dim=1) <= max_tokens
    return selected.to(completion_mask.dtype)


class SGRPOTrainer(CountdownGRPOTrainer):
    """S-GRPO (arXiv 2504.20834) on the Countdown base trainer; see the module docstring for the objective.

    The changes w.r.t. GRPO: ``shape_batch`` draws the loss-token subset; with
    ``truncate_after_last_selected``, ``truncate_to_loss_tokens`` makes the base run the loss on bucketed prefixes.

    Asynchronous rollouts: supported. The subset is drawn independently of the tokens, and the ratio's
    π_old is then the policy that sampled the group, older than the current one: TRL's truncated
    importance weight π/μ on the engine's recorded log-probabilities corrects the kept tokens' terms.
    """

    _tag_names = ["trl", "s-grpo", "countdown"]

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, SGRPOConfig, "s-grpo")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        self._selection_rng = torch.Generator().manual_seed(int(args.seed) + self.accelerator.process_index)

    def shape_batch(self, batch: dict, rollout: Rollout) -> dict:
        args = self.args
        selected = s_grpo_token_mask(
            batch["completion_mask"],
            args.always_keep_tokens,
            args.max_loss_tokens,
            args.keep_probability,
            generator=self._selection_rng,
        )
        before = self.loss_mask(batch)
        self.set_loss_mask(batch, before * selected)
        self.log_ratio_metrics({"s_grpo/loss_token_frac": (self.loss_mask(batch).sum(), before.sum())}, rollout.mode)
        return batch

    def truncate_to_loss_tokens(self) -> bool:
        return self.args.truncate_after_last_selected
