"""``summary.md``: the command, the machine, and per learner the final accuracy with its CIs, the paired difference
to the baseline, speed and tokens per step; failed runs; whether the learners of a seed saw the same prompts."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from countdown_env.helpers.jsonl import records_path

from ..evaluation.protocol import EVAL_TEMPERATURE
from ..evaluation.statistics import bootstrap_ci, mean_ci, paired_bootstrap_diff, paired_seed_diff, puzzle_scores
from ..machine import machine_lines
from .engagement import engagement_markdown
from .results import CUMULATIVE_COLUMNS
from .runs import run_name
from .settings import BASELINE, EVAL_SET, CompareSettings, trainer_values


def _cell(mean: float, low: float, high: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(low):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def _signed(mean: float, low: float, high: float) -> str:
    if math.isnan(mean):
        return "-"
    if math.isnan(low):
        return f"{mean:+.3f}"
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def learner_table(out: Path, settings: CompareSettings, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per learner: final pass@1/pass@N (N eval samples) with CIs, paired differences to grpo, speed and tokens
    (finished runs)."""
    finished: dict[str, dict[int, Path]] = {}
    for learner in settings.learners:
        for seed in settings.seeds:
            run_dir = out / "runs" / run_name(learner, seed)
            if (run_dir / "DONE").is_file() and records_path(run_dir / "final_eval.jsonl").is_file():
                finished.setdefault(learner, {})[seed] = run_dir
    final_rows = {}
    for row in rows:
        key = (row["learner"], row["seed"])
        if row["step"] == settings.max_steps:
            final_rows[key] = row

    scores: dict[str, dict[int, dict[int, np.ndarray]]] = {}
    puzzles_of: dict[tuple[str, int], list] = {}
    for learner, runs in finished.items():
        for seed, run_dir in runs.items():
            for k in (1, settings.eval_samples):
                keys, values = puzzle_scores(run_dir / "final_eval.jsonl", k)
                scores.setdefault(learner, {}).setdefault(k, {})[seed] = values
                puzzles_of[(learner, seed)] = keys

    def speed(learner: str) -> dict[str, float]:
        figures: dict[str, list[float]] = {c: [] for c in CUMULATIVE_COLUMNS}
        for seed in finished.get(learner, {}):
            row = final_rows.get((learner, seed))
            if row is None:
                continue
            for column in CUMULATIVE_COLUMNS:
                figures[column].append(row[column] / max(row["step"], 1))
        return {c: float(np.mean(v)) if v else math.nan for c, v in figures.items()}

    base_speed = speed(BASELINE) if BASELINE in finished else None
    table = []
    for learner in settings.learners:
        runs = finished.get(learner, {})
        entry: dict[str, Any] = {"learner": learner, "finished": len(runs), "runs": len(settings.seeds)}
        for k in (1, settings.eval_samples):
            per_seed = scores.get(learner, {}).get(k, {})
            means = [float(v.mean()) for v in per_seed.values()]
            if len(means) == 1:
                only = next(iter(per_seed.values()))
                entry[f"pass@{k}"] = (means[0], *bootstrap_ci(only.tolist()))
            else:
                entry[f"pass@{k}"] = mean_ci(means)
            base = scores.get(BASELINE, {}).get(k, {})
            if learner != BASELINE and per_seed and base:
                for s in set(per_seed) & set(base):
                    if puzzles_of[(learner, s)] != puzzles_of[(BASELINE, s)]:
                        raise ValueError(f"seed {s}: {learner} and {BASELINE} were evaluated on different puzzles")
                entry[f"diff@{k}"] = paired_bootstrap_diff(per_seed, base)[:3]
                entry[f"seed_diff@{k}"] = paired_seed_diff(per_seed, base)[:3]
            else:
                entry[f"diff@{k}"] = entry[f"seed_diff@{k}"] = (math.nan, math.nan, math.nan)
        entry["speed"] = speed(learner)
        entry["base_speed"] = base_speed
        table.append(entry)
    table.sort(key=lambda e: (-(e["pass@1"][0] if not math.isnan(e["pass@1"][0]) else -1.0), e["learner"]))
    return table


def prompt_digest_mismatches(out: Path, settings: CompareSettings) -> list[int]:
    """The seeds whose finished runs (``DONE``) trained on different prompts or orders (their ``prompt_digest``
    differ): the comparison is then not paired, an error (``countdown compare`` exits 1)."""
    digests: dict[int, set[str]] = {}
    for learner in settings.learners:
        for seed in settings.seeds:
            done = out / "runs" / run_name(learner, seed) / "DONE"
            if done.is_file():
                digests.setdefault(seed, set()).add(json.loads(done.read_text()).get("prompt_digest", ""))
    return sorted(seed for seed, found in digests.items() if len(found) > 1)


