r"""The verdicts of docs/experiments.md's training experiments (E3a with E3b's probe, E4, E4b, E5, E6), from their
``countdown compare`` folders, and E1's corrected reading from its Monte Carlo results.

Each experiment's arms are runs of ``countdown compare`` (the commands are in docs/experiments.md); an arm is one
learner of one comparison folder, so that two variants of the same learner (E6's prime_rl with and without its DPPO
mask) can sit in two folders run with the same seeds, prompts and eval. This script only reads those folders and
applies the pre-registered statistics and decision rules; it trains nothing.

Statistics (``learners.pipeline.evaluation.statistics``, the harness's own):

- a contrast "A - B" at eval step s is the mean over seeds of each seed's mean per-puzzle difference of pass@k
  (``runs/LEARNER-sSEED/evals/step-s.jsonl``: the same 512 puzzles, aligned), with the Student t 95 % interval
  over seeds (training variance inside: the headline), beside the paired puzzle bootstrap (seeds held fixed);
- cost ratios: per seed, arm A's cumulative training seconds (or forward tokens) at the last step over arm B's,
  then the mean of those per-seed ratios with a t interval;
- engagement: each run's mean over its logged steps of the mechanism's changed share
  (``learners.pipeline.compare.engagement``);
- E3 also reads E3b's reward-hacking probe (folder ``long_probe``) against itself: paragraphs per shaped row and the
  share of eval completions reaching the token budget, late minus early, t over seeds (``hacking_probe``).

Preconditions (docs/experiments.md, "Preconditions of the claims"): each experiment lists the properties its claim
takes for granted, measured at this scale (``experiments/results/preconditions/*/results.json``, written by the
``precondition_*.py`` scripts, and figures of the experiment's own runs: the share of step-0 eval completions cut at
the token budget, the baseline's gain over its step 0, the mechanisms' engagement). A precondition *holds* when its
interval lies on the claim's side of its threshold, *fails* when it lies entirely on the other side and is
*undecided* otherwise. The claim's verdict is the registered rule's, unless a precondition fails, or one the rule
cannot do without (``must_hold``: E4b's "grpo learns") is not shown to hold: then it is *untestable at this scale*
with the measured figure and the precondition's own status (an undecided one reads *undecided*, never *fails*).
E4's and E4b's equivalence margin is set beside the baseline's own gain over its step 0 and the power of the rule
(its t interval inside the margin when the true difference is 0, at the realised SD of the per-seed differences).
Every contrast also carries its minimum detectable effect,
(t_0.975 + t_0.80) x SE over seeds (80 % power).

Outputs, beside the comparison folders: ``verdict.md`` (the tables and the rule applied, word for word),
``verdict.json`` (every figure) and ``arms.png`` (pass@1/pass@4 curves of every arm, from the harness's plot).

    python experiments/claim_experiments.py e4          # or e1, e3, e4b, e5, e6
    python experiments/claim_experiments.py e6 [--root experiments/results]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from countdown_env.helpers.atomic import write_text  # noqa: E402
from countdown_env.helpers.jsonl import read_jsonl  # noqa: E402
from learners.pipeline.compare.engagement import MECHANISMS, run_means  # noqa: E402
from learners.pipeline.compare.results import read_rows  # noqa: E402
from learners.pipeline.evaluation.statistics import (  # noqa: E402
    equivalence_power,
    eval_files,
    mean_ci,
    minimum_detectable_effect,
    paired_bootstrap_diff,
    paired_seed_diff,
    puzzle_scores,
)


@dataclass(frozen=True)
class Arm:
    """One learner of one comparison folder (relative to the experiment's folder), shown as ``label``."""

    folder: str
    learner: str
    label: str


@dataclass(frozen=True)
class Contrast:
    """``a - b`` on pass@``k`` at ``step`` (None: the last eval step both arms share)."""

    a: str
    b: str
    k: int = 1
    step: int | None = None


@dataclass
class Experiment:
    name: str
    folder: str
    arms: dict[str, Arm]
    contrasts: list[Contrast]
    cost_ratios: list[tuple[str, str]] = field(default_factory=list)
    seeds: tuple[int, ...] = ()  # the registered seeds: no verdict until every arm has finished all of them
    engaged: dict[str, str] = field(default_factory=dict)  # arm key -> mechanism metric that must act in every seed
    decide: Callable[[dict], list[str]] | None = None
    partial: bool = False  # decide() itself says which parts of the rule can be applied while arms are missing
    # an analysis outside the arm contrasts, kept in result["extra"]; only E3b's probe has one (``probe_lines``)
    extra: Callable[[Path], dict] | None = None
    preconditions: list[Precondition] = field(default_factory=list)
    own_gains: tuple[str, ...] = ()  # arms whose pass@1 gain over their own step 0 is reported (last eval step)


def run_dir(base: Path, arm: Arm, seed: int) -> Path:
    return base / arm.folder / "runs" / f"{arm.learner}-s{seed}"


def finished_seeds(base: Path, arm: Arm) -> list[int]:
    runs = base / arm.folder / "runs"
    prefix = f"{arm.learner}-s"
    seeds = []
    for d in sorted(runs.glob(f"{prefix}*")) if runs.is_dir() else []:
        tail = d.name[len(prefix) :]
        if tail.isdigit() and (d / "DONE").is_file():
            seeds.append(int(tail))
    return sorted(seeds)


def eval_steps(base: Path, arm: Arm, seed: int) -> list[int]:
    return list(eval_files(run_dir(base, arm, seed)))


def scores(base: Path, arm: Arm, seeds: list[int], step: int, k: int) -> dict[int, np.ndarray]:
    out, keys0 = {}, None
    for s in seeds:
        keys, values = puzzle_scores(run_dir(base, arm, s) / "evals" / f"step-{step}.jsonl", k=k)
        if keys0 is not None and keys != keys0:
            raise ValueError(f"{arm.label} seed {s}: eval puzzles differ from the other seeds'")
        keys0 = keys
        out[s] = values
    return out


def contrast(base: Path, exp: Experiment, c: Contrast) -> dict:
    a, b = exp.arms[c.a], exp.arms[c.b]
    seeds = sorted(set(finished_seeds(base, a)) & set(finished_seeds(base, b)))
    if not seeds:
        raise ValueError(f"{exp.name}: no seed finished in both {a.label} and {b.label}")
    step = c.step if c.step is not None else min(max(eval_steps(base, arm, s)) for arm in (a, b) for s in seeds)
    sa, sb = scores(base, a, seeds, step, c.k), scores(base, b, seeds, step, c.k)
    d, lo, hi, n = paired_seed_diff(sa, sb)
    bd, blo, bhi, _ = paired_bootstrap_diff(sa, sb)
    per_seed = {s: float((sa[s] - sb[s]).mean()) for s in seeds}
    mean_a, *ci_a = mean_ci([float(sa[s].mean()) for s in seeds])
    mde = minimum_detectable_effect(list(per_seed.values()))
    mean_b, *ci_b = mean_ci([float(sb[s].mean()) for s in seeds])
    return dict(a=c.a, b=c.b, label=f"{a.label} - {b.label}", k=c.k, step=step, seeds=seeds, diff=d, low=lo,
                high=hi, bootstrap=[blo, bhi], per_seed=per_seed, mean_a=mean_a, ci_a=ci_a, mean_b=mean_b,
                ci_b=ci_b, mde=mde)  # fmt: skip


def own_gain(base: Path, arm: Arm, step: int, k: int = 1) -> tuple[float, float, float]:
    """An arm's pass@k at ``step`` minus its own step 0, paired per puzzle, t over its finished seeds."""
    seeds = finished_seeds(base, arm)
    diff, low, high, _ = paired_seed_diff(scores(base, arm, seeds, step, k), scores(base, arm, seeds, 0, k))
    return diff, low, high


def cost_ratio(base: Path, exp: Experiment, a_key: str, b_key: str) -> dict:
    a, b = exp.arms[a_key], exp.arms[b_key]
    seeds = sorted(set(finished_seeds(base, a)) & set(finished_seeds(base, b)))
    out = dict(a=a_key, b=b_key, label=f"{a.label} / {b.label}", seeds=seeds)

    def last_row(arm: Arm, seed: int) -> dict:
        return max(read_rows(run_dir(base, arm, seed) / "rows.csv"), key=lambda r: r["step"])

    last = {s: (last_row(a, s), last_row(b, s)) for s in seeds}  # each rows.csv read once
    for column in ("wall_seconds", "forward_tokens", "loss_tokens", "generated_tokens"):
        ratios, per_step_a, per_step_b = [], [], []
        for s in seeds:
            last_a, last_b = last[s]
            ratios.append(last_a[column] / last_b[column])
            per_step_a.append(last_a[column] / last_a["step"])
            per_step_b.append(last_b[column] / last_b["step"])
        mean, lo, hi = mean_ci(ratios)
        out[column] = dict(ratio=mean, low=lo, high=hi, per_step_a=float(np.mean(per_step_a)),
                           per_step_b=float(np.mean(per_step_b)), per_seed=ratios)  # fmt: skip
    return out


GRAD_CLIP = 1.0  # the harness's max_grad_norm: a pre-clip norm above it is (or would be) scaled down


def engagement(base: Path, exp: Experiment) -> tuple[dict, dict]:
    """Per arm: each mechanism's mean per seed, and the pre-clip gradient norms (the share of steps above
    ``GRAD_CLIP`` and the largest, per seed)."""
    out, norms = {}, {}
    for key, arm in exp.arms.items():
        mechanisms = MECHANISMS.get(arm.learner, ())
        per_metric: dict[str, dict[int, float]] = {m.metric: {} for m in mechanisms}
        above, largest = {}, {}
        for s in finished_seeds(base, arm):
            history = json.loads((run_dir(base, arm, s) / "log_history.json").read_text())
            for metric, (mean, _) in run_means(history, mechanisms).items():
                per_metric[metric][s] = mean
            grad = [float(e["grad_norm"]) for e in history if "grad_norm" in e and e["grad_norm"] is not None]
            if grad:
                above[s] = float(np.mean([g > GRAD_CLIP for g in grad]))
                largest[s] = max(grad)
        labels = {m.metric: m.label for m in mechanisms}
        out[key] = {metric: dict(label=labels[metric], per_seed=v) for metric, v in per_metric.items()}
        norms[key] = dict(share_above_clip=above, max=largest)
    return out, norms


def fmt_ci(mean: float, low: float, high: float, signed: bool = True) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(mean)} [{f.format(low)}, {f.format(high)}]"


