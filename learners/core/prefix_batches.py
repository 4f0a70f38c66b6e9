"""Run TRL's loss on prefixes only: rows sorted into buckets, each cut after its last loss token.

A causal model's log-probabilities at positions ``≤ t`` do not depend on tokens after ``t``, so dropping every
completion column after a row's last loss token changes no loss term, only the compute. A micro-batch is padded
to its longest row, so cutting it as a whole saves little when one row keeps many tokens; instead the rows are
sorted by kept length and split into at most ``max_buckets`` contiguous buckets (chosen by dynamic programming to
minimise the padded token count), TRL's ``_compute_loss`` runs once per bucket on the cut tensors, and the bucket
losses are recombined so that their sum equals the loss of the whole micro-batch:

* ``dapo``, ``cispo``, ``vespo`` divide by the global ``num_items_in_batch``: bucket weight 1;
* ``grpo``, ``sapo``, ``dr_grpo``, ``luspo`` average over rows: bucket weight ``rows_b / rows``;
* ``bnpo`` divides by the micro-batch's loss-mask sum: bucket weight ``mask_b / mask``.

Rows without any loss token are left out (their loss terms are zero); when no row is left, one row cut to a
single token with a zero weight keeps the autograd graph intact. TRL's loss gathers per-row metrics across
processes at every call, so under several processes every rank must make the same calls with the same row
counts: ``equal_rows=True`` splits *all* rows, sorted by kept length, into ``min(max_buckets, B)`` buckets of
fixed sizes (each still cut after its longest row) instead of the optimal plan. Used by the base trainer's
``_compute_loss`` for every learner whose ``truncate_to_loss_tokens()`` is true (S-GRPO's truncating variant,
PS-PPO, T-SPMO).
"""

from __future__ import annotations

from typing import Any

import torch

from .batch_keys import PER_TOKEN_KEYS

__all__ = ["PER_TOKEN_KEYS", "kept_lengths", "plan_buckets", "cut_batch", "bucket_weight", "prefix_loss"]


_GLOBAL_NORMALISER = {"dapo", "cispo", "vespo"}
_ROW_MEAN = {"grpo", "sapo", "dr_grpo", "luspo"}


def kept_lengths(loss_mask: torch.Tensor) -> torch.Tensor:
    """(B,) one past the last non-zero column of each row of a (B,T) loss mask (0 for an empty row)."""
    if loss_mask.size(1) == 0:
        return torch.zeros(loss_mask.size(0), dtype=torch.long, device=loss_mask.device)
    positions = torch.arange(1, loss_mask.size(1) + 1, device=loss_mask.device)
    return ((loss_mask != 0) * positions).amax(dim=1)


def plan_buckets(lengths, prompt_width: int, max_buckets: int, equal_rows: bool = False) -> list[tuple[list[int], int]]:
    """Split the rows with a positive length into ≤ ``max_buckets`` buckets minimising padded tokens.

    Returns ``[(row indices, width), ...]`` with rows sorted by length; the cost of a bucket is
    ``rows × (prompt_width + width)``. With ``equal_rows`` every row (empty ones too) is kept and the sorted rows
    are split into ``min(max_buckets, len(lengths))`` buckets whose sizes depend only on ``len(lengths)``.
    """
    if max_buckets < 1:
        raise ValueError(f"max_buckets must be >= 1, got {max_buckets}")
    lengths = [int(x) for x in lengths]
    if equal_rows:
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        count = min(max_buckets, len(order))
        bounds = [round(b * len(order) / count) for b in range(count + 1)]
        chunks = [order[bounds[b] : bounds[b + 1]] for b in range(count)]
        return [(chunk, max(1, max(lengths[i] for i in chunk))) for chunk in chunks]
    order = sorted((i for i, n in enumerate(lengths) if n > 0), key=lambda i: lengths[i])
    n = len(order)
    if n == 0:
        return []
    sorted_lengths = [lengths[i] for i in order]
    inf = float("inf")
    # cost[b][j]: best cost of the first j sorted rows in b buckets; the last bucket's width is its last row's.
    cost = [[inf] * (n + 1) for _ in range(max_buckets + 1)]
    split = [[0] * (n + 1) for _ in range(max_buckets + 1)]
    cost[0][0] = 0.0
    for b in range(1, max_buckets + 1):
        for j in range(1, n + 1):
            width = prompt_width + sorted_lengths[j - 1]
            for i in range(b - 1, j):
                candidate = cost[b - 1][i] + (j - i) * width
                if candidate < cost[b][j]:
                    cost[b][j], split[b][j] = candidate, i
    best_b = min(range(1, max_buckets + 1), key=lambda b: (cost[b][n], b))
    buckets, j = [], n
    for b in range(best_b, 0, -1):
        i = split[b][j]
        buckets.append((order[i:j], sorted_lengths[j - 1]))
        j = i
    return buckets[::-1]


