"""The statistics of the summary: Student t intervals over seeds, per-puzzle pass@k scores of an eval file, and the
paired (by seed and puzzle) bootstrap of a learner's difference to the baseline."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the Student t 95 % interval of the mean of ``values`` (n >= 2; else NaN bounds)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(x.mean())
    if x.size < 2:
        return (mean, math.nan, math.nan)
    from scipy.stats import t

    half = float(t.ppf(0.975, x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (mean, mean - half, mean + half)


def puzzle_scores(path: str | Path, k: int = 1) -> tuple[list[tuple[tuple[int, ...], int]], np.ndarray]:
    """``(puzzles, scores)`` of an ``evals/step-N.jsonl``/``final_eval.jsonl``: per puzzle its unbiased pass@k."""
    from ..evaluate import pass_at_k

    keys, scores = [], []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        keys.append((tuple(item["numbers"]), int(item["target"])))
        correct = item["correct"]
        scores.append(pass_at_k(len(correct), int(sum(correct)), k))
    return keys, np.asarray(scores, dtype=np.float64)


def paired_bootstrap_diff(
    learner: Mapping[int, np.ndarray],
    baseline: Mapping[int, np.ndarray],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float, int]:
    """``(difference, low, high, seeds)``: mean over the shared seeds of the mean per-puzzle difference
    ``learner - baseline``, with a percentile-bootstrap CI that resamples puzzles with replacement within each
    seed (paired: the same puzzle indices for both models). Arrays of one seed must be aligned by puzzle."""
    seeds = sorted(set(learner) & set(baseline))
    if not seeds:
        return (math.nan, math.nan, math.nan, 0)
    diffs = []
    for s in seeds:
        a, b = np.asarray(learner[s], dtype=np.float64), np.asarray(baseline[s], dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1 or a.size == 0:
            raise ValueError(f"seed {s}: per-puzzle scores must be two equal-length vectors, got {a.shape}, {b.shape}")
        diffs.append(a - b)
    estimate = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(seed)
    boot = np.zeros(resamples)
    for d in diffs:
        boot += d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    boot /= len(diffs)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return (estimate, float(low), float(high), len(seeds))


def bootstrap_puzzles(scores: np.ndarray, *, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    from ..evaluate import bootstrap_ci

    return bootstrap_ci(scores.tolist(), resamples=resamples, seed=seed)
