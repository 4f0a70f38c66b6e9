"""Multi-turn evaluation (``countdown eval --max-turns N``): pass@1 within 1, 2, ..., N turns.

Each sample is one ``CountdownTokens-v0`` episode of the model's task with ``max_turns = N`` (no discount): the
model answers, a wrong or malformed answer is answered with the verifier's feedback (the task's ``feedback``
template, or ``--feedback``), the model answers again, until it is right or N answers were given. The prompt is
the single-turn eval's (the task's chat messages, chat template, generation prompt), so "within 1 turn" is the
single-turn pass@1 of the same samples. A sample counts as solved within ``t`` turns when its episode ended with
a correct, untruncated answer at a turn ``<= t``. Per puzzle the solved share of its samples is averaged; the
95 % CI is the same percentile bootstrap over puzzles as the single-turn report.

Generation goes through a :class:`learners.sampling.Sampler` (``--backend hf`` or ``vllm``; one batched call per
turn over the episodes still running) and :meth:`learners.pipeline.rollouts.EnvRollouts.play`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .protocol import EVAL_SAMPLES, EVAL_TEMPERATURE


def evaluate_turns(
    sampler,
    tokenizer,
    rows: Sequence[dict[str, Any]],
    *,
    task,
    max_turns: int,
    samples: int = EVAL_SAMPLES,
    temperature: float = EVAL_TEMPERATURE,
    max_new_tokens: int = 768,
    seed: int = 0,
    feedback: str | None = None,
) -> dict[str, Any]:
    """Play ``samples`` episodes of up to ``max_turns`` turns per puzzle; the report's ``turns`` maps ``t`` to
    ``{"pass@1", "pass@1_ci95"}`` (solved within ``t`` turns)."""
    from countdown_env import Puzzle

    from ...sampling import Sampling
    from ..rollouts import EnvRollouts
    from .statistics import bootstrap_ci

    if samples < 1 or max_turns < 1:
        raise ValueError("samples and max_turns must be >= 1")
    if temperature <= 0 and samples > 1:
        raise ValueError("greedy decoding (temperature 0) gives identical samples: use --samples 1")
    changes: dict[str, Any] = {"max_turns": max_turns, "turn_discount": 1.0}
    if feedback is not None:
        changes["feedback"] = feedback
    task = dataclasses.replace(task, **changes)
    puzzles = [Puzzle.from_dict(r) for r in rows]
    flat = [p for p in puzzles for _ in range(samples)]
    start = time.perf_counter()
    episodes = EnvRollouts(task, tokenizer).play(
        flat, sampler, Sampling(temperature=temperature, seed=seed), max_new_tokens
    )
    seconds = time.perf_counter() - start
    solved_at = np.array(
        [
            e["trajectory"].turns if e["trajectory"].verification.correct and not e["trajectory"].truncated else 0
            for e in episodes
        ]
    ).reshape(len(puzzles), samples)
    turns = {}
    for t in range(1, max_turns + 1):
        per_puzzle = ((solved_at > 0) & (solved_at <= t)).mean(axis=1)
        turns[str(t)] = {"pass@1": float(per_puzzle.mean()), "pass@1_ci95": list(bootstrap_ci(per_puzzle, seed=seed))}
    return {
        "max_turns": max_turns,
        "samples": samples,
        "temperature": temperature,
        "max_new_tokens": max_new_tokens,
        "seed": seed,
        "task": task.to_dict(),
        "n_puzzles": len(puzzles),
        "turns": turns,
        "mean_turns": float(np.mean([e["trajectory"].turns for e in episodes])),
        "failed_episodes": sum(e["error"] is not None for e in episodes),  # the env failed: scored 0, not fatal
        "seconds": seconds,
    }


def evaluate_turns_model_dir(
    model_dir,
    split,
    *,
    max_turns: int,
    backend: str = "hf",
    limit: int | None = None,
    batch_size: int = 64,
    template: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Load a checkpoint folder and :func:`evaluate_turns` it on ``split`` under the single-turn eval's task."""
    from ..models import check_model, resolve_model
    from ..models.tokenizer_io import load_tokenizer
    from .eval_models import eval_task, model_sampler
    from .evaluate import load_rows

    name, model_dir = str(model_dir), resolve_model(model_dir)  # "warm-start": the shipped folder
    check_model(model_dir)
    rows = load_rows(split, limit)
    tokenizer = load_tokenizer(model_dir)
    task = eval_task(model_dir, split, template)
    sampler = model_sampler(model_dir, tokenizer, backend, batch_size=batch_size, seed=kwargs.get("seed", 0))
    try:
        report = evaluate_turns(sampler, tokenizer, rows, task=task, max_turns=max_turns, **kwargs)
    finally:
        getattr(sampler, "close", lambda: None)()
    report.update(model=name, split=str(split))
    return report


def format_turns(report: dict[str, Any]) -> str:
    """One line per turn count: ``pass@1 within t turns = x [low, high]``."""
    lines = [
        f"{report['n_puzzles']} puzzles x {report['samples']} samples at T={report['temperature']}, "
        f"feedback template {report['task']['feedback']!r}, mean turns {report['mean_turns']:.2f}"
    ]
    for t, stats in report["turns"].items():
        low, high = stats["pass@1_ci95"]
        unit = "turn" if t == "1" else "turns"
        lines.append(f"pass@1 within {t} {unit}: {stats['pass@1']:.3f} [{low:.3f}, {high:.3f}]")
    if report.get("failed_episodes"):
        lines.append(f"{report['failed_episodes']} episodes failed in the environment (scored 0)")
    return "\n".join(lines)
