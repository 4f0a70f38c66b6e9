"""Did each learner's mechanism act? The share of loss tokens (or rows, or groups) it changed, and the size of its
extra term, read from each run's ``log_history.json`` (the learners log them every step; nothing is recomputed).

A learner whose mechanism never acts in a setting is, in that setting, its base loss: a comparison of such a run
says nothing about the mechanism. :func:`engagement_rows` gives one row per (run, mechanism); the summary reports
the mean over seeds and says in words when a mechanism's changed share is 0 in every logged step of every seed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Mechanism:
    """One logged quantity: ``metric`` (a train-mode log key), what it says (``label``), whether it is a share of
    tokens/rows the mechanism changed (``changes``: 0 means it never acted) and whether to report ``1 - value``
    (``complement``: a kept share read as the changed share)."""

    metric: str
    label: str
    changes: bool = True
    complement: bool = False


CLIP = Mechanism("clip_ratio/region_mean", "PPO clip: share of loss tokens clipped")
DPPO = (
    Mechanism("prime_rl/is_masked", "DPPO mask: share of loss tokens masked"),
    Mechanism("prime_rl/mismatch_kl", "KL term: mean rho - log rho - 1 per loss token", changes=False),
)
SHAPING = (
    Mechanism("contrastive/shaped_row_frac", "shaping: share of rows shaped"),
    Mechanism("contrastive/paragraphs_per_shaped_row", "paragraphs per shaped row", changes=False),
    Mechanism("contrastive/mean_abs_shaping", "mean |A_shape| per completion token", changes=False),
)
MECHANISMS: dict[str, tuple[Mechanism, ...]] = {
    "grpo": (CLIP,),
    "dr_grpo": (CLIP,),
    "dapo": (
        CLIP,
        Mechanism("countdown/dynamic_sampling_kept_frac", "dynamic sampling: share of groups dropped", complement=True),
    ),
    "prime_rl": DPPO,
    "contrastive": (*DPPO, *SHAPING),
    "contrastive_grpo": (CLIP, *SHAPING),
    "ps_ppo": (
        Mechanism("ps_ppo/cutoff_kept_frac", "survival design: share of loss tokens truncated", complement=True),
        Mechanism("ps_ppo/mean_cutoff_tokens", "mean cutoff (tokens kept per row)", changes=False),
        Mechanism("ps_ppo/kept_token_frac", "all skipping: share of loss tokens dropped", complement=True),
        Mechanism("ps_ppo/floor_token_frac", "survival at the floor: share of gradient tokens", changes=False),
    ),
    "s_grpo": (Mechanism("s_grpo/loss_token_frac", "token selection: share of loss tokens dropped", complement=True),),
    "t_spmo": (
        Mechanism("tspmo/loss_token_share", "trie: share of tokens merged into shared transitions", complement=True),
        Mechanism("tspmo/singleton_share", "trie: share of transitions resting on one completion", changes=False),
    ),
    # the TRL-loss presets (learners/core/presets.py): TRL's own metrics where it logs one
    **{name: (CLIP,) for name in ("gspo", "luspo", "rloo", "reinforce_pp")},
    "cispo": (Mechanism("cispo_clip_ratio", "CISPO: share of loss tokens whose IS weight is clipped"),),
    "vespo": (Mechanism("vespo/phi_seq_mean", "VESPO: mean Gamma weight phi(w)", changes=False),),
    "grpo_tis": (CLIP, Mechanism("sampling/importance_sampling_ratio/max", "vLLM IS weight (max)", changes=False)),
    "grpo_mis": (
        CLIP,
        Mechanism("sampling/importance_sampling_ratio/min", "vLLM IS weight (min; 0 = masked)", changes=False),
    ),
}
"""The mechanism quantities of each registered learner (the GRPO family's PPO clip is TRL's own metric). SAPO's gate,
δ-clipping (``grpo_delta``), the entropy mask (``grpo_top_entropy``) and off-policy masking (``grpo_opsm``) log nothing
of their own in TRL 1.16, so they have no row; the vLLM IS weights are logged only when vLLM generates."""


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
