r"""The verdicts of docs/experiments.md's training experiments (E3a with E3b's probe, E4-E6), from their
``countdown compare`` folders.

Each experiment's arms are runs of ``countdown compare`` (the commands are in docs/experiments.md); an arm is one
learner of one comparison folder, so that two variants of the same learner (E6's prime_rl with and without its DPPO
mask) can sit in two folders run with the same seeds, prompts and eval. This script only reads those folders and
applies the pre-registered statistics and decision rules; it trains nothing.

Statistics (``learners.pipeline.statistics``, the harness's own):

- a contrast "A - B" at eval step s is the mean over seeds of each seed's mean per-puzzle difference of pass@k
  (``runs/LEARNER-sSEED/evals/step-s.jsonl``: the same 512 puzzles, aligned), with the Student t 95 % interval
  over seeds (training variance inside: the headline), beside the paired puzzle bootstrap (seeds held fixed);
- cost ratios: per seed, arm A's cumulative training seconds (or forward tokens) at the last step over arm B's,
  then the mean of those per-seed ratios with a t interval;
- engagement: each run's mean over its logged steps of the mechanism's changed share
  (``learners.pipeline.compare.engagement``);
- E3 also reads E3b's reward-hacking probe (folder ``long_probe``) against itself: paragraphs per shaped row and the
  share of eval completions reaching the token budget, late minus early, t over seeds (``hacking_probe``).

Outputs, beside the comparison folders: ``verdict.md`` (the tables and the rule applied, word for word),
``verdict.json`` (every figure) and ``arms.png`` (pass@1/pass@4 curves of every arm, from the harness's plot).

    python benchmarks/claim_experiments.py e4          # or e3, e5, e6
    python benchmarks/claim_experiments.py e6 [--root benchmarks/results]
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

from countdown_env.atomic import write_text  # noqa: E402
from learners.pipeline.compare.engagement import MECHANISMS, run_means  # noqa: E402
from learners.pipeline.compare.results import read_rows  # noqa: E402
from learners.pipeline.statistics import mean_ci, paired_bootstrap_diff, paired_seed_diff, puzzle_scores  # noqa: E402


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
    return sorted(int(p.stem.split("-")[1]) for p in (run_dir(base, arm, seed) / "evals").glob("step-*.jsonl"))


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
    mean_b, *ci_b = mean_ci([float(sb[s].mean()) for s in seeds])
    return dict(a=c.a, b=c.b, label=f"{a.label} - {b.label}", k=c.k, step=step, seeds=seeds, diff=d, low=lo,
                high=hi, bootstrap=[blo, bhi], per_seed=per_seed, mean_a=mean_a, ci_a=ci_a, mean_b=mean_b,
                ci_b=ci_b)  # fmt: skip


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


def engagement(base: Path, exp: Experiment) -> dict:
    out = {}
    for key, arm in exp.arms.items():
        mechanisms = MECHANISMS.get(arm.learner, ())
        per_metric: dict[str, dict[int, float]] = {m.metric: {} for m in mechanisms}
        for s in finished_seeds(base, arm):
            history = json.loads((run_dir(base, arm, s) / "log_history.json").read_text())
            for metric, (mean, _) in run_means(history, mechanisms).items():
                per_metric[metric][s] = mean
        labels = {m.metric: m.label for m in mechanisms}
        out[key] = {metric: dict(label=labels[metric], per_seed=v) for metric, v in per_metric.items()}
    return out


def fmt_ci(mean: float, low: float, high: float, signed: bool = True) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    return f"{f.format(mean)} [{f.format(low)}, {f.format(high)}]"


# ---- the pre-registered rules, word for word in docs/experiments.md ----

EQUIVALENCE_MARGIN = 0.03
FORWARD_RATIO_MAX = 0.5


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
    return [
        f"Rule: *reproduced* if the Δ pass@1 interval lies within ±{EQUIVALENCE_MARGIN} and the forward-token ratio "
        f"is ≤ {FORWARD_RATIO_MAX}.",
        f"- Δ pass@1 (ps_ppo − grpo) at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over "
        f"{len(c['seeds'])} seeds: {'within' if within else 'not within'} ±{EQUIVALENCE_MARGIN}.",
        f"- forward-token ratio: {r['ratio']:.3f} [{r['low']:.3f}, {r['high']:.3f}]: "
        f"{'≤' if cheap else '>'} {FORWARD_RATIO_MAX}.",
        f"**Verdict: {verdict}.**",
    ]


def decide_e6(result: dict) -> list[str]:
    void = [f"{result['arms'][key]} ({info['label']})" for key, info in result["void_checks"].items() if not info["ok"]]
    lines = ["Rule: the run is void unless the engagement shows non-zero clip/mask shares (every seed); *mask matters* "
             "if prime_rl's Δ pass@1 vs its mask-off arm lies above 0; clip-higher's claim likewise for dapo vs grpo "
             "on pass@4."]  # fmt: skip
    if void:
        return [*lines, f"**Verdict: void** (never acted in some seed: {', '.join(void)})."]
    mask, clip = result["contrasts"][0], result["contrasts"][1]
    for c, name in ((mask, "mask matters"), (clip, "clip-higher (pass@4)")):
        above = c["low"] > 0
        why = why_not_above(c)
        lines.append(
            f"- {c['label']}, pass@{c['k']} at step {c['step']}: {fmt_ci(c['diff'], c['low'], c['high'])} over "
            f"{len(c['seeds'])} seeds: **{name}: {'reproduced' if above else 'not reproduced'}**{why}."
        )
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
            path = run_dir(base, PROBE, s) / "evals" / f"step-{step}.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
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
        return [*lines, f"**Verdict: void** (the shaping never acted in some seed: {', '.join(void)})."]
    c = next(c for c in result["contrasts"] if (c["a"], c["b"], c["k"], c["step"]) == ("frozen", "prime_rl", 1, 30))
    above = c["low"] > 0
    why = why_not_above(c)
    lines.append(f"- {c['label']}, pass@1 at step 30: {fmt_ci(c['diff'], c['low'], c['high'])} over "
                 f"{len(c['seeds'])} seeds.")  # fmt: skip
    lines.append(f"**Verdict: early gain {'reproduced' if above else 'not reproduced'}**{why}.")
    return [*lines, *decide_probe(result.get("extra", {}))]


def decide_probe(probe: dict) -> list[str]:
    lines = [
        "",
        "Rule (E3b probe): *hacking reproduced* if the probe's paragraphs per row and truncation both rise (each "
        "interval above 0, t over seeds). E3b's fade and long-horizon moving-scorer rules: not run.",
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
    return lines


def e5_arms() -> dict[str, Arm]:
    arms = {}
    for regime, name in (("lora", "LoRA"), ("full", "full")):
        for learner in ("grpo", "s_grpo", "t_spmo"):
            key = f"{learner}_g8_{regime}" if learner == "t_spmo" else f"{learner}_{regime}"
            arms[key] = Arm(regime, learner, f"{learner}{' |G|=8' if learner == 't_spmo' else ''} ({name})")
        arms[f"t_spmo_g50_{regime}"] = Arm(f"{regime}_g50", "t_spmo", f"t_spmo |G|=50 ({name})")
    return arms


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
    ),
}


def analyse(exp: Experiment, base: Path) -> dict:
    result: dict = dict(name=exp.name, arms={k: a.label for k, a in exp.arms.items()})
    result["seeds"] = {k: finished_seeds(base, a) for k, a in exp.arms.items()}
    ready = {k for k, seeds in result["seeds"].items() if seeds}
    result["contrasts"] = [contrast(base, exp, c) for c in exp.contrasts if {c.a, c.b} <= ready]
    result["cost_ratios"] = [cost_ratio(base, exp, a, b) for a, b in exp.cost_ratios if {a, b} <= ready]
    result["engagement"] = engagement(base, exp)
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
    return result


def markdown(exp: Experiment, result: dict, command: str) -> str:
    lines = [f"# {exp.name}", "", f"Made by `{command}` from the comparison folders beside this file "
             "(their `summary.md` has each comparison's own command and machine).", ""]  # fmt: skip
    lines += ["## Contrasts", "",
              "Δ = mean over seeds of the per-seed mean per-puzzle difference; t: Student t 95 % over seeds (training "
              "variance inside, the headline); bootstrap: puzzles resampled within each seed, seeds held fixed.", "",
              "| contrast | pass@k | step | seeds | A | B | Δ (t over seeds) | Δ (puzzle bootstrap) | per seed |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for c in result["contrasts"]:
        per_seed = " ".join(f"{v:+.3f}" for v in c["per_seed"].values())
        a, b = fmt_ci(c["mean_a"], *c["ci_a"], signed=False), fmt_ci(c["mean_b"], *c["ci_b"], signed=False)
        lines.append(
            f"| {c['label']} | {c['k']} | {c['step']} | {len(c['seeds'])} | {a} | {b}"
            f" | {fmt_ci(c['diff'], c['low'], c['high'])} | "
            f"[{c['bootstrap'][0]:+.3f}, {c['bootstrap'][1]:+.3f}] | {per_seed} |"
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
    if "extra" in result:
        lines += ["", *probe_lines(result["extra"])]
    lines += ["", "## Decision", "", *result["verdict"], "", "![pass@1 and pass@4 of every arm](arms.png)", ""]
    return "\n".join(lines)


def plot(exp: Experiment, base: Path, out: Path) -> None:
    from learners.pipeline.compare.curves import plot_curves

    rows = []
    for arm in exp.arms.values():
        for s in finished_seeds(base, arm):
            rows += [dict(r, learner=arm.label) for r in read_rows(run_dir(base, arm, s) / "rows.csv")]
    plot_curves(rows, out, [a.label for a in exp.arms.values()], title=exp.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS))
    parser.add_argument("--root", default=str(ROOT / "benchmarks" / "results"), help="folder of the experiment folders")
    args = parser.parse_args(argv)
    exp = EXPERIMENTS[args.experiment]
    base = Path(args.root) / exp.folder
    try:
        result = analyse(exp, base)
    except (ValueError, FileNotFoundError) as exc:
        print(f"claim_experiments: error: {exc}", file=sys.stderr)
        return 2
    command = f"python benchmarks/claim_experiments.py {args.experiment}"
    write_text(base / "verdict.json", json.dumps(result, indent=2, default=float) + "\n")
    write_text(base / "verdict.md", markdown(exp, result, command))
    plot(exp, base, base / "arms.png")
    print((base / "verdict.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
