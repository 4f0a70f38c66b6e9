"""The PS-PPO trainer: only its seam overrides; the equations are in the package docstring (:mod:`learners.ps_ppo`)."""

from __future__ import annotations

import numpy as np
import torch

from ..core.prefix_batches import kept_lengths
from ..core.trainer import CountdownGRPOTrainer, Rollout
from .config import _MASK_WEIGHTED, PSPPOConfig
from .design_weights import design_weights, head_statistics, reward_uncertainty_bound, strategy_weights
from .survival import sample_cutoff_weights, survival_floor, survival_probabilities

__all__ = ["PSPPOTrainer"]


class PSPPOTrainer(CountdownGRPOTrainer):
    """PS-PPO (PS-PPO paper) on the Countdown base trainer; see the module docstring for the equations.

    The changes w.r.t. GRPO: ``shape_batch`` computes the survival function ξ of every prompt (stored per row as
    ``cutoff_survival``); ``select_loss_tokens`` draws the cutoffs and sets the 1/ξ weights;
    ``truncate_to_loss_tokens`` makes the base run TRL's loss on the kept prefixes only.

    Asynchronous rollouts: supported. The cutoffs H are drawn independently of the sampled tokens whichever policy
    sampled them, so the 1/ξ weighting stays unbiased, and TRL's truncated importance weight π/μ (the engine's
    recorded log-probabilities) corrects each kept token's term for the staleness.
    """

    _tag_names = ["trl", "ps-ppo", "countdown"]

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, PSPPOConfig, "ps-ppo")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        self._cutoff_rng = torch.Generator().manual_seed(int(args.seed) + 7919 * self.accelerator.process_index)

    # ------------------------------------------------------------------ seam 1: the survival function
    def shape_batch(self, batch: dict, rollout: Rollout) -> dict:
        args = self.args
        completion_mask = batch["completion_mask"]
        width = completion_mask.size(1)
        local_lengths = kept_lengths(completion_mask)
        lengths = self.gather_rows(local_lengths).cpu()
        k = rollout.num_generations
        group_max = lengths.view(-1, k).amax(dim=1)
        group_lengths = group_max.tolist()

        proxy_weights = None
        # success is correctness (the verifier's verdict, learners.core.verdicts), whatever the reward functions pay;
        # the reward threshold only binarises rows without a puzzle (no verdict)
        unverified = torch.nan_to_num(rollout.rewards, nan=-torch.inf) >= args.success_threshold
        success = rollout.successes(fallback=unverified)
        # γ̄ ≡ 0 in a group whose rollouts all succeed or all fail: its weights vanish whatever the proxy. A group
        # within the budget is not truncated. Only the remaining groups need the proxy pass.
        mixed = success.view(-1, k).any(dim=1) & ~success.view(-1, k).all(dim=1)
        proxied = mixed.cpu() & (group_max > args.budget)
        needs_proxies = args.cutoff_strategy in ("optimized", "heuristic")
        if needs_proxies and proxied.any():
            rows_needed = rollout.local(proxied.repeat_interleave(k)).to(completion_mask.device) & (local_lengths > 0)
            index = rows_needed.nonzero().squeeze(1)
            model = self.accelerator.unwrap_model(self.model)
            stats = head_statistics(
                model,
                batch["prompt_ids"][index],
                batch["prompt_mask"][index],
                batch["completion_ids"][index],
                completion_mask[index],
                temperature=self.temperature,
                top_k=args.uncertainty_top_k,
                batch_size=args.proxy_batch_size,
            )
            # Rows of the other groups were not run: zeros, so their weights are 0 (homogeneous: as γ̄ = 0 would).
            full = [torch.zeros(completion_mask.size(0), *x.shape[1:], dtype=x.dtype, device=x.device) for x in stats]
            for target, values in zip(full, stats, strict=True):
                target[index] = values
            proxy, top_probs, top_ids = (self.gather_rows(x) for x in full)
            alive = torch.arange(proxy.size(1), device=proxy.device).unsqueeze(0) < lengths.to(proxy.device)[:, None]
            uncertainty = reward_uncertainty_bound(top_probs, top_ids, success.to(proxy.device), alive.float(), k)
            proxy_weights = design_weights(proxy, uncertainty, alive.float(), k).double().cpu().numpy()

        survival = np.ones((len(group_lengths), max(max(group_lengths), 1)))
        floors = np.zeros(len(group_lengths))  # 0: a group within the budget has no floor (ξ ≡ 1)
        for g, length in enumerate(group_lengths):
            if length <= args.budget:
                continue
            if needs_proxies and proxy_weights is None:
                w = np.zeros(length)  # no group is mixed: γ̄ = 0 everywhere
            else:
                w = strategy_weights(args.cutoff_strategy, length, None if proxy_weights is None else proxy_weights[g])
            floors[g] = survival_floor(args.budget, length, args.min_survival, args.first_token_always)
            survival[g, :length] = survival_probabilities(
                w, args.budget, floor=floors[g], first_token_always=args.first_token_always
            )
        rows = torch.as_tensor(survival, dtype=torch.float32).repeat_interleave(k, dim=0)
        rows = rollout.local(rows)
        local = torch.ones(rows.size(0), width)
        local[:, : min(width, rows.size(1))] = rows[:, :width]
        batch["cutoff_survival"] = local.to(completion_mask.device)

        valid = torch.arange(width).unsqueeze(0) < local_lengths.cpu().unsqueeze(1)
        # tokens at the floor ε, where a kept token weighs 1/ε (1000 at the default): their share of the tokens
        # that carry gradient (rows with a non-zero advantage), the heavy tail of the estimator
        floor = rollout.local(torch.as_tensor(floors, dtype=torch.float32).repeat_interleave(k))
        advantages = batch["advantages"].cpu()
        carrying = valid & ((advantages != 0) if advantages.dim() == 1 else (advantages != 0).any(dim=1))[:, None]
        at_floor = carrying & (local <= floor[:, None] * (1 + 1e-5))
        self.log_ratio_metrics(
            {
                "ps_ppo/expected_kept_frac": ((local * valid).sum(), valid.sum()),
                "ps_ppo/floor_token_frac": (at_floor.sum(), carrying.sum()),
            },
            rollout.mode,
        )
        return batch

    # ------------------------------------------------------------------ seam 2: cutoffs and 1/ξ weights
    def select_loss_tokens(self, inputs: dict) -> dict:
        args = self.args
        inputs = dict(inputs)  # TRL reuses the buffered batch across iterations: never mutate it
        survival = inputs.pop("cutoff_survival")
        loss_mask = self.loss_mask(inputs).to(torch.float32)
        weights = sample_cutoff_weights(survival, kept_lengths(inputs["completion_mask"]), self._cutoff_rng)
        # engagement of the survival design alone (before zero-advantage skipping): kept share and mean cutoff
        drawn = (weights > 0).to(torch.float32) * loss_mask
        kept, total, rows = torch.stack([drawn.sum(), loss_mask.sum(), (loss_mask.sum(dim=1) > 0).sum()]).tolist()
        self.log_metric("ps_ppo/cutoff_kept_frac", kept / max(total, 1.0))
        self.log_metric("ps_ppo/mean_cutoff_tokens", kept / max(rows, 1.0))
        advantages = inputs["advantages"]
        if args.skip_zero_advantage and self.beta == 0.0:
            zero = (advantages == 0) if advantages.dim() == 1 else (advantages == 0).all(dim=1)
            weights = weights * (~zero).unsqueeze(1)
        keep = (weights > 0).to(torch.float32) * loss_mask

        if self.loss_type in _MASK_WEIGHTED:
            inputs["tool_mask"] = loss_mask * weights
        else:
            inputs["tool_mask"] = keep
            if self.loss_type == "bnpo":
                scale = keep.sum() / loss_mask.sum().clamp(min=1.0)
            else:
                scale = keep.sum(dim=1, keepdim=True) / loss_mask.sum(dim=1, keepdim=True).clamp(min=1.0)
            per_token = advantages if advantages.dim() == 2 else advantages.unsqueeze(1)
            inputs["advantages"] = per_token * weights * scale
        self.log_metric("ps_ppo/kept_token_frac", keep.sum().item() / max(loss_mask.sum().item(), 1.0))
        return inputs

    def truncate_to_loss_tokens(self) -> bool:
        return True
