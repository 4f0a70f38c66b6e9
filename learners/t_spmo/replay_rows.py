"""Replayed rows as TRL-shaped tensors: left-padded prompts, right-padded completions, and appending them to a
generation batch so that both sides keep a common width (T-SPMO replay; :mod:`learners.t_spmo.replay` plans them)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import torch

from learners.core.batch_keys import PROMPT_KEYS


def padded_rows(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    pad_id: int,
    stop_ids: Collection[int] | None,
    *,
    device=None,
) -> dict[str, torch.Tensor]:
    """``prompt_ids``/``prompt_mask`` (left-padded) and ``completion_ids``/``completion_mask`` (right-padded) of
    the rows; a completion that is empty, or (with ``stop_ids``) does not end in one of them, gets no loss tokens."""
    prompt_width = max([len(p) for p in prompts] + [0])
    width = max([len(c) for c in completions] + [1])
    keep = [bool(c) and (stop_ids is None or c[-1] in stop_ids) for c in completions]
    return {
        "prompt_ids": torch.tensor([[pad_id] * (prompt_width - len(p)) + list(p) for p in prompts], device=device),
        "prompt_mask": torch.tensor([[0] * (prompt_width - len(p)) + [1] * len(p) for p in prompts], device=device),
        "completion_ids": torch.tensor([list(c) + [pad_id] * (width - len(c)) for c in completions], device=device),
        "completion_mask": torch.tensor(
            [[int(k)] * len(c) + [0] * (width - len(c)) for c, k in zip(completions, keep, strict=True)], device=device
        ),
    }


def pad_right(tensor: torch.Tensor, width: int, value) -> torch.Tensor:
    if tensor.size(1) >= width:
        return tensor
    return torch.nn.functional.pad(tensor, (0, width - tensor.size(1)), value=value)


def pad_left(tensor: torch.Tensor, width: int, value) -> torch.Tensor:
    if tensor.size(1) >= width:
        return tensor
    return torch.nn.functional.pad(tensor, (width - tensor.size(1), 0), value=value)


def append_rows(batch: dict[str, Any], rows: dict[str, torch.Tensor], pad_id: int) -> None:
    """Append ``rows`` to ``batch`` in place, widening the prompt side on the left and the completion side on the
    right so that both keep a common width."""
    prompt_width = max(batch["prompt_ids"].size(1), rows["prompt_ids"].size(1))
    completion_width = max(batch["completion_ids"].size(1), rows["completion_ids"].size(1))
    for key, extra in rows.items():
        value = batch[key]
        if key in PROMPT_KEYS:
            fill = pad_id if key == "prompt_ids" else 0
            value, extra = pad_left(value, prompt_width, fill), pad_left(extra, prompt_width, fill)
        elif value.dim() == 2 and extra.dim() == 2 and not (key == "importance_sampling_ratio" and value.size(1) == 1):
            fill = pad_id if key == "completion_ids" else (1.0 if key == "importance_sampling_ratio" else 0)
            value, extra = pad_right(value, completion_width, fill), pad_right(extra, completion_width, fill)
        batch[key] = torch.cat([value, extra.to(device=value.device, dtype=value.dtype)])
