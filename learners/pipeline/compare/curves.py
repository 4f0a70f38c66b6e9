"""``curves.png``: pass@1 against step and against training seconds, mean completion length and cumulative
forward/loss tokens against step; one line per learner (mean over seeds), band min-max over seeds."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from countdown_env.helpers.atomic import write_bytes

from ..evaluation.protocol import EVAL_TEMPERATURE
from .settings import EVAL_SET, default_learners


def plot_curves(rows: Sequence[Mapping[str, Any]], path: str | Path, learners: Sequence[str], title: str = "") -> Path:
    """``curves.png``: 2 x 2 panels (see the module docstring); mean over seeds with a min-max band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 8), dpi=110)
    colours = plt.get_cmap("tab10")
    order = list(dict.fromkeys([*default_learners(), *learners]))
    for learner in learners:
        mine = [r for r in rows if r["learner"] == learner]
        if not mine:
            continue
        colour = colours(order.index(learner) % 10)
        steps = sorted({r["step"] for r in mine})

        def stats(column: str, mine=mine, steps=steps):
            values = [[r[column] for r in mine if r["step"] == s] for s in steps]
            arr = [np.asarray(v, dtype=np.float64) for v in values]
            return (
                np.array([np.nanmean(a) for a in arr]),
                np.array([np.nanmin(a) for a in arr]),
                np.array([np.nanmax(a) for a in arr]),
            )

        wall = stats("wall_seconds")[0]
        for ax, x, column in (
            (axes[0, 0], np.asarray(steps), "pass@1"),
            (axes[0, 1], wall, "pass@1"),
            (axes[1, 0], np.asarray(steps), "mean_completion_tokens"),
        ):
            mean, low, high = stats(column)
            ax.plot(x, mean, "o-", color=colour, label=learner, markersize=3)
            ax.fill_between(x, low, high, color=colour, alpha=0.15, linewidth=0)
        for column, style in (("forward_tokens", "-"), ("loss_tokens", ":")):
            mean, low, high = stats(column)
            axes[1, 1].plot(steps, mean, style, color=colour, label=learner if style == "-" else None)
            axes[1, 1].fill_between(steps, low, high, color=colour, alpha=0.1, linewidth=0)
    labels = (
        ("step", f"pass@1 ({EVAL_SET}, T={EVAL_TEMPERATURE})"),
        ("training wall-clock seconds (eval excluded)", "pass@1"),
        ("step", "mean completion tokens (eval)"),
        ("step", "cumulative tokens: forward (solid), loss (dotted)"),
    )
    for ax, (xlabel, ylabel) in zip(axes.flat, labels, strict=True):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    for ax in (axes[0, 0], axes[0, 1]):
        low, high = ax.get_ylim()
        ax.set_ylim(0.0, max(high, 0.05))
    axes[1, 1].set_ylim(bottom=0.0)
    axes[0, 0].legend(loc="best", fontsize=8)
    fig.suptitle(title or "Learner comparison (mean over seeds; band: min-max over seeds)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return write_bytes(path, buffer.getvalue())
