r"""Precondition P3 (docs/experiments.md): how much of full-token GRPO's update S-GRPO and T-SPMO keep.

No training. On each setting, one generation batch of ``--prompts`` x G completions at T = 0.8
(``experiments/_sampled_groups.generate_batch``: the verifier's rewards, TRL's ``grpo`` advantages), and for every
completion token whether it carries a non-zero gradient under

- **grpo**: every token of a row whose advantage A_i ≠ 0 (rows of mixed groups);
- **s_grpo**: the tokens ``learners.s_grpo.s_grpo_token_mask`` selects (its registry defaults: the first α = 50,
  then each later one with P = 0.5, at most k = 100 per row; expectation over ``--draws`` selection draws) in
  rows with A_i ≠ 0; its *kept share* is selected / all loss tokens (the trainer's ``s_grpo/loss_token_frac``);
- **t_spmo**: the unique transitions of ``learners.t_spmo.prefix_trie.prefix_advantages`` (called as
  ``TSPMOTrainer.shape_batch`` calls it without replay) whose A(v|p) ≠ 0; beside it the trie's zero-advantage
  share and mean |A| over its transitions.

Each *effective share* is those tokens over all completion tokens. Settings: E5's (the shipped warm start at 128
new tokens, G = 8 and the paper's G = 50) and, for context, E4b's (the multi-paragraph warm start at 384 tokens,
G = 8). Intervals: 95 % bootstrap over prompts. The rule (S-GRPO keeps ≤ 50 % of the loss tokens at E5's setting)
is applied by ``experiments/claim_experiments.py``.

    python experiments/precondition_token_shares.py --out experiments/results/preconditions/token_shares
    python experiments/precondition_token_shares.py --out /tmp/p3 --quick        # a smoke run of seconds
"""

from __future__ import annotations

import argparse
import dataclasses
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
    load_setting,
    provenance_lines,
)

# (experiment, model, max new tokens, G)
SETTINGS = (
    ("E5", "warm-start", 128, 8),
    ("E5", "warm-start", 128, 50),
    ("E4b", "warm-start-multistep", 384, 8),
)


def s_grpo_defaults() -> dict:
    from learners.s_grpo.config import SGRPOConfig

    fields = {f.name: f.default for f in dataclasses.fields(SGRPOConfig)}
    return {k: fields[k] for k in ("always_keep_tokens", "max_loss_tokens", "keep_probability")}


def shares(batch, draws: int, seed: int) -> dict:
    """Per-prompt token counts of every learner's gradient-carrying tokens, and the figures over all prompts."""
    from learners.s_grpo.trainer import s_grpo_token_mask
    from learners.t_spmo.prefix_trie import prefix_advantages

    k = batch.group_size
    mask = batch.completion_mask
    valid = mask.bool()
    carrying = valid & (batch.advantages != 0)[:, None]
    options = s_grpo_defaults()
    generator = torch.Generator().manual_seed(seed)
    selected = torch.zeros(mask.shape)
    for _ in range(draws):
        selected += s_grpo_token_mask(
            mask, options["always_keep_tokens"], options["max_loss_tokens"], options["keep_probability"], generator
        ).float()
    selected /= draws  # each token's selection probability, estimated
    rewards = torch.where(mask.sum(dim=1) > 0, batch.rewards, torch.full_like(batch.rewards, float("nan")))
    groups = torch.arange(mask.size(0)) // k
    trie = prefix_advantages(
        batch.completion_ids, rewards, mask, group_ids=groups, start_positions=torch.zeros_like(groups)
    )
    transitions = trie.loss_mask.bool() & valid
    nonzero = transitions & (trie.advantages != 0)

    def per_prompt(x: torch.Tensor) -> np.ndarray:
        return x.float().sum(dim=1).view(-1, k).sum(dim=1).numpy()

    counts = dict(
        tokens=per_prompt(valid),
        grpo=per_prompt(carrying),
        s_grpo_kept=per_prompt(selected * valid),
        s_grpo=per_prompt(selected * carrying),
        t_spmo_transitions=per_prompt(transitions),
        t_spmo=per_prompt(nonzero),
    )
    n_prompts = counts["tokens"].size

    def ratio(num: str, den: str) -> dict:
        value = float(counts[num].sum() / max(counts[den].sum(), 1.0))
        ci = cluster_bootstrap(
            lambda idx: counts[num][idx].sum() / max(counts[den][idx].sum(), 1.0), n_prompts, seed=seed
        )
        return dict(value=value, ci=ci)

    abs_a = trie.advantages[transitions].abs()
    return dict(
        completion_tokens=int(counts["tokens"].sum()),
        effective_share={name: ratio(name, "tokens") for name in ("grpo", "s_grpo", "t_spmo")},
        s_grpo_kept_share=ratio("s_grpo_kept", "tokens"),
        s_grpo_kept_share_of_grpo=ratio("s_grpo", "grpo"),
        t_spmo_share_of_grpo=ratio("t_spmo", "grpo"),
        t_spmo_transition_share=ratio("t_spmo_transitions", "tokens"),
        t_spmo_zero_advantage_share=float((trie.advantages[transitions] == 0).float().mean()),
        t_spmo_mean_abs_advantage=float(abs_a.mean()),
        t_spmo_mean_abs_advantage_nonzero=float(abs_a[abs_a > 0].mean()) if (abs_a > 0).any() else 0.0,
        grpo_mean_abs_advantage_carrying_rows=float(batch.advantages[batch.advantages != 0].abs().mean())
        if (batch.advantages != 0).any()
        else 0.0,
        s_grpo_options=options,
    )


