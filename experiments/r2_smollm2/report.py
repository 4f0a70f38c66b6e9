"""R2's curves and verdict, read from its ``countdown compare`` folders (PROTOCOL.md beside this file).

``curves`` draws, per run, the per-step training figures TRL logs (training reward, KL to the start, token entropy,
mean completion length, the share of completions cut at the budget, the share of mixed groups kept by dynamic
sampling) and the eval pass@1 at its steps, into one ``curves.png``::

    python experiments/r2_smollm2/report.py curves experiments/r2_smollm2/lr_probe/lr-* \\
        --out experiments/r2_smollm2/lr_probe/curves.png

``probe`` applies the registered learning-rate rule to the probe's runs and prints the choice with its figures::

    python experiments/r2_smollm2/report.py probe experiments/r2_smollm2/lr_probe/lr-*

``verdict`` computes the registered statistic at one step (PROTOCOL.md, "Statistic and power"): per seed, pass@1 at
that step minus the shared step-0 pass@1 on the same puzzles; the mean over seeds with a Student t 95 % interval over
seeds and a joint puzzle bootstrap (one draw of puzzle indices per replicate for the step-0 eval and every seed);
the wider of the two decides (*learned* if its lower end is above 0, else *learning not shown*); the MDE at the
realised spread over seeds; pass@4 and amendment 5(b)'s format figures beside it (secondary)::

    python experiments/r2_smollm2/report.py verdict experiments/r2_smollm2/main/seed-* --step 100 \
        --start experiments/r2_smollm2/step0_256x16.jsonl --out experiments/r2_smollm2/main/verdict-step100.md

``replay`` compares one run with the same run started again (same seed and command; another machine, or a restart
after lost checkpoints), step by step: the first step whose sampled completions differ (told by the figures that
depend on the samples alone: reward, accuracy, length, token count), the largest relative gap of the other logged
figures before it (gradient norm, KL, entropy, loss: floating-point order), and the median ratio of step times::

    python experiments/r2_smollm2/report.py replay experiments/r2_smollm2/amended/first-attempt-lost/seed-4 \
        experiments/r2_smollm2/amended/seed-4
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

PANELS = (
    ("reward", "training reward (mean of the step's completions)"),
    ("kl", "KL to the start (TRL's k3 estimate)"),
    ("entropy", "token entropy (nats)"),
    ("completions/mean_length", "mean completion length (tokens)"),
    ("completions/clipped_ratio", "share cut at the token budget"),
    ("countdown/dynamic_sampling_kept_frac", "share of mixed groups (kept)"),
)


def run_dirs(folder: Path) -> list[Path]:
    """The run folders (``runs/LEARNER-sSEED``) of one compare folder."""
    return sorted(p for p in (folder / "runs").iterdir() if p.is_dir()) if (folder / "runs").is_dir() else []


def step_series(log_history: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """``(steps, values)`` of ``key`` in a TRL log history (training entries only, finite values)."""
    steps, values = [], []
    for entry in log_history:
        value = entry.get(key)
        if value is None or "step" not in entry or not math.isfinite(float(value)):
            continue
        steps.append(int(entry["step"]))
        values.append(float(value))
    return steps, values


def eval_points(run: Path) -> tuple[list[int], list[float]]:
    """``(steps, pass@1)`` of a run's per-puzzle evals (``evals/step-N.jsonl``): the mean over puzzles of each
    puzzle's share of correct samples."""
    points = []
    from countdown_env.helpers.jsonl import read_jsonl
    from learners.pipeline.evaluation.statistics import eval_files

    for step, path in eval_files(run).items():
        rows = read_jsonl(path)
        scores = [sum(r["correct"]) / len(r["correct"]) for r in rows]
        points.append((step, sum(scores) / len(scores)))
    points.sort()
    return [s for s, _ in points], [v for _, v in points]


