r"""Precondition P2 (docs/experiments.md): how early is a completion's outcome readable from its prefix?

PS-PPO's premise (the paper's Figure 1): the probability that a completion ends correct is highly predictable from
its first 25-40 % of tokens, so its tail carries little training signal and may be truncated. No training. On each
setting, one generation batch of ``--prompts`` x G = 8 completions at T = 0.8
(``experiments/_sampled_groups.generate_batch``); for every row of a mixed group (some successes, some failures) and
every k in 10, 20, …, 90 %, the prefix of its first ⌊k·L_i/100⌋ completion tokens (L_i its length, eos included) and
that prefix's Monte Carlo success rate p̂_k: the mean verifier reward of ``--continuations`` continuations at
T = 0.8 within the remaining budget (``_sampled_groups.prefix_values``, E2's estimator; identical prefixes are
continued once). Figures by k:

- **within-group AUC** (the registered statistic): over every (success, failure) pair of rows of the same group,
  pooled over groups, the share with p̂_k(success) > p̂_k(failure), ties counted ½: how well the prefix separates the
  rows a GRPO advantage separates (0.5 at k = 0 by construction);
- pooled AUC over all rows of mixed groups (prompt difficulty included);
- the paper's late-recovery figure: the share of finally correct rows with p̂_k < 0.8.

Intervals: 95 % bootstrap over groups. Rule (applied by ``experiments/claim_experiments.py``): the precondition holds
if the within-group AUC at k = 40 % has its interval above 0.8, fails if below.

    python experiments/precondition_outcome_predictability.py \
        --out experiments/results/preconditions/outcome_predictability
    python experiments/precondition_outcome_predictability.py --out /tmp/p2 --quick        # a smoke run
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments._sampled_groups import (  # noqa: E402
    Measurement,
    cluster_bootstrap,
    generate_batch,
    load_setting,
    prefix_values,
    provenance_lines,
)

# (experiment, model, max new tokens)
SETTINGS = (("E1", "warm-start", 128), ("E4b", "warm-start-multistep", 384))
FRACTIONS = (10, 20, 30, 40, 50, 60, 70, 80, 90)
RULE_FRACTION = 40
THRESHOLD = 0.8
GROUP = 8


def within_group_auc(scores: np.ndarray, success: np.ndarray, groups: np.ndarray, chosen: np.ndarray) -> float:
    """Pooled over ``chosen`` groups: P(score of a success > score of a failure of the same group), ties ½."""
    wins = pairs = 0.0
    for g in chosen:
        rows = groups == g
        s, y = scores[rows], success[rows]
        pos, neg = s[y], s[~y]
        if pos.size and neg.size:
            diff = pos[:, None] - neg[None, :]
            wins += float((diff > 0).sum() + 0.5 * (diff == 0).sum())
            pairs += pos.size * neg.size
    return wins / pairs if pairs else math.nan


def pooled_auc(scores: np.ndarray, success: np.ndarray) -> float:
    pos, neg = scores[success], scores[~success]
    if not pos.size or not neg.size:
        return math.nan
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def measure(setting, experiment: str, max_new_tokens: int, args, log) -> dict:
    from learners.sampling import HFSampler

    batch = generate_batch(
        setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
        group_size=GROUP, max_new_tokens=max_new_tokens, seed=args.seed,
    )  # fmt: skip
    mixed = batch.mixed.repeat_interleave(GROUP)
    rows = [i for i in range(len(batch.puzzles)) if mixed[i]]
    completions = batch.completions()
    pass_rate, mean_length = float(batch.success.float().mean()), float(batch.lengths.float().mean())
    log(f"{experiment}: {int(batch.mixed.sum())}/{args.prompts} mixed groups, {len(rows)} rows, pass rate "
        f"{pass_rate:.3f}, mean length {mean_length:.1f}")  # fmt: skip
    index, requests, keys = {}, [], {}
    for i in rows:
        for k in FRACTIONS:
            prefix = completions[i][: (k * len(completions[i])) // 100]
            key = (i // GROUP, tuple(prefix))
            if key not in index:
                index[key] = len(requests)
                requests.append((i // GROUP, list(prefix)))
            keys[(i, k)] = index[key]
    log(f"{experiment}: {len(requests)} distinct prefixes x {args.continuations} continuations")
    sampler = HFSampler(setting.model, setting.tokenizer, batch_size=args.batch_size)
    values = prefix_values(
        requests, sampler, 1_000_003 * (args.seed + 1), setting.task, setting.tokenizer, setting.puzzles,
        setting.prompt_ids, continuations=args.continuations, max_new_tokens=max_new_tokens,
        batch_size=args.batch_size, log=log,
    )  # fmt: skip
    success = batch.success.numpy()[rows]
    groups = np.array([i // GROUP for i in rows])
    unique_groups = np.unique(groups)
    by_k = {}
    for k in FRACTIONS:
        p = np.array([values[keys[(i, k)]]["mean"] for i in rows])

        def auc_of(idx, p=p):
            return within_group_auc(p, success, groups, unique_groups[idx])

        correct = p[success]
        by_k[k] = dict(
            within_group_auc=auc_of(np.arange(unique_groups.size)),
            within_group_auc_ci=cluster_bootstrap(auc_of, unique_groups.size, seed=args.seed),
            pooled_auc=pooled_auc(p, success),
            late_recovery_share=float((correct < 0.8).mean()) if correct.size else math.nan,
            mean_p_success_rows=float(correct.mean()) if correct.size else math.nan,
            mean_p_failure_rows=float(p[~success].mean()) if (~success).any() else math.nan,
            p_hat=p.tolist(),
        )
        log(f"  k = {k} %: within-group AUC {by_k[k]['within_group_auc']:.3f} {by_k[k]['within_group_auc_ci']}, "
            f"pooled {by_k[k]['pooled_auc']:.3f}, late recovery {by_k[k]['late_recovery_share']:.3f}")  # fmt: skip
    rule = by_k[RULE_FRACTION]
    low, high = rule["within_group_auc_ci"]
    verdict = "holds" if low >= THRESHOLD else "fails" if high < THRESHOLD else "undecided"
    return dict(
        experiment=experiment, model=setting.name, max_new_tokens=max_new_tokens, groups=args.prompts,
        mixed_groups=int(batch.mixed.sum()), rows=len(rows), successes=int(success.sum()),
        pass_rate=pass_rate, mean_length=mean_length,
        distinct_prefixes=len(requests), row_success=success.tolist(), row_groups=groups.tolist(), by_k=by_k,
        rule=dict(fraction=RULE_FRACTION, threshold=THRESHOLD, auc=rule["within_group_auc"], ci=[low, high],
                  verdict=verdict),
    )  # fmt: skip


def summary_markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        *provenance_lines(
            report,
            "P2: how early the outcome is readable from a prefix (PS-PPO's premise; no training)",
            "experiments/precondition_outcome_predictability.py",
        ),
        f"- {s['prompts']} prompts of the seed-0 training split x G = {GROUP}, T = 0.8; p̂_k from "
        f"{s['continuations']} continuations of the first k % of each row of a mixed group. Within-group AUC: "
        "(success, failure) pairs of the same group, pooled; 95 % bootstrap over groups.",
        "",
    ]
    for r in report["rows"]:
        rule = r["rule"]
        lines += [
            f"## {r['experiment']}: {r['model']}, {r['max_new_tokens']} tokens",
            "",
            f"{r['mixed_groups']}/{r['groups']} mixed groups, {r['rows']} rows ({r['successes']} successes), mean "
            f"length {r['mean_length']:.1f} tokens, {r['distinct_prefixes']} distinct prefixes.",
            "",
            "| k (% of tokens) | within-group AUC [95 %] | pooled AUC | mean p̂ successes | mean p̂ failures "
            "| correct rows with p̂ < 0.8 |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for k, b in r["by_k"].items():
            lo, hi = b["within_group_auc_ci"]
            lines.append(
                f"| {k} | {b['within_group_auc']:.3f} [{lo:.3f}, {hi:.3f}] | {b['pooled_auc']:.3f} | "
                f"{b['mean_p_success_rows']:.3f} | {b['mean_p_failure_rows']:.3f} | {b['late_recovery_share']:.3f} |"
            )
        lines += [
            "",
            f"Rule: within-group AUC at k = {rule['fraction']} % ≥ {rule['threshold']} (interval): "
            f"{rule['auc']:.3f} [{rule['ci'][0]:.3f}, {rule['ci'][1]:.3f}] → **{rule['verdict']}**.",
            "",
        ]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (results.json, summary.md)")
    parser.add_argument("--prompts", type=int, default=16, help="prompts per setting (default 16)")
    parser.add_argument("--continuations", type=int, default=16, help="M per prefix (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="generation and sampling seed (default 0)")
    parser.add_argument("--batch-size", type=int, default=256, help="sampler rows per generate call (default 256)")
    parser.add_argument(
        "--experiments", nargs="+", choices=[e for e, _, _ in SETTINGS], default=[e for e, _, _ in SETTINGS],
        help="the settings to measure (default: all; the claims of a setting left out read 'not measured')",
    )  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="a smoke run: E1 only, 6 prompts, M = 4")
    args = parser.parse_args(argv)
    if args.quick:
        args.prompts, args.continuations, args.experiments = 6, 4, ["E1"]
    measurement = Measurement("P2", argv)
    settings = [s for s in SETTINGS if s[0] in args.experiments]
    rows = [measure(load_setting(args.prompts, m), e, t, args, measurement.log) for e, m, t in settings]
    payload = dict(
        settings=dict(
            prompts=args.prompts,
            continuations=args.continuations,
            seed=args.seed,
            fractions=FRACTIONS,
            batch_size=args.batch_size,
            quick=args.quick,
            experiments=[dict(experiment=e, model=m, max_new_tokens=t) for e, m, t in settings],
        ),  # fmt: skip
        rows=rows,
    )
    return measurement.finish(args.out, payload, summary_markdown)


if __name__ == "__main__":
    main()
