r"""Precondition P4 (docs/experiments.md): PS-PPO's survival profile at each budget the experiments used.

No training. For each setting of an experiment (E1: the shipped warm start at 128 new tokens, B = 16 and 32; E4: the
multi-paragraph warm start at 256 tokens, B = 24; E4b: the same at 384 tokens, B = 64 and 128), one generation
batch of ``--prompts`` x G = 8 completions at T = 0.8 (``experiments/_sampled_groups.generate_batch``), and for each
budget and strategy (optimized, uniform) the survival function ξ of a real ``PSPPOTrainer.shape_batch`` (seam 1:
the design weights γ̄·ū, the solver, the floor, ``PSPPOConfig``'s defaults). Figures over the tokens that carry
gradient (rows with a non-zero GRPO advantage, i.e. rows of mixed groups):

- the share at the floor ε (10⁻³ unless lowered for very long completions, ``ps_ppo.survival_floor``), where a kept
  token weighs 1/ε = 1000 — the trainer's own ``ps_ppo/floor_token_frac`` of the same call is recorded beside it;
- the share below 0.01 (weight > 100) and the largest weight 1/ξ;
- the expected kept share Σξ / L over those tokens;

and B over the mean completion length and over the mean group-longest length (ξ is solved per group over its
longest completion). Intervals: 95 % bootstrap over prompts. Descriptive: no threshold (docs/experiments.md, P4).

    python experiments/precondition_survival_profile.py --out experiments/results/preconditions/survival_profile
    python experiments/precondition_survival_profile.py --out /tmp/p4 --quick        # a smoke run of seconds
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments._sampled_groups import (  # noqa: E402
    Measurement,
    cluster_bootstrap,
    generate_batch,
    learner_trainer,
    load_setting,
    provenance_lines,
    shape_ps_ppo,
)

# (experiment, model, max new tokens, budgets)
SETTINGS = (
    ("E1", "warm-start", 128, (16, 32)),
    ("E4", "warm-start-multistep", 256, (24,)),
    ("E4b", "warm-start-multistep", 384, (64, 128)),
)
STRATEGIES = ("optimized", "uniform")
GROUP = 8


def profile(batch, survival: torch.Tensor, budget: float, min_survival: float, seed: int) -> dict:
    """The figures of one (batch, budget, strategy) from its (rows, T) survival ξ."""
    from learners.ps_ppo.survival import survival_floor

    k = batch.group_size
    lengths = batch.lengths
    width = survival.size(1)
    valid = torch.arange(width)[None, :] < lengths[:, None]
    carrying = valid & (batch.advantages != 0)[:, None]
    group_max = lengths.view(-1, k).amax(dim=1)
    floors = torch.tensor(
        [survival_floor(budget, int(n), min_survival, True) if n > budget else 0.0 for n in group_max.tolist()]
    ).repeat_interleave(k)
    at_floor = carrying & (survival <= floors[:, None] * (1 + 1e-5))
    below = carrying & (survival < 0.01)
    per_prompt = np.array(
        [
            [at_floor[g * k : (g + 1) * k].sum(), below[g * k : (g + 1) * k].sum(), carrying[g * k : (g + 1) * k].sum()]
            for g in range(lengths.numel() // k)
        ],
        dtype=float,
    )

    def share(column: int):
        return lambda idx: per_prompt[idx, column].sum() / max(per_prompt[idx, 2].sum(), 1.0)

    n_carrying = float(carrying.sum())
    weights = 1.0 / survival[carrying] if n_carrying else torch.ones(1)
    return dict(
        gradient_tokens=int(n_carrying),
        floor_share=float(at_floor.sum()) / max(n_carrying, 1.0),
        floor_share_ci=cluster_bootstrap(share(0), per_prompt.shape[0], seed=seed),
        below_0_01_share=float(below.sum()) / max(n_carrying, 1.0),
        below_0_01_share_ci=cluster_bootstrap(share(1), per_prompt.shape[0], seed=seed),
        max_weight=float(weights.max()),
        expected_kept_share=float((survival * carrying).sum()) / max(n_carrying, 1.0),
        budget_over_mean_length=budget / float(lengths.float().mean()),
        budget_over_group_longest=budget / float(group_max.float().mean()),
    )


def summary_markdown(report: dict) -> str:
    lines = [
        *provenance_lines(
            report,
            "P4: PS-PPO's survival profile at the experiments' budgets (no training; descriptive)",
            "experiments/precondition_survival_profile.py",
        ),
        f"- {report['settings']['prompts']} prompts of the seed-0 training split x G = {GROUP}, T = 0.8, generation "
        f"seed {report['settings']['seed']}; ξ from a real `PSPPOTrainer.shape_batch` (PSPPOConfig defaults: floor "
        "1e-3, ξ_1 = 1, top-k 16). Gradient tokens: completion tokens of rows with a non-zero GRPO advantage "
        "(mixed groups). Intervals: 95 % bootstrap over prompts.",
        "",
        "| experiment | tokens | mean length | pass rate | mixed groups | B | B/L (mean) | B/L (group longest) "
        "| strategy | gradient tokens at the floor [95 %] | trainer's floor_token_frac | ξ < 0.01 [95 %] "
        "| max 1/ξ | expected kept share |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in report["rows"]:
        b = row["batch"]
        lo, hi = row["floor_share_ci"]
        blo, bhi = row["below_0_01_share_ci"]
        lines.append(
            f"| {row['experiment']} | {row['max_new_tokens']} | {b['mean_length']:.1f} | {b['pass_rate']:.3f} | "
            f"{b['mixed_groups']}/{b['groups']} | {row['budget']} | {row['budget_over_mean_length']:.2f} | "
            f"{row['budget_over_group_longest']:.2f} | {row['strategy']} | {row['floor_share']:.3f} "
            f"[{lo:.3f}, {hi:.3f}] | {row['trainer_floor_token_frac']:.3f} | {row['below_0_01_share']:.3f} "
            f"[{blo:.3f}, {bhi:.3f}] | {row['max_weight']:.0f} | {row['expected_kept_share']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (results.json, summary.md)")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per setting (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: E1 only, 4 prompts, B = 16")
    args = parser.parse_args(argv)
    measurement = Measurement("P4", argv)
    settings = [(e, m, 128, (16,)) for e, m, _, _ in SETTINGS[:1]] if args.quick else SETTINGS
    prompts = 4 if args.quick else args.prompts

    rows = []
    for experiment, model_name, max_new_tokens, budgets in settings:
        setting = load_setting(prompts, model_name)
        batch = generate_batch(
            setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
            group_size=GROUP, max_new_tokens=max_new_tokens, seed=args.seed,
        )  # fmt: skip
        lengths = batch.lengths.float()
        info = dict(
            groups=prompts,
            mixed_groups=int(batch.mixed.sum()),
            pass_rate=float(batch.success.float().mean()),
            mean_length=float(lengths.mean()),
            cut_share=float((batch.lengths >= max_new_tokens).float().mean()),
        )
        print(f"{experiment} ({model_name}, {max_new_tokens} tokens): {info}", flush=True)
        with learner_trainer(
            "ps_ppo", setting.model_dir, setting.tokenizer, setting.task, setting.puzzles, group_size=GROUP,
            max_new_tokens=max_new_tokens,
        ) as trainer:  # fmt: skip
            for budget in budgets:
                for strategy in STRATEGIES:
                    survival = shape_ps_ppo(trainer, batch, budget, strategy)
                    logged = trainer._metrics["train"]["ps_ppo/floor_token_frac"][-1]
                    row = dict(experiment=experiment, model=model_name, max_new_tokens=max_new_tokens,
                               budget=budget, strategy=strategy, batch=info, trainer_floor_token_frac=logged,
                               **profile(batch, survival, budget, trainer.args.min_survival, args.seed))  # fmt: skip
                    rows.append(row)
                    print(
                        f"  B = {budget} {strategy}: gradient tokens at the floor {row['floor_share']:.3f} "
                        f"{row['floor_share_ci']} (trainer {logged:.3f}), ξ < 0.01 {row['below_0_01_share']:.3f}, "
                        f"max 1/ξ {row['max_weight']:.0f}, B/L {row['budget_over_mean_length']:.2f} (mean) "
                        f"{row['budget_over_group_longest']:.2f} (group longest)",
                        flush=True,
                    )
    payload = dict(
        settings=dict(
            prompts=prompts,
            group_size=GROUP,
            seed=args.seed,
            strategies=list(STRATEGIES),
            experiments=[dict(experiment=e, model=m, max_new_tokens=t, budgets=list(b)) for e, m, t, b in settings],
            quick=args.quick,
        ),  # fmt: skip
        rows=rows,
    )
    return measurement.finish(args.out, payload, summary_markdown)


if __name__ == "__main__":
    main()
