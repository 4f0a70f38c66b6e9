"""PNG of training reward and eval pass@1 against steps, from a trainer's ``log_history``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def curves(log_history: Sequence[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """``{"reward": [(step, value)], "accuracy": [...], "eval_pass@1": [...]}`` from a ``log_history``."""
    out: dict[str, list[tuple[int, float]]] = {"reward": [], "accuracy": [], "eval_pass@1": []}
    for entry in log_history:
        step = entry.get("step")
        if step is None:
            continue
        if "reward" in entry:
            out["reward"].append((step, float(entry["reward"])))
        if "countdown/accuracy" in entry:
            out["accuracy"].append((step, float(entry["countdown/accuracy"])))
        if "eval/pass@1" in entry:
            out["eval_pass@1"].append((step, float(entry["eval/pass@1"])))
    return out


def plot_training(log_history: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Write the PNG (train reward and accuracy per logging step; eval pass@1 with its CI band)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = curves(log_history)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for key, label, style in (("reward", "train reward", "-"), ("accuracy", "train accuracy", ":")):
        if data[key]:
            xs, ys = zip(*data[key], strict=True)
            ax.plot(xs, ys, style, label=label, alpha=0.8)
    evals = [e for e in log_history if "eval/pass@1" in e and "step" in e]
    if evals:
        xs = [e["step"] for e in evals]
        ax.plot(xs, [e["eval/pass@1"] for e in evals], "o-", label="eval pass@1", color="black")
        if all("eval/pass@1_low" in e for e in evals):
            ax.fill_between(
                xs,
                [e["eval/pass@1_low"] for e in evals],
                [e["eval/pass@1_high"] for e in evals],
                color="black",
                alpha=0.12,
                label="95% CI",
            )
    ax.set_xlabel("step")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