def summary_markdown(
    out: Path, settings: CompareSettings, rows, failures: Mapping[tuple[str, int], str], info, engagement
) -> str:
    """``summary.md`` (see the module docstring); ``engagement``: the rows of
    :func:`~learners.pipeline.compare.engagement.engagement_rows` for these runs."""
    table = learner_table(out, settings, rows)
    k = settings.eval_samples
    shown = ("learning_rate", "lr_scheduler_type", "temperature", "top_k", "max_grad_norm", "beta")
    given = {learner: json.dumps(trainer_values(settings, learner, shown)) for learner in settings.learners}
    trainer_text = (  # as the runs were given them (registry defaults and --set applied), per learner where they differ
        next(iter(given.values()))
        if len(set(given.values())) == 1
        else "; ".join(f"{learner} {values}" for learner, values in given.items())
    )
    lines = [
        "# Learner comparison on Countdown",
        "",
        f"Command: `{settings.command()}`",
        "",
        "Machine: " + ", ".join(machine_lines()),
        "",
        f"Model: `{info['model']}`{' (RANDOMLY INITIALISED — no warm start)' if info.get('random_model') else ''}; "
        f"task: {json.dumps(info['task'])}.",
        "",
        f"Training: {settings.max_steps} steps x {settings.prompts_per_step} prompts x {settings.num_generations} "
        f"completions, up to {settings.max_new_tokens} new tokens, {settings.train_size} training puzzles per "
        f"seed; trainer settings {trainer_text}"
        + (f"; overrides {settings.overrides}" if settings.overrides else "")
        + (
            f"; a LoRA adapter of rank {settings.lora_rank} ({settings.lora_targets}) trained, not every weight"
            if settings.lora_rank
            else ""
        )
        + ".",
        "",
        f"Eval: `{EVAL_SET}` ({info['eval_puzzles']} puzzles), {k} samples each at T={EVAL_TEMPERATURE}, at step 0 "
        f"and every {settings.eval_every} steps (generated by the runs' colocated vLLM engine when they train with "
        f"one, else by transformers). Final figures at step {settings.max_steps}: mean over seeds with a 95 % "
        "CI (Student t over seeds; puzzle bootstrap when one seed). Δ vs grpo, two ways: *t over seeds* is the mean "
        "of the per-seed paired differences with a Student t interval over seeds (training variance included: the "
        "headline); *puzzle bootstrap* resamples puzzles within each seed with the seeds held fixed (2000 resamples; "
        "eval noise only). s/step: training wall time per step (eval excluded); tokens per step (generated / in the "
        "loss / completion columns forwarded by the loss).",
        "",
        f"| rank | learner | seeds | pass@1 | Δ pass@1 vs grpo (t over seeds) | Δ pass@1 (puzzle bootstrap) "
        f"| pass@{k} | Δ pass@{k} (t over seeds) | s/step | × grpo "
        "| gen tok/step | loss tok/step | fwd tok/step | fwd × grpo |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rank = 0
    for entry in table:
        speed, base = entry["speed"], entry["base_speed"]
        if entry["finished"]:
            rank += 1

        def ratio(column: str, speed=speed, base=base) -> str:
            if base is None or math.isnan(speed[column]) or not base[column]:
                return "-"
            return f"{speed[column] / base[column]:.2f}"

        def num(value: float, digits: int = 0) -> str:
            return "-" if math.isnan(value) else f"{value:.{digits}f}"

        lines.append(
            f"| {rank if entry['finished'] else '-'} | {entry['learner']} | {entry['finished']}/{entry['runs']} "
            f"| {_cell(*entry['pass@1'])} | {_signed(*entry['seed_diff@1'])} | {_signed(*entry['diff@1'])} "
            f"| {_cell(*entry[f'pass@{k}'])} | {_signed(*entry[f'seed_diff@{k}'])} "
            f"| {num(speed['wall_seconds'], 3)} | {ratio('wall_seconds')} "
            f"| {num(speed['generated_tokens'])} | {num(speed['loss_tokens'])} | {num(speed['forward_tokens'])} "
            f"| {ratio('forward_tokens')} |"
        )
    lines += ["", *engagement_markdown(engagement, list(settings.learners))]
    if failures:
        lines += ["", "## Failed runs", "", "| learner | seed | error |", "| --- | --- | --- |"]
        for (learner, seed), error in sorted(failures.items()):
            text = error.strip().splitlines()[-1] if error.strip() else "unknown error"
            lines.append(f"| {learner} | {seed} | {text.replace('|', '/')} |")
    same = not prompt_digest_mismatches(out, settings)
    lines += [
        "",
        "Same training prompts in the same order for every learner of a seed: "
        + ("yes (prompt digests agree)." if same else "NO — prompt digests differ between learners of a seed."),
        "",
        "![pass@1 and completion length against steps and wall-clock seconds](curves.png)",
        "",
    ]
    return "\n".join(lines)
