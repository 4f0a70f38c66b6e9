"""``training.png``: the panels of a run, from a trainer's ``log_history`` (and an SFT stage's, when there was one).

Panels (each drawn only when its data exist):

- train reward and train accuracy: the raw logged values faint, an exponential moving average on top; one panel
  when the two series are the same numbers (binary reward, no format bonus or partial credit), two when they differ;
- eval pass@1 (and pass@k) against step, with the 95 % CI band; the title says how many puzzles and samples each
  point is (``eval_puzzles``/``eval_samples`` when logged), and ``headline`` points (e.g. the demo's before/after
  evals on a larger set) are drawn apart, as large markers with their CIs, so two sets are never read as one;
- completion length (tokens) and truncation rate (right axis; a rate that is 0 throughout says so);
- SFT loss against SFT step, when ``sft_history`` is given, titled ``sft_title`` (say whether this run trained it).

Y ranges follow the data (a small margin; rates are kept inside [0, 1], never below 0); step axes have integer ticks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
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
        low, high = max(low, 0.0), min(high, 1.02)
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


SFT_TITLE = "SFT stage: training loss"


@dataclass(frozen=True)
class Headline:
    """An eval drawn apart from the curve: at ``step``, ``label`` (e.g. "before RL, 512 puzzles"), pass@1 with its
    95 % CI and, optionally, pass@k."""

    step: int
    label: str
    pass1: float
    ci95: tuple[float, float]
    passk: tuple[int, float] | None = None


def same_series(a: Sequence[tuple[int, float]], b: Sequence[tuple[int, float]]) -> bool:
    """Whether two logged series are the same numbers at the same steps (reward = accuracy)."""
    return len(a) == len(b) and all(sa == sb and abs(va - vb) <= 1e-9 for (sa, va), (sb, vb) in zip(a, b, strict=True))


def panels_of(data: dict[str, list], evals: Sequence[dict], sft: Sequence, headline: Sequence[Headline]) -> list[str]:
    """The panels drawn, in order: ``reward``, ``accuracy`` (only when it differs from the reward), ``eval``,
    ``length``, ``sft``; ``["empty"]`` when nothing was logged."""
    panels = []
    if data["reward"]:
        panels.append("reward")
    if data["accuracy"] and not (data["reward"] and same_series(data["reward"], data["accuracy"])):
        panels.append("accuracy")
    if evals or headline:
        panels.append("eval")
    if data["completion_length"] or data["truncation_rate"]:
        panels.append("length")
    if sft:
        panels.append("sft")
    return panels or ["empty"]


def plot_training(
    log_history: Sequence[dict[str, Any]],
    path: str | Path,
    title: str = "",
    sft_history: Sequence[dict[str, Any]] | None = None,
    *,
    sft_title: str = SFT_TITLE,
    headline: Sequence[Headline] = (),
) -> Path:
    """Write the PNG of :mod:`this module <learners.pipeline.runs.plotting>`'s panels; returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = curves(log_history)
    # "eval/..." is how histories before the eval_ prefix named the metrics (still read)
    log_history = [{k.replace("eval/", "eval_", 1) if k.startswith("eval/") else k: v for k, v in e.items()}
                   for e in log_history]  # fmt: skip
    evals = [e for e in log_history if "eval_pass@1" in e and "step" in e]
    sft = sft_losses(sft_history)
    panels = panels_of(data, evals, sft, headline)
    merged = "accuracy" not in panels and bool(data["accuracy"])
    columns = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6 * columns, 3.4 * rows), dpi=110, squeeze=False)
    flat = list(axes.flat)
    for ax, panel in zip(flat, panels, strict=False):
        ax.grid(alpha=0.3)
        ax.set_xlabel("step")
        _integer_steps(ax)
        if panel == "reward":
            name = "train reward = train accuracy" if merged else "train reward"
            _raw_and_smooth(ax, data["reward"], name, "tab:blue", rate=merged)
            what = "\n(the same numbers: a binary reward)" if merged else ""
            ax.set_title(f"{name}, mean per logging step (raw faint){what}", fontsize=9)
        elif panel == "accuracy":
            _raw_and_smooth(ax, data["accuracy"], "train accuracy", "tab:green", rate=True)
            ax.set_title("train accuracy (share correct; raw faint)", fontsize=9)
        elif panel == "eval":
            values = _eval_panel(ax, evals, headline)
            ax.set_ylim(*y_limits(values, rate=True))
            ax.set_title(eval_title(evals, headline), fontsize=9)
        elif panel == "length":
            if data["completion_length"]:
                _raw_and_smooth(ax, data["completion_length"], "completion length", "tab:orange", rate=False)
                ax.set_ylabel("tokens")
            if data["truncation_rate"]:
                right = ax.twinx() if data["completion_length"] else ax
                never = all(v == 0 for _, v in data["truncation_rate"])
                name = "truncation rate (0 throughout)" if never else "truncation rate"
                _raw_and_smooth(right, data["truncation_rate"], name, "tab:red", rate=True)
                right.set_ylabel("truncated share")
                if right is not ax:
                    lines = ax.get_legend_handles_labels()
                    more = right.get_legend_handles_labels()
                    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="best", fontsize=8)
            ax.set_title("completion length and truncation", fontsize=9)
        elif panel == "sft":
            _raw_and_smooth(ax, sft, "SFT loss", "tab:brown", rate=False)
            ax.set_xlabel("SFT step")
            ax.set_title(sft_title, fontsize=9)
        else:
            ax.text(0.5, 0.5, "nothing logged", ha="center", va="center", transform=ax.transAxes)
        if panel != "length" and ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=7 if panel == "eval" else 8, framealpha=0.7)
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


