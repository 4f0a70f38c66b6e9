"""R3's verdict, read from its seeds' ``countdown compare`` folders (PROTOCOL.md beside this file).

``verdict`` computes the registered statistic at one step: per arm a and seed s, d_a(s) = pass@1 of a minus pass@1
of grpo (the same 256 puzzles, 16 samples each); per arm the mean over seeds with a Student t 95 % interval over
seeds and a paired puzzle bootstrap (per seed, the same puzzle indices for both arms, seeds held fixed); the wider
of the two decides (*better than GRPO* / *worse than GRPO* / *no difference shown*), with the MDE at the realised
spread, Holm's correction over the arms beside it, and the secondaries (pass@4 and pass@16 differences, each arm's
gain over its seed's step 0 — grpo's is the registered replication of R2 —, format, length, seconds per step).
Each statistic reads its first 8 seeds in seed order (the pilot's count; amendment 5 (c)): an arm the first 8 seeds
with it and grpo, grpo's gain the first 8 with grpo; every run is shown, and the page is interim while any reads
fewer::

    python experiments/r3_smollm2/report.py verdict experiments/r3_smollm2/seed-* \
        --out experiments/r3_smollm2/verdict.md

``pilot`` applies PROTOCOL.md's pilot rule to seeds 0 and 1 (every arm finished; by amendment 4 (e) seed 0 and the
first other seed with every arm, if that is not seed 1): the seed count from their pooled spread of d, between 8 and
13::

    python experiments/r3_smollm2/report.py pilot experiments/r3_smollm2/seed-0 experiments/r3_smollm2/seed-1 \
        --out experiments/r3_smollm2/pilot.md

``arm`` prints one finished arm's run checks for its seed's README: the protocol's collapse check (training format
over the last ten steps), KL to the start, training reward and entropy over the first and last ten steps, each
mechanism's logged engagement (``tspmo/``, ``s_grpo/``, ``contrastive/`` keys) and the seconds per step::

    python experiments/r3_smollm2/report.py arm experiments/r3_smollm2/seed-3/runs/grpo-s3

``seed`` prints one seed's pass@1, pass@4 and pass@16 at step 0 and each arm's step 50, and the share of puzzles whose
16 samples all agree::

    python experiments/r3_smollm2/report.py seed experiments/r3_smollm2/seed-6

Pairing is checked before any figure: the arms of a seed must have run on the same machine kind (CPU model and
flags), the same library versions and the same precision (each run's ``resolved_config.json``), every seed's grpo
in one precision, and each seed's arms on the same puzzles in the same order; otherwise the command names the
difference and exits 2.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import statistics
import sys
from pathlib import Path
from typing import Any

BASELINE = "grpo"
ARMS = ("contrastive", "s_grpo", "t_spmo")
REGISTERED_STEP = 50
REGISTERED_SEEDS = 13
SEEDS_PER_ARM = 8  # pilot.md's count: each statistic reads its first 8 seeds in seed order (amendment 5 (c))
FIRST_SEED = 0  # the pilot: seed 0 and seed 1, or by amendment 4 (e) the first other seed with every arm
FEWEST_SEEDS = 8
PLANNED_SD = 0.033
TARGET_MDE = 0.04
MACHINE_FIELDS = ("cpu", "versions", "precision")
RUN_NAME = re.compile(r"^(?P<learner>[a-z0-9_]+)-s(?P<seed>\d+)$")


def seed_runs(folders: list[Path]) -> dict[int, dict[str, Path]]:
    """``{seed: {learner: run folder}}`` of the runs under each ``FOLDER/runs/LEARNER-sSEED``; a seed found in two
    folders is refused."""
    seeds: dict[int, dict[str, Path]] = {}
    for folder in folders:
        for run in sorted((folder / "runs").glob("*-s*")):
            match = RUN_NAME.match(run.name)
            if match is None or not run.is_dir():
                continue
            seed, learner = int(match["seed"]), match["learner"]
            if learner in seeds.get(seed, {}):
                raise ValueError(f"{learner} seed {seed} is in two folders: {seeds[seed][learner]} and {run}")
            seeds.setdefault(seed, {})[learner] = run
    return seeds


def machine_of(run: Path) -> dict[str, Any]:
    """What pairing must hold equal for one run: its CPU (model and flags), library versions and precision."""
    path = run / "resolved_config.json"
    if not path.is_file():
        raise ValueError(f"{run}: no resolved_config.json, so no record of its machine")
    record = json.loads(path.read_text())
    missing = [field for field in MACHINE_FIELDS if field not in record]
    if missing:
        raise ValueError(f"{run}: its record names no {', '.join(missing)} (run before R3's records): cannot pair it")
    return {field: record[field] for field in MACHINE_FIELDS}


def prompt_digest(run: Path) -> str | None:
    """The digest of the prompts a finished run trained on, in order (its ``DONE`` record; ``None`` unfinished)."""
    done = run / "DONE"
    return json.loads(done.read_text()).get("prompt_digest") if done.is_file() else None


def check_pairing(seeds: dict[int, dict[str, Path]]) -> None:
    """Raise ``ValueError`` naming the first difference: the arms of one seed on different machines, libraries or
    precisions or on different prompts (amendment 1: arms of a seed may run as separate processes), or seeds whose
    grpo arms ran in different precisions."""
    precisions = {}
    for seed, runs in sorted(seeds.items()):
        digests = {learner: digest for learner, run in runs.items() if (digest := prompt_digest(run)) is not None}
        if len(set(digests.values())) > 1:
            raise ValueError(f"seed {seed}: its arms trained on different prompts or orders {digests}")
        machines = {learner: machine_of(run) for learner, run in runs.items()}
        first, reference = next(iter(machines.items()))
        for learner, machine in machines.items():
            for field in MACHINE_FIELDS:
                if machine[field] != reference[field]:
                    raise ValueError(f"seed {seed}: {first} and {learner} differ in {field} "
                                     f"({reference[field]!r} vs {machine[field]!r}): not a paired seed")  # fmt: skip
        if BASELINE in machines:
            precisions[seed] = machines[BASELINE]["precision"]
    if len(set(precisions.values())) > 1:
        raise ValueError(f"the seeds' {BASELINE} arms ran in different precisions {precisions}: they do not pool")


@functools.cache
def _scores(run: Path, step: int, k: int):
    """``(puzzles, pass@k per puzzle)`` of a run's eval at ``step``, read once per (run, step, k) of a verdict."""
    from learners.pipeline.evaluation.statistics import eval_files, puzzle_scores

    return puzzle_scores(eval_files(run)[step], k)


