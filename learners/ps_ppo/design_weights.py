r"""PS-PPO's forward-only design weights ``w_t(x) = γ̄_t(x) · ū_t(x)`` (PS-PPO paper, Section 3.3, Appendices D-E),
and the weights of the ablation strategies (:func:`strategy_weights`).

Score-norm proxy (Appendix D). For a softmax head ``z = W h``, the score of the sampled token ``y`` with respect
to ``W`` is ``∇_W log p(y) = (e_y − p) hᵀ``, so

    ‖∇_W log p(y_t)‖²_F = ‖h_t‖² · (1 − 2 p(y_t) + Σ_v p_v²),

a lower bound on the full-parameter score norm that needs no backward pass. ``Σ_v p_v²`` is computed as
``exp(logsumexp(2z) − 2·logsumexp(z))``. ``h_t`` is the *input of the output head* (captured with a forward hook),
whatever the model's ``hidden_states`` convention (final norm, soft-capping, tied embeddings). Logits are divided
by the sampling temperature first, as TRL does for its log-probabilities; the resulting uniform ``1/τ²`` factor
does not change the optimal ``ξ`` and is left out.

Reward-uncertainty bound (Appendix E). With binary reward ``R`` and prefix state ``s_t``,
``Var(R | s) ≤ min(p, 1 − p)`` where ``p = P(R = 1 | s)``. Writing ``r̄`` for the group's success rate and
``d_±`` for the state distributions of successful and failed rollouts,
``E_s min(p, 1 − p) = Σ_s min(r̄ d_+(s), (1 − r̄) d_−(s)) = ½ (1 − ‖r̄ d_+ − (1 − r̄) d_−‖₁)``, and pushing both
through the old policy's next-token kernel can only shrink the L1 distance, so

    E[Var(R | s_t)] ≤ γ̄_t = ½ (1 − ‖r̄ π̄_+,t − (1 − r̄) π̄_−,t‖₁) = ½ (1 − (1/K)‖Σ_{i∈+} π_{i,t} − Σ_{i∈−} π_{i,t}‖₁),

with ``π_{i,t}`` the old policy's next-token distribution at step ``t`` of rollout ``i`` and ``K`` the group size.
The seed approximates each ``π_{i,t}`` by its top-k entries (k = 16, Appendix I); here they are renormalised so
that a group whose rollouts all succeed (or all fail) gets ``γ̄ = 0`` exactly. A rollout that has already ended at
step ``t`` is in a terminal state, which determines ``R``: its "next token" is a virtual end symbol, one for
successes and one for failures (a function of the state, so the bound still holds).

Score-norm aggregation: ``ū_t(x) = (1/K) Σ_i u_{i,t}`` over the rollouts of the prompt that are still running at
``t`` (ended rollouts contribute no gradient), and ``w_t(x) = γ̄_t(x) · ū_t(x)`` (Algorithm 1, line 8).
"""

from __future__ import annotations

import numpy as np
import torch

from .config import CUTOFF_STRATEGIES

__all__ = [
    "score_norm_proxy",
    "head_statistics",
    "reward_uncertainty_bound",
    "design_weights",
    "strategy_weights",
]