# ---- preconditions: what the claim takes for granted, measured at this scale (docs/experiments.md) ----

PRECONDITIONS = "preconditions"  # experiments/results/preconditions/<name>/results.json


@dataclass(frozen=True)
class Precondition:
    """``read(root, base, exp, result)`` measures it: (value, low, high), or None when not measured (``root`` holds
    the experiment folders, ``base`` is this experiment's, ``result`` its analysis so far). It *holds* when [low, high]
    lies strictly on the claim's side of ``threshold`` (above it, or below it with ``above=False``), *fails* when it
    lies entirely on the other side, and is *undecided* otherwise. ``must_hold``: the registered rule cannot be read
    unless it holds (E4b's "grpo learns": an equivalence test between two arms that may both stand still says
    nothing), so the claim is *untestable at this scale* when it is undecided too; its status still reads
    *undecided* (learning not shown is not learning shown absent)."""

    figure: str
    read: Callable[[Path, Path, Experiment, dict], tuple[float, float, float] | None]
    threshold: float
    above: bool = True
    must_hold: bool = False


def precondition_status(p: Precondition, root: Path, base: Path, exp: Experiment, result: dict) -> dict:
    out = dict(figure=p.figure, threshold=p.threshold, above=p.above, must_hold=p.must_hold)
    figures = p.read(root, base, exp, result)
    if figures is None or any(math.isnan(v) for v in figures):
        return dict(out, status="not measured")
    value, low, high = figures
    if p.above:
        status = "holds" if low > p.threshold else "fails" if high < p.threshold else "undecided"
    else:
        status = "holds" if high < p.threshold else "fails" if low > p.threshold else "undecided"
    return dict(out, value=value, low=low, high=high, status=status)


def precondition_figure(c: dict) -> str:
    """The measured figure with 3 significant digits, its interval beside it when it has one."""
    if c["status"] == "not measured":
        return "-"
    if c["low"] == c["high"]:
        return f"{c['value']:.3g}"
    return f"{c['value']:.3g} [{c['low']:.3g}, {c['high']:.3g}]"


def precondition_words(c: dict) -> str:
    side = ">" if c["above"] else "<"
    needed = " (the rule needs it to hold)" if c.get("must_hold") and c["status"] != "holds" else ""
    if c["status"] == "not measured":
        return f"{c['figure']}: not measured (needs {side} {c['threshold']:g}){needed}"
    return f"{c['figure']} {precondition_figure(c)} (needs {side} {c['threshold']:g}): {c['status']}{needed}"