def eval_title(evals: Sequence[dict[str, Any]], headline: Sequence[Headline]) -> str:
    """What the eval panel's points are: the curve's puzzles and samples when logged; the headline markers."""
    sizes = {(e.get("eval_puzzles"), e.get("eval_samples")) for e in evals}
    if len(sizes) == 1 and None not in next(iter(sizes)):
        puzzles, samples = next(iter(sizes))
        curve = f"curve: eval every few steps on {puzzles} held-out puzzles x {samples} samples"
    else:
        curve = "curve: evals on held-out puzzles"
    if headline:
        return curve + "\n" + "; ".join(h.label for h in headline) + " (large markers)"
    return curve


def _eval_panel(ax, evals: Sequence[dict[str, Any]], headline: Sequence[Headline]) -> list[float]:
    """The eval curve (pass@1 with its CI band, pass@k dashed) and the headline markers; returns the y values."""
    values: list[float] = []
    if evals:
        xs = [int(e["step"]) for e in evals]
        ys = [float(e["eval_pass@1"]) for e in evals]
        values += ys
        ax.plot(xs, ys, "o-", color="black", label="pass@1 (curve)")
        if all("eval_pass@1_low" in e and "eval_pass@1_high" in e for e in evals):
            lows = [float(e["eval_pass@1_low"]) for e in evals]
            highs = [float(e["eval_pass@1_high"]) for e in evals]
            ax.fill_between(xs, lows, highs, color="black", alpha=0.12, label="95 % CI (curve)")
            values += lows + highs
        ks = sorted({k for e in evals for k in e if k.startswith("eval_pass@") and k[10:].isdigit()} - {"eval_pass@1"})
        for key in ks:
            points = [(int(e["step"]), float(e[key])) for e in evals if key in e]
            ax.plot(*zip(*points, strict=True), "s--", color="tab:purple", alpha=0.7, label=f"{key[5:]} (curve)")
            values += [v for _, v in points]
    steps = [int(e["step"]) for e in evals] + [h.step for h in headline]
    nudge = 0.02 * max(max(steps) - min(steps), 1)  # headline markers beside, not on, the curve's points
    for i, h in enumerate(headline):
        color = ("tab:blue", "tab:green", "tab:orange")[i % 3]
        low, high = h.ci95
        x = h.step + (-nudge if h.step == min(steps) else nudge if h.step == max(steps) else 0.0)
        label = f"{h.label}: pass@1 (diamond)" + (f", pass@{h.passk[0]} (star)" if h.passk else "")
        ax.errorbar([x], [h.pass1], yerr=[[h.pass1 - low], [high - h.pass1]], fmt="D", markersize=9,
                    color=color, capsize=4, label=label)  # fmt: skip
        values += [low, high, h.pass1]
        if h.passk is not None:
            ax.plot([x], [h.passk[1]], "*", markersize=13, color=color)
            values.append(h.passk[1])
    return values