def score_norm_proxy(hidden: torch.Tensor, logits: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    """Output-head score norm ``‖h_t‖²·(1 − 2p(y_t) + Σ_v p_v²)`` per token, in float32 (float64 kept).

    Args:
        hidden: (..., d) inputs of the output head at the positions that predict ``token_ids``.
        logits: (..., V) logits at the same positions (already divided by the temperature).
        token_ids: (...) the sampled tokens.
    """
    if hidden.shape[:-1] != logits.shape[:-1] or token_ids.shape != logits.shape[:-1]:
        raise ValueError(
            f"shape mismatch: hidden {tuple(hidden.shape)}, logits {tuple(logits.shape)}, "
            f"token_ids {tuple(token_ids.shape)}"
        )
    dtype = torch.promote_types(logits.dtype, torch.float32)
    z = logits.to(dtype)
    log_partition = torch.logsumexp(z, dim=-1)
    sum_p_squared = torch.exp(torch.logsumexp(2.0 * z, dim=-1) - 2.0 * log_partition)
    p_token = torch.exp(z.gather(-1, token_ids.long().unsqueeze(-1)).squeeze(-1) - log_partition)
    return hidden.to(dtype).pow(2).sum(-1) * (1.0 - 2.0 * p_token + sum_p_squared)


@torch.no_grad()
def head_statistics(
    model: torch.nn.Module,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int = 16,
    batch_size: int = 8,
    max_logit_elements: int = 2**28,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward-only pass over the completions: score-norm proxy and top-k next-token distributions.

    Returns ``(proxy (N,T) float32, topk_probs (N,T,k) float32 renormalised, topk_ids (N,T,k) int64)``;
    positions where ``completion_mask`` is 0 hold zeros. Rows are processed at most ``batch_size`` at a time,
    fewer when ``rows × T × V`` would exceed ``max_logit_elements`` (long completions, large vocabularies), and the
    float32 statistics are taken over chunks of positions, so the logits never exist for the whole batch.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    head = model.get_output_embeddings()
    if head is None:
        raise ValueError(f"{type(model).__name__} has no output embeddings (get_output_embeddings() is None)")
    n, width = completion_ids.shape
    vocab = head.weight.size(0)
    rows_per_forward = max(1, min(batch_size, max_logit_elements // max(1, (width + 1) * vocab)))
    positions_per_chunk = max(1, max_logit_elements // max(1, rows_per_forward * vocab))
    k = min(top_k, vocab)
    if n == 0:
        device = completion_ids.device
        return (
            torch.zeros(0, width, device=device),
            torch.zeros(0, width, k, device=device),
            torch.zeros(0, width, k, dtype=torch.long, device=device),
        )
    captured: list[torch.Tensor] = []
    hook = head.register_forward_hook(lambda module, args, output: captured.append(args[0]))
    proxies, probs_out, ids_out = [], [], []
    try:
        for start in range(0, n, rows_per_forward):
            rows = slice(start, start + rows_per_forward)
            input_ids = torch.cat([prompt_ids[rows], completion_ids[rows]], dim=1)
            attention_mask = torch.cat([prompt_mask[rows], completion_mask[rows]], dim=1)
            captured.clear()
            # Positions P-1 … P+T-2 predict the T completion tokens; keep T+1 logits and drop the last.
            logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=width + 1).logits
            if len(captured) != 1:
                raise RuntimeError(f"expected one call of the output head per forward, saw {len(captured)}")
            hidden, logits = captured[0][:, -(width + 1) : -1], logits[:, -(width + 1) : -1]
            parts = []
            for first in range(0, width, positions_per_chunk):
                cols = slice(first, first + positions_per_chunk)
                z = logits[:, cols].float() / temperature
                top_logits, top_ids = z.topk(k, dim=-1)
                # top-k renormalised: softmax over the k largest logits
                parts.append(
                    (score_norm_proxy(hidden[:, cols], z, completion_ids[rows, cols]), top_logits.softmax(-1), top_ids)
                )
            proxy, top_probs, top_ids = (torch.cat(x, dim=1) for x in zip(*parts, strict=True))
            valid = completion_mask[rows].bool()
            proxies.append(proxy * valid)
            probs_out.append(top_probs * valid.unsqueeze(-1))
            ids_out.append(top_ids * valid.unsqueeze(-1))
            del logits, hidden
    finally:
        hook.remove()
    return torch.cat(proxies), torch.cat(probs_out), torch.cat(ids_out)


def reward_uncertainty_bound(
    topk_probs: torch.Tensor,
    topk_ids: torch.Tensor,
    success: torch.Tensor,
    mask: torch.Tensor,
    num_generations: int,
) -> torch.Tensor:
    """Upper bound ``γ̄_t ≥ E[Var(R | s_t)]`` per group and step, shape (N/K, T).

    Args:
        topk_probs: (N,T,k) next-token probabilities of each rollout (renormalised here to sum to 1).
        topk_ids: (N,T,k) their token ids (non-negative).
        success: (N,) bool, rollout's reward is a success (binary reward).
        mask: (N,T) 1 while the rollout is running (completion tokens), 0 after it ended.
        num_generations: K, rows per group; rows ``g*K … g*K+K-1`` form group ``g``.
    """
    n, width, k = topk_probs.shape
    if topk_ids.shape != topk_probs.shape or mask.shape != (n, width) or success.shape != (n,):
        raise ValueError("topk_probs/topk_ids (N,T,k), mask (N,T) and success (N,) must agree")
    if num_generations < 1 or n % num_generations:
        raise ValueError(f"{n} rows do not split into groups of {num_generations}")
    groups = n // num_generations
    device = topk_probs.device
    alive = mask.to(torch.float32)
    probs = topk_probs.float()
    probs = probs / probs.sum(-1, keepdim=True).clamp(min=1e-30)
    success = success.bool()
    vocab = int(topk_ids.max().item()) + 1 if topk_ids.numel() else 1
    # Virtual end symbols: `vocab` for an ended success, `vocab + 1` for an ended failure.
    end_ids = (vocab + (~success).long()).view(n, 1, 1).expand(n, width, 1)
    ids = torch.cat([topk_ids.long(), end_ids], dim=-1)
    values = torch.cat([probs * alive.unsqueeze(-1), (1.0 - alive).unsqueeze(-1)], dim=-1)
    sign = torch.where(success, 1.0, -1.0).to(device).view(n, 1, 1)
    signed = values * sign
    group_step = (torch.arange(n, device=device) // num_generations).view(n, 1, 1) * width + torch.arange(
        width, device=device
    ).view(1, width, 1)
    keys = (group_step * (vocab + 2) + ids).reshape(-1)
    unique_keys, inverse = torch.unique(keys, return_inverse=True)
    per_token = torch.zeros(unique_keys.numel(), device=device).scatter_add_(0, inverse, signed.reshape(-1))
    l1 = torch.zeros(groups * width, device=device).scatter_add_(0, unique_keys // (vocab + 2), per_token.abs())
    bound = 0.5 * (1.0 - l1 / num_generations)
    return bound.clamp(min=0.0).view(groups, width)


def design_weights(
    proxy: torch.Tensor, uncertainty: torch.Tensor, mask: torch.Tensor, num_generations: int
) -> torch.Tensor:
    """``w_t(x) = γ̄_t(x) · (1/K) Σ_i u_{i,t}`` per group, shape (N/K, T); ended rollouts add nothing."""
    n, width = proxy.shape
    if mask.shape != (n, width) or uncertainty.shape != (n // num_generations, width):
        raise ValueError("proxy and mask must be (N,T) and uncertainty (N/K,T)")
    mean_proxy = (proxy.float() * mask).view(-1, num_generations, width).mean(dim=1)
    return uncertainty * mean_proxy


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
