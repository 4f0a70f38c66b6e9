r"""PS-PPO: prefix-sampling PPO with unbiased, budgeted random truncation (seed 001).

Estimator (Section 3.2, Appendix B). Every completion :math:`i` gets a random cutoff :math:`H_i` with survival
function :math:`\xi_t = P(H \ge t)`, resampled at every update; only tokens :math:`t \le H_i` are run forward and
backward, and each kept token's loss is weighted by :math:`1/\xi_t`:

.. math::
    \hat g = \sum_i \sum_{t \le H_i} \frac{\ell_{i,t}}{\xi_t}
    = \sum_i \sum_t \frac{\mathbb 1[H_i \ge t]}{\xi_t}\,\ell_{i,t},
    \qquad \mathbb E_H[\hat g] = \sum_i\sum_t \ell_{i,t},

where :math:`\ell_{i,t}` is TRL's per-token clipped PPO term (clip :math:`\varepsilon = 0.1`, Appendix I) of
completion :math:`i` at step :math:`t`, already divided by its loss-type normaliser. The estimator is unbiased for
any :math:`\xi > 0` as long as :math:`H` is drawn independently of the sampled tokens given the batch statistics,
which holds here (ξ comes from the group's rollouts, H from a separate generator).

Normaliser (how unbiasedness survives TRL's loss types). The normaliser must stay the *untruncated* token count:

* ``dapo`` (default), ``cispo``: TRL divides by ``num_items_in_batch``, counted at generation time over full
  completions; the learner never changes it (the cutoff is applied per micro-batch, after the recount), and the
  weights :math:`\mathbb 1[t\le H]/\xi_t` go into the loss mask (``tool_mask``). ``dr_grpo`` (constant
  normaliser) and ``luspo`` (per-row sums) are handled the same way. The KL term (``beta``) is weighted too, so the
  whole loss is unbiased.
* ``grpo``, ``sapo`` (per-completion mean) and ``bnpo`` (micro-batch token mean) divide by the loss-mask sum,
  which a weighted mask would turn into a biased ratio estimator. There the mask stays 0/1 and the weight moves
  into per-token advantages, :math:`A_{i,t} = A_i\,\frac{1}{\xi_t}\,\frac{K_i}{L_i}` (``grpo``/``sapo``, with
  :math:`K_i` kept and :math:`L_i` full tokens of row *i*) or :math:`A_i\frac{1}{\xi_t}\frac{\sum K}{\sum L}`
  (``bnpo``): these losses are positively homogeneous in :math:`A`, so :math:`\ell'_{i,t}/K_i =
  \ell_{i,t}/(\xi_t L_i)`. The KL term is not, so these loss types require ``beta = 0``.

Options that look at whole sequences (``importance_sampling_level="sequence"``, ``top_entropy_quantile < 1``,
``off_policy_mask_threshold``, ``entropy_coef``) and ``loss_type="vespo"`` would turn the truncated sum into a
different estimator and are rejected with a clear error.

Survival design (Section 3.3, Algorithm 1 lines 7-9): per prompt :math:`x`,

.. math::
    \min_\xi \sum_t \frac{w_t(x)}{\xi_t}\ \ \text{s.t.}\ \ \sum_t \xi_t = B,\ 1 \ge \xi_1 \ge \dots \ge \xi_T > 0,
    \qquad w_t(x) = \bar\gamma_t(x)\,\bar u_t(x),

solved exactly by :func:`learners.survival.survival_probabilities` (√-allocation, PAV, saturation), with the
forward-only weights of :mod:`learners.cutoff_weights` (score-norm proxy :math:`\bar u`, reward-uncertainty bound
:math:`\bar\gamma`, top-k 16) computed in one no-grad pass of the sampling policy over the group's rollouts.
:math:`T` is the group's longest completion. ``first_token_always`` fixes :math:`\xi_1 = 1` (Section 3.2).

Cutoff strategies (the seed's ablation, Figure 3). The seed names them; its formulas did not survive, so these
are this package's definitions, each a weight vector fed to the same solver at the same budget:

* ``optimized`` (default): :math:`w_t = \bar\gamma_t\bar u_t` — Algorithm 1.
* ``uniform``: :math:`w_t = (T - t + 1)^2`, i.e. a linear survival function; at :math:`B = (T+1)/2` it is
  exactly :math:`H \sim \mathcal U\{1..T\}`, the seed's matched-budget setting (T = 256, B = 128).
* ``time_prior``: :math:`w_t = 1/t` (:math:`\xi_t \propto t^{-1/2}`), a fixed preference for early tokens.
* ``heuristic``: the same proxies as ``optimized`` but linear instead of √ allocation (:math:`\xi_t \propto w_t`,
  solver on :math:`w_t^2`) — the "intuitive" allocation the seed's numeric comparison contrasts with √.

Compute: ``truncate_to_loss_tokens`` is on, so the base trainer splits the micro-batch into length buckets cut
after each row's last kept token (:mod:`learners.prefix_batches`) and the forward and backward really shrink.
Rows whose advantage is exactly 0 contribute no gradient when ``beta = 0`` and are skipped
(``skip_zero_advantage``). Defaults from Appendix I: budget B = 128, top-k 16, clip 0.1 (and K = 8 generations,
per-device batch 16 in the paper; set those in the config).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from trl import GRPOConfig

from .base import CountdownGRPOTrainer, Rollout
from .cutoff_weights import design_weights, head_statistics, reward_uncertainty_bound
from .prefix_batches import kept_lengths
from .survival import survival_probabilities

__all__ = ["CUTOFF_STRATEGIES", "PSPPOConfig", "PSPPOTrainer", "strategy_weights", "sample_cutoff_weights"]

CUTOFF_STRATEGIES = ("optimized", "uniform", "time_prior", "heuristic")
_MASK_WEIGHTED = {"dapo", "cispo", "dr_grpo", "luspo"}
_ADVANTAGE_WEIGHTED = {"grpo", "sapo", "bnpo"}


@dataclass
class PSPPOConfig(GRPOConfig):
    r"""``GRPOConfig`` plus PS-PPO's cutoff design (seed 001, Appendix I defaults).

    Parameters:
        budget (`float`, defaults to 128): B, the expected number of kept tokens per completion, E[H].
        cutoff_strategy (`str`, defaults to "optimized"): one of "optimized", "uniform", "time_prior",
            "heuristic" (see the module docstring).
        uncertainty_top_k (`int`, defaults to 16): top-k of the next-token distributions in the uncertainty bound.
        min_survival (`float`, defaults to 1e-3): floor ε on ξ (lowered automatically to B/(2T), or
            (B−1)/(2(T−1)) with ``first_token_always``, for very long completions so that the budget stays feasible).
        first_token_always (`bool`, defaults to True): ξ_1 = 1, every completion keeps its first token.
        success_threshold (`float`, defaults to 1.0): a rollout with reward ≥ this counts as a success in the
            uncertainty bound (Countdown's correct answer scores 1).
        proxy_batch_size (`int`, defaults to 8): rows per forward in the no-grad proxy pass.
        max_buckets (`int`, defaults to 4): length buckets per micro-batch.
        skip_zero_advantage (`bool`, defaults to True): skip rows with zero advantage when beta = 0.
        epsilon (`float`, defaults to 0.1): PPO clip range (Appendix I).
    """

    budget: float = field(default=128.0, metadata={"help": "B: expected kept tokens per completion."})
    cutoff_strategy: str = field(default="optimized", metadata={"help": f"One of {CUTOFF_STRATEGIES}."})
    uncertainty_top_k: int = field(default=16, metadata={"help": "Top-k in the reward-uncertainty bound."})
    min_survival: float = field(default=1e-3, metadata={"help": "Floor on the survival probabilities."})
    first_token_always: bool = field(default=True, metadata={"help": "Fix xi_1 = 1."})
    success_threshold: float = field(default=1.0, metadata={"help": "Reward counted as success."})
    proxy_batch_size: int = field(default=8, metadata={"help": "Rows per forward of the proxy pass."})
    max_buckets: int = field(default=4, metadata={"help": "Length buckets per micro-batch."})
    skip_zero_advantage: bool = field(default=True, metadata={"help": "Skip zero-advantage rows if beta = 0."})
    epsilon: float = field(default=0.1, metadata={"help": "PPO clip range (seed 001, Appendix I)."})
    loss_type: str = field(default="dapo", metadata={"help": "TRL loss type (dapo keeps the full normaliser)."})

    def __post_init__(self):
        super().__post_init__()
        if not (np.isfinite(self.budget) and self.budget >= 1):
            raise ValueError(f"budget must be a finite number >= 1, got {self.budget}")
        if self.first_token_always and self.budget <= 1:
            raise ValueError(f"first_token_always spends 1 of the budget on ξ_1: budget must be > 1, got {self.budget}")
        if self.cutoff_strategy not in CUTOFF_STRATEGIES:
            raise ValueError(f"cutoff_strategy must be one of {CUTOFF_STRATEGIES}, got {self.cutoff_strategy!r}")
        if self.uncertainty_top_k < 1 or self.proxy_batch_size < 1 or self.max_buckets < 1:
            raise ValueError("uncertainty_top_k, proxy_batch_size and max_buckets must be >= 1")
        if not 0.0 < self.min_survival < 1.0:
            raise ValueError(f"min_survival must lie in (0, 1), got {self.min_survival}")
        if self.loss_type not in _MASK_WEIGHTED | _ADVANTAGE_WEIGHTED:
            raise ValueError(
                f"PS-PPO supports loss_type in {sorted(_MASK_WEIGHTED | _ADVANTAGE_WEIGHTED)}, got {self.loss_type!r}"
            )
        if self.loss_type in _ADVANTAGE_WEIGHTED and self.beta != 0.0:
            raise ValueError(
                f"loss_type={self.loss_type!r} normalises by the kept-token count, so the KL term cannot be "
                "reweighted without bias: use beta=0, or loss_type='dapo' (full-count normaliser) with beta"
            )
        sequence_level = {
            "importance_sampling_level='sequence'": self.importance_sampling_level != "token",
            "top_entropy_quantile < 1": self.top_entropy_quantile < 1.0,
            "off_policy_mask_threshold": self.off_policy_mask_threshold is not None,
            "entropy_coef != 0": bool(getattr(self, "entropy_coef", 0.0)),
        }
        rejected = [name for name, on in sequence_level.items() if on]
        if rejected:
            raise ValueError(f"PS-PPO's truncated estimator is unbiased only for token-level losses; unset {rejected}")


def strategy_weights(strategy: str, length: int, proxy_weights: np.ndarray | None = None) -> np.ndarray:
    """The weight vector fed to the survival solver for ``strategy`` over ``length`` steps."""
    t = np.arange(1, length + 1, dtype=np.float64)
    if strategy == "uniform":
        return (length - t + 1.0) ** 2
    if strategy == "time_prior":
        return 1.0 / t
    if proxy_weights is None:
        raise ValueError(f"strategy {strategy!r} needs the proxy design weights")
    w = np.asarray(proxy_weights[:length], dtype=np.float64)
    if strategy == "optimized":
        return w
    if strategy == "heuristic":
        return w**2
    raise ValueError(f"unknown cutoff strategy {strategy!r}; choose one of {CUTOFF_STRATEGIES}")


def sample_cutoff_weights(
    survival: torch.Tensor, lengths: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Draw ``H_i`` from each row's survival function and return the (B,T) weights ``1[t ≤ H_i]/ξ_t``.

    ``survival`` is (B,T), non-increasing over each row's first ``lengths[i]`` columns; columns at or after
    ``lengths[i]`` get weight 0. ``P(H ≥ t) = P(U ≤ ξ_t) = ξ_t`` with one uniform ``U`` per row.
    """
    rows, width = survival.shape
    u = torch.rand(rows, 1, generator=generator).to(survival.device)
    valid = torch.arange(width, device=survival.device).unsqueeze(0) < lengths.to(survival.device).unsqueeze(1)
    keep = (survival >= u) & valid
    return torch.where(keep, 1.0 / survival.clamp(min=1e-30), torch.zeros_like(survival))


class PSPPOTrainer(CountdownGRPOTrainer):
    """PS-PPO (seed 001) on the Countdown base trainer; see the module docstring for the equations.

    The changes w.r.t. GRPO: ``shape_batch`` computes the survival function ξ of every prompt (stored per row as
    ``cutoff_survival``); ``select_loss_tokens`` draws the cutoffs and sets the 1/ξ weights;
    ``truncate_to_loss_tokens`` makes the base run TRL's loss on the kept prefixes only.
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
        success = torch.nan_to_num(rollout.rewards, nan=-torch.inf) >= args.success_threshold
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
        for g, length in enumerate(group_lengths):
            if length <= args.budget:
                continue
            if needs_proxies and proxy_weights is None:
                w = np.zeros(length)  # no group is mixed: γ̄ = 0 everywhere
            else:
                w = strategy_weights(args.cutoff_strategy, length, None if proxy_weights is None else proxy_weights[g])
            # Half the mean survival of the steps the solver spreads its budget over keeps the floor feasible.
            spread, steps = (args.budget - 1, length - 1) if args.first_token_always else (args.budget, length)
            floor = min(args.min_survival, 0.5 * spread / steps)
            survival[g, :length] = survival_probabilities(
                w, args.budget, floor=floor, first_token_always=args.first_token_always
            )
        rows = torch.as_tensor(survival, dtype=torch.float32).repeat_interleave(k, dim=0)
        rows = rollout.local(rows)
        local = torch.ones(rows.size(0), width)
        local[:, : min(width, rows.size(1))] = rows[:, :width]
        batch["cutoff_survival"] = local.to(completion_mask.device)

        valid = torch.arange(width).unsqueeze(0) < local_lengths.cpu().unsqueeze(1)
        stats = torch.stack([(local * valid).sum(), valid.sum().float()]).to(completion_mask.device)
        totals = self.accelerator.gather(stats.unsqueeze(0)).sum(dim=0)
        self.log_metric("ps_ppo/expected_kept_frac", (totals[0] / totals[1].clamp(min=1)).item(), rollout.mode)
        return batch

    # ------------------------------------------------------------------ seam 2: cutoffs and 1/ξ weights
    def select_loss_tokens(self, inputs: dict) -> dict:
        args = self.args
        inputs = dict(inputs)  # TRL reuses the buffered batch across iterations: never mutate it
        survival = inputs.pop("cutoff_survival")
        loss_mask = self.loss_mask(inputs).to(torch.float32)
        weights = sample_cutoff_weights(survival, kept_lengths(inputs["completion_mask"]), self._cutoff_rng)
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
