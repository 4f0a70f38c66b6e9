r"""E7 (docs/experiments.md): where does each learner's most negative token weight land, against the exact first
mistake? (no training)

Exactly as the pre-registered protocol E7 says:

1. the first ``--prompts`` puzzles of the multi-step warm start's seed-0 training split, ``--group`` completions each
   at T = 0.8, at most ``--max-new-tokens`` tokens, one generation batch (``_sampled_groups.generate_batch``);
2. each learner's seam 1 on that batch through its real trainer and registry defaults (``_sampled_groups.shape``);
   a token's weight is the learner's (B,T) advantage times its loss mask; for PS-PPO also times one seeded draw of
   its cutoff weights 1[t <= H]/ξ_t (``learners.ps_ppo.survival.sample_cutoff_weights``, as its seam 2 draws them);
3. kept completions: failures (the verifier's verdict, not cut at the budget) read to their end by the step grammar
   (``countdown_env.steps``), solvable, with a first mistake and at least 2 paragraphs
   (``learners.contrastive.paragraphs.split_paragraphs``, 128-token cap); the first-mistake paragraph holds the
   token where the first-mistake step's text ends;
4. per learner: hit share (the paragraph holding the most negative token weight is the first-mistake paragraph; ties
   among k paragraphs credit 1/k) and rank AUC (paragraphs ranked by their most negative token weight; ties 1/2),
   with 95 % percentile bootstrap intervals over puzzles; chance: mean 1/|S| and 0.5.

Outputs (``--out DIR``): ``completions.jsonl`` (one row per kept completion: puzzle, paragraphs, first-mistake
paragraph, per learner the per-paragraph minimum weight, hit and AUC), ``results.json`` and ``summary.md``.

    python experiments/credit_assignment.py --out experiments/results/credit_assignment
    python experiments/credit_assignment.py --out /tmp/e7-quick --quick        # a smoke run: 4 prompts
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
    shape,
)

MODEL = "warm-start-multistep"
LEARNERS = ("grpo", "contrastive", "t_spmo", "ps_ppo", "oracle_shaped")
MAX_PARAGRAPH_LEN = 128
MIN_KEPT = 30
PROTOCOL = (
    "docs/experiments.md#e7-credit-assignment-against-the-exact-oracle-does-each-learners-most-negative-weight-land-"
    "on-the-first-mistake-no-training"
)


def token_weights(name: str, trainer, batch, seed: int) -> torch.Tensor:
    """(rows, T) the learner's token weights on ``batch``: advantage times loss mask (times PS-PPO's cutoff draw)."""
    rows, width = batch.completion_ids.shape
    out = shape(trainer, batch)
    advantages = out["advantages"].float()
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1).expand(-1, out["completion_ids"].size(1))
    weights = advantages * trainer.loss_mask(out).float()
    if name == "ps_ppo":
        from learners.core.prefix_batches import kept_lengths
        from learners.ps_ppo.survival import sample_cutoff_weights

        survival = out["cutoff_survival"].float()
        generator = torch.Generator().manual_seed(seed)
        weights = weights * sample_cutoff_weights(survival, kept_lengths(out["completion_mask"]), generator)
    return weights[:rows, :width]


def learner_weights(setting, batch, group: int, max_new_tokens: int, seed: int, log) -> dict:
    """Each learner's (rows, T) token weights on ``batch`` (:func:`token_weights`) through its real trainer."""
    weights = {}
    for name in LEARNERS:
        with learner_trainer(
            name, setting.model_dir, setting.tokenizer, setting.task, setting.puzzles, group_size=group,
            max_new_tokens=max_new_tokens,
        ) as trainer:  # fmt: skip
            weights[name] = token_weights(name, trainer, batch, seed).numpy()
        log(f"{name}: shaped")
    return weights


def first_mistake_paragraph(text_pieces, paragraphs, labels) -> int:
    """The paragraph holding the token where the first-mistake step's text ends."""
    end = labels.steps[labels.first_mistake].step.end
    offsets = np.cumsum([len(t) for t in text_pieces])
    token = int(np.searchsorted(offsets, end))  # the token whose text covers character end - 1
    return int(paragraphs.paragraph_of_token()[min(token, len(text_pieces) - 1)])