def blocks_the_rule(c: dict) -> bool:
    """A precondition that makes the claim untestable: it fails, or the rule needs it and it does not hold."""
    return c["status"] == "fails" or (bool(c.get("must_hold")) and c["status"] != "holds")


def claim_verdict(result: dict) -> dict:
    """The claim's verdict: *untestable at this scale* with the blocking preconditions' figures (failed, or needed
    by the rule and not shown to hold), else the registered rule's verdict (``result["registered"]``), undecided
    preconditions named beside it."""
    checks = result.get("preconditions", [])
    failed = [c for c in checks if blocks_the_rule(c)]
    if failed:
        verdict = "untestable at this scale: " + "; ".join(precondition_words(c) for c in failed)
    else:
        verdict = result.get("registered") or "no verdict yet"
        undecided = [precondition_words(c) for c in checks if c["status"] in ("undecided", "not measured")]
        if undecided and result.get("registered"):
            verdict += " (preconditions not settled: " + "; ".join(undecided) + ")"
    return dict(verdict=verdict, registered=result.get("registered"), failed=len(failed))


def measured(root: Path, name: str, pick: Callable[[dict], tuple[float, float, float]]):
    """``pick`` applied to ``root/preconditions/name/results.json``; None when that file does not exist."""
    path = root / PRECONDITIONS / name / "results.json"
    if not path.is_file():
        return None
    return pick(json.loads(path.read_text()))


def _row(report: dict, **where) -> dict:
    return next(r for r in report["rows"] if all(r.get(k) == v for k, v in where.items()))


def potential_predicts_success(root: Path, base: Path, exp: Experiment, result: dict):
    """P1: Spearman of the contrastive potential with Monte Carlo success, pooled over prefixes."""
    return measured(root, "contrastive_potential", lambda r: (r["result"]["spearman"], *r["result"]["spearman_ci"]))


def outcome_readable_early(experiment: str):
    """P2 on ``experiment``'s setting: within-group AUC of prefix success at 40 % of the tokens."""

    def pick(report: dict):
        rows = [r for r in report["rows"] if r.get("experiment") == experiment]
        return (rows[0]["rule"]["auc"], *rows[0]["rule"]["ci"]) if rows else None  # that setting not run: None

    def read(root: Path, base: Path, exp: Experiment, result: dict):
        # one folder per run of the script: E1's setting first (outcome_predictability/), then a setting measured
        # by a later run on its own (``--experiments E4b --out .../outcome_predictability_e4b``)
        for folder in ("outcome_predictability", f"outcome_predictability_{experiment.lower()}"):
            figures = measured(root, folder, pick)
            if figures is not None:
                return figures
        return None

    return read


def s_grpo_kept_share(root: Path, base: Path, exp: Experiment, result: dict):
    """P3 at E5's setting (G = 8): the share of loss tokens S-GRPO's selection keeps."""

    def pick(r: dict):
        kept = _row(r, experiment="E5", group_size=8)["s_grpo_kept_share"]
        return kept["value"], *kept["ci"]

    return measured(root, "token_shares", pick)


def trie_tracks_reference(root: Path, base: Path, exp: Experiment, result: dict):
    """E2 at |G| = 50: the smaller Pearson r of the trie's A with the Monte Carlo A* over buckets 4-7 and 8-15."""
    path = root / "t_spmo_trie_accuracy" / "results.json"
    if not path.is_file():
        return None
    buckets = json.loads(path.read_text())["groups"]["50"]["buckets"]
    r = min(float(buckets[b]["pearson_A_Astar"]) for b in ("4-7", "8-15"))
    return r, r, r


STEP0_CUT_MAX = 0.01


def step0_cut_share(arm_key: str):
    """The share of an arm's step-0 eval completions that reach the comparison's token budget (t over seeds)."""

    def read(root: Path, base: Path, exp: Experiment, result: dict):
        arm = exp.arms[arm_key]
        settings = base / arm.folder / "compare.json"
        seeds = finished_seeds(base, arm)
        if not settings.is_file() or not seeds:
            return None
        budget = json.loads(settings.read_text())["max_new_tokens"]
        shares = []
        for seed in seeds:
            rows = read_jsonl(run_dir(base, arm, seed) / "evals" / "step-0.jsonl")
            if any("lengths" not in r for r in rows):
                return None
            lengths = np.array([n for r in rows for n in r["lengths"]], dtype=float)
            shares.append(float((lengths >= budget).mean()))
        return mean_ci(shares) if len(shares) > 1 else (shares[0], shares[0], shares[0])

    return read


def baseline_learns(arm_key: str, step: int):
    """The baseline arm's pass@1 at ``step`` minus its own step 0 (t over seeds): an equivalence test between two
    arms that both stand still says nothing."""

    def read(root: Path, base: Path, exp: Experiment, result: dict):
        arm = exp.arms[arm_key]
        if len(finished_seeds(base, arm)) < 2:
            return None
        return own_gain(base, arm, step)

    return read


ENGAGEMENT_MIN = 0.01


def engages(arm_key: str, metric: str):
    """The share of loss tokens ``metric`` says the arm's mechanism changed, mean over seeds (t interval)."""

    def read(root: Path, base: Path, exp: Experiment, result: dict):
        values = [v for v in result["engagement"][arm_key][metric]["per_seed"].values() if not math.isnan(v)]
        if len(values) < 2:
            return None
        return mean_ci(values)

    return read


# ---- the pre-registered rules, word for word in docs/experiments.md ----

EQUIVALENCE_MARGIN = 0.03
FORWARD_RATIO_MAX = 0.5


def margin_lines(result: dict, contrasts: list[dict]) -> list[str]:
    """The equivalence margin against what it guards: the baseline's own gain over its step 0 (an arm that learns
    nothing sits that far below it), and per contrast the power of the rule, P(t interval within ±margin) at a true
    difference of 0 and the realised SD of the per-seed differences."""
    lines = []
    own = result.get("own_gains", {}).get("grpo")
    if own:
        gain, low, high = own["ci"]
        ratio = f"{EQUIVALENCE_MARGIN / gain:.1f}x" if gain > 0 else "more than"
        lines.append(
            f"- The margin ±{EQUIVALENCE_MARGIN} against grpo's own pass@1 gain over step 0 at step {own['step']}: "
            f"{fmt_ci(gain, low, high)} (the margin is {ratio} that gain): an arm that learned nothing at all would "
            f"sit {gain:+.3f} from grpo and {'still' if abs(gain) < EQUIVALENCE_MARGIN else 'not'} fit inside the "
            "margin."
        )
    for c in contrasts:
        values = list(c["per_seed"].values())
        sd, n = float(np.std(values, ddof=1)), len(values)
        lines.append(
            f"- Power to hold, {c['label']}: {equivalence_power(EQUIVALENCE_MARGIN, sd, n):.2f} (the t interval "
            f"within ±{EQUIVALENCE_MARGIN} when the true Δ is 0, per-seed SD {sd:.3f}, {n} seeds)."
        )
    return lines


