"""S-GRPO's config: which completion tokens enter the loss (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.config import CountdownConfig


@dataclass
class SGRPOConfig(CountdownConfig):
    r"""``GRPOConfig`` plus S-GRPO's token selection (arXiv 2504.20834).

    Parameters:
        always_keep_tokens (`int`, defaults to 50): α, the leading completion tokens always in the loss.
        max_loss_tokens (`int`, defaults to 100): k, the most loss tokens per completion (α included).
        keep_probability (`float`, defaults to 0.5): P, the Bernoulli probability of each later token.
        truncate_after_last_selected (`bool`, defaults to False): run the forward/backward only up to each row's
            last selected token (bucketed); the loss is unchanged, the compute is not.
        loss_type (`str`, defaults to "grpo"): per-completion mean over the selected tokens, as in the seed.
    """

    always_keep_tokens: int = field(default=50, metadata={"help": "α: leading tokens always in the loss."})
    max_loss_tokens: int = field(default=100, metadata={"help": "k: most loss tokens per completion."})
    keep_probability: float = field(default=0.5, metadata={"help": "P: keep probability of each later token."})
    truncate_after_last_selected: bool = field(
        default=False, metadata={"help": "Cut the forward/backward after the last selected token."}
    )
    loss_type: str = field(default="grpo", metadata={"help": "TRL loss type; 'grpo' = per-completion mean."})

    def __post_init__(self):
        super().__post_init__()
        if self.always_keep_tokens < 0:
            raise ValueError(f"always_keep_tokens must be >= 0, got {self.always_keep_tokens}")
        if self.max_loss_tokens < 1:
            raise ValueError(f"max_loss_tokens must be >= 1, got {self.max_loss_tokens}")
        if not 0.0 <= self.keep_probability <= 1.0:
            raise ValueError(f"keep_probability must lie in [0, 1], got {self.keep_probability}")
