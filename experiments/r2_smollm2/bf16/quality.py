"""Does quality hold in bf16? R2's command in bf16 (the colocated engine in float32) against R2's eight fp32 seeds.

Descriptive (issue 63 item 6), not a registered test. From the committed per-puzzle evals and log histories it prints,
for each bf16 run with the engine in float32 (``bf16/seed-N-engine-fp32/``): pass@1 and pass@4 at steps 0 and 50 with
puzzle-bootstrap intervals, the gain over its own step 0 (paired puzzle bootstrap), and its training figures (first and
last ten steps); then the bf16 seeds' step-50 pass@1 against the fp32 seeds' (``amended/seed-N/``): the fp32 95 %
prediction interval for one more seed, the difference of means with a Student t interval (pooled SD; and the fp32 SD
alone), and the difference to the fp32 run of the same seed.

    python experiments/r2_smollm2/bf16/quality.py
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from learners.pipeline.evaluation.statistics import (  # noqa: E402
    bootstrap_ci,
    eval_files,
    paired_bootstrap_diff,
    puzzle_scores,
)

R2 = Path(__file__).resolve().parents[1]
STEP = 50
TRAINING_FIGURES = (
    "countdown/format_rate",
    "reward",
    "kl",
    "sampling/sampling_logp_difference/mean",
    "completions/mean_length",
    "step_time",
)


def grpo_runs(pattern: str) -> dict[int, Path]:
    """``{seed: run folder}`` of the grpo runs in R2's folders matching ``pattern`` (``seed-N...`` each)."""
    runs = {}
    for folder in sorted(R2.glob(pattern)):
        seed = int(folder.name.split("-")[1])
        runs[seed] = folder / "runs" / f"grpo-s{seed}"
    return runs


def score(run: Path, step: int, k: int) -> np.ndarray:
    return puzzle_scores(eval_files(run)[step], k)[1]


def training(run: Path) -> dict[str, tuple[float, float, float]]:
    """Each training figure's mean over the first and the last ten logged steps, and its maximum."""
    steps = [row for row in json.loads((run / "log_history.json").read_text()) if "reward" in row]
    figures = {}
    for key in TRAINING_FIGURES:
        values = [row[key] for row in steps if key in row]
        figures[key] = (statistics.mean(values[:10]), statistics.mean(values[-10:]), max(values))
    return figures


def main() -> int:
    from scipy.stats import t

    bf16, fp32 = grpo_runs("bf16/seed-*-engine-fp32"), grpo_runs("amended/seed-*")
    for seed, run in bf16.items():
        print(f"bf16 seed {seed} ({run.relative_to(R2)})")
        for k in (1, 4):
            start, end = score(run, 0, k), score(run, STEP, k)
            low, high = bootstrap_ci(end)
            gain, gain_low, gain_high, _ = paired_bootstrap_diff({seed: end}, {seed: start})
            print(f"  pass@{k}: step 0 {start.mean():.3f}, step {STEP} {end.mean():.3f} [{low:.3f}, {high:.3f}], "
                  f"gain {gain:+.3f} [{gain_low:+.3f}, {gain_high:+.3f}]")  # fmt: skip
        for key, (first, last, top) in training(run).items():
            print(f"  {key}: first ten {first:.4f}, last ten {last:.4f}, max {top:.4f}")
    b = {seed: float(score(run, STEP, 1).mean()) for seed, run in bf16.items()}
    f = {seed: float(score(run, STEP, 1).mean()) for seed, run in fp32.items()}
    fv, bv = np.array(list(f.values())), np.array(list(b.values()))
    fp32_pass4 = np.mean([score(run, STEP, 4).mean() for run in fp32.values()])
    print(f"fp32 step-{STEP} pass@1 over {fv.size} seeds: {fv.min():.3f}-{fv.max():.3f}, mean {fv.mean():.3f}, "
          f"SD {fv.std(ddof=1):.3f}; pass@4 mean {fp32_pass4:.3f}")  # fmt: skip
    half = t.ppf(0.975, fv.size - 1) * fv.std(ddof=1) * math.sqrt(1 + 1 / fv.size)
    print(f"95 % prediction interval of one more fp32 seed: [{fv.mean() - half:.3f}, {fv.mean() + half:.3f}]")
    diff = bv.mean() - fv.mean()
    df = fv.size + bv.size - 2
    pooled = math.sqrt(((fv.size - 1) * fv.var(ddof=1) + (bv.size - 1) * bv.var(ddof=1)) / df)
    for name, sd, dof in (("pooled SD", pooled, df), ("fp32 SD", float(fv.std(ddof=1)), fv.size - 1)):
        half = t.ppf(0.975, dof) * sd * math.sqrt(1 / fv.size + 1 / bv.size)
        interval = f"[{diff - half:+.3f}, {diff + half:+.3f}]"
        print(f"bf16 - fp32 mean step-{STEP} pass@1 ({name}, {dof} df): {diff:+.3f} {interval}")
    for seed in sorted(set(b) & set(f)):
        print(f"seed {seed}: bf16 {b[seed]:.3f} - fp32 {f[seed]:.3f} = {b[seed] - f[seed]:+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
