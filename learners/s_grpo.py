r"""S-GRPO: GRPO on a stochastic subset of each completion's tokens (seed 002, Section 3.2), corrected ratio.

For a group of G completions :math:`y_i` of prompt :math:`x` with group-relative advantages :math:`\hat A_i`,
S-GRPO keeps a token subset :math:`S_i` of each completion in the loss:

* the first :math:`\alpha` completion tokens are always in :math:`S_i`;
* each later token enters independently with probability :math:`P`;
* selection stops once :math:`|S_i| = k` (``k`` counts all loss tokens, the first α included).

The objective, with the **corrected** ratio (referee report on seed 002, major comment 1):

.. math::
    J(\theta) = \frac{1}{G}\sum_i \frac{1}{|S_i|}\sum_{t\in S_i}
        \Big[\min\big(\rho_{i,t}\hat A_i,\ \operatorname{clip}(\rho_{i,t}, 1-\varepsilon, 1+\varepsilon)\hat A_i\big)
        - \beta\, \mathbb D_{KL,t}\Big],
    \qquad \rho_{i,t} = \frac{\pi_\theta(y_{i,t}\mid x, y_{i,<t})}{\pi_{\theta_{old}}(y_{i,t}\mid x, y_{i,<t})}.

What the paper printed wrong: its Eq. 5 writes the ratio as :math:`\pi_\theta/\pi_\theta` with "no grad", which is
identically 1, leaving only the KL penalty and no policy gradient. The ratio must use the frozen policy
:math:`\pi_{\theta_{old}}` that sampled the group, as in its Eq. 3. TRL implements exactly that: it stores
:math:`\log\pi_{\theta_{old}}` when the batch is reused (``num_iterations > 1``, or more optimiser steps than
generations), and otherwise uses ``per_token_logps.detach()``, which *is* :math:`\pi_{\theta_{old}}` at the only
update (value 1, gradient :math:`\nabla\log\pi_\theta`). :math:`\mathbb D_{KL}` is TRL's k3 estimator against the
reference model (``beta``; the seed uses 0.01).

Implementation (seams of :mod:`learners.base` only): the subset is drawn once per generation batch in
``shape_batch`` and stored as the loss mask (``tool_mask``), never by zeroing the attention mask; the base
trainer recounts ``num_items_in_batch`` from it. ``loss_type="grpo"`` (default here) averages over
:math:`S_i` per completion as above.

The masking alone saves no FLOPs: the forward and backward passes still run over every token (seed 001,
Figure 2(d)). ``truncate_after_last_selected=True`` is the compute-saving variant: through the base's seam-2
switch ``truncate_to_loss_tokens``, each micro-batch is sorted into buckets and cut after each bucket's last selected
token (:mod:`learners.prefix_batches`). Under causal attention the loss is unchanged; only the tokens after the last
selected one are no longer run.

Hyperparameters from the seed: α = 100 (SVAMP) / 50 (multiplication), k = 100, P not reported, β = 0.01,
lr 1e-4 (LoRA). Defaults here: α = 50, k = 100, P = 0.5, β = 0 (TRL's; set ``beta=0.01`` to match the seed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from .base import CountdownGRPOTrainer, Rollout

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


@dataclass
class SGRPOConfig(GRPOConfig):
    r"""``GRPOConfig`` plus S-GRPO's token selection (seed 002).

    Parameters:
        always_keep_tokens (`int`, defaults to 50): α, the leading completion tokens always in the loss.
        max_loss_tokens (`int`, defaults to 100): k, the most loss tokens per completion (α included).
        keep_probability (`float`, defaults to 0.5): P, the Bernoulli probability of each later token.
        truncate_after_last_selected (`bool`, defaults to False): run the forward/backward only up to each row's
            last selected token (bucketed); the loss is unchanged, the compute is not.
        max_buckets (`int`, defaults to 4): buckets per micro-batch for the truncating variant.
        loss_type (`str`, defaults to "grpo"): per-completion mean over the selected tokens, as in the seed.
    """

    always_keep_tokens: int = field(default=50, metadata={"help": "α: leading tokens always in the loss."})
    max_loss_tokens: int = field(default=100, metadata={"help": "k: most loss tokens per completion."})
    keep_probability: float = field(default=0.5, metadata={"help": "P: keep probability of each later token."})
    truncate_after_last_selected: bool = field(
        default=False, metadata={"help": "Cut the forward/backward after the last selected token."}
    )
    max_buckets: int = field(default=4, metadata={"help": "Buckets per micro-batch when truncating."})
    loss_type: str = field(default="grpo", metadata={"help": "TRL loss type; 'grpo' = per-completion mean."})

    def __post_init__(self):
        super().__post_init__()
        if self.always_keep_tokens < 0:
            raise ValueError(f"always_keep_tokens must be >= 0, got {self.always_keep_tokens}")
        if self.max_loss_tokens < 1:
            raise ValueError(f"max_loss_tokens must be >= 1, got {self.max_loss_tokens}")
        if not 0.0 <= self.keep_probability <= 1.0:
            raise ValueError(f"keep_probability must lie in [0, 1], got {self.keep_probability}")
        if self.max_buckets < 1:
            raise ValueError(f"max_buckets must be >= 1, got {self.max_buckets}")


class SGRPOTrainer(CountdownGRPOTrainer):
    """S-GRPO (seed 002) on the Countdown base trainer; see the module docstring for the objective.

    The changes w.r.t. GRPO: ``shape_batch`` draws the loss-token subset; with
    ``truncate_after_last_selected``, ``truncate_to_loss_tokens`` makes the base run the loss on bucketed prefixes.
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
        kept = self.accelerator.gather(torch.stack([self.loss_mask(batch).sum(), before.sum()]).float().unsqueeze(0))
        kept = kept.sum(dim=0)
        self.log_metric("s_grpo/loss_token_frac", (kept[0] / kept[1].clamp(min=1)).item(), rollout.mode)
        return batch

    def truncate_to_loss_tokens(self) -> bool:
        return self.args.truncate_after_last_selected
