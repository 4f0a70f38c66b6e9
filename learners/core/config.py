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
        async_max_staleness (`int` or `None`, defaults to `None`): generate the next steps' completions while the
            trainer updates, at most this many policy versions behind (0: the same machinery with nothing ahead,
            i.e. the synchronous run); :mod:`learners.core.async_rollouts`.
        overlong_buffer_fraction (`float`, defaults to 0): DAPO's soft overlong punishment, a second reward term
            that is 0 up to L_max - L_cache tokens and falls linearly to -1 at L_max (``max_completion_length``),
            L_cache = this fraction x L_max (0 = off; DAPO: 4096 / 20480 = 0.2). A reward setting, so every
            learner takes it (learners compared under one reward).
        overlong_penalty_weight (`float`, defaults to 1): weight of that reward term.
    """

    max_buckets: int = field(default=4, metadata={"help": "Length buckets per micro-batch when training on prefixes."})
    async_max_staleness: int | None = field(
        default=None,
        metadata={"help": "Asynchronous rollouts: generate up to this many policy versions ahead (None: off)."},
    )

    overlong_buffer_fraction: float = field(default=0.0, metadata={"help": "DAPO overlong buffer / max length."})
    overlong_penalty_weight: float = field(default=1.0, metadata={"help": "Weight of the overlong reward."})

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 <= self.overlong_buffer_fraction < 1.0:
            raise ValueError(f"overlong_buffer_fraction must be in [0, 1), got {self.overlong_buffer_fraction}")
        if self.max_buckets < 1:
            raise ValueError(f"max_buckets must be >= 1, got {self.max_buckets}")
        if self.async_max_staleness is not None and (
            isinstance(self.async_max_staleness, bool) or not isinstance(self.async_max_staleness, int)
            or self.async_max_staleness < 0
        ):  # fmt: skip
            raise ValueError(f"async_max_staleness must be an integer >= 0 or None, got {self.async_max_staleness!r}")