def why_not_above(c: dict) -> str:
    """Why a contrast's interval is not above 0, in words ("" when it is)."""
    if c["low"] > 0:
        return ""
    return " (interval below 0)" if c["high"] < 0 else " (interval contains 0)"


def decide_e4(result: dict) -> list[str]:
    c = result["contrasts"][0]
    r = result["cost_ratios"][0]["forward_tokens"]
    within = -EQUIVALENCE_MARGIN <= c["low"] and c["high"] <= EQUIVALENCE_MARGIN
    cheap = r["ratio"] <= FORWARD_RATIO_MAX
    verdict = "reproduced" if within and cheap else "not reproduced"
    result["registered"] = verdict
    return [
        f"Rule: *reproduced* if the Δ pass@1 interval lies within ±{EQUIVALENCE_MARGIN} and the forward-token ratio "
        f"is ≤ {FORWARD_RATIO_MAX}.",
        f"- Δ pass@1 (ps_ppo − grpo) at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over "
        f"{len(c['seeds'])} seeds: {'within' if within else 'not within'} ±{EQUIVALENCE_MARGIN}.",
        f"- forward-token ratio: {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]: "
        f"{'≤' if cheap else '>'} {FORWARD_RATIO_MAX}.",
        *margin_lines(result, [c]),
        f"**Verdict: {verdict}.**",
    ]


def decide_e6(result: dict) -> list[str]:
    void = [f"{result['arms'][key]} ({info['label']})" for key, info in result["void_checks"].items() if not info["ok"]]
    lines = ["Rule: the run is void unless the engagement shows non-zero clip/mask shares (every seed); *mask matters* "
             "if prime_rl's Δ pass@1 vs its mask-off arm lies above 0; clip-higher's claim likewise for dapo vs grpo "
             "on pass@4."]  # fmt: skip
    if void:
        result["registered"] = "void"
        return [*lines, f"**Verdict: void** (never acted in some seed: {', '.join(void)})."]
    mask, clip = result["contrasts"][0], result["contrasts"][1]
    parts = []
    for c, name in ((mask, "mask matters"), (clip, "clip-higher (pass@4)")):
        above = c["low"] > 0
        why = why_not_above(c)
        parts.append(f"{name}: {'reproduced' if above else 'not reproduced'}")
        lines.append(
            f"- {c['label']}, pass@{c['k']} at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over "
            f"{len(c['seeds'])} seeds (MDE {c['mde']:.3f}): **{parts[-1]}**{why}."
        )
    result["registered"] = "; ".join(parts)
    return lines


PROBE = Arm("long_probe", "contrastive", "contrastive, no paragraph cap (240 steps)")
PROBE_SEEDS = (0, 1, 2)
PROBE_WINDOW = 10  # training steps at each end whose logged paragraph counts stand for the first and last evals


def hacking_probe(base: Path) -> dict:
    """E3b's probe against itself, per seed: paragraphs per shaped row (mean over the last ``PROBE_WINDOW`` logged
    steps minus the first ``PROBE_WINDOW``) and the share of eval completions that reach the token budget (last eval
    minus step 0); each a mean with a t interval over seeds. Pass@1 and mean length at every eval beside them."""
    seeds = finished_seeds(base, PROBE)
    out: dict = dict(label=PROBE.label, seeds=seeds, missing=sorted(set(PROBE_SEEDS) - set(seeds)))
    if not seeds:
        return out
    budget = json.loads((base / PROBE.folder / "compare.json").read_text())["max_new_tokens"]
    paragraphs, truncation, curves = {}, {}, {}
    for s in seeds:
        history = json.loads((run_dir(base, PROBE, s) / "log_history.json").read_text())
        logged = sorted((h["step"], h["contrastive/paragraphs_per_shaped_row"]) for h in history
                        if "contrastive/paragraphs_per_shaped_row" in h)  # fmt: skip
        values = [v for _, v in logged]
        paragraphs[s] = float(np.mean(values[-PROBE_WINDOW:]) - np.mean(values[:PROBE_WINDOW]))
        curve = {}
        for step in eval_steps(base, PROBE, s):
            rows = read_jsonl(run_dir(base, PROBE, s) / "evals" / f"step-{step}.jsonl")
            lengths = np.array([n for r in rows for n in r["lengths"]], dtype=float)
            correct = np.array([c for r in rows for c in r["correct"]], dtype=float)
            curve[step] = dict(pass1=float(correct.mean()), mean_length=float(lengths.mean()),
                               truncated=float((lengths >= budget).mean()))  # fmt: skip
        first, last = min(curve), max(curve)
        truncation[s] = curve[last]["truncated"] - curve[first]["truncated"]
        curves[s] = curve
    out.update(budget=budget, paragraphs=dict(per_seed=paragraphs, ci=mean_ci(list(paragraphs.values()))),
               truncation=dict(per_seed=truncation, ci=mean_ci(list(truncation.values()))), curves=curves)  # fmt: skip
    return out


def probe_lines(probe: dict) -> list[str]:
    lines = [f"## Reward-hacking probe (E3b): {probe['label']}", ""]
    if not probe["seeds"]:
        return [*lines, "Not run.", ""]
    lines += [f"Per seed: paragraphs per shaped row (mean of the last {PROBE_WINDOW} logged steps minus the first "
              f"{PROBE_WINDOW}) and the share of eval completions reaching the {probe['budget']}-token budget (last "
              "eval minus step 0); t 95 % over seeds.", "",
              "| figure | per seed | mean [t 95 %] |", "| --- | --- | --- |"]  # fmt: skip
    for key in ("paragraphs", "truncation"):
        cells = " ".join(f"{v:+.3f}" for v in probe[key]["per_seed"].values())
        lines.append(f"| {key} | {cells} | {fmt_ci(*probe[key]['ci'])} |")
    lines += ["", "| seed | step | pass@1 (all samples) | mean length | truncated |", "| --- | --- | --- | --- | --- |"]
    for s, curve in probe["curves"].items():
        for step, c in curve.items():
            lines.append(f"| {s} | {step} | {c['pass1']:.3f} | {c['mean_length']:.1f} | {c['truncated']:.3f} |")
    return [*lines, ""]


