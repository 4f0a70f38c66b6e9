r"""Precondition P1 (docs/experiments.md): does the contrastive potential predict success at this scale?

The contrastive-shaping post reports, for one checkpoint, a Spearman correlation of about 0.57 between the scorer's
potential at a reasoning prefix and the success rate of 20 answers sampled from that prefix: the shaping credits a
paragraph for moving Φ, which helps only if Φ tracks the chance of success. No training. E3's setting: the
multi-paragraph warm start at 384 new tokens, one generation batch of ``--prompts`` x G = 8 completions at T = 0.8
(``experiments/_sampled_groups.generate_batch``), and a real ``ContrastiveTrainer`` (the registry's
``contrastive``: prime_rl's base, the frozen scorer, i.e. a copy of the warm start, the default paragraph cap,
τ, clip and answer bank) whose seam 1 (``shape_batch``) is run on the batch. Its own scoring jobs (each row's
paragraph prefixes n = 0 … |S|) and the clipped potentials Φ̄_n it computes from them are recorded as it runs
(``contrastive_potential`` and the scorer are wrapped, nothing is recomputed), so Φ̄ is exactly the trainer's.

For every recorded prefix (rows of mixed groups that have paragraphs), the Monte Carlo success rate of the
completion prefix: the mean verifier reward of ``--continuations`` continuations at T = 0.8 within the remaining
budget (``_sampled_groups.prefix_values``; identical prefixes, e.g. a group's shared n = 0, are continued once).
Figures: Spearman ρ(Φ̄, p̂) pooled over every prefix (the post's reading) with a 95 % bootstrap over prompts;
beside it ρ within rows (mean over rows with ≥ 3 prefixes), and ρ of the last prefix's Φ̄ with the row's own
outcome. Rule (applied by ``experiments/claim_experiments.py``): holds if the interval lies above 0.285 (half the
post's 0.57), fails if below.

    python experiments/precondition_contrastive_potential.py \
        --out experiments/results/preconditions/contrastive_potential
    python experiments/precondition_contrastive_potential.py --out /tmp/p1 --quick        # a smoke run
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments._sampled_groups import (  # noqa: E402
    Measurement,
    cluster_bootstrap,
    generate_batch,
    learner_trainer,
    load_setting,
    prefix_values,
    provenance_lines,
    shape,
)

MODEL = "warm-start-multistep"
SOURCE_RHO = 0.57
THRESHOLD = SOURCE_RHO / 2
GROUP = 8


def spearman(x, y) -> float:
    from scipy.stats import spearmanr

    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(spearmanr(x, y).statistic)


def recorded_potentials(trainer, batch) -> list[dict]:
    """Run the contrastive trainer's seam 1 on ``batch`` and return, per scored row, its prefix cuts (completion
    tokens) and the clipped potentials Φ̄ the trainer computed for them."""
    import learners.contrastive.trainer as contrastive

    jobs, potentials = [], []
    scorer_of = trainer._get_scorer

    def recording_scorer():
        scorer = scorer_of()

        class Recording:
            def score(self, batch_jobs):
                jobs.extend(batch_jobs)
                return scorer.score(batch_jobs)

        return Recording()

    original = contrastive.contrastive_potential

    def recording_potential(*args, **kwargs):
        phi = original(*args, **kwargs)
        potentials.append(np.asarray(phi, dtype=float))
        return phi

    with (
        mock.patch.object(trainer, "_get_scorer", recording_scorer),
        mock.patch.object(contrastive, "contrastive_potential", recording_potential),
    ):
        shape(trainer, batch)
    if len(jobs) != len(potentials):
        raise RuntimeError(f"{len(jobs)} scoring jobs but {len(potentials)} potentials recorded")
    prompts = [ids[mask.bool()].tolist() for ids, mask in zip(batch.prompt_ids, batch.prompt_mask, strict=True)]
    completions = batch.completions()
    free_rows: dict[tuple, list[int]] = {}
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        free_rows.setdefault(tuple(p + c), []).append(i)
    out = []
    for job, phi in zip(jobs, potentials, strict=True):
        row = free_rows[job.tokens].pop(0)  # jobs come in row order; identical rows get identical Φ̄
        cuts = [c - len(prompts[row]) for c in job.cuts]
        out.append(dict(row=row, prompt=row // GROUP, cuts=cuts, phi=phi.tolist()))
    return out


def summary_markdown(report: dict) -> str:
    r = report["result"]
    rule = r["rule"]
    lines = [
        *provenance_lines(
            report,
            "P1: does the contrastive potential predict success? (E3's setting, no training)",
            "experiments/precondition_contrastive_potential.py",
        ),
        f"- {MODEL} at {report['settings']['max_new_tokens']} tokens, {report['settings']['prompts']} prompts x G = "
        f"{GROUP}, T = 0.8; Φ̄ from a real `ContrastiveTrainer.shape_batch` (registry defaults, frozen scorer); p̂ from "
        f"{report['settings']['continuations']} continuations per prefix; 95 % bootstrap over prompts.",
        "",
        f"{r['mixed_groups']}/{r['groups']} mixed groups; {r['scored_rows']} rows scored, {r['prefixes']} prefixes "
        f"({r['distinct_prefixes']} distinct), {r['mean_paragraphs']:.2f} paragraphs per row; pass rate "
        f"{r['pass_rate']:.3f}.",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| Spearman ρ(Φ̄, p̂), pooled over prefixes [95 %] | {r['spearman']:.3f} [{r['spearman_ci'][0]:.3f}, "
        f"{r['spearman_ci'][1]:.3f}] |",
        f"| ρ within rows (mean over {r['rows_within']} rows with ≥ 3 prefixes) | {r['spearman_within_rows']:.3f} |",
        f"| ρ(Φ̄ of the last prefix, the row's own success) | {r['spearman_last_vs_outcome']:.3f} |",
        f"| mean p̂: prefixes with Φ̄ > 0 / Φ̄ ≤ 0 | {r['mean_p_phi_positive']:.3f} / {r['mean_p_phi_nonpositive']:.3f} |",
        f"| the post | ρ ≈ {SOURCE_RHO} (one checkpoint, 20 sampled answers per prefix) |",
        "",
        f"Rule: ρ's interval above {THRESHOLD:.3f} (half the post's) → holds; below → fails; else undecided: "
        f"**{rule['verdict']}**.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (results.json, summary.md)")
    parser.add_argument("--prompts", type=int, default=16, help="prompts (default 16)")
    parser.add_argument("--continuations", type=int, default=20, help="M per prefix (default 20, the post's)")
    parser.add_argument("--max-new-tokens", type=int, default=384, help="completion budget (default 384, E3's)")
    parser.add_argument("--seed", type=int, default=0, help="generation and sampling seed (default 0)")
    parser.add_argument("--batch-size", type=int, default=256, help="sampler rows per generate call (default 256)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 prompts, M = 4")
    args = parser.parse_args(argv)
    if args.quick:
        args.prompts, args.continuations = 4, 4
    measurement = Measurement("P1", argv)
    log = measurement.log

    from learners.sampling import HFSampler

    setting = load_setting(args.prompts, MODEL)
    batch = generate_batch(
        setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
        group_size=GROUP, max_new_tokens=args.max_new_tokens, seed=args.seed,
    )  # fmt: skip
    with learner_trainer(
        "contrastive", setting.model_dir, setting.tokenizer, setting.task, setting.puzzles, group_size=GROUP,
        max_new_tokens=args.max_new_tokens,
    ) as trainer:  # fmt: skip
        scored = recorded_potentials(trainer, batch)
        options = {k: getattr(trainer.args, k) for k in ("max_paragraph_len", "potential_tau", "potential_clip",
                                                         "ground_truth_mode", "scorer", "base_learner")}  # fmt: skip
    log(f"{len(scored)} rows scored, {sum(len(s['cuts']) for s in scored)} prefixes; options {options}")
    completions = batch.completions()
    index, requests, points = {}, [], []
    for s in scored:
        for cut, phi in zip(s["cuts"], s["phi"], strict=True):
            key = (s["prompt"], tuple(completions[s["row"]][:cut]))
            if key not in index:
                index[key] = len(requests)
                requests.append((s["prompt"], list(key[1])))
            points.append(dict(row=s["row"], prompt=s["prompt"], cut=cut, phi=phi, request=index[key]))
    log(f"{len(requests)} distinct prefixes x {args.continuations} continuations")
    sampler = HFSampler(setting.model, setting.tokenizer, batch_size=args.batch_size)
    values = prefix_values(
        requests, sampler, 2_000_003 * (args.seed + 1), setting.task, setting.tokenizer, setting.puzzles,
        setting.prompt_ids, continuations=args.continuations, max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size, log=log,
    )  # fmt: skip
    for p in points:
        p["p_hat"] = values[p["request"]]["mean"]
    phi = np.array([p["phi"] for p in points])
    p_hat = np.array([p["p_hat"] for p in points])
    prompt_of = np.array([p["prompt"] for p in points])
    prompts_seen = np.unique(prompt_of)

    def rho_of(idx) -> float:
        chosen = np.concatenate([np.nonzero(prompt_of == prompts_seen[i])[0] for i in idx])
        return spearman(phi[chosen], p_hat[chosen])

    row_of = np.array([p["row"] for p in points])
    within = [spearman(phi[row_of == s["row"]], p_hat[row_of == s["row"]]) for s in scored if len(s["cuts"]) >= 3]
    within = [w for w in within if not math.isnan(w)]
    last_phi = [s["phi"][-1] for s in scored]
    outcome = [float(batch.success[s["row"]]) for s in scored]
    rho = rho_of(np.arange(prompts_seen.size))
    ci = cluster_bootstrap(rho_of, prompts_seen.size, seed=args.seed)
    verdict = "holds" if ci[0] >= THRESHOLD else "fails" if ci[1] < THRESHOLD else "undecided"
    result = dict(
        groups=args.prompts, mixed_groups=int(batch.mixed.sum()), pass_rate=float(batch.success.float().mean()),
        scored_rows=len(scored), prefixes=len(points), distinct_prefixes=len(requests),
        mean_paragraphs=float(np.mean([len(s["cuts"]) - 1 for s in scored])) if scored else math.nan,
        spearman=rho, spearman_ci=ci, rows_within=len(within),
        spearman_within_rows=float(np.mean(within)) if within else math.nan,
        spearman_last_vs_outcome=spearman(last_phi, outcome),
        mean_p_phi_positive=float(p_hat[phi > 0].mean()) if (phi > 0).any() else math.nan,
        mean_p_phi_nonpositive=float(p_hat[phi <= 0].mean()) if (phi <= 0).any() else math.nan,
        rule=dict(threshold=THRESHOLD, source=SOURCE_RHO, verdict=verdict), trainer_options=options, points=points,
    )  # fmt: skip
    log(f"Spearman ρ(Φ̄, p̂) {rho:.3f} {ci} over {len(points)} prefixes: {verdict}")
    payload = dict(
        settings=dict(
            model=MODEL,
            prompts=args.prompts,
            continuations=args.continuations,
            seed=args.seed,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch_size,
            quick=args.quick,
        ),  # fmt: skip
        result=result,
    )
    return measurement.finish(args.out, payload, summary_markdown)


if __name__ == "__main__":
    main()