def run_history(run: Path) -> list[dict[str, Any]]:
    """A run's TRL log history (``log_history.json``; empty when the run has none yet)."""
    path = run / "log_history.json"
    return json.loads(path.read_text()) if path.is_file() else []


def window_mean(log_history: list[dict[str, Any]], key: str, first: int, last: int) -> float:
    """Mean of ``key`` over the logged steps ``first..last`` (nan when none)."""
    steps, values = step_series(log_history, key)
    chosen = [v for s, v in zip(steps, values, strict=True) if first <= s <= last]
    return sum(chosen) / len(chosen) if chosen else math.nan


def plot(runs: dict[str, Path], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from countdown_env.helpers.atomic import write_bytes

    fig, axes = plt.subplots(2, 4, figsize=(18, 8), dpi=100)
    panels = [*PANELS, ("eval", "eval pass@1 (T = 0.8)")]
    for (key, title), axis in zip(panels, axes.flat, strict=False):
        for label, run in runs.items():
            steps, values = eval_points(run) if key == "eval" else step_series(run_history(run), key)
            axis.plot(steps, values, marker="o" if key == "eval" else None, markersize=4, label=label)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    axes.flat[-1].axis("off")
    fig.tight_layout()
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return write_bytes(out, buffer.getvalue())


def labelled_runs(folders: list[Path]) -> dict[str, Path]:
    return {f"{folder.name}/{run.name}": run for folder in folders for run in run_dirs(folder)}


FORMAT_KEY = "countdown/format_rate"
REGISTERED_SEEDS = 8  # PROTOCOL.md, "Statistic and power"; a verdict over fewer is interim (amendment 5(c))


def probe_choice(runs: dict[str, float], histories: dict[str, list[dict[str, Any]]], steps: int = 30) -> dict[str, Any]:
    """The registered rule (PROTOCOL.md and its amendment 1): the lr with the higher mean training reward over the
    last two thirds of the probe's ``steps`` (11-30 of 30), unless its format rate over the last third (21-30) is
    below 0.9 or its mean KL there exceeds 0.1; then the other; none if both fail. ``runs``: {label: lr};
    ``histories``: {label: log history}."""
    reward_from, check_from = steps // 3 + 1, 2 * steps // 3 + 1
    figures = {}
    for label, lr in runs.items():
        history = histories[label]
        figures[label] = {
            "lr": lr,
            "reward": window_mean(history, "reward", reward_from, steps),
            "format": window_mean(history, FORMAT_KEY, check_from, steps),
            "kl": window_mean(history, "kl", check_from, steps),
            "windows": {"reward": [reward_from, steps], "format_and_kl": [check_from, steps]},
        }

    def passes(f: dict[str, Any]) -> bool:
        format_ok = math.isnan(f["format"]) or f["format"] >= 0.9
        kl_ok = math.isnan(f["kl"]) or f["kl"] <= 0.1
        return format_ok and kl_ok

    ranked = sorted(figures, key=lambda k: figures[k]["reward"], reverse=True)
    chosen = next((label for label in ranked if passes(figures[label])), None)
    return {"figures": figures, "chosen": chosen, "lr": figures[chosen]["lr"] if chosen else None}


def pooled_scores(paths: list[Path]):
    """``(puzzles, pass@1 per puzzle)`` of several evals of the same puzzles in the same order, their samples pooled
    (correct over all samples of a puzzle): amendment 4(d)'s step-0 baseline drawn as the end evals are (4 draws of 4
    samples, 16 per puzzle)."""
    import numpy as np

    from learners.pipeline.evaluation.statistics import puzzle_counts

    keys, correct, samples = puzzle_counts(paths[0])
    correct, samples = np.asarray(correct, dtype=np.float64), np.asarray(samples, dtype=np.float64)
    for path in paths[1:]:
        other_keys, other_correct, other_samples = puzzle_counts(path)
        if other_keys != keys:
            raise ValueError(f"{path}: not the puzzles of {paths[0]} in their order")
        correct, samples = correct + other_correct, samples + other_samples
    return keys, correct / samples


def verdict(runs: dict[str, Path], start: Path | list[Path] | None, step: int) -> dict[str, Any]:
    """The registered statistic at ``step`` (module docstring) from each run's ``evals/step-STEP.jsonl`` and the
    shared step-0 eval ``start`` (several files: their samples pooled per puzzle, :func:`pooled_scores`); runs
    without that eval are left out and named. ``start=None``: each run's own step-0 eval (``evals/step-0.jsonl``,
    the same route as its later evals: amendment 3) is its baseline."""
    import numpy as np

    from learners.pipeline.evaluation.statistics import (
        eval_files,
        mean_ci,
        minimum_detectable_effect,
        paired_bootstrap_diff,
        puzzle_scores,
    )

    starts = [start] if isinstance(start, Path) else start
    start_keys, start_scores = pooled_scores(starts) if starts else (None, None)
    gains, ends, ends4, bases, missing = {}, {}, {}, {}, []
    for label, run in runs.items():
        path = eval_files(run).get(step)
        if path is None:
            missing.append(label)
            continue
        keys, scores = puzzle_scores(path)
        base_keys, bases[label] = (
            (start_keys, start_scores) if start is not None else puzzle_scores(eval_files(run)[0])
        )
        if keys != base_keys:
            raise ValueError(f"{path}: not the step-0 eval's puzzles in its order")
        ends[label], ends4[label] = scores, puzzle_scores(path, k=4)[1]
        gains[label] = float(scores.mean() - bases[label].mean())
    if not gains:
        raise ValueError(f"no run has evals/step-{step}.jsonl")
    mean, t_low, t_high = mean_ci(list(gains.values()))
    seeds = range(len(ends))
    _, b_low, b_high, _ = paired_bootstrap_diff(dict(zip(seeds, ends.values(), strict=True)),
                                                dict(zip(seeds, bases.values(), strict=True)),
                                                joint=True, resamples=10_000)  # fmt: skip
    intervals = {"t over seeds": (t_low, t_high), "joint puzzle bootstrap": (b_low, b_high)}
    finite = {k: v for k, v in intervals.items() if all(math.isfinite(x) for x in v)}
    decisive = max(finite, key=lambda k: finite[k][1] - finite[k][0]) if finite else None
    learned = decisive is not None and finite[decisive][0] > 0
    return {
        "step": step,
        "seeds": list(gains),
        "missing": missing,
        "baseline": (
            f"the shared step-0 eval ({', '.join(p.name for p in starts)}; 256 x 16)"
            if starts
            else "each run's own step-0 eval (256 x 4)"
        ),
        "start_pass@1": {k: float(v.mean()) for k, v in bases.items()},
        "end_pass@1": {k: float(v.mean()) for k, v in ends.items()},
        "end_pass@4": {k: float(v.mean()) for k, v in ends4.items()},
        "gain_per_seed": gains,
        "mean_gain": mean,
        "intervals": intervals,
        "decisive": decisive,
        "verdict": "learned" if learned else "learning not shown",
        "sd_over_seeds": float(np.std(list(gains.values()), ddof=1)) if len(gains) > 1 else math.nan,
        "mde": minimum_detectable_effect(list(gains.values())),
        "format": format_secondary(runs, gains, step),
    }


def eval_format_rate(run: Path, step: int) -> float:
    """The format rate of a run's eval at ``step``, from its ``rows.csv`` (nan when that eval is not there)."""
    from learners.pipeline.compare.results import read_rows

    path = run / "rows.csv"
    rates = [row["format_rate"] for row in read_rows(path) if row["step"] == step] if path.is_file() else []
    return rates[-1] if rates else math.nan


def format_secondary(runs: dict[str, Path], gains: dict[str, float], step: int, window: int = 10) -> dict[str, Any]:
    """Amendment 5(b)'s secondary, with no decision attached: per run, the training format rate over the last
    ``window`` steps up to ``step`` (91-100) and the eval's format rate at ``step``; the share of runs whose training
    format there is below 0.5 ("dropped the reasoning"); the mean gain of the runs that kept it and of those that
    dropped it (nan for an empty side). ``gains``: the verdict's gain per run."""
    per_run, kept, dropped = {}, [], []
    for label in gains:
        run = runs[label]
        train = window_mean(run_history(run), FORMAT_KEY, step - window + 1, step)
        per_run[label] = {"train": train, "eval": eval_format_rate(run, step)}
        if math.isfinite(train):
            (dropped if train < 0.5 else kept).append(gains[label])

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    measured = len(kept) + len(dropped)
    return {
        "window": [step - window + 1, step],
        "per_run": per_run,
        "dropped_share": len(dropped) / measured if measured else math.nan,
        "mean_gain_kept": mean(kept),
        "mean_gain_dropped": mean(dropped),
        "kept": len(kept),
        "dropped": len(dropped),
    }


SAMPLED_KEYS = ("reward", "countdown/accuracy", "completions/mean_length", "num_tokens")


def replay(first: Path, again: Path) -> dict[str, Any]:
    """Step-by-step agreement of two log histories of one run (see the module docstring, ``replay``)."""
    logged = [{int(e["step"]): e for e in run_history(run) if "step" in e} for run in (first, again)]
    steps = sorted(set(logged[0]) & set(logged[1]))
    diverged = next((s for s in steps if any(logged[0][s].get(k) != logged[1][s].get(k) for k in SAMPLED_KEYS)), None)
    same = [s for s in steps if diverged is None or s < diverged]
    gaps: dict[str, float] = {}
    for s in same:
        for key, value in logged[0][s].items():
            other = logged[1][s].get(key)
            if key in ("step", "step_time") or not isinstance(value, float) or not isinstance(other, float):
                continue
            if value != other:
                gap = abs(other - value) / max(abs(value), 1e-12)
                gaps[key] = max(gaps.get(key, 0.0), gap)
    ratios = [logged[1][s]["step_time"] / logged[0][s]["step_time"] for s in steps if logged[0][s].get("step_time")]
    return {
        "steps_compared": len(steps),
        "first_step_sampled_differently": diverged,
        "steps_sampled_identically": len(same),
        "largest_relative_gap_before": gaps,
        "median_step_time_ratio": statistics.median(ratios) if ratios else math.nan,
    }


def verdict_markdown(result: dict[str, Any], command: str) -> str:
    """``result`` of :func:`verdict` as a short markdown page."""
    title = f"# R2 at step {result['step']}: {result['verdict']}"
    if len(result["seeds"]) < REGISTERED_SEEDS:
        seeds = len(result["seeds"])
        title += f" (interim: {seeds} of the {REGISTERED_SEEDS} registered seeds, descriptive; amendment 5(c))"
    lines = [title, "", f"`{command}`", "",
             f"Baseline: {result['baseline']}.", "",
             "| run | step-0 pass@1 (baseline) | pass@1 at the step (256 x 4) | gain | pass@4 at the step |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for label in result["seeds"]:
        lines.append(f"| {label} | {result['start_pass@1'][label]:.4f} | {result['end_pass@1'][label]:.4f} | "
                     f"{result['gain_per_seed'][label]:+.4f} | {result['end_pass@4'][label]:.4f} |")  # fmt: skip
    lines += ["", f"Mean gain over {len(result['seeds'])} seeds: **{result['mean_gain']:+.4f}**."]
    for name, (low, high) in result["intervals"].items():
        mark = " (decisive: the wider)" if name == result["decisive"] else ""
        lines.append(f"- {name}: [{low:+.4f}, {high:+.4f}]{mark}")
    lines += ["", f"SD of a seed's gain: {result['sd_over_seeds']:.4f}; minimum detectable effect at 80 % power "
              f"with these seeds at this SD (t quantiles, n - 1 degrees of freedom): {result['mde']:.4f}."]  # fmt: skip
    fmt = result["format"]
    first, last = fmt["window"]
    lines += ["", f"Format (amendment 5(b), secondary, no decision attached): training format rate over steps "
              f"{first}-{last} and the eval's at step {result['step']}.", "",
              "| run | training format | eval format |", "| --- | --- | --- |"]  # fmt: skip
    for label, rates in fmt["per_run"].items():
        lines.append(f"| {label} | {rates['train']:.3f} | {rates['eval']:.3f} |")
    lines += ["", f"Runs below 0.5 (dropped the reasoning): {fmt['dropped']} of {fmt['kept'] + fmt['dropped']} "
              f"({fmt['dropped_share']:.2f}); mean gain of those that kept it {fmt['mean_gain_kept']:+.4f}, "
              f"of those that dropped it {fmt['mean_gain_dropped']:+.4f}."]  # fmt: skip
    if result["missing"]:
        lines += ["", "Runs without an eval at this step (left out): " + ", ".join(result["missing"]) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    curves = sub.add_parser("curves")
    curves.add_argument("folders", nargs="+", type=Path)
    curves.add_argument("--out", type=Path, required=True)
    probe = sub.add_parser("probe")
    probe.add_argument("folders", nargs="+", type=Path)
    probe.add_argument("--steps", type=int, default=30, help="the probe's steps (PROTOCOL.md, amendment 1: 20)")
    decide = sub.add_parser("verdict")
    decide.add_argument("folders", nargs="+", type=Path)
    decide.add_argument("--step", type=int, default=100)
    decide.add_argument(
        "--start",
        type=Path,
        nargs="+",
        default=[Path(__file__).parent / "step0_256x16.jsonl"],
        help="the shared step-0 eval (registered baseline); several files: their samples pooled per puzzle "
        "(amendment 4(d)'s secondary: step0_route_check/standalone_256x4_seed*.jsonl.gz)",
    )
    decide.add_argument(
        "--own-start", action="store_true", help="baseline: each run's own step-0 eval instead (amendment 3, secondary)"
    )
    decide.add_argument("--out", type=Path, help="write the verdict as markdown here (and print it)")
    rerun = sub.add_parser("replay")
    rerun.add_argument("first", type=Path, help="the first run's compare folder")
    rerun.add_argument("again", type=Path, help="the same run's compare folder, started again")
    args = parser.parse_args(argv)
    if args.command == "replay":
        pairs = [run_dirs(args.first), run_dirs(args.again)]
        if len(pairs[0]) != 1 or [r.name for r in pairs[0]] != [r.name for r in pairs[1]]:
            parser.error("replay needs two compare folders holding one run of the same name each")
        print(json.dumps(replay(pairs[0][0], pairs[1][0]), indent=2))
        return 0
    runs = labelled_runs(args.folders)
    if not runs:
        parser.error("no run folders (FOLDER/runs/LEARNER-sSEED) found")
    if args.command == "curves":
        print(plot(runs, args.out))
        return 0
    if args.command == "verdict":
        from countdown_env.helpers.atomic import write_text

        command = "python experiments/r2_smollm2/report.py " + " ".join(argv if argv is not None else sys.argv[1:])
        text = verdict_markdown(verdict(runs, None if args.own_start else args.start, args.step), command)
        if args.out is not None:
            write_text(args.out, text)
        print(text)
        return 0
    lrs, histories = {}, {}
    for label, run in runs.items():
        record = json.loads((run / "resolved_config.json").read_text())
        lrs[label] = float(record["trainer"]["learning_rate"])
        histories[label] = json.loads((run / "log_history.json").read_text())
    print(json.dumps(probe_choice(lrs, histories, args.steps), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