def _evaluated(run: Path, step: int) -> bool:
    from learners.pipeline.evaluation.statistics import eval_files

    return step in eval_files(run)


def _wider(intervals: dict[str, tuple[float, float]]) -> str | None:
    finite = {k: v for k, v in intervals.items() if all(math.isfinite(x) for x in v)}
    return max(finite, key=lambda k: finite[k][1] - finite[k][0]) if finite else None


def paired_difference(arm: dict[int, Any], base: dict[int, Any], *, joint: bool = False) -> dict[str, Any]:
    """Arm minus baseline over the shared seeds: the per-seed differences of mean scores, the t interval over seeds,
    the paired puzzle bootstrap (10 000 resamples; ``joint``: one draw of puzzles per resample for every seed), the
    wider of the two, the t test's p-value and the MDE."""
    import numpy as np

    from learners.pipeline.evaluation.statistics import (
        minimum_detectable_effect,
        paired_bootstrap_diff,
        paired_seed_diff,
    )

    shared = sorted(set(arm) & set(base))
    per_seed = {s: float(np.mean(arm[s]) - np.mean(base[s])) for s in shared}
    mean, t_low, t_high, _ = paired_seed_diff(arm, base)
    _, b_low, b_high, _ = paired_bootstrap_diff(arm, base, resamples=10_000, joint=joint)
    intervals = {"t over seeds": (t_low, t_high), "paired puzzle bootstrap": (b_low, b_high)}
    p_value, values = math.nan, np.asarray(list(per_seed.values()))
    if len(shared) >= 2 and values.std() > 0:
        from scipy.stats import ttest_1samp

        p_value = float(ttest_1samp(values, 0.0).pvalue)
    elif len(shared) >= 2:  # no spread over seeds: the t statistic is infinite unless the difference is 0
        p_value = 0.0 if values[0] != 0 else 1.0
    return {"seeds": shared, "per_seed": per_seed, "mean": mean, "intervals": intervals,
            "decisive": _wider(intervals), "p_value": p_value,
            "mde": minimum_detectable_effect(list(per_seed.values()))}  # fmt: skip