def hit_and_auc(minima: list[float], target: int) -> tuple[float, float]:
    """Hit credit (1/k when the target is among k tied minima) and rank AUC of the target paragraph (ties 1/2)."""
    low = min(minima)
    tied = [i for i, m in enumerate(minima) if m == low]
    hit = 1.0 / len(tied) if target in tied else 0.0
    others = [m for i, m in enumerate(minima) if i != target]
    auc = float(np.mean([1.0 if minima[target] < m else 0.5 if minima[target] == m else 0.0 for m in others]))
    return hit, auc


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 prompts")
    args = parser.parse_args(argv)
    if args.quick:
        args.prompts = 4
    measurement = Measurement("E7", argv, protocol=PROTOCOL)
    log = measurement.log

    from countdown_env.helpers.jsonl import write_jsonl
    from countdown_env.solving.oracle import StepOracle
    from countdown_env.steps.labels import label_completion
    from learners.contrastive.paragraphs import split_paragraphs, token_texts

    setting = load_setting(args.prompts, MODEL)
    batch = generate_batch(
        setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
        group_size=args.group, max_new_tokens=args.max_new_tokens, seed=args.seed,
    )  # fmt: skip
    log(f"generated {len(batch.puzzles)} completions, pass rate {float(batch.success.float().mean()):.3f}")

    weights = learner_weights(setting, batch, args.group, args.max_new_tokens, args.seed, log)

    task = setting.task
    rules = dict(use_all_numbers=task.use_all_numbers, integer_intermediates=task.integer_intermediates)
    counts = dict(failures=0, cut=0, unread=0, unsolvable=0, no_mistake=0, one_paragraph=0)
    kept = []
    for row, ids in enumerate(batch.completions()):
        if bool(batch.success[row]):
            continue
        counts["failures"] += 1
        if len(ids) >= args.max_new_tokens:
            counts["cut"] += 1
            continue
        puzzle = batch.puzzles[row]
        pieces = token_texts(setting.tokenizer, ids)
        labels = label_completion("".join(pieces), puzzle, StepOracle(puzzle.target, **rules))
        if not labels.parsed:
            counts["unread"] += 1
            continue
        if not labels.solvable_before:
            counts["unsolvable"] += 1
            continue
        if labels.first_mistake is None:
            counts["no_mistake"] += 1
            continue
        paragraphs = split_paragraphs(pieces, max_paragraph_len=MAX_PARAGRAPH_LEN)
        if paragraphs.count < 2:
            counts["one_paragraph"] += 1
            continue
        target = first_mistake_paragraph(pieces, paragraphs, labels)
        owner = paragraphs.paragraph_of_token()
        record = dict(
            row=row, prompt=row // args.group, numbers=list(puzzle.numbers), target=puzzle.target,
            paragraphs=paragraphs.count, first_mistake_step=labels.first_mistake, first_mistake_paragraph=target,
            steps=len(labels.steps), text="".join(pieces),
        )  # fmt: skip
        for name in LEARNERS:
            w = weights[name][row, : len(ids)]
            minima = [float(w[owner == n].min()) for n in range(paragraphs.count)]
            hit, auc = hit_and_auc(minima, target)
            record[name] = dict(paragraph_min=minima, hit=hit, auc=auc)
        kept.append(record)
    log(f"kept {len(kept)} completions; left out: {counts}")

    prompts_kept = sorted({r["prompt"] for r in kept})
    by_prompt = {p: [r for r in kept if r["prompt"] == p] for p in prompts_kept}

    def mean_over(idx, value) -> float:
        chosen = [r for i in idx for r in by_prompt[prompts_kept[i]]]
        return float(np.mean([value(r) for r in chosen])) if chosen else float("nan")

    table = {}
    n_clusters = len(prompts_kept)
    everyone = range(n_clusters)
    chance = (lambda r: 1.0 / r["paragraphs"], lambda r: 0.5)
    for name in (*LEARNERS, "chance"):
        hit_of, auc_of = chance if name == "chance" else (lambda r, n=name: r[n]["hit"], lambda r, n=name: r[n]["auc"])
        table[name] = dict(
            hit=mean_over(everyone, hit_of), hit_ci=cluster_bootstrap(lambda i, f=hit_of: mean_over(i, f), n_clusters),
            auc=mean_over(everyone, auc_of), auc_ci=cluster_bootstrap(lambda i, f=auc_of: mean_over(i, f), n_clusters),
        )  # fmt: skip
    chance_hit = table["chance"]["hit"]
    for name in LEARNERS:
        t = table[name]
        if len(kept) < MIN_KEPT:
            t["verdict"] = f"untestable at this scale: {len(kept)} kept completions (< {MIN_KEPT})"
        elif t["hit_ci"][0] > chance_hit and t["auc_ci"][0] > 0.5:
            t["verdict"] = "localizes the first mistake"
        elif t["hit_ci"][1] <= chance_hit or t["auc_ci"][1] <= 0.5:
            t["verdict"] = "does not localize the first mistake"
        else:
            t["verdict"] = "undecided"

    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(kept, args.out / "completions.jsonl")
    payload = dict(
        settings=dict(
            model=MODEL,
            prompts=args.prompts,
            group=args.group,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            temperature=0.8,
            max_paragraph_len=MAX_PARAGRAPH_LEN,
        ),  # fmt: skip
        batch=dict(completions=len(batch.puzzles), pass_rate=float(batch.success.float().mean())),
        left_out=counts,
        kept=len(kept),
        kept_prompts=n_clusters,
        table=table,
    )
    return measurement.finish(args.out, payload, summary)


def summary(report: dict) -> str:
    lines = provenance_lines(
        report, "E7: credit assignment against the exact oracle", "experiments/credit_assignment.py"
    )
    lines[2] = "Protocol: `docs/experiments.md`, E7. Written by `experiments/credit_assignment.py`."
    s = report["settings"]
    lines += [
        "",
        f"{s['model']}, {s['prompts']} prompts x {s['group']} completions at T = {s['temperature']}, "
        f"{s['max_new_tokens']} new tokens (pass rate {report['batch']['pass_rate']:.3f}); kept "
        f"{report['kept']} failing completions with a first mistake from {report['kept_prompts']} puzzles; "
        f"left out: {report['left_out']}.",
        "",
        "| learner | hit share [95 % CI] | rank AUC [95 % CI] | verdict |",
        "| --- | --- | --- | --- |",
    ]
    for name, t in report["table"].items():
        verdict = t.get("verdict", "reference (1/|S|; 0.5)")
        lines.append(
            f"| {name} | {t['hit']:.3f} [{t['hit_ci'][0]:.3f}, {t['hit_ci'][1]:.3f}] | {t['auc']:.3f} "
            f"[{t['auc_ci'][0]:.3f}, {t['auc_ci'][1]:.3f}] | {verdict} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
