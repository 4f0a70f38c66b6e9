r"""The project's one statistics module: pass@k, bootstrap and Student t intervals (eval, demo, compare).

- :func:`pass_at_k`: for a puzzle with :math:`n` samples of which :math:`c` are correct, the unbiased estimator
  (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", arXiv:2107.03374)
  :math:`\widehat{\text{pass@}k} = 1 - \binom{n-c}{k} / \binom{n}{k}`, as a running product (exact in floating point).
- :func:`bootstrap_ci`: the percentile-bootstrap interval of a mean over puzzles (seeded).
- :func:`mean_ci`: the Student t 95 % interval of a mean over seeds (exact quantiles, ``scipy.stats.t``).
- :func:`paired_bootstrap_diff`: a learner's difference to a baseline, resampling puzzles within each seed (the
  seeds held fixed: eval noise only); ``joint=True`` draws one set of puzzle indices per resample for every seed,
  as it must when the seeds share a draw (R1's one step-0 eval, the baseline of every seed's gain): resampled
  independently, that shared draw's noise would average out over the seeds although it is counted once.
- :func:`paired_seed_diff`: the same difference as the mean of per-seed paired differences with a Student t
  interval over seeds (training variance included: the headline figure when there are several seeds).
- :func:`minimum_detectable_effect`: the true difference a two-sided 5 % t test over the seeds detects with 80 %
  power, (t_0.975 + t_0.80) x SE over seeds, the seeds' spread taken as known; :func:`mde_at` the same at a given
  SD and seed count (planning a seed count, as R3's pilot rule does).
- :func:`equivalence_power`: the probability that the Student t 95 % interval over n seeds lies within ±margin when
  the true difference is 0 and the seeds' SD is the realised one (the power of an equivalence rule such as E4's
  "within ±0.03"): exact, integrating the normal mean over the chi-square law of the sample SD.
- :func:`puzzle_counts`, :func:`puzzle_scores`: the per-puzzle correct and sample counts, and pass@k, of an eval
  file (``evals/step-N.jsonl``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for ``c`` correct out of ``n`` samples (``1 <= k <= n``)."""
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def bootstrap_ci(values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0):
    """Percentile-bootstrap CI of the mean of ``values`` (``(nan, nan)`` when empty, the value when single)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


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


def minimum_detectable_effect(per_seed: Sequence[float]) -> float:
    """(t_0.975 + t_0.80) x SE over seeds: the true difference a two-sided 5 % t test over these seeds detects with
    80 % power (the spread of the per-seed differences taken as known); NaN with fewer than 2 seeds."""
    n = len(per_seed)
    if n < 2:
        return math.nan
    return mde_at(float(np.std(np.asarray(per_seed, dtype=np.float64), ddof=1)), n)


def mde_at(sd: float, n: int) -> float:
    """(t_0.975,n-1 + t_0.80,n-1) sd / √n: the MDE of a two-sided 5 % t test at 80 % power over ``n`` seeds whose
    per-seed differences have standard deviation ``sd`` (a planned one, or :func:`minimum_detectable_effect`'s)."""
    from scipy.stats import t

    if n < 2:
        raise ValueError(f"an MDE over seeds needs n >= 2, got {n}")
    return float((t.ppf(0.975, n - 1) + t.ppf(0.80, n - 1)) * sd / math.sqrt(n))


def equivalence_power(margin: float, sd: float, n: int) -> float:
    """P(the t 95 % interval over ``n`` seeds lies within ±``margin``) when the per-seed differences are normal with
    mean 0 and standard deviation ``sd``. With x̄ ~ N(0, sd²/n) and S² ~ sd² χ²_{n-1}/(n-1) independent, the
    interval x̄ ± c S/√n (c = t_0.975,n-1) lies inside when |x̄| < margin - c S/√n, so the power is
    E_S[max(0, 2 Φ((margin - c S/√n) √n / sd) - 1)], integrated over the chi-square law of S."""
    if margin <= 0 or n < 2:
        raise ValueError(f"need margin > 0 and n >= 2, got margin={margin}, n={n}")
    if not sd > 0:
        return 1.0  # no spread: every interval is the point 0
    from scipy.integrate import quad
    from scipy.stats import chi2, norm, t

    df, c = n - 1, float(t.ppf(0.975, n - 1))
    # S < margin √n / c is needed for a non-empty region: q = (n-1) S²/sd² below that bound
    q_max = df * (margin * math.sqrt(n) / (c * sd)) ** 2

    def inside(q: float) -> float:
        half = margin - c * sd * math.sqrt(q / df) / math.sqrt(n)
        return (2.0 * norm.cdf(half * math.sqrt(n) / sd) - 1.0) * chi2.pdf(q, df)

    return float(min(1.0, quad(inside, 0.0, q_max, limit=200)[0]))


def puzzle_counts(path: str | Path) -> tuple[list[tuple[tuple[int, ...], int]], list[int], list[int]]:
    """``(puzzles, correct, samples)`` of an ``evals/step-N.jsonl``/``final_eval.jsonl`` (or its committed
    ``.jsonl.gz``): per puzzle (its numbers and target) how many of its samples were correct, and how many it had."""
    from countdown_env.helpers.jsonl import iter_jsonl

    keys, correct, samples = [], [], []
    for item in iter_jsonl(path):
        keys.append((tuple(item["numbers"]), int(item["target"])))
        correct.append(int(sum(item["correct"])))
        samples.append(len(item["correct"]))
    return keys, correct, samples


def eval_files(run: str | Path) -> dict[int, Path]:
    """``{step: path}`` of a run's per-puzzle evals, ``evals/step-N.jsonl`` or their committed ``.jsonl.gz``."""
    found = {}
    for path in (Path(run) / "evals").glob("step-*.jsonl*"):
        stem = path.name.split(".")[0]
        if path.name.endswith((".jsonl", ".jsonl.gz")) and stem.removeprefix("step-").isdigit():
            found[int(stem.removeprefix("step-"))] = path
    return dict(sorted(found.items()))


def puzzle_scores(path: str | Path, k: int = 1) -> tuple[list[tuple[tuple[int, ...], int]], np.ndarray]:
    """``(puzzles, scores)`` of an ``evals/step-N.jsonl``/``final_eval.jsonl``: per puzzle its unbiased pass@k."""
    keys, correct, samples = puzzle_counts(path)
    return keys, np.asarray([pass_at_k(n, c, k) for c, n in zip(correct, samples, strict=True)], dtype=np.float64)


def paired_bootstrap_diff(
    learner: Mapping[int, np.ndarray],
    baseline: Mapping[int, np.ndarray],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    joint: bool = False,
) -> tuple[float, float, float, int]:
    """``(difference, low, high, seeds)``: mean over the shared seeds of the mean per-puzzle difference
    ``learner - baseline``, with a percentile-bootstrap CI that resamples puzzles with replacement within each
    seed (paired: the same puzzle indices for both models). Arrays of one seed must be aligned by puzzle.

    ``joint=True``: every seed evaluated the same puzzles in the same order, and one draw of puzzle indices per
    resample serves every seed (so a draw the seeds share, such as one step-0 eval copied into each, keeps its
    full weight); the seeds' arrays must then all have one length."""
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
    if joint:
        if len({d.size for d in diffs}) != 1:
            raise ValueError(f"a joint bootstrap needs every seed on the same puzzles, got {[d.size for d in diffs]}")
        per_puzzle = np.mean(diffs, axis=0)  # resampling index i for every seed = resampling this mean's entry i
        boot = per_puzzle[rng.integers(0, per_puzzle.size, size=(resamples, per_puzzle.size))].mean(axis=1)
    else:
        boot = np.zeros(resamples)
        for d in diffs:
            boot += d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
        boot /= len(diffs)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return (estimate, float(low), float(high), len(seeds))


def paired_seed_diff(
    learner: Mapping[int, np.ndarray], baseline: Mapping[int, np.ndarray]
) -> tuple[float, float, float, int]:
    """``(difference, low, high, seeds)``: the mean over the shared seeds of each seed's mean per-puzzle difference
    ``learner - baseline`` (same puzzles, aligned), with the Student t 95 % interval over seeds (:func:`mean_ci`;
    NaN bounds with one seed). Unlike :func:`paired_bootstrap_diff`, the spread between seeds (training variance)
    is inside the interval."""
    seeds = sorted(set(learner) & set(baseline))
    per_seed = []
    for s in seeds:
        a, b = np.asarray(learner[s], dtype=np.float64), np.asarray(baseline[s], dtype=np.float64)
        if a.shape != b.shape or a.ndim != 1 or a.size == 0:
            raise ValueError(f"seed {s}: per-puzzle scores must be two equal-length vectors, got {a.shape}, {b.shape}")
        per_seed.append(float((a - b).mean()))
    return (*mean_ci(per_seed), len(seeds))
