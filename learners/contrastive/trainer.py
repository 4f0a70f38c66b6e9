"""The contrastive-potential shaping trainer: a GRPO learner (``base_learner``'s preset) plus one seam override.

The equations are in the package docstring (:mod:`learners.contrastive`).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

import torch

from ..core.trainer import Rollout
from ..grpo.trainer import GRPOPresetTrainer
from ..sampling.trainer_sampler import lockstep_forward
from .answer_bank import AnswerBank, build_answer_bank
from .config import ContrastiveConfig
from .paragraphs import split_paragraphs, token_texts
from .potential import contrastive_potential, shaping_terms, token_shaping
from .scoring import ScoringJob, answer_span_encoder, make_scorer
from .spec import async_refusal

__all__ = ["ContrastiveConfig", "ContrastiveTrainer", "submitted_answer"]


def _detached_copy(model):
    """A deep copy of ``model`` whose forward runs the copy's own weights.

    Trainers patch ``forward`` on the model instance. TRL's fused LM head (``trl.trainer.utils.add_fused_lm_head``)
    is a closure over the model's *bound* original forward; ``copy.deepcopy`` shares that closure, so a plain copy
    runs the live policy (a "frozen" scorer that moves). Dropping every instance-level ``forward`` in the copy
    restores the class's own forward (it also drops accelerate's autocast wrapper: the scorer runs in its dtype).
    """
    scorer = copy.deepcopy(model)
    for module in scorer.modules():
        module.__dict__.pop("forward", None)
    return scorer


@dataclass
class _Row:
    """What shaping needs to know about one local rollout."""

    prompt_ids: list[int]
    completion_ids: list[int]
    answer: str | None
    correct: bool
    truncated: bool


def submitted_answer(completion: str, tag: str = "solution") -> str | None:
    """The answer the verifier grades (``countdown_env.expressions.answers.extract_answer``: the last complete tag
    block), but verbatim, whitespace included, so that it is scored as the policy wrote it; ``None`` if there is
    none."""
    from countdown_env.expressions.answers import extract_answer

    if extract_answer(completion, tag=tag) is None:
        return None
    end = completion.rfind(f"</{tag}>")
    return completion[completion.rfind(f"<{tag}>", 0, end) + len(tag) + 2 : end]


class ContrastiveTrainer(GRPOPresetTrainer):
    """Seed 000's contrastive potential advantage shaping; see the package docstring for the equations.

    A :class:`~learners.grpo.GRPOPresetTrainer` run with ``args.base_learner``'s preset (prime-rl's loss by default).
    The only change w.r.t. it: ``shape_batch`` adds the per-paragraph shaping term to the advantages, then lets the
    GRPO learner's seam 1 (dynamic sampling, zero-advantage filter) act on the shaped advantages; seam 2 (prime-rl's
    DPPO mask, adv_tau and KL) is the GRPO learner's.

    Asynchronous rollouts: with the frozen scorer, as the GRPO learner (the potential is a fixed function of the
    prefix); with the moving scorer, refused: its potential is the current policy's success estimate, while stale
    samples come from an older policy, and the shaping term's telescoping assumes one policy for both.
    """

    @classmethod
    def async_refusal(cls, args) -> str | None:
        return async_refusal(args)  # the spec's, also asked before the run folder is claimed

    _tag_names = ["trl", "contrastive-shaping", "countdown"]

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, ContrastiveConfig, "contrastive")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        if args.scorer_engine != "vllm" and lockstep_forward(self):
            raise ValueError(
                f"contrastive: scorer_engine {args.scorer_engine!r} does not support sharded parameters (FSDP, "
                "DeepSpeed ZeRO-3): each process scores its own number of rollouts while every forward is a collective "
                "of all processes, and a frozen copy of a sharded policy holds only its shard; use scorer_engine: vllm"
            )
        self._frozen_model = None
        if args.scorer == "frozen" and args.scorer_engine != "vllm":
            self._frozen_model = self._load_frozen_scorer()
        self._scorer = None
        self._ground_truths: dict[Any, str | None] = {}

    # ------------------------------------------------------------------------------------------- scorer
    def _load_frozen_scorer(self):
        policy = self.accelerator.unwrap_model(self.model)
        if self.args.scorer_model_name_or_path:
            from transformers import AutoModelForCausalLM

            scorer = AutoModelForCausalLM.from_pretrained(
                self.args.scorer_model_name_or_path, dtype=next(policy.parameters()).dtype
            )
        else:
            scorer = _detached_copy(policy)
        scorer.to(self.accelerator.device).eval().requires_grad_(False)
        return scorer

    def _get_scorer(self):
        args = self.args
        if args.scorer_engine == "vllm":
            if self._scorer is None:
                # an engine of its own starts each call empty, so the cache plan models it exactly
                self._scorer = make_scorer("vllm", llm=self._vllm_llm(), reset_cache=args.scorer == "frozen")
            return self._scorer
        model = self._frozen_model if args.scorer == "frozen" else self.accelerator.unwrap_model(self.model)
        if self._scorer is None or self._scorer.model is not model:
            kwargs = {}
            if args.scorer_engine == "prefix_shared":
                kwargs = dict(
                    prefix_batch_size=args.scorer_prefix_batch_size,
                    max_batch_tokens=args.scorer_max_batch_tokens,
                    kv_slack=args.scorer_kv_slack,
                )
            self._scorer = make_scorer(args.scorer_engine, model, **kwargs)
        return self._scorer

    def _vllm_llm(self):
        args = self.args
        if args.scorer == "moving":
            if not (args.use_vllm and args.vllm_mode == "colocate"):
                raise ValueError(
                    "a moving vLLM scorer uses the policy's colocated engine: set use_vllm=True, vllm_mode='colocate'"
                )
            if args.vllm_enable_sleep_mode:
                raise ValueError("a moving vLLM scorer needs vllm_enable_sleep_mode=False (the engine must stay up)")
            return self.vllm_generation.llm
        from learners.sampling.vllm_engine import build_llm, on_cpu

        block_size = args.scorer_vllm_block_size or (32 if on_cpu() else None)
        return build_llm(
            args.scorer_model_name_or_path,
            seed=args.seed,
            enable_prefix_caching=True,
            gpu_memory_utilization=args.scorer_vllm_gpu_memory_utilization,
            **({"block_size": block_size} if block_size else {}),
        )

    # ------------------------------------------------------------------------------------------- rows
    def _local_rows(self, batch: dict, rollout: Rollout) -> list[_Row]:
        """Each local row's prompt and completion ids, submitted answer and the rollout's verdict on it (the
        verifier's, scored once by the base trainer: never re-verified here)."""
        trajectories = rollout.trajectories
        if trajectories is None:
            raise ValueError("contrastive shaping grades answers: the dataset needs 'numbers' and 'target' columns")
        answer_tag = self.reward_config.answer_tag
        prompt_ids, prompt_mask = batch["prompt_ids"].tolist(), batch["prompt_mask"].tolist()
        completion_ids, completion_mask = batch["completion_ids"].tolist(), batch["completion_mask"].tolist()
        rows = []
        for i, trajectory in enumerate(trajectories):
            prompt = [t for t, m in zip(prompt_ids[i], prompt_mask[i], strict=True) if m]
            completion = [t for t, m in zip(completion_ids[i], completion_mask[i], strict=True) if m]
            answer = submitted_answer(trajectory.completion_text, answer_tag)
            correct, truncated = bool(trajectory.verification.correct), bool(trajectory.truncated)
            rows.append(_Row(prompt, completion, answer, correct, truncated))
        return rows

    def _ground_truth(self, rollout: Rollout, local_index: int) -> str | None:
        row = rollout.inputs[local_index]
        if row.get("solution"):
            return str(row["solution"])
        puzzle = rollout.puzzles[local_index] if rollout.puzzles is not None else None
        if puzzle is None:
            return None
        if puzzle.key not in self._ground_truths:
            from countdown_env.solving.solver import solve

            cfg = self.reward_config
            self._ground_truths[puzzle.key] = solve(
                puzzle,
                use_all_numbers=cfg.use_all_numbers,
                integer_intermediates=cfg.integer_intermediates,
            )
        return self._ground_truths[puzzle.key]

    def _banks(self, rows: list[_Row], rollout: Rollout) -> dict[int, AnswerBank]:
        """The bank of every group that has local rows (groups may span processes: the verdicts are gathered)."""
        from accelerate.utils import gather_object

        local = [(r.answer, r.correct, r.truncated) for r in rows]
        everything = gather_object(local) if self.accelerator.num_processes > 1 else local
        size = rollout.num_generations
        groups = rollout.group_index.tolist()
        banks = {}
        for i, g in enumerate(groups):
            if g in banks:
                continue
            answers, correct, truncated = zip(*everything[g * size : (g + 1) * size], strict=True)
            mode = self.args.ground_truth_mode
            truth = self._ground_truth(rollout, i) if mode != "never" else None
            banks[g] = build_answer_bank(
                answers, correct, truncated, ground_truth=truth, ground_truth_mode=mode if truth else "never"
            )
        return banks

    # ------------------------------------------------------------------------------------------- seam 1
    def shape_batch(self, batch: dict, rollout: Rollout) -> dict:
        if rollout.mode == "train":
            batch = self._add_shaping(batch, rollout)
        return super().shape_batch(batch, rollout)

    def _add_shaping(self, batch: dict, rollout: Rollout) -> dict:
        """(B,T) advantages: the base preset's advantage plus A_n^shape on every token of paragraph n."""
        args = self.args
        started = time.perf_counter()
        rows = self._local_rows(batch, rollout)
        banks = self._banks(rows, rollout)
        groups = rollout.group_index.tolist()
        reasoning_tag, answer_tag = self.reward_config.reasoning_tag, self.reward_config.answer_tag
        encode_answer = answer_span_encoder(self.processing_class, reasoning_tag, answer_tag)
        spans: dict[str, Any] = {}  # answers repeat across a group's rows: encode each once

        jobs, owners = [], []
        for i, row in enumerate(rows):
            bank = banks[groups[i]]
            if bank.homogeneous:
                continue
            paragraphs = split_paragraphs(
                token_texts(self.processing_class, row.completion_ids),
                max_paragraph_len=args.max_paragraph_len,
                reasoning_tag=reasoning_tag,
                answer_tag=answer_tag,
            )
            if not paragraphs.count:
                continue
            cuts = tuple(len(row.prompt_ids) + k for k in paragraphs.scoring_points)
            answers = tuple(spans[a] if a in spans else spans.setdefault(a, encode_answer(a)) for a in bank.answers)
            jobs.append(ScoringJob(tuple(row.prompt_ids + row.completion_ids), cuts, (), answers))
            owners.append((i, paragraphs, len(bank.positive)))

        advantages = batch["advantages"]
        base = advantages if advantages.dim() == 2 else advantages.unsqueeze(1).expand_as(batch["completion_ids"])
        per_token = base.clone().float()
        shaping = torch.zeros_like(per_token)
        scores = self._get_scorer().score(jobs) if jobs else []
        for (i, paragraphs, n_pos), ll in zip(owners, scores, strict=True):
            phi = contrastive_potential(ll[:, :n_pos], ll[:, n_pos:], tau=args.potential_tau, clip=args.potential_clip)
            terms = shaping_terms(phi, beta=args.shaping_beta, gamma=args.shaping_gamma)
            values = token_shaping(terms, paragraphs.paragraph_of_token())
            shaping[i, : len(values)] = torch.from_numpy(values).to(shaping)
        shaping *= batch["completion_mask"].to(shaping.dtype)
        batch["advantages"] = (per_token + shaping).to(advantages.dtype)

        shaped = float(len(owners))
        self.log_ratio_metrics(
            {
                "contrastive/shaped_row_frac": (shaped, float(len(rows))),
                "contrastive/mean_abs_shaping": (shaping.abs().sum(), batch["completion_mask"].sum()),
                "contrastive/paragraphs_per_shaped_row": (float(sum(p.count for _, p, _ in owners)), shaped),
            },
            rollout.mode,
        )
        self.log_metric("contrastive/scoring_seconds", time.perf_counter() - started, rollout.mode)
        for name, value in (getattr(self._scorer, "last_stats", None) or {}).items() if jobs else ():
            self.log_metric(f"contrastive/scorer_{name}", float(value), rollout.mode)
        return batch
