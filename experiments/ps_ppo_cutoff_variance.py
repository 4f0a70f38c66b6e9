r"""E1 (docs/experiments.md): does PS-PPO's optimized cutoff distribution give the lowest gradient variance?

A Monte Carlo measurement, no training. The shipped warm start generates G completions for each of the first
``--prompts`` puzzles of the seed-0 training split of its task (the split ``countdown compare`` trains on: 2000
puzzles drawn with seed 0, the ``tiny_n3`` eval set excluded), at T = 0.8 up to ``--max-new-tokens`` tokens, once
per batch (generation seeds 0, 1, ...), shared by every strategy and budget. The task's verifier scores them (the
env's ``score_trajectories`` with the task's reward settings, as the base trainer's env reward does) and the
advantages are TRL's ``grpo`` ones, group mean-centred and std-scaled: ``A_i = (r_i − mean_g) / (std_g + 1e-4)``
(Bessel-corrected std, as TRL's ``nanstd``).

Survival functions. For every strategy in ("optimized", "uniform", "time_prior", "heuristic") and budget B the
per-group survival function ξ is computed exactly as ``PSPPOTrainer.shape_batch`` does, with
``PSPPOConfig``'s defaults (floor ``min_survival = 1e-3`` lowered to half the spread budget when needed,
``first_token_always``, top-k 16, proxy batch 8) and success = the verifier's verdict (correct and not cut at the
budget). ``shape_batch`` needs a trainer (its gather, verdict and logging helpers), so :func:`survival_rows`
replicates it line by line for one process; on the first batch every (strategy, budget) is also run through a real
``PSPPOTrainer.shape_batch`` and the two must agree (``trainer_check`` in ``results.json``).

Estimator. For each (strategy, B), R = ``--draws`` independent cutoff draws with
:func:`learners.ps_ppo.survival.sample_cutoff_weights` (one uniform per row, ``H_i`` with ``P(H_i ≥ t) = ξ_t``),
each giving the PS-PPO gradient estimate, the gradient with respect to every model parameter of

    L = −(1/N) Σ_i Σ_t w_{i,t} A_i log π(y_{i,t}),     w_{i,t} = 1[t ≤ H_i] / ξ_t,

where log π is the log-probability of the sampled token under the temperature-scaled policy (logits / 0.8, as TRL
computes it). At ratio 1 (old policy = current, one iteration) this is the policy-gradient part of TRL's ``grpo``
loss with PS-PPO's weights; the normaliser is **fixed** at N = the number of completion tokens of the whole batch
(untruncated), the same for every draw and strategy, so the estimates are comparable and exactly unbiased:
E_H[w_{i,t}] = 1. (TRL's ``grpo`` itself divides row i by its own untruncated length L_i; the trainer's
advantage-weighted path for it keeps that normaliser fixed too. Here one constant N is used instead, a
``dapo``-style normaliser; rows are weighted 1/N rather than 1/(rows·L_i).) ``skip_zero_advantage`` is off: every
row draws a cutoff and counts in the kept-token figures; rows with A_i = 0 add exactly nothing to the gradient, so
their forward is skipped. The full-token gradient g* (w ≡ 1) is the unbiasedness reference.

Figures per (batch, B, strategy): V = mean_r ‖g_r − ḡ‖² (the trace of the estimator's covariance, up to the factor
(R−1)/R); the unbiasedness check ‖ḡ − g*‖ ≤ 3·sqrt(V/R); V/V_uniform with a 95 % percentile bootstrap interval
over the draws (1000 resamples of the draw indices, each strategy's draws resampled independently, the ratio taken
within each resample; V of a resample comes from the centred Gram matrix of the R gradients, so no gradient is
kept); the rank of V among the strategies; the mean kept tokens per row (its expectation Σ_{t ≤ L_i} ξ_t is B for
a row as long as its group's longest, less for shorter rows) and the share of loss tokens truncated.

Speed (the numbers are exact, the shortcuts only skip work): one draw's gradient is one forward and one backward;
the prompt (identical for the G rows of a group) is run once per group and its key/value cache is shared by the
rows (autograd flows through it), and each row's completion is run only up to its cutoff H_i, rows sorted into at
most 4 length buckets (:func:`learners.core.prefix_batches.plan_buckets`). The first batch's g* is also computed
with one plain full-batch forward as a check of the cached path (``cache_check_rel_err``). Torch runs on one thread.

    python experiments/ps_ppo_cutoff_variance.py --out experiments/results/ps_ppo_cutoff_variance
    python experiments/ps_ppo_cutoff_variance.py --out /tmp/e1 --quick          # a smoke run of seconds

Output (``--out DIR``): ``results.json`` (settings, versions, the command, per batch its statistics, per cell every
figure, the trainer check, the decision), ``summary.md`` (a table per budget, the pre-registered decision rule
applied and the verdict), ``variance.png`` (V/V_uniform per strategy and budget with the intervals). Reruns on one
machine reproduce the figures (fixed seeds for generation, cutoffs and bootstrap); across machines CPU arithmetic
may differ in the last digits and the sampled completions with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from experiments._sampled_groups import (  # noqa: E402
    SPLIT_SEED,
    TEMPERATURE,
    TRAIN_SIZE,
    Batch,
    generate_batch,
    learner_trainer,
    load_setting,
    shape_ps_ppo,
)
from learners.ps_ppo.config import CUTOFF_STRATEGIES, PSPPOConfig  # noqa: E402

STRATEGIES = CUTOFF_STRATEGIES  # ("optimized", "uniform", "time_prior", "heuristic")
REFERENCE = "uniform"
MAX_BUCKETS = 4
SAMPLER_BATCH = 64  # rows per generate call (fixed: the sampled tokens depend on it)

FULL = dict(draws=256, batches=3, budgets=[16, 32], prompts=16, group_size=8, max_new_tokens=128, bootstrap=1000)
QUICK = dict(draws=8, batches=1, budgets=[16], prompts=4, group_size=4, max_new_tokens=128, bootstrap=200)

# PSPPOConfig's defaults: the design every strategy is solved with (read from the dataclass, not copied)
_DEFAULTS = {
    f.name: f.default
    for f in dataclasses.fields(PSPPOConfig)
    if f.name in ("min_survival", "first_token_always", "uncertainty_top_k", "proxy_batch_size")
}


# ------------------------------------------------------------------------------------- survival functions
def survival_rows(batch: Batch, model, strategy: str, budget: float) -> torch.Tensor:
    """(rows, T) float32 survival ξ of every row: ``PSPPOTrainer.shape_batch`` (learners/ps_ppo/trainer.py, the
    body of ``shape_batch`` from ``completion_mask = batch["completion_mask"]`` to ``batch["cutoff_survival"] =``)
    for one process (``gather_rows`` and ``rollout.local`` are identities there), with PSPPOConfig's defaults and
    success = the verifier's verdict (``rollout.successes()`` for rows that carry puzzles)."""
    from learners.core.prefix_batches import kept_lengths
    from learners.ps_ppo.design_weights import design_weights, head_statistics, reward_uncertainty_bound
    from learners.ps_ppo.design_weights import strategy_weights as weights_of
    from learners.ps_ppo.survival import survival_floor, survival_probabilities

    completion_mask = batch.completion_mask
    width = completion_mask.size(1)
    lengths = kept_lengths(completion_mask)
    k = batch.group_size
    group_max = lengths.view(-1, k).amax(dim=1)
    group_lengths = group_max.tolist()
    success = batch.success
    proxy_weights = None
    mixed = success.view(-1, k).any(dim=1) & ~success.view(-1, k).all(dim=1)
    proxied = mixed & (group_max > budget)
    needs_proxies = strategy in ("optimized", "heuristic")
    if needs_proxies and proxied.any():
        rows_needed = proxied.repeat_interleave(k) & (lengths > 0)
        index = rows_needed.nonzero().squeeze(1)
        stats = head_statistics(
            model,
            batch.prompt_ids[index],
            batch.prompt_mask[index],
            batch.completion_ids[index],
            completion_mask[index],
            temperature=TEMPERATURE,
            top_k=_DEFAULTS["uncertainty_top_k"],
            batch_size=_DEFAULTS["proxy_batch_size"],
        )
        full = [torch.zeros(completion_mask.size(0), *x.shape[1:], dtype=x.dtype) for x in stats]
        for target, values in zip(full, stats, strict=True):
            target[index] = values
        proxy, top_probs, top_ids = full
        alive = torch.arange(proxy.size(1)).unsqueeze(0) < lengths[:, None]
        uncertainty = reward_uncertainty_bound(top_probs, top_ids, success, alive.float(), k)
        proxy_weights = design_weights(proxy, uncertainty, alive.float(), k).double().cpu().numpy()

    first_token_always, min_survival = _DEFAULTS["first_token_always"], _DEFAULTS["min_survival"]
    survival = np.ones((len(group_lengths), max(max(group_lengths), 1)))
    for g, length in enumerate(group_lengths):
        if length <= budget:
            continue
        if needs_proxies and proxy_weights is None:
            w = np.zeros(length)
        else:
            w = weights_of(strategy, length, None if proxy_weights is None else proxy_weights[g])
        floor = survival_floor(budget, length, min_survival, first_token_always)
        survival[g, :length] = survival_probabilities(w, budget, floor=floor, first_token_always=first_token_always)
    rows = torch.as_tensor(survival, dtype=torch.float32).repeat_interleave(k, dim=0)
    local = torch.ones(rows.size(0), width)
    local[:, : min(width, rows.size(1))] = rows[:, :width]
    return local