def decision(result: dict[str, Any], better: str, worse: str, neither: str) -> str:
    """The registered reading of a difference: by the wider interval's sign; none with fewer than two seeds (the
    protocol's interval over seeds does not exist, and a puzzle bootstrap alone leaves the training spread out)."""
    if result["decisive"] is None or len(result["seeds"]) < 2:
        return "not decided (one seed: no interval over seeds)"
    low, high = result["intervals"][result["decisive"]]
    return better if low > 0 else worse if high < 0 else neither


def holm(p_values: dict[str, float], alpha: float = 0.05) -> dict[str, bool]:
    """Holm's step-down rejections of ``p_values`` at family-wise ``alpha`` (NaN p-values never reject)."""
    ordered = sorted((p, name) for name, p in p_values.items() if math.isfinite(p))
    rejected = dict.fromkeys(p_values, False)
    for rank, (p, name) in enumerate(ordered):
        if p > alpha / (len(ordered) - rank):
            break
        rejected[name] = True
    return rejected


def first_seeds(runs: dict[int, Path]) -> dict[int, Path]:
    """The first :data:`SEEDS_PER_ARM` seeds of ``runs`` in seed order: what one statistic reads (amendment 5 (c));
    a later seed's run is shown in the run table, not read."""
    return dict(sorted(runs.items())[:SEEDS_PER_ARM])


def own_gain(runs: dict[int, Path], step: int) -> dict[str, Any]:
    """One arm's gain over its seeds' step-0 evals (each seed's arms share that eval), as :func:`paired_difference`
    with the step-0 scores as the baseline and the joint puzzle bootstrap PROTOCOL.md registers for it: the seeds'
    step-0 evals can be one draw (seeds 1 and 2 drew byte-identical ones: the CPU engine's eval does not depend on the
    training seed), and resampling puzzles per seed would average that shared draw's noise away as if independent."""
    ends = {s: _scores(run, step, 1)[1] for s, run in runs.items() if _evaluated(run, step) and _evaluated(run, 0)}
    starts = {s: _scores(runs[s], 0, 1)[1] for s in ends}
    return paired_difference(ends, starts, joint=True)


def row_at(run: Path, step: int) -> dict[str, Any]:
    """The run's ``rows.csv`` row at ``step`` (empty when absent)."""
    from learners.pipeline.compare.results import read_rows

    path = run / "rows.csv"
    rows = [row for row in read_rows(path) if row["step"] == step] if path.is_file() else []
    return rows[-1] if rows else {}


def seconds_per_step(run: Path) -> float:
    done = run / "DONE"
    if not done.is_file():
        return math.nan
    record = json.loads(done.read_text())
    return float(record["wall_seconds"]) / max(int(record["steps"]), 1)


MECHANISM_PREFIXES = ("tspmo/", "s_grpo/", "contrastive/")
WINDOW = 10


def arm_checks(run: Path) -> dict[str, Any]:
    """One finished arm's run checks (module docstring): per logged quantity the mean over the first and the last
    ``WINDOW`` steps of its ``log_history.json``, KL's maximum and step, and the seconds per step."""
    steps = [row for row in json.loads((run / "log_history.json").read_text()) if "step_time" in row]
    if len(steps) < 2 * WINDOW:
        raise ValueError(f"{run}: {len(steps)} logged steps, fewer than two windows of {WINDOW}")

    def mean(key: str, rows: list[dict[str, Any]]) -> float:
        values = [float(row[key]) for row in rows if key in row]
        return sum(values) / len(values) if values else math.nan

    keys = ["countdown/format_rate", "kl", "reward", "entropy", "frac_reward_zero_std"]
    keys += sorted({k for row in steps for k in row if k.startswith(MECHANISM_PREFIXES)})
    peak = max(steps, key=lambda row: float(row.get("kl", -math.inf)))
    times = sorted(float(row["step_time"]) for row in steps)
    return {
        "run": run.name,
        "steps": len(steps),
        "windows": {key: (mean(key, steps[:WINDOW]), mean(key, steps[-WINDOW:])) for key in keys},
        "kl_max": (float(peak.get("kl", math.nan)), int(peak["step"])),
        "step_seconds": {
            "median": statistics.median(times),
            "min": times[0],
            "max": times[-1],
            "per_step": seconds_per_step(run),
        },
    }


