r"""Contrastive potential advantage shaping (seed 000), on the Countdown base trainer.

Source: ``shared/seeds/000_2ea932ba632d9ce5.txt`` ("Contrastive potential advantage shaping"). GRPO gives
every token of a completion the same outcome advantage; this learner adds a per-paragraph term measuring how much
each paragraph moved a scorer model's belief towards the group's correct answers and away from its wrong ones.

For a group of G rollouts of prompt x:

1. Answer bank (:mod:`learners.answer_bank`): the submitted answers graded by the verifier, B+ correct, B− incorrect,
   deduplicated by canonical form; rollouts that hit the token budget contribute nothing; the ground truth a*
   optionally joins B+ (``ground_truth_mode``). If B+ or B− is empty the group keeps its plain GRPO advantages.
2. Paragraphs (:mod:`learners.paragraphs`): each completion's reasoning s_1 … s_|S| split at blank lines and every
   ``max_paragraph_len`` tokens (default 128, the seed's fix for the long-paragraph reward hack).
3. Scores (:mod:`learners.scoring`): ℓ_φ(a | x, s_1:n) = summed log-probability, under the scorer φ, of the tokens of
   ``a + "</solution>"`` written right after the prefix x, s_1:n and the bridge ``"</reasoning>\n<solution>"``,
   for every a ∈ B+ ∪ B− and n = 0 … |S| (n = 0 is the empty prefix, shared by the group).
4. Potential and shaping (:mod:`learners.potential`):

   .. math::
       \mathrm{LSE}_\tau(z) = \tau\log\Big(\frac1N\sum_i e^{z_i/\tau}\Big), \qquad
       \Phi_n = \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^+}
              - \mathrm{LSE}_\tau\{\ell_\phi(a\mid x,s_{1:n})\}_{a\in B^-},

   .. math::
       \bar\Phi_n = \mathrm{clip}(\Phi_n, -5, 5), \qquad
       A^{\mathrm{shape}}_n = \beta(\gamma\bar\Phi_n - \bar\Phi_{n-1}), \quad \beta = 0.1,\ \gamma = 0.99,

   and the advantage of every token t of paragraph n of rollout i becomes :math:`\hat A_i + A^{\mathrm{shape}}_n`
   (not divided by the paragraph's length). :math:`\hat A_i` is TRL's group-relative advantage.
   Φ̄ is the clipped potential (not normalised over the group); Φ̄_0 is the potential of the empty prefix.

The scorer φ is ``"frozen"`` (``scorer_model_name_or_path``, or by default a copy of the initial policy — the
seed's post-SFT checkpoint) or ``"moving"`` (the current policy, no gradient). Engines: ``"prefix_shared"`` (KV cache
built once per rollout, the default), ``"naive"`` (the reference), ``"vllm"`` (GPU: the policy's colocated vLLM
engine for a moving scorer, or a second engine on ``scorer_model_name_or_path`` for a frozen one).

The only change w.r.t. the base trainer is ``shape_batch`` (seam 1): it replaces the (B,) advantages by (B,T) ones.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from trl import GRPOConfig

from .answer_bank import GROUND_TRUTH_MODES, AnswerBank, build_answer_bank
from .base import CountdownGRPOTrainer, Rollout
from .paragraphs import split_paragraphs, token_texts
from .potential import contrastive_potential, shaping_terms, token_shaping
from .scoring import ENGINES, ScoringJob, answer_format, make_scorer

__all__ = ["ContrastiveConfig", "ContrastiveTrainer", "submitted_answer"]

SCORERS = ("frozen", "moving")


@dataclass
class ContrastiveConfig(GRPOConfig):
    r"""``GRPOConfig`` plus seed 000's shaping hyperparameters (names avoid GRPO's own ``beta``, the KL weight).

    Parameters:
        shaping_beta (`float`, defaults to 0.1): β, the scale of the shaping term.
        shaping_gamma (`float`, defaults to 0.99): γ, the PBRS-style discount.
        potential_tau (`float`, defaults to 1.0): τ of LSE_τ (not given in the seed; 1 = log mean probability).
        potential_clip (`float`, defaults to 5.0): Φ̄ = clip(Φ, −clip, clip).
        max_paragraph_len (`int`, defaults to 128): split a paragraph every this many tokens.
        ground_truth_mode (`str`, defaults to "never"): "never", "always" or "when_all_wrong" (a* joins B+).
        scorer (`str`, defaults to "frozen"): "frozen" or "moving".
        scorer_model_name_or_path (`str`, optional): the frozen scorer's checkpoint; default a copy of the
            initial policy.
        scorer_engine (`str`, defaults to "prefix_shared"): "prefix_shared", "naive" or "vllm".
        scorer_prefix_batch_size (`int`, defaults to 16): rollouts per prefix forward (prefix_shared).
        scorer_max_batch_tokens (`int`, defaults to 32768): token budget of one continuation batch (prefix_shared).
        scorer_kv_slack (`float`, defaults to 0.25): a continuation batch holds prefixes within (1 + slack) × its
            shortest one (prefix_shared).
        scorer_vllm_gpu_memory_utilization (`float`, defaults to 0.3): the frozen scorer's vLLM engine share.
    """

    shaping_beta: float = field(default=0.1, metadata={"help": "β: scale of the per-paragraph shaping term."})
    shaping_gamma: float = field(default=0.99, metadata={"help": "γ: discount of the potential difference."})
    potential_tau: float = field(default=1.0, metadata={"help": "τ of LSE_τ (> 0; inf = mean)."})
    potential_clip: float = field(default=5.0, metadata={"help": "Clip the potential to [-clip, clip]."})
    max_paragraph_len: int = field(default=128, metadata={"help": "Split paragraphs every this many tokens."})
    ground_truth_mode: str = field(default="never", metadata={"help": "never | always | when_all_wrong."})
    scorer: str = field(default="frozen", metadata={"help": "frozen (fixed model) | moving (current policy)."})
    scorer_model_name_or_path: str | None = field(
        default=None, metadata={"help": "Frozen scorer checkpoint; default: a copy of the initial policy."}
    )
    scorer_engine: str = field(default="prefix_shared", metadata={"help": "prefix_shared | naive | vllm."})
    scorer_prefix_batch_size: int = field(default=16, metadata={"help": "Rollouts per prefix forward pass."})
    scorer_max_batch_tokens: int = field(default=32768, metadata={"help": "Token budget of a continuation batch."})
    scorer_kv_slack: float = field(
        default=0.25, metadata={"help": "Prefix-length spread allowed within a continuation batch (prefix_shared)."}
    )
    scorer_vllm_gpu_memory_utilization: float = field(
        default=0.3, metadata={"help": "GPU memory share of the frozen scorer's vLLM engine."}
    )

    def __post_init__(self):
        super().__post_init__()
        if not self.potential_tau > 0:
            raise ValueError(f"potential_tau must be > 0, got {self.potential_tau}")
        if not self.potential_clip > 0:
            raise ValueError(f"potential_clip must be > 0, got {self.potential_clip}")
        if not 0.0 < self.shaping_gamma <= 1.0:
            raise ValueError(f"shaping_gamma must lie in (0, 1], got {self.shaping_gamma}")
        if self.max_paragraph_len < 1:
            raise ValueError(f"max_paragraph_len must be >= 1, got {self.max_paragraph_len}")
        if self.ground_truth_mode not in GROUND_TRUTH_MODES:
            raise ValueError(f"ground_truth_mode must be one of {GROUND_TRUTH_MODES}, got {self.ground_truth_mode!r}")
        if self.scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {SCORERS}, got {self.scorer!r}")
        if self.scorer_engine not in ENGINES:
            raise ValueError(f"scorer_engine must be one of {ENGINES}, got {self.scorer_engine!r}")
        if self.scorer_prefix_batch_size < 1 or self.scorer_max_batch_tokens < 1 or self.scorer_kv_slack < 0:
            raise ValueError("scorer_prefix_batch_size and scorer_max_batch_tokens must be >= 1, scorer_kv_slack >= 0")
        if self.scorer_engine == "vllm" and self.scorer == "frozen" and not self.scorer_model_name_or_path:
            raise ValueError("a frozen vLLM scorer needs scorer_model_name_or_path")


@dataclass
class _Row:
    """What shaping needs to know about one local rollout."""

    prompt_ids: list[int]
    completion_ids: list[int]
    answer: str | None
    correct: bool
    truncated: bool


def submitted_answer(completion: str, tag: str = "solution") -> str | None:
    """The answer the verifier grades (``countdown_env.answers.extract_answer``: the last complete tag block), but
    verbatim, whitespace included, so that it is scored as the policy wrote it; ``None`` if there is none."""
    from countdown_env.answers import extract_answer

    if extract_answer(completion, tag=tag) is None:
        return None
    end = completion.rfind(f"</{tag}>")
    return completion[completion.rfind(f"<{tag}>", 0, end) + len(tag) + 2 : end]


class ContrastiveTrainer(CountdownGRPOTrainer):
    """Seed 000's contrastive potential advantage shaping; see the module docstring for the equations.

    The only change w.r.t. the base trainer: ``shape_batch`` adds the per-paragraph shaping term to the advantages.
    """

    _tag_names = ["trl", "contrastive-shaping", "countdown"]

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, ContrastiveConfig, "contrastive")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
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
            scorer = copy.deepcopy(policy)
        scorer.to(self.accelerator.device).eval().requires_grad_(False)
        return scorer

    def _get_scorer(self):
        args = self.args
        if args.scorer_engine == "vllm":
            if self._scorer is None:
                self._scorer = make_scorer("vllm", llm=self._vllm_llm())
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
        from vllm import LLM

        return LLM(
            model=args.scorer_model_name_or_path,
            enable_prefix_caching=True,
            gpu_memory_utilization=args.scorer_vllm_gpu_memory_utilization,
        )

    # ------------------------------------------------------------------------------------------- rows
    def _local_rows(self, batch: dict, rollout: Rollout) -> list[_Row]:
        cfg = self.reward_config
        answer_tag = getattr(cfg, "answer_tag", "solution")
        prompt_ids, prompt_mask = batch["prompt_ids"].tolist(), batch["prompt_mask"].tolist()
        completion_ids, completion_mask = batch["completion_ids"].tolist(), batch["completion_mask"].tolist()
        trajectories = rollout.trajectories
        if trajectories is None and rollout.puzzles is None:
            raise ValueError("contrastive shaping grades answers: the dataset needs 'numbers' and 'target' columns")
        eos = set(self.eos_token_ids)
        rows = []
        for i in range(len(prompt_ids)):
            prompt = [t for t, m in zip(prompt_ids[i], prompt_mask[i], strict=True) if m]
            completion = [t for t, m in zip(completion_ids[i], completion_mask[i], strict=True) if m]
            if trajectories is not None:
                traj = trajectories[i]
                text, correct, truncated = traj.completion_text, bool(traj.verification.correct), bool(traj.truncated)
            else:
                from countdown_env.verifier import verify_completion

                text = self.processing_class.decode(completion, skip_special_tokens=True)
                verdict = verify_completion(
                    text,
                    rollout.puzzles[i],
                    tag=answer_tag,
                    use_all_numbers=getattr(cfg, "use_all_numbers", False),
                    integer_intermediates=getattr(cfg, "integer_intermediates", False),
                )
                correct, truncated = bool(verdict.correct), not any(t in eos for t in completion)
            rows.append(_Row(prompt, completion, submitted_answer(text, answer_tag), correct, truncated))
        return rows

    def _ground_truth(self, rollout: Rollout, local_index: int) -> str | None:
        row = rollout.inputs[local_index]
        if row.get("solution"):
            return str(row["solution"])
        puzzle = rollout.puzzles[local_index] if rollout.puzzles is not None else None
        if puzzle is None:
            return None
        if puzzle.key not in self._ground_truths:
            from countdown_env.solver import solve

            cfg = self.reward_config
            self._ground_truths[puzzle.key] = solve(
                puzzle,
                use_all_numbers=getattr(cfg, "use_all_numbers", False),
                integer_intermediates=getattr(cfg, "integer_intermediates", False),
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
        if rollout.mode != "train":
            return batch
        args = self.args
        started = time.perf_counter()
        rows = self._local_rows(batch, rollout)
        banks = self._banks(rows, rollout)
        groups = rollout.group_index.tolist()
        cfg = self.reward_config
        reasoning_tag = getattr(cfg, "reasoning_tag", "reasoning")
        answer_tag = getattr(cfg, "answer_tag", "solution")
        bridge, encode_answer = answer_format(self.processing_class, reasoning_tag, answer_tag)

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
            answers = tuple(encode_answer(a) for a in bank.answers)
            jobs.append(ScoringJob(tuple(row.prompt_ids + row.completion_ids), cuts, bridge, answers))
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

        stats = torch.tensor(
            [
                float(len(owners)),
                float(len(rows)),
                shaping.abs().sum().item(),
                batch["completion_mask"].sum().item(),
                float(sum(p.count for _, p, _ in owners)),
            ],
            device=advantages.device,
        )
        totals = self.accelerator.gather(stats.unsqueeze(0)).sum(dim=0).tolist()
        self.log_metric("contrastive/shaped_row_frac", totals[0] / max(totals[1], 1.0), rollout.mode)
        self.log_metric("contrastive/mean_abs_shaping", totals[2] / max(totals[3], 1.0), rollout.mode)
        self.log_metric("contrastive/paragraphs_per_shaped_row", totals[4] / max(totals[0], 1.0), rollout.mode)
        self.log_metric("contrastive/scoring_seconds", time.perf_counter() - started, rollout.mode)
        return batch