def decide_e3(result: dict) -> list[str]:
    void = [f"{result['arms'][key]} ({info['label']})" for key, info in result["void_checks"].items() if not info["ok"]]
    lines = ["Rule (E3a): the run is void unless the shaping acted (a non-zero share of rows shaped in every seed); "
             "*early gain reproduced* if the Δ pass@1 (contrastive frozen − prime_rl) interval at step 30 lies above "
             "0. Step 60 and the moving scorer are reported beside it; the fade, moving-scorer and hacking rules "
             "belong to E3b."]  # fmt: skip
    if void:
        result["registered"] = "void"
        return [*lines, f"**Verdict: void** (the shaping never acted in some seed: {', '.join(void)})."]
    c = next(c for c in result["contrasts"] if (c["a"], c["b"], c["k"], c["step"]) == ("frozen", "prime_rl", 1, 30))
    above = c["low"] > 0
    why = why_not_above(c)
    lines.append(f"- {c['label']}, pass@1 at step 30: {fmt_ci(c['diff'], c['low'], c['high'])} over "
                 f"{len(c['seeds'])} seeds (MDE {c['mde']:.3f}).")  # fmt: skip
    lines.append(f"**Verdict: early gain {'reproduced' if above else 'not reproduced'}**{why}.")
    result["registered"] = f"early gain {'reproduced' if above else 'not reproduced'}"
    return [*lines, *decide_probe(result.get("extra", {}))]


def decide_probe(probe: dict) -> list[str]:
    lines = [
        "",
        "Rule (E3b probe): *hacking reproduced* if the probe's paragraphs per row and truncation both rise (each "
        "interval above 0, t over seeds). E3b's fade and long-horizon moving-scorer rules: untestable at this scale "
        "(not run: about 3 more core-hours past the compute budget, and with no early gain at step 30 there is no "
        "gain to fade).",
    ]
    if not probe.get("seeds"):
        return [*lines, "**Probe: not run.**"]
    if probe["missing"]:
        return [*lines, f"**Probe: no verdict yet** (seeds not finished: {probe['missing']})."]
    rise = {k: probe[k]["ci"][1] > 0 for k in ("paragraphs", "truncation")}
    for key in rise:
        lines.append(f"- {key}: {fmt_ci(*probe[key]['ci'])} over {len(probe['seeds'])} seeds: "
                     f"{'rises' if rise[key] else 'does not rise'}.")  # fmt: skip
    return [*lines, f"**Probe: hacking {'reproduced' if all(rise.values()) else 'not reproduced'}.**"]


def decide_e5(result: dict) -> list[str]:
    by_label = {(c["a"], c["b"], c["k"]): c for c in result["contrasts"]}
    lines = ["Rule: *reproduced under LoRA* if t_spmo's (|G| = 50, the paper's) and s_grpo's Δ pass@1 vs grpo "
             "intervals (LoRA) lie above 0; the same test without LoRA tells whether LoRA matters."]  # fmt: skip
    verdicts = {}
    for regime in ("lora", "full"):
        absent = [k for k, seeds in result["missing"].items() if k.endswith(f"_{regime}") and seeds]
        if absent:
            lines.append(f"- {regime}: not every registered seed has finished ({', '.join(absent)}): no verdict.")
            verdicts[regime] = None
            continue
        above = []
        for arm in (f"t_spmo_g50_{regime}", f"s_grpo_{regime}"):
            c = by_label.get((arm, f"grpo_{regime}", 1))
            if c is None:
                continue
            above.append(c["low"] > 0)
            lines.append(f"- {c['label']} at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over "
                         f"{len(c['seeds'])} seeds: {'above 0' if c['low'] > 0 else 'not above 0'}.")  # fmt: skip
        verdicts[regime] = len(above) == 2 and all(above)
    words = {True: ("reproduced", "the same holds"), False: ("not reproduced", "does not hold"),
             None: ("not run yet", "not run yet")}  # fmt: skip
    lines.append(f"**Verdict under LoRA: {words[verdicts['lora']][0]}; without LoRA: {words[verdicts['full']][1]}.**")
    result["registered"] = f"under LoRA {words[verdicts['lora']][0]}; without LoRA {words[verdicts['full']][1]}"
    return lines


def decide_e4b(result: dict) -> list[str]:
    """E4's rule per PS-PPO arm, then the registered dose-response reading (docs/experiments.md, E4b)."""
    by_arm = {c["a"]: c for c in result["contrasts"] if c["b"] == "grpo" and c["k"] == 1}
    ratios = {r["a"]: r["forward_tokens"] for r in result["cost_ratios"]}
    lines = [
        f"Rule: an arm *holds* if its Δ pass@1 vs grpo interval lies within ±{EQUIVALENCE_MARGIN} and its "
        f"forward-token ratio is ≤ {FORWARD_RATIO_MAX}; the claim is *reproduced* if both optimized arms hold."
    ]
    holds = {}
    for key in ("optimized_64", "optimized_128", "uniform_64"):
        c, r = by_arm.get(key), ratios.get(key)
        if c is None or r is None:
            lines.append(f"- {result['arms'][key]}: not run.")
            continue
        within = -EQUIVALENCE_MARGIN <= c["low"] and c["high"] <= EQUIVALENCE_MARGIN
        holds[key] = within and r["ratio"] <= FORWARD_RATIO_MAX
        lines.append(
            f"- {c['label']} at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over {len(c['seeds'])} "
            f"seeds ({'within' if within else 'not within'} ±{EQUIVALENCE_MARGIN}); forward-token ratio "
            f"{r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]: **{'holds' if holds[key] else 'does not hold'}**."
        )
    low, high = holds.get("optimized_64"), holds.get("optimized_128")
    if low is None or high is None:
        reading = "not every optimized arm ran"
    elif low and high:
        reading = "holds at the paper's budgets (B/L ≈ 0.5 and 0.25)"
    elif high and not low:
        reading = "breaks between B/L ≈ 0.5 and 0.25"
    elif not (low or high):
        reading = "does not hold at these budgets"
    else:
        reading = "holds at B/L ≈ 0.25 but not at 0.5 (non-monotone)"
    verdict = "reproduced" if low and high else "not reproduced"
    result["registered"] = f"{verdict} (dose-response: {reading})"
    arms = [by_arm[key] for key in ("optimized_64", "optimized_128", "uniform_64") if key in by_arm]
    margins = margin_lines(result, arms)
    return [*lines, *margins, f"Dose-response: PS-PPO {reading}.", f"**Verdict: {verdict}.**"]


