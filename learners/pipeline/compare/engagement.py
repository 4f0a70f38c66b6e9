"""Did each learner's mechanism act? The share of loss tokens (or rows, or groups) it changed, and the size of its
extra term, read from each run's ``log_history.json`` (the learners log them every step; nothing is recomputed).

A learner whose mechanism never acts in a setting is, in that setting, its base loss: a comparison of such a run
says nothing about the mechanism. :func:`engagement_rows` gives one row per (run, mechanism); the summary reports
the mean over seeds and says in words when a mechanism's changed share is 0 in every logged step of every seed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ...core.registry import LEARNERS
from ...core.spec import Mechanism

MECHANISMS: dict[str, tuple[Mechanism, ...]] = {
    name: spec.mechanisms for name, spec in LEARNERS.items() if spec.mechanisms
}
"""The mechanism quantities of each registered learner that logs any, from its algorithm's spec
(``learners/<algorithm>/spec.py``)."""


def run_means(log_history: list[dict[str, Any]], mechanisms: tuple[Mechanism, ...]) -> dict[str, tuple[float, int]]:
    """``{metric: (mean over the logged train steps, how many)}`` (NaN, 0 when never logged); complements applied."""
    out = {}
    for m in mechanisms:
        values = [float(e[m.metric]) for e in log_history if m.metric in e and "eval_pass@1" not in e]
        values = [v for v in values if not math.isnan(v)]
        mean = sum(values) / len(values) if values else math.nan
        out[m.metric] = ((1.0 - mean) if m.complement and values else mean, len(values))
    return out


def engagement_rows(run_dirs: dict[tuple[str, int], Path]) -> list[dict[str, Any]]:
    """One row per (learner, seed, mechanism) of the runs whose ``log_history.json`` exists."""
    rows = []
    for (learner, seed), run_dir in run_dirs.items():
        path = run_dir / "log_history.json"
        mechanisms = MECHANISMS.get(learner, ())
        if not mechanisms or not path.is_file():
            continue
        history = json.loads(path.read_text(encoding="utf-8"))
        for m in mechanisms:
            mean, steps = run_means(history, (m,))[m.metric]
            rows.append({"learner": learner, "seed": seed, "mechanism": m.label, "metric": m.metric,
                         "changes": m.changes, "value": mean, "logged_steps": steps})  # fmt: skip
    return rows


def engagement_csv(rows: list[dict[str, Any]]) -> str:
    head = "learner,seed,mechanism,metric,value,logged_steps"
    lines = [f'{r["learner"]},{r["seed"]},"{r["mechanism"]}",{r["metric"]},{r["value"]:.6g},{r["logged_steps"]}'
             for r in rows]  # fmt: skip
    return "\n".join([head, *lines]) + "\n"


def engagement_markdown(rows: list[dict[str, Any]], learners: list[str]) -> list[str]:
    """The summary's section: per learner and mechanism, the mean over seeds [min, max], and "never acted" in words
    when a changed share is 0 in every seed."""
    lines = [
        "## Mechanism engagement",
        "",
        "Each learner's own mechanism, averaged over the logged training steps of each run, then over seeds "
        "(min-max over seeds). A mechanism whose changed share is 0 never acted: that learner ran as its base loss.",
        "",
        "| learner | mechanism | mean over seeds | min-max | verdict |",
        "| --- | --- | ---: | --- | --- |",
    ]
    for learner in learners:
        for m in MECHANISMS.get(learner, ()):
            values = [r["value"] for r in rows if r["learner"] == learner and r["metric"] == m.metric]
            finite = [v for v in values if not math.isnan(v)]
            if not finite:
                lines.append(f"| {learner} | {m.label} | - | - | not logged |")
                continue
            mean = sum(finite) / len(finite)
            if m.changes:
                verdict = "**never acted (0 in every step of every seed)**" if max(finite) == 0 else "acted"
            else:
                verdict = ""
            lines.append(f"| {learner} | {m.label} | {mean:.4g} | {min(finite):.4g}-{max(finite):.4g} | {verdict} |")
    return [*lines, ""]
