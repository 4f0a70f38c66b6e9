"""``training.png``: the panels of a run, from a trainer's ``log_history`` (and an SFT stage's, when there was one).

Panels (each drawn only when its data exist):

- train reward and train accuracy: the raw logged values faint, an exponential moving average on top;
- eval pass@1 (and pass@k) against step, with the 95 % CI band;
- completion length (tokens) and truncation rate (right axis);
- SFT loss against SFT step, when ``sft_history`` is given.

Y ranges follow the data (a small margin; rates are kept inside [0, 1]); step axes have integer ticks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SERIES = {
    "reward": ("reward",),
    "accuracy": ("countdown/accuracy",),
    "eval_pass@1": ("eval_pass@1", "eval/pass@1"),
    "completion_length": ("countdown/mean_completion_length", "completions/mean_length"),
    "truncation_rate": ("countdown/truncation_rate", "completions/clipped_ratio"),
    "sft_loss": ("loss",),
}
"""Curve name -> the logged keys it reads (the first one present in an entry): the project's ``countdown/``
metrics, else TRL's own."""

RATES = {"accuracy", "eval_pass@1", "truncation_rate"}


def curves(log_history: Sequence[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """``{"reward": [(step, value)], "accuracy": [...], "eval_pass@1": [...], "completion_length": [...],
    "truncation_rate": [...]}`` from a ``log_history`` (non-finite values dropped)."""
    out: dict[str, list[tuple[int, float]]] = {name: [] for name in SERIES if name != "sft_loss"}
    for entry in log_history:
        step = entry.get("step")
        if step is None:
            continue
        for name in out:
            for key in SERIES[name]:
                value = entry.get(key)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    out[name].append((int(step), float(value)))
                    break
    return out


def sft_losses(sft_history: Sequence[dict[str, Any]] | None) -> list[tuple[int, float]]:
    """``(step, loss)`` of an SFT trainer's ``log_history`` (its training-loss entries)."""
    points = []
    for entry in sft_history or ():
        value, step = entry.get("loss"), entry.get("step")
        if step is not None and isinstance(value, (int, float)) and math.isfinite(value):
            points.append((int(step), float(value)))
    return points


def smooth(values: Sequence[float], weight: float | None = None) -> list[float]:
    """Debiased exponential moving average (TensorBoard's smoothing). ``weight`` defaults to one that averages
    over about a tenth of the points (0 for fewer than 5 points: no smoothing)."""
    values = [float(v) for v in values]
    if weight is None:
        weight = 0.0 if len(values) < 5 else 1.0 - 1.0 / max(2.0, len(values) / 10.0)
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"weight must be in [0, 1), got {weight}")
    out, last, debias = [], 0.0, 0.0
    for v in values:
        last = weight * last + (1.0 - weight) * v
        debias = weight * debias + (1.0 - weight)
        out.append(last / debias)
    return out


def y_limits(values: Sequence[float], rate: bool = False, min_span: float | None = None) -> tuple[float, float]:
    """Limits around ``values`` with a 8 % margin (at least ``min_span`` wide); rates stay inside [0, 1]."""
    low, high = min(values), max(values)
    span = max(high - low, min_span if min_span is not None else (0.05 if rate else max(abs(high) * 0.1, 1e-3)))
    centre = (low + high) / 2
    low, high = min(low, centre - span / 2), max(high, centre + span / 2)
    pad = 0.08 * (high - low)
    low, high = low - pad, high + pad
    if rate:
        low, high = max(low, -0.02), min(high, 1.02)
    return low, high


def _integer_steps(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _raw_and_smooth(ax, points, label, color, rate: bool) -> None:
    xs, ys = zip(*points, strict=True)
    smoothed = smooth(ys)
    marker = "o" if len(xs) < 20 else None
    if smoothed == list(ys):  # too few points to smooth: the values themselves
        ax.plot(xs, ys, color=color, linewidth=1.8, marker=marker, markersize=4, label=label)
    else:
        ax.plot(xs, ys, color=color, alpha=0.25, linewidth=1.0)
        ax.plot(xs, smoothed, color=color, linewidth=1.8, label=f"{label} (smoothed)")
    ax.set_ylim(*y_limits(ys, rate=rate))


def plot_training(
    log_history: Sequence[dict[str, Any]],
    path: str | Path,
    title: str = "",
    sft_history: Sequence[dict[str, Any]] | None = None,
) -> Path:
    """Write the PNG of :mod:`this module <learners.pipeline.plotting>`'s panels; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = curves(log_history)
    # "eval/..." is how histories before the eval_ prefix named the metrics (still read)
    log_history = [{k.replace("eval/", "eval_", 1) if k.startswith("eval/") else k: v for k, v in e.items()}
                   for e in log_history]  # fmt: skip
    evals = [e for e in log_history if "eval_pass@1" in e and "step" in e]
    sft = sft_losses(sft_history)
    panels = []
    if data["reward"]:
        panels.append("reward")
    if data["accuracy"]:
        panels.append("accuracy")
    if evals:
        panels.append("eval")
    if data["completion_length"] or data["truncation_rate"]:
        panels.append("length")
    if sft:
        panels.append("sft")
    if not panels:
        panels.append("empty")
    columns = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.4 * rows), dpi=110, squeeze=False)
    flat = list(axes.flat)
    for ax, panel in zip(flat, panels, strict=False):
        ax.grid(alpha=0.3)
        ax.set_xlabel("step")
        _integer_steps(ax)
        if panel == "reward":
            _raw_and_smooth(ax, data["reward"], "train reward", "tab:blue", rate=False)
            ax.set_title("train reward (mean per logging step; raw faint)", fontsize=9)
        elif panel == "accuracy":
            _raw_and_smooth(ax, data["accuracy"], "train accuracy", "tab:green", rate=True)
            ax.set_title("train accuracy (share correct; raw faint)", fontsize=9)
        elif panel == "eval":
            xs = [int(e["step"]) for e in evals]
            ys = [float(e["eval_pass@1"]) for e in evals]
            values = list(ys)
            ax.plot(xs, ys, "o-", color="black", label="eval pass@1")
            if all("eval_pass@1_low" in e and "eval_pass@1_high" in e for e in evals):
                lows = [float(e["eval_pass@1_low"]) for e in evals]
                highs = [float(e["eval_pass@1_high"]) for e in evals]
                ax.fill_between(xs, lows, highs, color="black", alpha=0.12, label="95 % CI")
                values += lows + highs
            ks = sorted({k for e in evals for k in e if k.startswith("eval_pass@") and k[10:].isdigit()} - {
                "eval_pass@1"})  # fmt: skip
            for key in ks:
                points = [(int(e["step"]), float(e[key])) for e in evals if key in e]
                ax.plot(*zip(*points, strict=True), "s--", color="tab:purple", alpha=0.7, label=key[5:])
                values += [v for _, v in points]
            ax.set_ylim(*y_limits(values, rate=True))
            ax.set_title("eval on held-out puzzles", fontsize=9)
        elif panel == "length":
            if data["completion_length"]:
                _raw_and_smooth(ax, data["completion_length"], "completion length", "tab:orange", rate=False)
                ax.set_ylabel("tokens")
            if data["truncation_rate"]:
                right = ax.twinx() if data["completion_length"] else ax
                _raw_and_smooth(right, data["truncation_rate"], "truncation rate", "tab:red", rate=True)
                right.set_ylabel("truncated share")
                if right is not ax:
                    lines = ax.get_legend_handles_labels()
                    more = right.get_legend_handles_labels()
                    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="best", fontsize=8)
            ax.set_title("completion length and truncation", fontsize=9)
        elif panel == "sft":
            _raw_and_smooth(ax, sft, "SFT loss", "tab:brown", rate=False)
            ax.set_xlabel("SFT step")
            ax.set_title("SFT stage: training loss", fontsize=9)
        else:
            ax.text(0.5, 0.5, "nothing logged", ha="center", va="center", transform=ax.transAxes)
        if panel != "length" and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=8)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