def e5_arms() -> dict[str, Arm]:
    arms = {}
    for regime, name in (("lora", "LoRA"), ("full", "full")):
        for learner in ("grpo", "s_grpo", "t_spmo"):
            key = f"{learner}_g8_{regime}" if learner == "t_spmo" else f"{learner}_{regime}"
            arms[key] = Arm(regime, learner, f"{learner}{' |G|=8' if learner == 't_spmo' else ''} ({name})")
        arms[f"t_spmo_g50_{regime}"] = Arm(f"{regime}_g50", "t_spmo", f"t_spmo |G|=50 ({name})")
    return arms


def nothing_cut_at_step_0() -> Precondition:
    """E4's and E4b's own precondition: at most 1 % of grpo's step-0 eval completions reach the token cap."""
    return Precondition(
        "share of step-0 eval completions cut at the token budget", step0_cut_share("grpo"), STEP0_CUT_MAX, above=False
    )


def outcome_readable_early_on_e4b() -> Precondition:
    """P2 on the multi-paragraph model that E4 and E4b train."""
    return Precondition(
        "P2: within-group AUC of prefix success at 40 % of the tokens", outcome_readable_early("E4b"), 0.8
    )


EXPERIMENTS: dict[str, Experiment] = {
    "e3": Experiment(
        name="E3a. Contrastive shaping: an early gain over prime-rl",
        folder="e3_contrastive",
        seeds=tuple(range(8)),
        arms={
            "prime_rl": Arm("early", "prime_rl", "prime_rl"),
            "frozen": Arm("early", "contrastive", "contrastive (frozen scorer)"),
            "moving": Arm("early_moving", "contrastive", "contrastive (moving scorer)"),
        },
        contrasts=[
            Contrast("frozen", "prime_rl", k=1, step=30),
            Contrast("frozen", "prime_rl", k=1, step=60),
            Contrast("moving", "prime_rl", k=1, step=30),
            Contrast("moving", "prime_rl", k=1, step=60),
            Contrast("moving", "frozen", k=1, step=60),
            Contrast("frozen", "prime_rl", k=4, step=30),
        ],
        cost_ratios=[("frozen", "prime_rl"), ("moving", "prime_rl")],
        engaged={"frozen": "contrastive/shaped_row_frac", "moving": "contrastive/shaped_row_frac"},
        decide=decide_e3,
        extra=hacking_probe,
        preconditions=[
            Precondition(
                "P1: Spearman of the potential with Monte Carlo prefix success", potential_predicts_success, 0.285
            ),
        ],  # fmt: skip
    ),
    "e4": Experiment(
        name="E4. PS-PPO: baseline accuracy at a fraction of the update cost",
        folder="e4_ps_ppo",
        seeds=tuple(range(8)),
        arms={"ps_ppo": Arm(".", "ps_ppo", "ps_ppo (B=24)"), "grpo": Arm(".", "grpo", "grpo")},
        contrasts=[Contrast("ps_ppo", "grpo", k=1), Contrast("ps_ppo", "grpo", k=4)],
        cost_ratios=[("ps_ppo", "grpo")],
        engaged={"ps_ppo": "ps_ppo/cutoff_kept_frac"},
        decide=decide_e4,
        own_gains=("grpo", "ps_ppo"),
        preconditions=[
            nothing_cut_at_step_0(),
            outcome_readable_early_on_e4b(),
        ],  # fmt: skip
    ),
    "e4b": Experiment(
        name="E4b. PS-PPO at the paper's operating point: a budget sweep",
        folder="e4b_ps_ppo_budget",
        seeds=tuple(range(6)),
        arms={
            "grpo": Arm("main", "grpo", "grpo"),
            "optimized_64": Arm("main", "ps_ppo", "ps_ppo optimized B=64"),
            "optimized_128": Arm("optimized_128", "ps_ppo", "ps_ppo optimized B=128"),
            "uniform_64": Arm("uniform_64", "ps_ppo", "ps_ppo uniform B=64"),
        },
        contrasts=[
            *(Contrast(arm, "grpo", k=k) for k in (1, 4) for arm in ("optimized_64", "optimized_128", "uniform_64")),
            Contrast("optimized_64", "uniform_64", k=1),
        ],
        cost_ratios=[(arm, "grpo") for arm in ("optimized_64", "optimized_128", "uniform_64")],
        engaged={arm: "ps_ppo/cutoff_kept_frac" for arm in ("optimized_64", "optimized_128", "uniform_64")},
        decide=decide_e4b,
        own_gains=("grpo", "optimized_64", "optimized_128", "uniform_64"),
        preconditions=[
            nothing_cut_at_step_0(),
            Precondition("grpo's pass@1 gain over its own step 0", baseline_learns("grpo", 60), 0.0, must_hold=True),
            outcome_readable_early_on_e4b(),
        ],  # fmt: skip
    ),
    "e6": Experiment(
        name="E6. Trust region: DPPO mask, KL and clip-higher when the sampling policy is stale",
        folder="e6_trust_region",
        seeds=tuple(range(6)),
        arms={
            "prime_rl": Arm("main", "prime_rl", "prime_rl"),
            "prime_rl_mask_off": Arm("prime_rl_mask_off", "prime_rl", "prime_rl (mask off)"),
            "dapo": Arm("main", "dapo", "dapo"),
            "grpo": Arm("main", "grpo", "grpo"),
        },
        contrasts=[
            Contrast("prime_rl", "prime_rl_mask_off", k=1),
            Contrast("dapo", "grpo", k=4),
            Contrast("dapo", "grpo", k=1),
            Contrast("prime_rl", "grpo", k=1),
        ],
        cost_ratios=[],
        engaged={"prime_rl": "prime_rl/is_masked", "dapo": "clip_ratio/region_mean", "grpo": "clip_ratio/region_mean"},
        decide=decide_e6,
        preconditions=[
            Precondition(f"{arm}: share of loss tokens its {name} changed", engages(arm, metric), ENGAGEMENT_MIN)
            for arm, name, metric in (
                ("prime_rl", "DPPO mask", "prime_rl/is_masked"),
                ("dapo", "PPO clip", "clip_ratio/region_mean"),
                ("grpo", "PPO clip", "clip_ratio/region_mean"),
            )
        ],  # fmt: skip
    ),
    "e5": Experiment(
        name="E5. T-SPMO and S-GRPO beat full-token GRPO under LoRA",
        folder="e5_lora",
        seeds=tuple(range(6)),
        arms=e5_arms(),
        contrasts=[
            Contrast(f"{arm}_{regime}", f"grpo_{regime}", k=1)
            for regime in ("lora", "full")
            for arm in ("t_spmo_g50", "s_grpo", "t_spmo_g8")
        ],
        cost_ratios=[
            (f"{arm}_{regime}", f"grpo_{regime}")
            for regime in ("lora", "full")
            for arm in ("t_spmo_g50", "s_grpo", "t_spmo_g8")
        ],  # fmt: skip
        decide=decide_e5,
        partial=True,
        preconditions=[
            Precondition("P3: share of loss tokens S-GRPO keeps (E5's setting)", s_grpo_kept_share, 0.5, above=False),
            Precondition(
                "E2: Pearson r of the trie's A with A* where the first operation branches (|G| = 50)",
                trie_tracks_reference,
                0.5,
            ),
        ],  # fmt: skip
    ),
}