def trainer_check(batch: Batch, model_dir, tokenizer, task, budgets, survivals, max_new_tokens: int) -> dict:
    """Run every (strategy, budget) of ``batch`` through a real ``PSPPOTrainer.shape_batch`` (on its own copy of
    the weights, scoring the rows itself) and compare with :func:`survival_rows`; raises on a mismatch."""
    k = batch.group_size
    out = {}
    with learner_trainer(
        "ps_ppo", model_dir, tokenizer, task, batch.puzzles[::k], group_size=k, max_new_tokens=max_new_tokens,
        skip_zero_advantage=False, budget=float(budgets[0]),
    ) as trainer:  # fmt: skip
        for budget in budgets:
            for strategy in STRATEGIES:
                theirs = shape_ps_ppo(trainer, batch, budget, strategy)
                ours = survivals[(budget, strategy)]
                diff = float((theirs - ours).abs().max())
                out[f"{strategy}@{budget}"] = diff
                if diff > 1e-6:
                    raise RuntimeError(f"survival of {strategy} at B={budget} differs from the trainer's by {diff}")
    return out


# ----------------------------------------------------------------------------------------------- gradients
class GradientEngine:
    """Flattened gradient of ``Σ_{i,t} c_{i,t} log π(y_{i,t})`` for a coefficient matrix c (rows, T), one forward
    and one backward: each group's prompt once (its key/value cache shared by the group's rows), each row only up
    to its last non-zero coefficient, rows in ≤ ``MAX_BUCKETS`` length buckets; rows with c ≡ 0 are not run."""

    def __init__(self, model, batch: Batch):
        from transformers import DynamicCache

        self.cache_class = DynamicCache
        self.model = model
        self.batch = batch
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.size = sum(p.numel() for p in self.params)
        k = batch.group_size
        self.group_prompt = batch.prompt_ids[::k]
        self.group_mask = batch.prompt_mask[::k]
        self.row_group = torch.arange(batch.completion_ids.size(0)) // k

    def __call__(self, coef: torch.Tensor) -> torch.Tensor:
        from learners.core.prefix_batches import kept_lengths, plan_buckets

        batch, model = self.batch, self.model
        widths = kept_lengths(coef)
        buckets = plan_buckets(widths.tolist(), prompt_width=4, max_buckets=MAX_BUCKETS)
        if not buckets:
            return torch.zeros(self.size)
        active = torch.tensor(sorted(i for rows, _ in buckets for i in rows))
        groups = torch.unique(self.row_group[active])
        slot = torch.full((int(self.row_group.max()) + 1,), -1, dtype=torch.long)
        slot[groups] = torch.arange(groups.numel())
        prompt = model(
            input_ids=self.group_prompt[groups],
            attention_mask=self.group_mask[groups],
            use_cache=True,
            logits_to_keep=1,
        )
        first = (prompt.logits[:, -1].float() / TEMPERATURE).log_softmax(-1)  # predicts completion token 1
        layers = [(layer.keys, layer.values) for layer in prompt.past_key_values.layers]
        total = 0.0
        for rows, width in buckets:
            index = torch.tensor(rows)
            at = slot[self.row_group[index]]
            ids = batch.completion_ids[index, :width]
            c = coef[index, :width].to(first.dtype)
            logps = first[at].gather(-1, ids[:, :1])
            if width > 1:
                cache = self.cache_class(ddp_cache_data=[(k[at], v[at]) for k, v in layers], config=model.config)
                attention = torch.cat([self.group_mask[groups][at], batch.completion_mask[index, : width - 1]], dim=1)
                logits = model(
                    input_ids=ids[:, :-1], attention_mask=attention, past_key_values=cache, use_cache=True
                ).logits
                rest = (logits.float() / TEMPERATURE).log_softmax(-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
                logps = torch.cat([logps, rest], dim=1)
            total = total + (c * logps).sum()
        grads = torch.autograd.grad(total, self.params)
        return torch.cat([g.reshape(-1) for g in grads])

    def plain(self, coef: torch.Tensor) -> torch.Tensor:
        """The same gradient from one plain forward of the whole batch (prompt + completion, no cache): a check."""
        batch, model = self.batch, self.model
        width = batch.completion_ids.size(1)
        input_ids = torch.cat([batch.prompt_ids, batch.completion_ids], dim=1)
        attention = torch.cat([batch.prompt_mask, batch.completion_mask], dim=1)
        logits = model(input_ids=input_ids, attention_mask=attention, logits_to_keep=width + 1).logits[:, :-1]
        logps = (logits.float() / TEMPERATURE).log_softmax(-1).gather(-1, batch.completion_ids[..., None]).squeeze(-1)
        grads = torch.autograd.grad((coef * logps).sum(), self.params)
        return torch.cat([g.reshape(-1) for g in grads])


def centred_gram(gradients: torch.Tensor, chunk: int = 131072) -> tuple[np.ndarray, torch.Tensor]:
    """(R, R) float64 Gram matrix of the centred gradients and their float64 mean."""
    mean = torch.cat([gradients[:, s : s + chunk].double().mean(dim=0) for s in range(0, gradients.size(1), chunk)])
    gram = torch.zeros(gradients.size(0), gradients.size(0), dtype=torch.float64)
    for start in range(0, gradients.size(1), chunk):
        centred = gradients[:, start : start + chunk].double() - mean[start : start + chunk]
        gram += centred @ centred.T
    return gram.numpy(), mean


def resampled_variance(gram: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """V of each resample (rows of ``counts``: how often each draw is taken; each row sums to R):
    mean_r ‖g_r − ḡ*‖² = Σ_r c_r K_rr / R − cᵀKc / R² (translation invariant, so the centred Gram K serves)."""
    r = gram.shape[0]
    return counts @ np.diag(gram) / r - np.einsum("br,rs,bs->b", counts, gram, counts) / r**2


def run_cell(engine, survival, batch: Batch, draws: int, seed: int, norm: float, bar) -> dict:
    """R draws of cutoffs for one (strategy, budget): gradients, V, the unbiasedness figures, kept tokens."""
    from learners.ps_ppo.survival import sample_cutoff_weights

    generator = torch.Generator().manual_seed(seed)
    lengths = batch.lengths
    gradients = torch.empty(draws, engine.size, dtype=torch.float32)
    kept_rows = torch.zeros(draws, lengths.numel())
    scale = -batch.advantages[:, None] / norm
    for r in range(draws):
        weights = sample_cutoff_weights(survival, lengths, generator)
        kept_rows[r] = ((weights > 0) & batch.completion_mask.bool()).sum(dim=1).float()
        gradients[r] = engine(scale * weights)
        bar.update(1)
    gram, mean = centred_gram(gradients)
    del gradients
    valid = torch.arange(survival.size(1))[None, :] < lengths[:, None]
    expected_kept = (survival * valid).sum(dim=1)
    active = valid & (batch.advantages != 0)[:, None]  # the tokens that carry gradient
    return dict(
        gram=gram,
        mean=mean,
        V=float(np.trace(gram) / draws),
        largest_draw_share_of_V=float(np.diag(gram).max() / max(np.trace(gram), 1e-300)),
        min_survival_on_gradient_tokens=float(survival[active].min()) if active.any() else 1.0,
        share_of_gradient_tokens_below_0_01=float((survival[active] < 0.01).float().mean()) if active.any() else 0.0,
        mean_kept_tokens_per_row=float(kept_rows.mean()),
        expected_kept_tokens_per_row=float(expected_kept.mean()),
        max_row_expected_kept=float(expected_kept.max()),
        truncated_token_share=float(1.0 - kept_rows.sum(dim=1).mean() / lengths.sum()),
    )


# ------------------------------------------------------------------------------------------------ decision
def decide(cells: list[dict]) -> dict:
    """The pre-registered rule on the (batch, budget) cells (see docs/experiments.md, E1)."""
    valid = [c for c in cells if c["valid"]]
    optimized_lowest = sum(c["lowest"] == "optimized" for c in valid)
    separated = sum(c["optimized_separated"] for c in valid if c["lowest"] == "optimized")
    wins = {s: sum(c["lowest"] == s for c in valid) for s in STRATEGIES}
    others = {s: n for s, n in wins.items() if s != "optimized"}
    n = len(cells)
    need = math.ceil(4 * n / 6)  # 4 of 6 in the protocol's 6 cells
    if len(valid) == n and optimized_lowest == n and separated >= need:
        verdict = "reproduced"
    elif max(others.values(), default=0) >= need:
        verdict = "not reproduced"
    else:
        verdict = "inconclusive"
    # the looser reading of "another strategy has the lowest V in 4 or more cells": any other strategies together
    looser = "not reproduced" if verdict == "inconclusive" and sum(others.values()) >= need else verdict
    return dict(
        verdict=verdict,
        verdict_if_other_strategies_pooled=looser,
        cells=n,
        valid_cells=len(valid),
        optimized_lowest=optimized_lowest,
        optimized_lowest_and_separated=separated,
        lowest_counts=wins,
        threshold=need,
    )


def evaluate_cells(raw: dict, gstar: dict, draws: int, n_boot: int, boot_seed: int) -> list[dict]:
    """Per (batch, budget): V, V/V_uniform with bootstrap intervals, ranks, the unbiasedness check."""
    cells = []
    for (seed, budget), per_strategy in raw.items():
        rng = np.random.default_rng([boot_seed, seed, int(budget)])
        boots = {}
        for strategy in STRATEGIES:
            index = rng.integers(0, draws, size=(n_boot, draws))
            counts = np.zeros((n_boot, draws))
            np.add.at(counts, (np.arange(n_boot)[:, None], index), 1.0)
            boots[strategy] = resampled_variance(per_strategy[strategy]["gram"], counts)
        ref = per_strategy[REFERENCE]["V"]
        order = sorted(STRATEGIES, key=lambda s: per_strategy[s]["V"])
        rows = {}
        for strategy in STRATEGIES:
            cell = per_strategy[strategy]
            ratio_boot = boots[strategy] / boots[REFERENCE]
            bias = float((cell["mean"] - gstar[seed]).norm())
            se = math.sqrt(cell["V"] / draws)
            rows[strategy] = dict(
                V=cell["V"],
                V_ci=[float(x) for x in np.percentile(boots[strategy], [2.5, 97.5])],
                ratio=cell["V"] / ref,
                ratio_ci=[float(x) for x in np.percentile(ratio_boot, [2.5, 97.5])],
                rank=order.index(strategy) + 1,
                bias_norm=bias,
                three_se=3 * se,
                bias_over_se=bias / se if se > 0 else float("nan"),
                unbiased_pass=bool(bias <= 3 * se),
                mean_grad_norm=float(cell["mean"].norm()),
                **{
                    k: cell[k]
                    for k in (
                        "mean_kept_tokens_per_row",
                        "expected_kept_tokens_per_row",
                        "max_row_expected_kept",
                        "truncated_token_share",
                        "largest_draw_share_of_V",
                        "min_survival_on_gradient_tokens",
                        "share_of_gradient_tokens_below_0_01",
                    )
                },
            )
        opt_upper = rows["optimized"]["ratio_ci"][1]
        separated = all(opt_upper < rows[s]["ratio_ci"][0] for s in STRATEGIES if s != "optimized")
        p_lower = {s: float(np.mean(boots["optimized"] < boots[s])) for s in STRATEGIES if s != "optimized"}
        cells.append(
            dict(
                batch_seed=seed,
                budget=budget,
                strategies=rows,
                lowest=order[0],
                order=order,
                optimized_separated=bool(separated),
                valid=all(r["unbiased_pass"] for r in rows.values()),
                bootstrap_p_optimized_below=p_lower,
            )
        )
    return cells


# ------------------------------------------------------------------------------------------------- outputs
def fmt(x: float) -> str:
    return f"{x:.3g}"


def summary_markdown(result: dict) -> str:
    s, cells, d = result["settings"], result["cells"], result["decision"]
    lines = [
        "# E1: PS-PPO cutoff strategies, gradient variance at equal budget (Monte Carlo)",
        "",
        f"Command: `{result['command']}`  ",
        f"Date: {result['date']}; runtime {result['runtime_seconds'] / 60:.1f} min on {result['machine']}.",
        "",
        f"Setting: the shipped warm start, first {s['prompts']} prompts of the seed-{SPLIT_SEED} training split "
        f"x G = {s['group_size']} at T = {TEMPERATURE}, up to {s['max_new_tokens']} tokens; batches (generation "
        f"seeds) {s['batch_seeds']}; R = {s['draws']} cutoff draws per strategy; bootstrap {s['bootstrap']} "
        "resamples of the draws. Loss: −(1/N) Σ w A log π with N = the batch's completion tokens (fixed), "
        "skip_zero_advantage off. V = mean_r ‖g_r − ḡ‖²; unbiased: ‖ḡ − g*‖ ≤ 3·sqrt(V/R). "
        "Gradient tokens: the completion tokens of rows with A ≠ 0.",
        "",
        "| batch | groups mixed | pass rate | completion tokens (mean, min-max) | ‖g*‖ | V_uniform / ‖g*‖² |",
        "|---|---|---|---|---|---|",
    ]
    for b in result["batches"]:
        v_u = [c["strategies"][REFERENCE]["V"] for c in cells if c["batch_seed"] == b["seed"]]
        rel = ", ".join(fmt(v / b["gstar_norm"] ** 2) for v in v_u)
        lines.append(
            f"| {b['seed']} | {b['mixed_groups']}/{b['groups']} | {b['pass_rate']:.3f} | "
            f"{b['mean_length']:.1f} ({b['min_length']}-{b['max_length']}) | {fmt(b['gstar_norm'])} | {rel} |"
        )
    for budget in s["budgets"]:
        lines += [
            "",
            f"## B = {budget}",
            "",
            "| batch | strategy | V | V/V_uniform [95 % CI] | rank | ‖ḡ−g*‖ / SE (≤ 3) | mean kept tokens/row "
            "(expected) | loss tokens truncated | gradient tokens with ξ < 0.01 | largest draw's share of V |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for cell in (c for c in cells if c["budget"] == budget):
            for strategy in STRATEGIES:
                r = cell["strategies"][strategy]
                ci = f"[{r['ratio_ci'][0]:.3f}, {r['ratio_ci'][1]:.3f}]"
                check = f"{r['bias_over_se']:.2f} {'pass' if r['unbiased_pass'] else 'FAIL'}"
                lines.append(
                    f"| {cell['batch_seed']} | {strategy} | {fmt(r['V'])} | {r['ratio']:.3f} {ci} | {r['rank']} | "
                    f"{check} | {r['mean_kept_tokens_per_row']:.2f} ({r['expected_kept_tokens_per_row']:.2f}) | "
                    f"{r['truncated_token_share']:.3f} | {r['share_of_gradient_tokens_below_0_01']:.3f} | "
                    f"{r['largest_draw_share_of_V']:.3f} |"
                )
    lines += [
        "",
        "## Decision (pre-registered rule)",
        "",
        "*Reproduced* if `optimized` has the lowest V in all 6 (batch, budget) cells and its interval's upper end is "
        "below every other strategy's lower end in at least 4 of the 6; *not reproduced* if another strategy has the "
        "lowest V in 4 or more cells; otherwise *inconclusive*. A failed unbiasedness check voids the cell. "
        "Intervals are those of V/V_uniform (uniform's is the point 1).",
        "",
        "| batch | B | valid | lowest V | order (low to high) | optimized's upper end below all others' lower ends |",
        "|---|---|---|---|---|---|",
    ]
    for c in cells:
        lines.append(
            f"| {c['batch_seed']} | {c['budget']} | {'yes' if c['valid'] else 'VOID'} | {c['lowest']} | "
            f"{' < '.join(c['order'])} | {'yes' if c['optimized_separated'] else 'no'} |"
        )
    heavy = [
        f"{strategy} (batch {c['batch_seed']}, B={c['budget']}: {r['largest_draw_share_of_V']:.2f})"
        for c in cells
        for strategy, r in c["strategies"].items()
        if r["largest_draw_share_of_V"] > 0.1
    ]
    if heavy:
        lines += [
            "",
            "One draw carries more than 10 % of V (out of R draws; 1/ξ weights up to 1/floor on the tokens the design "
            "puts at the floor), so V and its interval rest on a few rare draws in: " + "; ".join(heavy) + ".",
        ]
    counts = ", ".join(f"{k} {v}" for k, v in d["lowest_counts"].items())
    lines += [
        "",
        f"Valid cells {d['valid_cells']}/{d['cells']}; lowest V: {counts}; optimized lowest and separated in "
        f"{d['optimized_lowest_and_separated']}.",
        "",
        f"**Verdict: {d['verdict']}.** {result['verdict_reason']}",
        "",
    ]
    if d["verdict_if_other_strategies_pooled"] != d["verdict"]:
        lines += [
            f'(Read as "other strategies together have the lowest V in 4 or more cells", the rule gives '
            f"*{d['verdict_if_other_strategies_pooled']}*.)",
            "",
        ]
    lines += [
        f"Trainer check (max |ξ_script − ξ_PSPPOTrainer.shape_batch| on batch {s['batch_seeds'][0]}, every "
        f"strategy and budget): {fmt(max(result['trainer_check'].values()))}; cached-prompt gradient vs one "
        f"plain forward (relative error of g*): {fmt(result['cache_check_rel_err'])}.",
        "",
    ]
    return "\n".join(lines)


def verdict_reason(decision: dict, cells: list[dict]) -> str:
    d = decision
    if d["verdict"] == "reproduced":
        return (
            f"optimized has the lowest V in all {d['cells']} cells and is separated from every other strategy in "
            f"{d['optimized_lowest_and_separated']} (≥ {d['threshold']} needed)."
        )
    if d["verdict"] == "not reproduced":
        best = max((s for s in STRATEGIES if s != "optimized"), key=lambda s: d["lowest_counts"][s])
        return f"{best} has the lowest V in {d['lowest_counts'][best]} of {d['cells']} cells (≥ {d['threshold']})."
    parts = []
    if d["valid_cells"] < d["cells"]:
        parts.append(f"{d['cells'] - d['valid_cells']} cell(s) void (unbiasedness check failed)")
    if d["optimized_lowest"] < d["cells"]:
        parts.append(f"optimized is lowest in only {d['optimized_lowest']} of {d['cells']} cells")
    else:
        parts.append(
            f"optimized is lowest everywhere but separated in only {d['optimized_lowest_and_separated']} "
            f"(< {d['threshold']})"
        )
    parts.append(f"no other strategy is lowest in {d['threshold']} or more")
    return "; ".join(parts) + "."


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    budgets, seeds = result["settings"]["budgets"], result["settings"]["batch_seeds"]
    fig, axes = plt.subplots(1, len(budgets), figsize=(5.5 * len(budgets), 4.2), squeeze=False, sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, budget in zip(axes[0], budgets, strict=True):
        for j, seed in enumerate(seeds):
            cell = next(c for c in result["cells"] if c["budget"] == budget and c["batch_seed"] == seed)
            x = np.arange(len(STRATEGIES)) + (j - (len(seeds) - 1) / 2) * 0.18
            y = np.array([cell["strategies"][s]["ratio"] for s in STRATEGIES])
            lo = np.array([cell["strategies"][s]["ratio_ci"][0] for s in STRATEGIES])
            hi = np.array([cell["strategies"][s]["ratio_ci"][1] for s in STRATEGIES])
            ax.errorbar(
                x, y, yerr=[y - lo, hi - y], fmt="o", capsize=3, color=colors[j % len(colors)], label=f"batch {seed}"
            )
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(STRATEGIES)), STRATEGIES)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(f"B = {budget}")
        ax.grid(alpha=0.3, which="both", axis="y")
    axes[0][0].set_ylabel("V / V_uniform (95 % bootstrap CI over draws)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("E1: PS-PPO gradient variance by cutoff strategy (shipped warm start)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def relative_command(argv: list[str]) -> str:
    """The command as typed, with paths under the working directory made relative (no machine paths)."""
    cwd = Path.cwd().resolve()
    out = []
    for arg in argv:
        p = Path(arg)
        if p.is_absolute():
            try:
                arg = str(p.resolve().relative_to(cwd))
            except ValueError:
                arg = "<outside the repository>"
        out.append(arg)
    script = Path(__file__).resolve()
    try:
        name = str(script.relative_to(cwd))
    except ValueError:
        name = "experiments/ps_ppo_cutoff_variance.py"
    return shlex.join(["python", name, *out])


# ---------------------------------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", required=True, type=Path, help="output folder (results.json, summary.md, png)")
    parser.add_argument("--draws", type=int, help=f"R, cutoff draws per strategy (default {FULL['draws']})")
    parser.add_argument("--batches", type=int, help=f"generation batches, seeds 0..n-1 (default {FULL['batches']})")
    parser.add_argument("--budgets", type=float, nargs="+", help=f"budgets B (default {FULL['budgets']})")
    parser.add_argument("--prompts", type=int, help=f"prompts per batch (default {FULL['prompts']})")
    parser.add_argument("--group-size", type=int, help=f"G, completions per prompt (default {FULL['group_size']})")
    parser.add_argument("--max-new-tokens", type=int, help=f"generation budget (default {FULL['max_new_tokens']})")
    parser.add_argument("--bootstrap", type=int, help=f"bootstrap resamples (default {FULL['bootstrap']})")
    parser.add_argument("--quick", action="store_true", help=f"smoke run of seconds: {QUICK}")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    for key, value in sizes.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.budgets = [int(b) if float(b).is_integer() else float(b) for b in args.budgets]
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)
    started = time.perf_counter()

    import transformers
    from tqdm import tqdm

    from learners.pipeline.compare.settings import EVAL_SET

    transformers.utils.logging.disable_progress_bar()
    setting = load_setting(args.prompts)
    model, tokenizer, task, puzzles, prompt_ids = (
        setting.model,
        setting.tokenizer,
        setting.task,
        setting.puzzles,
        setting.prompt_ids,
    )
    seeds = list(range(args.batches))
    total = len(seeds) * len(args.budgets) * len(STRATEGIES) * args.draws
    bar = tqdm(total=total, desc="cutoff draws", unit="draw", file=sys.stderr, dynamic_ncols=True)

    raw, gstar, batches, checks = {}, {}, [], {}
    cache_check = None
    for seed in seeds:
        batch = generate_batch(
            model,
            tokenizer,
            task,
            puzzles,
            prompt_ids,
            group_size=args.group_size,
            max_new_tokens=args.max_new_tokens,
            seed=seed,
            sampler_batch=SAMPLER_BATCH,
        )
        survivals = {(b, s): survival_rows(batch, model, s, b) for b in args.budgets for s in STRATEGIES}
        if seed == seeds[0]:
            checks = trainer_check(
                batch, setting.model_dir, tokenizer, task, args.budgets, survivals, args.max_new_tokens
            )
        engine = GradientEngine(model, batch)
        norm = float(batch.completion_mask.sum())
        full_coef = -batch.advantages[:, None] / norm * batch.completion_mask.float()
        gstar[seed] = engine(full_coef).double()
        if seed == seeds[0]:
            plain = engine.plain(full_coef).double()
            cache_check = float((plain - gstar[seed]).norm() / plain.norm().clamp(min=1e-300))
        k = args.group_size
        mixed = batch.success.view(-1, k).any(dim=1) & ~batch.success.view(-1, k).all(dim=1)
        lengths = batch.lengths
        batches.append(
            dict(
                seed=seed,
                groups=len(puzzles),
                mixed_groups=int(mixed.sum()),
                pass_rate=float(batch.success.float().mean()),
                mean_length=float(lengths.float().mean()),
                min_length=int(lengths.min()),
                max_length=int(lengths.max()),
                completion_tokens=int(norm),
                nonzero_advantage_rows=int((batch.advantages != 0).sum()),
                gstar_norm=float(gstar[seed].norm()),
            )
        )
        for budget in args.budgets:
            raw[(seed, budget)] = {}
            for j, strategy in enumerate(STRATEGIES):
                bar.set_postfix_str(f"batch {seed} B={budget} {strategy}")
                cell_seed = 1_000_003 * (seed + 1) + 1009 * j + int(budget)
                raw[(seed, budget)][strategy] = run_cell(
                    engine, survivals[(budget, strategy)], batch, args.draws, cell_seed, norm, bar
                )
    bar.close()

    cells = evaluate_cells(raw, gstar, args.draws, args.bootstrap, boot_seed=20261201)
    decision = decide(cells)
    import trl

    result = dict(
        experiment="E1",
        command=relative_command(sys.argv[1:] if argv is None else list(argv)),
        date=time.strftime("%Y-%m-%d"),
        runtime_seconds=time.perf_counter() - started,
        machine=f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        versions=dict(
            python=platform.python_version(),
            torch=torch.__version__,
            transformers=transformers.__version__,
            trl=trl.__version__,
            numpy=np.__version__,
        ),
        settings=dict(
            model="warm-start (learners/pipeline/tiny_warm_start)",
            task=task.to_dict(),
            train_split=dict(size=TRAIN_SIZE, seed=SPLIT_SEED, excluded=EVAL_SET),
            puzzles=[dict(numbers=list(p.numbers), target=p.target) for p in puzzles],
            prompts=args.prompts,
            group_size=args.group_size,
            temperature=TEMPERATURE,
            max_new_tokens=args.max_new_tokens,
            batch_seeds=seeds,
            budgets=args.budgets,
            draws=args.draws,
            bootstrap=args.bootstrap,
            strategies=list(STRATEGIES),
            design_defaults=_DEFAULTS,
            sampler_batch=SAMPLER_BATCH,
            advantages="grpo (r-mean)/(std+1e-4)",
            normaliser="N = completion tokens of the batch (fixed)",
            skip_zero_advantage=False,
            quick=args.quick,
        ),
        batches=batches,
        trainer_check=checks,
        cache_check_rel_err=cache_check,
        cells=cells,
        decision=decision,
    )
    result["verdict_reason"] = verdict_reason(decision, cells)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "summary.md").write_text(summary_markdown(result))
    plot(result, args.out / "variance.png")
    print(summary_markdown(result))
    return result


if __name__ == "__main__":
    main()
