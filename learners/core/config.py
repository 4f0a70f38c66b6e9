"""The config every Countdown learner's config extends: ``trl.GRPOConfig`` plus the fields the base trainer reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

__all__ = ["CountdownConfig"]


@dataclass
class CountdownConfig(GRPOConfig):
    """``GRPOConfig`` plus the settings of :class:`~learners.core.trainer.CountdownGRPOTrainer`'s seams.

    Parameters:
        max_buckets (`int`, defaults to 4): length buckets per micro-batch when a learner trains on prefixes
            (seam 2, ``truncate_to_loss_tokens``); more buckets cut closer to each row's last loss token but run
            more, smaller forward passes.
    """

    max_buckets: int = field(default=4, metadata={"help": "Length buckets per micro-batch when training on prefixes."})

    def __post_init__(self):
        super().__post_init__()
        if self.max_buckets < 1:
            raise ValueError(f"max_buckets must be >= 1, got {self.max_buckets}")