# ---- E1 (Monte Carlo, experiments/ps_ppo_cutoff_variance.py): the registered rule and its corrected reading ----

E1_FOLDER = "ps_ppo_cutoff_variance"


def cell_valid_corrected(cell: dict) -> bool:
    """A cell is void only when the unbiasedness check fails for a strategy its ranking turns on: ``optimized`` or
    the strategy with the lowest V (docs/experiments.md, corrected readings)."""
    return all(cell["strategies"][s]["unbiased_pass"] for s in {"optimized", cell["lowest"]})


def analyse_e1(root: Path) -> dict:
    """E1's decision rule (the script's own ``decide``) on its committed cells, once with the registered validity
    and once with the corrected one, and the claim's verdict with E1's precondition (P2 on E1's setting)."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from ps_ppo_cutoff_variance import decide

    report = json.loads((root / E1_FOLDER / "results.json").read_text())
    cells = report["cells"]
    registered = decide(cells)
    corrected_cells = [dict(c, valid=cell_valid_corrected(c)) for c in cells]
    corrected = decide(corrected_cells)
    result: dict = dict(name="E1. PS-PPO: the optimized cutoff distribution gives the lowest gradient variance",
                        registered_rule=registered, corrected_rule=corrected,
                        void_cells=[(c["batch_seed"], c["budget"]) for c in cells if not c["valid"]],
                        void_cells_corrected=[(c["batch_seed"], c["budget"]) for c in corrected_cells
                                              if not c["valid"]],
                        registered=f"{corrected['verdict']} (corrected reading; registered reading "
                                   f"{registered['verdict']})")  # fmt: skip
    p2 = Precondition("P2: within-group AUC of prefix success at 40 % of the tokens", outcome_readable_early("E1"), 0.8)
    result["preconditions"] = [precondition_status(p2, root, root / E1_FOLDER, None, result)]
    result["claim"] = claim_verdict(result)
    return result


def e1_markdown(result: dict, command: str) -> str:
    lines = [f"# {result['name']}", "", f"Made by `{command}` from `results.json` beside this file "
             "(`summary.md` has the cells).", "", "| reading | void cells | lowest V per strategy (valid cells) | "
             "verdict |", "| --- | --- | --- | --- |"]  # fmt: skip
    for name, key, void in (("registered", "registered_rule", "void_cells"),
                            ("corrected", "corrected_rule", "void_cells_corrected")):  # fmt: skip
        rule = result[key]
        counts = ", ".join(f"{s} {n}" for s, n in rule["lowest_counts"].items())
        lines.append(f"| {name} | {result[void] or 'none'} | {counts} | {rule['verdict']} |")
    rule = (
        "Rule (registered): *reproduced* if `optimized` has the lowest V in all 6 cells and is separated in 4; *not "
        "reproduced* if another strategy has the lowest V in 4 or more cells; otherwise *inconclusive*; a failed "
        "unbiasedness check voids the cell. Corrected reading: a cell is void only when the check fails for "
        "`optimized` or for the cell's lowest strategy (the void cell failed `heuristic`'s check, rank 3)."
    )
    lines += ["", rule, ""]
    return "\n".join([*lines, *precondition_lines(result)])


def analyse(exp: Experiment, base: Path) -> dict:
    result: dict = dict(name=exp.name, arms={k: a.label for k, a in exp.arms.items()})
    result["seeds"] = {k: finished_seeds(base, a) for k, a in exp.arms.items()}
    ready = {k for k, seeds in result["seeds"].items() if seeds}
    result["contrasts"] = [contrast(base, exp, c) for c in exp.contrasts if {c.a, c.b} <= ready]
    result["cost_ratios"] = [cost_ratio(base, exp, a, b) for a, b in exp.cost_ratios if {a, b} <= ready]
    result["own_gains"] = {}
    for key in exp.own_gains:
        seeds = result["seeds"][key]
        if len(seeds) >= 2:
            step = min(max(eval_steps(base, exp.arms[key], s)) for s in seeds)
            result["own_gains"][key] = dict(step=step, seeds=seeds, ci=own_gain(base, exp.arms[key], step))
    result["engagement"], result["grad_norms"] = engagement(base, exp)
    checks = {}
    for key, metric in exp.engaged.items():
        info = result["engagement"][key][metric]
        values = list(info["per_seed"].values())
        # changed shares (kept shares arrive complemented): the mechanism acted in a seed when its share is > 0
        ok = bool(values) and all(v > 0 for v in values)
        checks[key] = dict(metric=metric, label=info["label"], ok=ok, per_seed=info["per_seed"])
    result["void_checks"] = checks
    if exp.extra is not None:
        result["extra"] = exp.extra(base)
    result["missing"] = {k: sorted(set(exp.seeds) - set(v)) for k, v in result["seeds"].items()}
    missing = {exp.arms[k].label: seeds for k, seeds in result["missing"].items() if seeds}
    too_few = [c["label"] for c in result["contrasts"] if len(c["seeds"]) < 2]
    if missing and not exp.partial:
        result["verdict"] = ["No verdict yet: runs not finished (arm: seeds): "
                             + "; ".join(f"{label}: {seeds}" for label, seeds in missing.items()) + "."]  # fmt: skip
    elif too_few:
        result["verdict"] = [f"No verdict: a t interval over seeds needs 2 or more seeds ({', '.join(too_few)})."]
    else:
        result["verdict"] = exp.decide(result) if exp.decide else []
    result["preconditions"] = [precondition_status(p, base.parent, base, exp, result) for p in exp.preconditions]
    result["claim"] = claim_verdict(result)
    return result


def markdown(exp: Experiment, result: dict, command: str) -> str:
    lines = [f"# {exp.name}", "", f"Made by `{command}` from the comparison folders beside this file "
             "(their `summary.md` has each comparison's own command and machine).", ""]  # fmt: skip
    lines += ["## Contrasts", "",
              "Δ = mean over seeds of the per-seed mean per-puzzle difference; t: Student t 95 % over seeds (training "
              "variance inside, the headline); bootstrap: puzzles resampled within each seed, seeds held fixed.", "",
              "| contrast | pass@k | step | seeds | A | B | Δ (t over seeds) | Δ (puzzle bootstrap) | MDE | per seed |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for c in result["contrasts"]:
        per_seed = " ".join(f"{v:+.3f}" for v in c["per_seed"].values())
        a, b = fmt_ci(c["mean_a"], *c["ci_a"], signed=False), fmt_ci(c["mean_b"], *c["ci_b"], signed=False)
        lines.append(
            f"| {c['label']} | {c['k']} | {c['step']} | {len(c['seeds'])} | {a} | {b}"
            f" | {fmt_ci(c['diff'], c['low'], c['high'])} | "
            f"[{c['bootstrap'][0]:+.3f}, {c['bootstrap'][1]:+.3f}] | {c['mde']:.3f} | {per_seed} |"
        )
    if result["cost_ratios"]:
        lines += ["", "## Update cost", "",
                  "Per seed, arm A's cumulative figure at its last step over arm B's; mean of the per-seed ratios with "
                  "a t interval; per-step means of each arm beside it.", "",
                  "| ratio | figure | A / B [95 % CI] | A per step | B per step |",
                  "| --- | --- | --- | --- | --- |"]  # fmt: skip
        for r in result["cost_ratios"]:
            for column in ("wall_seconds", "forward_tokens", "loss_tokens", "generated_tokens"):
                x = r[column]
                lines.append(f"| {r['label']} | {column} | {x['ratio']:.3f} [{x['low']:.3f}, {x['high']:.3f}] | "
                             f"{x['per_step_a']:.4g} | {x['per_step_b']:.4g} |")  # fmt: skip
    lines += ["", "## Mechanism engagement", "", "Per arm and seed, the mean over its logged training steps.", "",
              "| arm | mechanism | per seed | mean |", "| --- | --- | --- | --- |"]  # fmt: skip
    for key, metrics in result["engagement"].items():
        for info in metrics.values():
            values = list(info["per_seed"].values())
            if all(math.isnan(v) for v in values):  # e.g. a trust-region metric in an on-policy run: no π_old
                lines.append(f"| {result['arms'][key]} | {info['label']} | - | not logged |")
                continue
            cells = " ".join(f"{v:.4g}" for v in values)
            lines.append(f"| {result['arms'][key]} | {info['label']} | {cells} | {np.nanmean(values):.4g} |")
    if result.get("own_gains"):
        lines += ["", "## Gain over step 0", "",
                  "Each arm's pass@1 at its last eval minus its own step 0, paired per puzzle, t over seeds.", "",
                  "| arm | step | seeds | gain [t 95 %] |", "| --- | --- | --- | --- |"]  # fmt: skip
        for key, g in result["own_gains"].items():
            lines.append(f"| {result['arms'][key]} | {g['step']} | {len(g['seeds'])} | {fmt_ci(*g['ci'])} |")
    norms = {key: n for key, n in result.get("grad_norms", {}).items() if n["max"]}
    if norms:
        lines += ["", "## Gradient norm", "",
                  f"Pre-clip gradient norm per seed: the share of steps above {GRAD_CLIP} (what a clip at "
                  f"{GRAD_CLIP} scales down) and the largest.", "",
                  "| arm | share of steps above the clip, per seed | mean | largest |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for key, n in norms.items():
            cells = " ".join(f"{v:.3f}" for v in n["share_above_clip"].values())
            lines.append(f"| {result['arms'][key]} | {cells} | {np.mean(list(n['share_above_clip'].values())):.3f} | "
                         f"{max(n['max'].values()):.2f} |")  # fmt: skip
    if "extra" in result:
        lines += ["", *probe_lines(result["extra"])]
    lines += ["", "## Decision", "", *result["verdict"], ""]
    lines += precondition_lines(result)
    lines += ["![pass@1 and pass@4 of every arm](arms.png)", ""]
    return "\n".join(lines)


def precondition_lines(result: dict) -> list[str]:
    checks = result.get("preconditions", [])
    lines = ["## Preconditions and the claim's verdict", ""]
    if checks:
        lines += ["Rule (docs/experiments.md, preconditions): a precondition holds when its interval lies on the "
                  "claim's side of the threshold, fails when it lies on the other side, is undecided otherwise; a "
                  "failed one, or one the rule needs (grpo learns) that does not hold, makes the claim *untestable at "
                  "this scale*.", "",
                  "| precondition | figure [95 %] | threshold | status |", "| --- | --- | --- | --- |"]  # fmt: skip
        for c in checks:
            side = ">" if c["above"] else "<"
            lines.append(f"| {c['figure']} | {precondition_figure(c)} | {side} {c['threshold']:g} | {c['status']} |")
        lines.append("")
    return [*lines, f"**Claim verdict: {result['claim']['verdict']}.**", ""]


def plot(exp: Experiment, base: Path, out: Path) -> None:
    from learners.pipeline.compare.curves import plot_curves

    rows = []
    for arm in exp.arms.values():
        for s in finished_seeds(base, arm):
            rows += [dict(r, learner=arm.label) for r in read_rows(run_dir(base, arm, s) / "rows.csv")]
    plot_curves(rows, out, [a.label for a in exp.arms.values()], title=exp.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=sorted([*EXPERIMENTS, "e1"]))
    parser.add_argument(
        "--root", default=str(ROOT / "experiments" / "results"), help="folder of the experiment folders"
    )
    args = parser.parse_args(argv)
    command = f"python experiments/claim_experiments.py {args.experiment}"
    if args.experiment == "e1":
        base = Path(args.root) / E1_FOLDER
        try:
            result = analyse_e1(Path(args.root))
        except (ValueError, FileNotFoundError, KeyError) as exc:
            print(f"claim_experiments: error: {exc}", file=sys.stderr)
            return 2
        write_text(base / "verdict.json", json.dumps(result, indent=2, default=float) + "\n")
        write_text(base / "verdict.md", e1_markdown(result, command))
        print((base / "verdict.md").read_text())
        return 0
    exp = EXPERIMENTS[args.experiment]
    base = Path(args.root) / exp.folder
    try:
        result = analyse(exp, base)
    except (ValueError, FileNotFoundError) as exc:
        print(f"claim_experiments: error: {exc}", file=sys.stderr)
        return 2
    write_text(base / "verdict.json", json.dumps(result, indent=2, default=float) + "\n")
    write_text(base / "verdict.md", markdown(exp, result, command))
    plot(exp, base, base / "arms.png")
    print((base / "verdict.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
