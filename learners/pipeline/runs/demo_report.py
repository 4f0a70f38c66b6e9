"""What a demo reports beside its before/after evals: the RL stage's paired gain, the plot's headline markers, the
SFT panel's title and the peak resident memory (:mod:`learners.pipeline.runs.demo` writes them into its summary)."""

from __future__ import annotations

import resource
from typing import Any


def peak_rss_gb() -> dict[str, float]:
    """Peak resident memory so far, in GB (10^9 bytes): this process's and its largest finished child's (Linux
    reports ``ru_maxrss`` in KiB)."""
    return {
        "process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9, 2),
        "largest_child": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9, 2),
    }


def sft_title(from_scratch: bool) -> str:
    """The SFT panel's title: this demo's own SFT stage, or the shipped warm start's recorded one (not run now)."""
    if from_scratch:
        return "SFT stage of this run (--from-scratch): training loss"
    return "the shipped warm start's SFT loss\n(recorded when it was built; not run by this demo)"


def headline_points(before: dict[str, Any], after: dict[str, Any], steps: int) -> list:
    """The before/after evals (the summary's figures, on more puzzles than the curve) as the plot's headline markers."""
    from .plotting import Headline

    points = []
    for step, name, report in ((0, "before RL", before), (steps, "after RL", after)):
        overall, k = report["overall"], report["samples"]
        passk = (k, overall[f"pass@{k}"]) if k > 1 and f"pass@{k}" in overall else None
        label = f"{name}, {overall['n_puzzles']} puzzles x {k}"
        points.append(Headline(step, label, overall["pass@1"], tuple(overall["pass@1_ci95"]), passk))
    return points


def rl_gain(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The RL stage's pass@1 gain: after - before with a paired bootstrap CI over puzzles (the same puzzles, each
    scored by its fraction of correct samples), and whether the two models' own 95 % CIs overlap."""
    import numpy as np

    from ..evaluation.statistics import paired_bootstrap_diff

    def scores(report: dict[str, Any]) -> np.ndarray:
        return np.array([np.mean(p["correct"]) for p in report["puzzles"]])

    diff, low, high, _ = paired_bootstrap_diff({0: scores(after)}, {0: scores(before)})
    overlap = after["overall"]["pass@1_ci95"][0] <= before["overall"]["pass@1_ci95"][1]
    return {"pass@1": diff, "pass@1_ci95": [low, high], "cis_overlap": bool(overlap)}
