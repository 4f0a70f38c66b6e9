"""TRL's prompt sampler made resumable across epochs.

``trl.trainer.utils.RepeatSampler`` shuffles every epoch with one ``torch.Generator`` seeded once: epoch ``e``'s order
is the ``e``-th permutation drawn from it, so it depends on how many epochs *this object* has iterated. A run resumed
from a checkpoint past the first epoch builds a fresh sampler, whose first permutation is epoch 0's, and trains the
rest of the run on other prompts than the uninterrupted run did (a resume from step 5 of 4-step epochs differed from
step 7 on). transformers calls ``set_epoch(e)`` on the sampler before each epoch (``Trainer._run_epoch``, through
accelerate's ``DataLoaderShard.set_epoch``); :class:`EpochRepeatSampler` answers it by reseeding its generator and
drawing the ``e`` earlier permutations again, so epoch ``e``'s order is the same whether the run got there in one go
or from a checkpoint, and the same as TRL's uninterrupted order (no run changes).
"""

from __future__ import annotations

import torch
from trl.trainer.utils import RepeatSampler


class EpochRepeatSampler(RepeatSampler):
    """``RepeatSampler`` whose generator state is a function of the epoch (:meth:`set_epoch`)."""

    @classmethod
    def like(cls, sampler: RepeatSampler) -> EpochRepeatSampler:
        """The same sampler (data, repeats, batch size, shuffle, seed), resumable across epochs."""
        return cls(
            data_source=sampler.data_source,
            mini_repeat_count=sampler.mini_repeat_count,
            batch_size=sampler.batch_size,
            repeat_count=sampler.repeat_count,
            shuffle=sampler.shuffle,
            seed=sampler.seed,
        )

    def set_epoch(self, epoch: int) -> None:
        """Put the generator where an uninterrupted run is at the start of ``epoch`` (``epoch`` permutations drawn)."""
        if not self.shuffle:
            return
        self.generator = torch.Generator()
        if self.seed is not None:
            self.generator.manual_seed(self.seed)
        for _ in range(int(epoch)):
            torch.randperm(self.num_samples, generator=self.generator)