def fmt(r: dict) -> str:
    return f"{r['value']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"


def summary_markdown(report: dict) -> str:
    lines = [
        *provenance_lines(
            report,
            "P3: the share of tokens that carry gradient under grpo, S-GRPO and T-SPMO (no training)",
            "experiments/precondition_token_shares.py",
        ),
        f"- {report['settings']['prompts']} prompts of the seed-0 training split, T = 0.8, generation seed "
        f"{report['settings']['seed']}; S-GRPO {report['rows'][0]['s_grpo_options']}, expectation over "
        f"{report['settings']['draws']} selection draws. Effective share = tokens with a non-zero gradient / all "
        "completion tokens. 95 % bootstrap over prompts.",
        "",
        "| experiment | model | tokens | G | mean length | pass rate | mixed groups | grpo effective | S-GRPO kept "
        "share | S-GRPO effective | T-SPMO effective | T-SPMO / grpo | T-SPMO transitions / tokens | T-SPMO zero-A "
        "share | T-SPMO mean \\|A\\| |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rows"]:
        e = r["effective_share"]
        lines.append(
            f"| {r['experiment']} | {r['model']} | {r['max_new_tokens']} | {r['group_size']} | {r['mean_length']:.1f} "
            f"| {r['pass_rate']:.3f} | {r['mixed_groups']}/{r['groups']} | {fmt(e['grpo'])} | "
            f"{fmt(r['s_grpo_kept_share'])} | {fmt(e['s_grpo'])} | {fmt(e['t_spmo'])} | "
            f"{fmt(r['t_spmo_share_of_grpo'])} | {fmt(r['t_spmo_transition_share'])} | "
            f"{r['t_spmo_zero_advantage_share']:.3f} | {r['t_spmo_mean_abs_advantage']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (results.json, summary.md)")
    parser.add_argument("--prompts", type=int, default=32, help="prompts per setting (default 32)")
    parser.add_argument("--draws", type=int, default=32, help="S-GRPO selection draws (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="generation and selection seed (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 prompts, the E5 settings only")
    args = parser.parse_args(argv)
    measurement = Measurement("P3", argv)
    settings = SETTINGS[:2] if args.quick else SETTINGS
    prompts = 4 if args.quick else args.prompts
    loaded: dict = {}
    rows = []
    for experiment, model_name, max_new_tokens, group in settings:
        if model_name not in loaded:
            loaded[model_name] = load_setting(prompts, model_name)
        setting = loaded[model_name]
        batch = generate_batch(
            setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
            group_size=group, max_new_tokens=max_new_tokens, seed=args.seed,
        )  # fmt: skip
        row = dict(
            experiment=experiment, model=model_name, max_new_tokens=max_new_tokens, group_size=group, groups=prompts,
            mixed_groups=int(batch.mixed.sum()), pass_rate=float(batch.success.float().mean()),
            mean_length=float(batch.lengths.float().mean()), **shares(batch, args.draws, args.seed),
        )  # fmt: skip
        rows.append(row)
        e = row["effective_share"]
        print(
            f"{experiment} {model_name} {max_new_tokens} tokens G = {group}: effective share grpo {fmt(e['grpo'])}, "
            f"S-GRPO {fmt(e['s_grpo'])} (kept share {fmt(row['s_grpo_kept_share'])}), T-SPMO {fmt(e['t_spmo'])} "
            f"(zero-A share {row['t_spmo_zero_advantage_share']:.3f}, mean |A| {row['t_spmo_mean_abs_advantage']:.4f})",
            flush=True,
        )
    payload = dict(
        settings=dict(
            prompts=prompts,
            draws=args.draws,
            seed=args.seed,
            quick=args.quick,
            experiments=[dict(experiment=e, model=m, max_new_tokens=t, group_size=g) for e, m, t, g in settings],
        ),
        rows=rows,
    )
    return measurement.finish(args.out, payload, summary_markdown)


if __name__ == "__main__":
    main()
