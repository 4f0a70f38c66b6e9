"""LoRA adapters in place of every weight: the ``peft`` config every run builds (``train``'s ``lora:`` section,
``compare --lora-rank``, the SmolLM2 warm start's recipe)."""

from __future__ import annotations

from typing import Any

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
"""``lora_targets="attention"``: every attention projection (the setting of E5 in docs/experiments.md)."""

LORA_ALL_LINEAR = (*LORA_TARGETS, "gate_proj", "up_proj", "down_proj")
"""``lora_targets="all-linear"``: every linear layer of a llama/Qwen block (the SmolLM2 warm start's adapter, R2)."""

LORA_TARGET_SETS = {"attention": LORA_TARGETS, "all-linear": LORA_ALL_LINEAR}


def lora_config(rank: int, targets: str | tuple[str, ...] = "attention", alpha: int | None = None):
    """A LoRA adapter of rank ``rank`` on ``targets`` (a name of :data:`LORA_TARGET_SETS` or module names),
    ``lora_alpha = alpha`` (default ``2 rank``), no dropout (sampling and loss see the same policy)."""
    if rank < 1:
        raise ValueError(f"LoRA rank must be >= 1, got {rank}")
    if isinstance(targets, str):
        if targets not in LORA_TARGET_SETS:
            raise ValueError(f"LoRA targets must be one of {sorted(LORA_TARGET_SETS)}, got {targets!r}")
        targets = LORA_TARGET_SETS[targets]
    from peft import LoraConfig

    return LoraConfig(r=rank, lora_alpha=alpha or 2 * rank, lora_dropout=0.0, target_modules=list(targets),
                      task_type="CAUSAL_LM")  # fmt: skip


def lora_section_config(section: dict[str, Any]):
    """The ``peft`` LoRA config of a run config's ``lora:`` section (``rank``, ``targets``, ``alpha``): one line on
    a bad value."""
    rank, alpha, targets = section.get("rank"), section.get("alpha"), section.get("targets", "attention")
    for key, value in (("rank", rank), ("alpha", alpha)):
        given = value is not None or key == "rank"
        if given and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"lora.{key} must be an integer >= 1, got {value!r}")
    if not isinstance(targets, str):
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t for t in targets):
            raise ValueError(f"lora.targets must be a name or a list of module names, got {targets!r}")
        targets = tuple(targets)
    return lora_config(rank, targets, alpha)
