r"""E7b (docs/experiments.md): each learner's credit against the exact first mistake, with the first mistake spread over
step positions, and on the answer's tokens (no training).

Exactly as the pre-registered protocol E7b says:

1. the first ``--prompts`` (256) puzzles of the multi-step warm start's seed-0 training split, ``--group`` completions
   each at T = 0.8, at most ``--max-new-tokens`` tokens, one generation batch; every row written to
   ``batch.jsonl.gz`` (E8 reads it);
2. each learner's token weights through its real trainer (``credit_assignment.token_weights``, as E7);
3. steps: failures read to their end, solvable, with a first mistake and at least 2 steps; a step's segment runs from
   the previous step's segment end to its own; its credit is the most negative weight in it; stratified to positions
   0, 1, 2+ (every row at 1 and 2+, position 0 drawn until it holds 40 %);
4. answer tokens: failures not cut whose answer has a first unsolvable token (``countdown_env.prefix_solvable``);
5. per learner and unit kind: hit share and rank AUC (``credit_assignment.hit_and_auc``), bootstrap intervals over
   puzzles, beside chance and the best position-only baseline (:func:`position_baselines`).

    python experiments/credit_assignment_v2.py --out experiments/results/credit_assignment_v2
    python experiments/credit_assignment_v2.py --out /tmp/e7b-quick --quick        # a smoke run: 8 prompts
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from countdown_env.helpers.jsonl import read_jsonl, write_jsonl  # noqa: E402
from experiments._sampled_groups import (  # noqa: E402
    Measurement,
    cluster_bootstrap,
    generate_batch,
    load_setting,
    provenance_lines,
)
from experiments.credit_assignment import (  # noqa: E402
    LEARNERS,
    MODEL,
    first_mistake_paragraph,
    hit_and_auc,
    learner_weights,
)

MAX_PARAGRAPH_LEN = 128
MIN_KEPT = 30
POSITION_ZERO_SHARE = 0.40
PROTOCOL = (
    "docs/experiments.md#e7b-credit-assignment-with-the-first-mistake-spread-over-positions-on-steps-and-on-answer-"
    "tokens-no-training"
)
KINDS = ("steps", "answer")


def token_of(offsets: list[int], char: int) -> int:
    """The token whose text covers character ``char - 1`` (``offsets``: each token's start, then the end)."""
    return max(bisect.bisect_left(offsets, char) - 1, 0)


def step_units(offsets: list[int], labels) -> list[range]:
    """Each step's tokens: from the end of the previous step's segment (the reasoning's start for the first) to the
    end of its own."""
    units, previous = [], labels.reasoning_span[0]
    for labelled in labels.steps:
        first, last = token_of(offsets, previous + 1), token_of(offsets, labelled.segment_end)
        units.append(range(first, max(last, first) + 1))
        previous = labelled.segment_end
    return units


def stratify(rows: list[dict], share: float, seed: int) -> list[dict]:
    """Every row whose first mistake is at step 1 or later, and position-0 rows drawn (seeded) until they are
    ``share`` of the set (all of them if there are fewer)."""
    later = [r for r in rows if r["first_mistake_step"] > 0]
    zero = [r for r in rows if r["first_mistake_step"] == 0]
    wanted = int(share * len(later) / (1 - share))
    drawn = sorted(random.Random(seed).sample(range(len(zero)), min(wanted, len(zero))))
    return sorted([zero[i] for i in drawn] + later, key=lambda r: r["row"])


def position_of(row: dict, kind: str) -> int:
    return row["first_mistake_step"] if kind == "steps" else row["first_unsolvable"]


def units_of(row: dict, kind: str) -> int:
    return row["steps"] if kind == "steps" else row["answer_tokens"]


def position_baselines(rows: list[dict], kind: str) -> dict:
    """The best constant position's hit share (among rows that have that position) and the better of the two
    position rankings' AUCs (earliest most negative: (n - 1 - p) / (n - 1); latest: p / (n - 1))."""
    best_hit, best_at = 0.0, 0
    for p in range(max(units_of(r, kind) for r in rows)):
        having = [r for r in rows if units_of(r, kind) > p]
        share = sum(position_of(r, kind) == p for r in having) / len(having)
        if share > best_hit:
            best_hit, best_at = share, p
    early = float(np.mean([(units_of(r, kind) - 1 - position_of(r, kind)) / (units_of(r, kind) - 1) for r in rows]))
    late = float(np.mean([position_of(r, kind) / (units_of(r, kind) - 1) for r in rows]))
    return dict(
        hit=best_hit, hit_position=best_at, auc=max(early, late), auc_order="earliest" if early >= late else "latest"
    )


def table_of(rows: list[dict], kind: str, untestable: str | None = None) -> dict:
    """Per learner: hit share and AUC with intervals over puzzles; chance; the position-only baseline; verdicts
    (``untestable``: the reason every verdict is "untestable at this scale" instead)."""
    prompts = sorted({r["prompt"] for r in rows})
    by_prompt = {p: [r for r in rows if r["prompt"] == p] for p in prompts}

    def mean_over(idx, value) -> float:
        chosen = [r for i in idx for r in by_prompt[prompts[i]]]
        return float(np.mean([value(r) for r in chosen])) if chosen else float("nan")

    table = {}
    everyone = range(len(prompts))
    for name in LEARNERS:
        hit_of, auc_of = (lambda r, n=name: r[n][kind]["hit"]), (lambda r, n=name: r[n][kind]["auc"])
        table[name] = dict(
            hit=mean_over(everyone, hit_of),
            hit_ci=cluster_bootstrap(lambda i, f=hit_of: mean_over(i, f), len(prompts)),
            auc=mean_over(everyone, auc_of),
            auc_ci=cluster_bootstrap(lambda i, f=auc_of: mean_over(i, f), len(prompts)),
        )
    chance = dict(hit=float(np.mean([1.0 / units_of(r, kind) for r in rows])), auc=0.5)
    position = position_baselines(rows, kind)
    for name in LEARNERS:
        t = table[name]
        if untestable is not None:
            t["verdict"] = f"untestable at this scale: {untestable}"
        elif len(rows) < MIN_KEPT:
            t["verdict"] = f"untestable at this scale: {len(rows)} kept rows (< {MIN_KEPT})"
        elif t["hit_ci"][0] > position["hit"] and t["auc_ci"][0] > position["auc"]:
            t["verdict"] = "localizes the first mistake beyond position"
        elif t["hit_ci"][1] <= chance["hit"] or t["auc_ci"][1] <= 0.5:
            t["verdict"] = "does not localize the first mistake"
        elif t["hit_ci"][0] > chance["hit"] and t["auc_ci"][0] > 0.5:
            t["verdict"] = "localizes it, but no better than position"
        else:
            t["verdict"] = "undecided"
    positions = {}
    for r in rows:
        key = str(min(position_of(r, kind), 2)) if kind == "steps" else str(position_of(r, kind))
        positions[key] = positions.get(key, 0) + 1
    return dict(rows=len(rows), puzzles=len(prompts), positions=dict(sorted(positions.items())), chance=chance,
                position_only=position, learners=table)  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prompts", type=int, default=256)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 8 prompts")
    parser.add_argument("--tables-only", action="store_true", help="recompute the tables of --out from its records")
    args = parser.parse_args(argv)
    if args.tables_only:
        return recompute_tables(args.out, argv)
    if args.quick:
        args.prompts = 8
    measurement = Measurement("E7b", argv, protocol=PROTOCOL)
    log = measurement.log

    from countdown_env.solving.answer_prefix import AnswerPrefixOracle
    from countdown_env.solving.oracle import StepOracle
    from countdown_env.steps.answer_tokens import label_answer_tokens
    from countdown_env.steps.labels import label_completion
    from learners.contrastive.paragraphs import split_paragraphs, token_texts

    setting = load_setting(args.prompts, MODEL)
    batch = generate_batch(
        setting.model, setting.tokenizer, setting.task, setting.puzzles, setting.prompt_ids,
        group_size=args.group, max_new_tokens=args.max_new_tokens, seed=args.seed,
    )  # fmt: skip
    log(f"generated {len(batch.puzzles)} completions, pass rate {float(batch.success.float().mean()):.3f}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        [
            dict(
                row=i,
                prompt=i // args.group,
                numbers=list(p.numbers),
                target=p.target,
                ids=ids,
                success=bool(batch.success[i]),
            )  # fmt: skip
            for i, (p, ids) in enumerate(zip(batch.puzzles, batch.completions(), strict=True))
        ],
        args.out / "batch.jsonl.gz",
    )

    weights = learner_weights(setting, batch, args.group, args.max_new_tokens, args.seed, log)

    task = setting.task
    rules = dict(use_all_numbers=task.use_all_numbers, integer_intermediates=task.integer_intermediates)
    counts = dict(failures=0, cut=0, unread=0, unsolvable=0, no_mistake=0, one_step=0, answers=0)
    step_rows, answer_rows = [], []
    prefix_oracles = {}
    for row, ids in enumerate(batch.completions()):
        if bool(batch.success[row]):
            continue
        counts["failures"] += 1
        if len(ids) >= args.max_new_tokens:
            counts["cut"] += 1
            continue
        puzzle = batch.puzzles[row]
        pieces = token_texts(setting.tokenizer, ids)
        text = "".join(pieces)
        offsets = [0, *np.cumsum([len(t) for t in pieces]).tolist()]
        base = dict(row=row, prompt=row // args.group, numbers=list(puzzle.numbers), target=puzzle.target, text=text)
        # answer tokens
        oracle = prefix_oracles.setdefault(puzzle, AnswerPrefixOracle(puzzle, **rules))
        spans = [(offsets[t], offsets[t + 1]) for t in range(len(pieces))]
        answer = label_answer_tokens(text, lambda _text, s=spans: s, oracle)
        if answer is not None and answer.get("first_unsolvable") is not None:
            counts["answers"] += 1
            tokens = [token_of(offsets, entry["end"]) for entry in answer["tokens"]]
            record = dict(base, answer_tokens=len(tokens), first_unsolvable=answer["first_unsolvable"],
                          answer_text=[e["text"] for e in answer["tokens"]])  # fmt: skip
            for name in LEARNERS:
                credit = [float(weights[name][row, t]) for t in tokens]
                hit, auc = hit_and_auc(credit, answer["first_unsolvable"]) if len(credit) > 1 else (1.0, 0.5)
                record[name] = dict(answer=dict(credit=credit, hit=hit, auc=auc))
            answer_rows.append(record)
        # reasoning steps
        labels = label_completion(text, puzzle, StepOracle(puzzle.target, **rules))
        if not labels.parsed:
            counts["unread"] += 1
            continue
        if not labels.solvable_before:
            counts["unsolvable"] += 1
            continue
        if labels.first_mistake is None:
            counts["no_mistake"] += 1
            continue
        if len(labels.steps) < 2:
            counts["one_step"] += 1
            continue
        units = step_units(offsets, labels)
        paragraphs = split_paragraphs(pieces, max_paragraph_len=MAX_PARAGRAPH_LEN)
        record = dict(base, steps=len(units), first_mistake_step=labels.first_mistake,
                      first_mistake_paragraph=first_mistake_paragraph(pieces, paragraphs, labels),
                      step_text=[s.step.text for s in labels.steps])  # fmt: skip
        for name in LEARNERS:
            credit = [float(weights[name][row, list(u)].min()) for u in units]
            hit, auc = hit_and_auc(credit, labels.first_mistake)
            record[name] = dict(steps=dict(credit=credit, hit=hit, auc=auc))
        step_rows.append(record)
    stratified = stratify(step_rows, POSITION_ZERO_SHARE, args.seed)
    log(f"step rows {len(step_rows)} (stratified to {len(stratified)}), answer rows {len(answer_rows)}; {counts}")
    records = merge_parts(stratified, answer_rows)
    write_jsonl(records, args.out / "completions.jsonl.gz")
    step_positions = {str(p): sum(min(r["first_mistake_step"], 2) == p for r in step_rows) for p in range(3)}
    payload = dict(
        settings=dict(
            model=MODEL,
            prompts=args.prompts,
            group=args.group,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
            temperature=0.8,
            position_zero_share=POSITION_ZERO_SHARE,
        ),  # fmt: skip
        batch=dict(completions=len(batch.puzzles), pass_rate=float(batch.success.float().mean())),
        left_out=counts,
        step_positions_before_stratifying=step_positions,
        tables=tables_of(records, args.seed),
    )
    payload["stratification_met"] = stratification_met(payload["tables"]["steps"])
    return measurement.finish(args.out, payload, summary)


def merge_parts(step_rows: list[dict], answer_rows: list[dict]) -> list[dict]:
    """One record per completion kept in either set, flagged ``in_steps`` / ``in_answer``, each learner's credit
    under ``steps`` and/or ``answer``."""
    merged: dict[int, dict] = {}
    for flag, part in (("in_steps", step_rows), ("in_answer", answer_rows)):
        for row in part:
            record = merged.setdefault(row["row"], dict(in_steps=False, in_answer=False))
            for key, value in row.items():
                if key in LEARNERS:
                    record.setdefault(key, {}).update(value)
                else:
                    record[key] = value
            record[flag] = True
    return [merged[k] for k in sorted(merged)]


def tables_of(records: list[dict], seed: int = 0) -> dict:
    """The tables of the report, from the committed records (what the test recomputes): ``steps`` as registered
    (every verdict "untestable at this scale" when the spread rule fails), ``answer``, and ``steps_capped``, a
    deviation not registered: the registered set with every position capped at 40 % by seeded draws."""
    steps = [r for r in records if r["in_steps"]]
    spread = spread_of(steps)
    failed = None
    if not (max(spread.values()) <= POSITION_ZERO_SHARE + 1e-9 and sum(v >= 0.15 for v in spread.values()) >= 3):
        failed = (
            "the stratified set breaks the spread rule ("
            + ", ".join(f"position {p}: {v:.1%}" for p, v in spread.items())
            + ")"
        )
    return dict(
        steps=table_of(steps, "steps", untestable=failed),
        answer=table_of([r for r in records if r["in_answer"]], "answer"),
        steps_capped=table_of(cap_positions(steps, POSITION_ZERO_SHARE, seed), "steps"),
    )


def spread_of(rows: list[dict]) -> dict[str, float]:
    """Each step position's (0, 1, 2+) share of the rows."""
    return {str(p): sum(min(r["first_mistake_step"], 2) == p for r in rows) / len(rows) for p in range(3)}


def cap_positions(rows: list[dict], share: float, seed: int) -> list[dict]:
    """A subset where no step position (0, 1, 2+) holds more than ``share``: the largest positions drawn down
    (seeded) to ``share`` of the resulting set, the smallest kept whole."""
    by_position = {p: [r for r in rows if min(r["first_mistake_step"], 2) == p] for p in range(3)}
    smallest = min(by_position, key=lambda p: len(by_position[p]))
    rest = [p for p in by_position if p != smallest]
    # With the smallest position kept whole (n rows), the others get at most share * total each, where
    # total = n + the others' kept counts: solve for the cap c in c = share * (n + 2c) -> c = share * n / (1 - 2 share).
    n = len(by_position[smallest])
    cap = int(share * n / (1 - 2 * share)) if share < 0.5 else max(len(v) for v in by_position.values())
    kept = list(by_position[smallest])
    rng = random.Random(seed)
    for p in rest:
        group = by_position[p]
        kept += [group[i] for i in sorted(rng.sample(range(len(group)), min(cap, len(group))))]
    return sorted(kept, key=lambda r: r["row"])


def stratification_met(table: dict) -> bool:
    """No position above 40 % of the rows and at least three at 15 % or more."""
    shares = [v / max(table["rows"], 1) for v in table["positions"].values()]
    return bool(shares) and max(shares) <= POSITION_ZERO_SHARE + 1e-9 and sum(s >= 0.15 for s in shares) >= 3


def recompute_tables(out: Path, argv: list[str] | None) -> dict:
    """``--tables-only``: the tables of ``out/results.json`` recomputed from ``out/completions.jsonl.gz`` (the
    measurement's provenance kept, the recomputation's command and date added)."""
    import datetime

    from countdown_env.helpers.atomic import write_text
    from experiments._sampled_groups import command_line, without_nan

    report = json.loads((out / "results.json").read_text())
    report["tables"] = tables_of(read_jsonl(out / "completions.jsonl.gz"), report["settings"]["seed"])
    report["stratification_met"] = stratification_met(report["tables"]["steps"])
    report["tables_recomputed"] = dict(
        command=command_line(sys.argv[1:] if argv is None else list(argv)), date=datetime.date.today().isoformat()
    )
    write_text(out / "results.json", json.dumps(without_nan(report), indent=1) + "\n")
    text = summary(report)
    write_text(out / "summary.md", text)
    print(text)
    return report


def summary(report: dict) -> str:
    lines = provenance_lines(report, "E7b: credit assignment, first mistakes spread over positions",
                             "experiments/credit_assignment_v2.py")  # fmt: skip
    lines[2] = "Protocol: `docs/experiments.md`, E7b. Written by `experiments/credit_assignment_v2.py`."
    s = report["settings"]
    lines += [
        "",
        f"{s['model']}, {s['prompts']} prompts x {s['group']} completions at T = {s['temperature']}, "
        f"{s['max_new_tokens']} new tokens (pass rate {report['batch']['pass_rate']:.3f}); left out: "
        f"{report['left_out']}. First-mistake steps before stratifying (0, 1, 2+): "
        f"{report['step_positions_before_stratifying']}; stratification met: {report['stratification_met']}.",
    ]
    sections = (
        ("steps", "Reasoning steps (unit: a step's segment), as registered"),
        ("steps_capped", "Reasoning steps, every position capped at 40 % (a deviation, not registered)"),
        ("answer", "Answer tokens"),
    )
    for kind, title in sections:
        t = report["tables"][kind]
        p = t["position_only"]
        lines += [
            "",
            f"## {title}",
            "",
            f"{t['rows']} rows from {t['puzzles']} puzzles; target positions {t['positions']}.",
            "",
            "| learner | hit share [95 % CI] | rank AUC [95 % CI] | verdict |",
            "| --- | --- | --- | --- |",
        ]
        for name, v in t["learners"].items():
            lines.append(
                f"| {name} | {v['hit']:.3f} [{v['hit_ci'][0]:.3f}, {v['hit_ci'][1]:.3f}] | {v['auc']:.3f} "
                f"[{v['auc_ci'][0]:.3f}, {v['auc_ci'][1]:.3f}] | {v['verdict']} |"
            )
        lines += [
            f"| chance | {t['chance']['hit']:.3f} | 0.500 | mean 1/\\|S\\|; 0.5 |",
            f"| position only | {p['hit']:.3f} | {p['auc']:.3f} | always position {p['hit_position']}; "
            f"{p['auc_order']} most negative |",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
