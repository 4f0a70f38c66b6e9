"""The oracle-shaped trainer: a GRPO learner (prime-rl's preset from the registry) plus one seam override.

The equations are in the package docstring (:mod:`learners.oracle_shaped`).
"""

from __future__ import annotations

import torch

from countdown_env.solving.oracle import StepOracle

from ..contrastive.paragraphs import split_paragraphs, token_texts
from ..contrastive.potential import shaping_terms, token_shaping
from ..core.trainer import Rollout
from ..grpo.trainer import GRPOPresetTrainer
from .config import OracleShapedConfig
from .potential import oracle_potentials

__all__ = ["OracleShapedConfig", "OracleShapedTrainer"]


class OracleShapedTrainer(GRPOPresetTrainer):
    """Potential-based shaping with the exact step oracle as Φ; see the package docstring for the equations.

    The only change w.r.t. :class:`~learners.grpo.GRPOPresetTrainer`: ``shape_batch`` adds the per-paragraph shaping
    term
    to the advantages of every row it can read, then lets the GRPO learner's seam 1 act on the shaped advantages.
    """

    _tag_names = ["trl", "oracle-shaping", "countdown"]

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, OracleShapedConfig, "oracle_shaped")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        self._oracles: dict[int, StepOracle] = {}  # target -> oracle: its memo serves every row of that target

    def shape_batch(self, batch: dict, rollout: Rollout) -> dict:
        if rollout.mode == "train":
            batch = self._add_shaping(batch, rollout)
        return super().shape_batch(batch, rollout)

    def _oracle(self, target: int) -> StepOracle:
        oracle = self._oracles.get(target)
        if oracle is None:
            task = self.task
            oracle = self._oracles[target] = StepOracle(
                target,
                use_all_numbers=task.use_all_numbers,
                integer_intermediates=task.integer_intermediates,
                operators=task.operators,
            )
        return oracle

    def _add_shaping(self, batch: dict, rollout: Rollout) -> dict:
        """(B,T) advantages: the base preset's advantage plus A_n^shape on every token of paragraph n."""
        args = self.args
        if rollout.puzzles is None or any(p is None for p in rollout.puzzles):
            raise ValueError(
                "oracle shaping needs every row's puzzle: the dataset needs 'numbers' and 'target' columns"
            )
        tags = dict(reasoning_tag=self.reward_config.reasoning_tag, answer_tag=self.reward_config.answer_tag)
        completion_ids, completion_mask = batch["completion_ids"].tolist(), batch["completion_mask"].tolist()
        advantages = batch["advantages"]
        base = advantages if advantages.dim() == 2 else advantages.unsqueeze(1).expand_as(batch["completion_ids"])
        shaping = torch.zeros_like(base, dtype=torch.float32)
        shaped = unparsed = paragraphs_total = 0
        for i, puzzle in enumerate(rollout.puzzles):
            ids = [t for t, m in zip(completion_ids[i], completion_mask[i], strict=True) if m]
            texts = token_texts(self.processing_class, ids)
            paragraphs = split_paragraphs(texts, max_paragraph_len=args.max_paragraph_len, **tags)
            if not paragraphs.count:
                continue
            phi = oracle_potentials(
                texts, paragraphs.scoring_points, puzzle, self._oracle(puzzle.target), args.potential_scale
            )
            if phi is None:  # a unit the grammar cannot read: refused, the row keeps its plain advantage
                unparsed += 1
                continue
            terms = shaping_terms(phi, beta=args.shaping_beta, gamma=args.shaping_gamma)
            values = token_shaping(terms, paragraphs.paragraph_of_token())
            shaping[i, : len(values)] = torch.from_numpy(values).to(shaping)
            shaped += 1
            paragraphs_total += paragraphs.count
        shaping *= batch["completion_mask"].to(shaping.dtype)
        batch["advantages"] = (base.float() + shaping).to(advantages.dtype)
        rows = float(len(rollout.puzzles))
        self.log_ratio_metrics(
            {
                "oracle_shaped/shaped_row_frac": (float(shaped), rows),
                "oracle_shaped/unparsed_row_frac": (float(unparsed), rows),
                "oracle_shaped/mean_abs_shaping": (shaping.abs().sum(), batch["completion_mask"].sum()),
                "oracle_shaped/paragraphs_per_shaped_row": (float(paragraphs_total), float(shaped)),
            },
            rollout.mode,
        )
        return batch