def cut_batch(inputs: dict[str, Any], rows: list[int] | torch.Tensor, width: int) -> dict[str, Any]:
    """The batch restricted to ``rows``, with the per-token entries cut to their first ``width`` columns."""
    batch_size, total = inputs["completion_ids"].shape
    index = torch.as_tensor(rows, dtype=torch.long, device=inputs["completion_ids"].device)
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.size(0) == batch_size:
            value = value.index_select(0, index)
            if key in PER_TOKEN_KEYS and value.dim() >= 2 and value.size(1) == total:
                value = value[:, :width]
        elif isinstance(value, list) and len(value) == batch_size:
            value = [value[i] for i in index.tolist()]
        out[key] = value
    return out


def bucket_weight(loss_type: str, rows: int, total_rows: int, mask_sum: float, total_mask_sum: float) -> float:
    """Factor that makes the bucket losses of TRL's ``loss_type`` add up to the micro-batch loss."""
    if loss_type in _GLOBAL_NORMALISER:
        return 1.0
    if loss_type in _ROW_MEAN:
        return rows / total_rows
    if loss_type == "bnpo":
        return mask_sum / max(total_mask_sum, 1e-30)
    raise ValueError(f"prefix batching does not support loss_type={loss_type!r}")


def prefix_loss(
    compute_loss, model, inputs: dict[str, Any], loss_type: str, max_buckets: int = 4, equal_rows: bool = False
):
    """TRL's loss of ``inputs`` computed on bucketed prefixes (see the module docstring).

    ``compute_loss(model, inputs)`` is TRL's ``GRPOTrainer._compute_loss`` bound to the trainer.
    ``equal_rows=True`` (needed under several processes) uses bucket sizes that are the same on every rank.
    Returns ``(loss, stats)`` where ``stats`` has ``tokens`` (completion columns run, padding included),
    ``full_tokens`` (B·T) and ``buckets``.
    """
    completion_mask = inputs["completion_mask"]
    tool_mask = inputs.get("tool_mask")
    loss_mask = completion_mask if tool_mask is None else completion_mask * tool_mask
    lengths = kept_lengths(loss_mask)
    buckets = plan_buckets(lengths.tolist(), inputs["prompt_ids"].size(1), max_buckets, equal_rows)
    batch_size = completion_mask.size(0)
    total_mask = float(loss_mask.sum())
    stats = {"tokens": 0, "full_tokens": batch_size * completion_mask.size(1), "buckets": len(buckets)}
    plan = [(rows, width, None) for rows, width in buckets] or [([0], 1, 0.0)]  # zero weight, graph intact
    loss = None
    for rows, width, weight in plan:
        if weight is None:
            weight = bucket_weight(loss_type, len(rows), batch_size, float(loss_mask[rows].sum()), total_mask)
        term = compute_loss(model, cut_batch(inputs, rows, width)) * weight
        loss = term if loss is None else loss + term
        stats["tokens"] += len(rows) * width
    return loss, stats