def arm_markdown(result: dict[str, Any]) -> str:
    lines = [f"{result['run']}: {result['steps']} steps", "", f"| logged (mean) | steps 1-{WINDOW} | last {WINDOW} |",
             "| --- | --- | --- |"]  # fmt: skip
    lines += [f"| {key} | {first:.4g} | {last:.4g} |" for key, (first, last) in result["windows"].items()]
    kl, at = result["kl_max"]
    times = result["step_seconds"]
    lines += ["", f"KL to the start: max {kl:.3g} at step {at}.",
              f"Seconds a step: median {times['median']:.0f} (min {times['min']:.0f}, max {times['max']:.0f}); "
              f"training wall time / steps {times['per_step']:.0f}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def seed_table(folder: Path, step: int = REGISTERED_STEP) -> str:
    """One seed's descriptive table for its README: pass@1, pass@4 and pass@16 at step 0 (the first run's) and each
    evaluated arm at ``step``, and the share of puzzles whose 16 samples all agree (all right or all wrong)."""
    runs = {arm: run for arm, run in seed_runs([folder]).get(int(folder.name.split("-")[-1]), {}).items()
            if _evaluated(run, step)}  # fmt: skip
    if not runs:
        raise ValueError(f"{folder}: no run has an eval at step {step}")
    arms = [arm for arm in (BASELINE, *ARMS) if arm in runs]
    columns = [("step 0", runs[arms[0]], 0)] + [(arm, runs[arm], step) for arm in arms]
    lines = ["| " + folder.name + " | " + " | ".join(name for name, _, _ in columns) + " |",
             "| --- " * (len(columns) + 1) + "|"]  # fmt: skip
    for k in (1, 4, 16):
        means = (statistics.fmean(_scores(run, at, k)[1]) for _, run, at in columns)
        lines.append(f"| pass@{k} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    agree = (statistics.fmean(p in (0.0, 1.0) for p in _scores(run, at, 1)[1]) for _, run, at in columns)
    lines.append("| all samples agree | " + " | ".join(f"{a:.2f}" for a in agree) + " |")
    return "\n".join(lines)


def verdict(folders: list[Path], step: int = REGISTERED_STEP) -> dict[str, Any]:
    """The registered statistic and the secondaries (module docstring) over the seeds in ``folders``."""
    seeds = seed_runs(folders)
    if not seeds:
        raise ValueError("no run folders (FOLDER/runs/LEARNER-sSEED) found")
    check_pairing(seeds)
    base = {s: runs[BASELINE] for s, runs in seeds.items() if BASELINE in runs and _evaluated(runs[BASELINE], step)}
    arms: dict[str, Any] = {}
    for arm in ARMS:
        runs = first_seeds({s: r[arm] for s, r in seeds.items() if arm in r and _evaluated(r[arm], step) and s in base})
        if not runs:
            continue
        entry: dict[str, Any] = {}
        for k in (1, 4, 16):
            arm_scores, base_scores = {}, {}
            for s, run in runs.items():
                keys, arm_scores[s] = _scores(run, step, k)
                base_keys, base_scores[s] = _scores(base[s], step, k)
                if keys != base_keys:
                    raise ValueError(f"seed {s}: {arm} and {BASELINE} were evaluated on different puzzles")
            entry[f"pass@{k}"] = paired_difference(arm_scores, base_scores)
        entry["decision"] = decision(entry["pass@1"], "better than GRPO", "worse than GRPO", "no difference shown")
        arms[arm] = entry
    rejected = holm({arm: entry["pass@1"]["p_value"] for arm, entry in arms.items()})
    learners = [BASELINE, *ARMS]
    read = {
        BASELINE: sorted(first_seeds(base)),
        **{arm: sorted(entry["pass@1"]["per_seed"]) for arm, entry in arms.items()},
    }
    gains = {name: own_gain({s: seeds[s][name] for s in read[name]}, step) for name in learners if read.get(name)}
    replication = decision(gains[BASELINE], "replicated", "reversed", "not replicated") if BASELINE in gains else None
    per_run = {}
    for s, runs in sorted(seeds.items()):
        for name, run in runs.items():
            row = row_at(run, step)
            end, start = (float(_scores(run, at, 1)[1].mean()) if _evaluated(run, at) else math.nan for at in (step, 0))
            per_run[f"{name}-s{s}"] = {
                "pass@1": end,
                "gain": end - start,
                "read": s in read.get(name, []),
                "format_rate": row.get("format_rate", math.nan),
                "mean_completion_tokens": row.get("mean_completion_tokens", math.nan),
                "seconds_per_step": seconds_per_step(run),
            }
    return {"step": step, "seeds": sorted(base), "read": read, "arms": arms, "holm_rejected": rejected, "gains": gains,
            "replication": replication, "per_run": per_run}  # fmt: skip


def _interval(result: dict[str, Any], name: str) -> str:
    low, high = result["intervals"][name]
    return f"[{low:+.4f}, {high:+.4f}]" if math.isfinite(low) else "n/a"


def verdict_markdown(result: dict[str, Any], command: str) -> str:
    """``result`` of :func:`verdict` as a markdown page."""
    title = f"# R3 at step {result['step']}"
    read = {name: len(result["read"].get(name, [])) for name in (BASELINE, *ARMS)}
    short = {name: n for name, n in read.items() if n < SEEDS_PER_ARM}
    if short:
        counts = ", ".join(f"{name} {n}" for name, n in short.items())
        title += f" (interim: {counts} of the pilot's {SEEDS_PER_ARM} seeds, descriptive)"
    lines = [title, "", f"`{command}`", "", f"Seeds with a grpo eval at step {result['step']}: "
             f"{', '.join(map(str, result['seeds'])) or 'none'}. Each statistic reads its first {SEEDS_PER_ARM} "
             "seeds in seed order (PROTOCOL.md amendment 5 (c)).", "",
             "| arm | Δ pass@1 vs grpo | t over seeds | paired puzzle bootstrap | decision | Holm | MDE | seeds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for arm, entry in result["arms"].items():
        primary = entry["pass@1"]
        holm_text = "rejects 0" if result["holm_rejected"][arm] else "does not reject 0"
        lines.append(f"| {arm} | {primary['mean']:+.4f} | {_interval(primary, 't over seeds')} | "
                     f"{_interval(primary, 'paired puzzle bootstrap')} | {entry['decision']} | {holm_text} | "
                     f"{primary['mde']:.4f} | {', '.join(map(str, result['read'][arm]))} |")  # fmt: skip
    lines += ["", "Secondary (no decision): pass@4 and pass@16 against grpo, from the same 16-sample evals.", "",
              "| arm | Δ pass@4 | its wider interval | Δ pass@16 | its wider interval |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for arm, entry in result["arms"].items():
        cells = []
        for k in (4, 16):
            diff = entry[f"pass@{k}"]
            cells += [f"{diff['mean']:+.4f}", _interval(diff, diff["decisive"]) if diff["decisive"] else "n/a"]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += ["", "Each arm's gain over its seeds' step-0 eval (grpo's: the registered replication of R2, "
              f"**{result['replication'] or 'no grpo run at the step'}**).",
              "",
              "| arm | gain | t over seeds | paired puzzle bootstrap | seeds |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, gain in result["gains"].items():
        seeds = ", ".join(map(str, gain["seeds"]))
        lines.append(f"| {name} | {gain['mean']:+.4f} | {_interval(gain, 't over seeds')} | "
                     f"{_interval(gain, 'paired puzzle bootstrap')} | {seeds} |")  # fmt: skip
    lines += ["", "Every run (read: in its arm's first seeds; a grpo run past grpo's first seeds is its seed's pairing "
              "partner).", "", "| run | read | pass@1 | gain over step 0 | format | mean length (tokens) | s/step |",
              "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for label, row in result["per_run"].items():
        lines.append(f"| {label} | {'yes' if row['read'] else 'no'} | {row['pass@1']:.4f} | {row['gain']:+.4f} | "
                     f"{row['format_rate']:.3f} | {row['mean_completion_tokens']:.1f} | "
                     f"{row['seconds_per_step']:.0f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def pilot(folders: list[Path]) -> dict[str, Any]:
    """PROTOCOL.md's pilot rule on seeds 0 and 1, or by amendment 4 (e) seed 0 and the first other seed to have
    every arm (every arm and grpo at the registered step): σ_d = the larger of 0.033 and the pooled SD of d over the
    three arms (each arm's two-seed variance, averaged: 3 degrees of freedom); the seed count is the smallest from 8
    to 13 whose MDE at σ_d is at most 0.04, else 13 with its MDE stated."""
    result = verdict(folders)
    pair = result["seeds"]
    if (
        len(pair) != 2
        or pair[0] != FIRST_SEED
        or sorted(result["arms"]) != sorted(ARMS)
        or any(entry["pass@1"]["seeds"] != pair for entry in result["arms"].values())
    ):
        raise ValueError(f"the pilot needs every arm and grpo of seed {FIRST_SEED} and one other seed evaluated at "
                         f"step {REGISTERED_STEP}, and only those seeds")  # fmt: skip
    from learners.pipeline.evaluation.statistics import mde_at

    per_arm = {arm: entry["pass@1"]["per_seed"] for arm, entry in result["arms"].items()}
    variances = {arm: (d[pair[0]] - d[pair[1]]) ** 2 / 2 for arm, d in per_arm.items()}  # n - 1 = 1 sample variance
    pooled = math.sqrt(sum(variances.values()) / len(variances))
    sd = max(PLANNED_SD, pooled)
    mdes = {n: mde_at(sd, n) for n in range(FEWEST_SEEDS, REGISTERED_SEEDS + 1)}
    seeds = min((n for n, mde in mdes.items() if mde <= TARGET_MDE), default=REGISTERED_SEEDS)
    return {"pilot_seeds": pair, "per_arm": per_arm, "sd": {arm: math.sqrt(v) for arm, v in variances.items()},
            "pooled_sd": pooled, "planning_sd": sd, "mdes": mdes, "seeds": seeds}  # fmt: skip


def pilot_markdown(result: dict[str, Any], command: str) -> str:
    """``result`` of :func:`pilot` as a markdown page."""
    first, other = result["pilot_seeds"]
    lines = [f"# R3 pilot: the seed count from seeds {first} and {other} (PROTOCOL.md, \"Seeds and power\")", "",
             f"`{command}`", ""]  # fmt: skip
    if other != 1:
        lines += [f"Seed {other}, not seed 1: by amendment 4 (e) the first other seed with every arm.", ""]
    lines += [f"| arm | d(seed {first}) | d(seed {other}) | SD of d |", "| --- | --- | --- | --- |"]
    for arm, d in result["per_arm"].items():
        lines.append(f"| {arm} | {d[first]:+.4f} | {d[other]:+.4f} | {result['sd'][arm]:.4f} |")
    lines += ["", f"Pooled SD of d over the three arms (3 degrees of freedom): {result['pooled_sd']:.4f}; the rule "
              f"plans with the larger of it and {PLANNED_SD}: **σ_d = {result['planning_sd']:.4f}**.", "",
              "| seeds | MDE at σ_d |", "| --- | --- |"]  # fmt: skip
    lines += [f"| {n} | {mde:.4f} |" for n, mde in result["mdes"].items()]
    chosen = result["seeds"]
    met = result["mdes"][chosen] <= TARGET_MDE
    lines += ["", f"**Seeds: {chosen}** (0-{chosen - 1}): " + (f"the fewest with MDE ≤ {TARGET_MDE}." if met else
              f"no count up to {REGISTERED_SEEDS} reaches MDE ≤ {TARGET_MDE}; the MDE at {chosen} seeds is "
              f"{result['mdes'][chosen]:.4f}.")]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    decide = sub.add_parser("verdict", help="the registered statistic (interim before all seeds)")
    decide.add_argument("folders", nargs="+", type=Path)
    decide.add_argument("--step", type=int, default=REGISTERED_STEP)
    decide.add_argument("--out", type=Path, help="write the verdict as markdown here (and print it)")
    plan = sub.add_parser("pilot", help="the seed count from seed 0 and one other (PROTOCOL.md's pilot rule)")
    plan.add_argument("folders", nargs="+", type=Path)
    plan.add_argument("--out", type=Path, help="write the page as markdown here (and print it)")
    checks = sub.add_parser("arm", help="one finished arm's run checks (for its seed's README)")
    checks.add_argument("run", type=Path, help="the arm's run folder (seed-N/runs/ARM-sN)")
    table = sub.add_parser("seed", help="one seed's pass@k table at step 0 and step 50 (for its README)")
    table.add_argument("folder", type=Path, help="the seed's folder (seed-N)")
    args = parser.parse_args(argv)
    command = "python experiments/r3_smollm2/report.py " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        if args.command == "arm":
            text = arm_markdown(arm_checks(args.run))
        elif args.command == "seed":
            text = seed_table(args.folder)
        elif args.command == "pilot":
            text = pilot_markdown(pilot(args.folders), command)
        else:
            text = verdict_markdown(verdict(args.folders, args.step), command)
    except ValueError as error:
        parser.exit(2, f"report.py: error: {error}\n")
    if getattr(args, "out", None) is not None:  # `arm` prints only
        from countdown_env.helpers.atomic import write_text

        write_text(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
