"""A warm start's report (``eval_report.json``): the four figures that say whether RL can start from a checkpoint,
and the shape of its completions. RL needs a policy that is right often enough to get reward and uncertain enough
that groups of samples disagree: with binary rewards a group whose G samples are all right or all wrong has zero
GRPO advantage. All on a committed eval set (``tiny_n3`` by default: 512 puzzles, 3 numbers on 1..20, targets
10..200) or its training distribution:

* pass@1 at T = 0.8 (4 samples per puzzle; unbiased estimator, 95 % bootstrap CI over puzzles);
* greedy accuracy (T = 0, one sample);
* the policy entropy at T = 0.8, nats per generated token (teacher-forced over T = 0.8 samples);
* the all-equal share: of 8-sample groups at T = 0.8 on puzzles of the training distribution (the train split of
  the eval set's own spec, disjoint from it), the fraction whose 8 rewards agree;

and paragraphs per completion with the mean completion length (the multi-step warm start's shape).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..evaluation.protocol import EVAL_TEMPERATURE

EVAL_SET = "tiny_n3"


def paragraph_count(text: str) -> int:
    """Paragraphs of a completion: its non-blank ``\\n\\n``-separated pieces (a ``direct`` trace has 2)."""
    return sum(1 for piece in text.split("\n\n") if piece.strip())


def group_puzzles(task, count: int, eval_set: str = EVAL_SET):
    """``count`` puzzles of the training distribution: the train split of ``eval_set``'s spec (disjoint from it)."""
    from countdown_env import Puzzle
    from countdown_env.splits import SplitSpec, build_split_records
    from countdown_env.splits.eval_sets import EVAL_SETS

    spec = EVAL_SETS[eval_set]
    rows = build_split_records(SplitSpec(task=spec.task, train_size=count, eval_size=spec.eval_size), progress=False)
    return [Puzzle.from_dict(r) for r in rows["train"]]


def policy_entropy(
    model, tokenizer, task, puzzles, *, temperature: float, max_new_tokens: int, seed: int = 0, completions=None
) -> float:
    """Mean entropy (nats per generated token) of softmax(logits / T) along T-sampled completions, teacher-forced.
    ``completions``: a list that receives the sampled completions' token ids."""
    import torch

    from ...sampling import HFSampler, Sampling
    from ..evaluation.evaluate import prompt_token_ids

    prompts = prompt_token_ids(tokenizer, task, puzzles)
    samples = HFSampler(model, tokenizer, device="cpu").sample(
        prompts, Sampling(temperature=temperature, seed=seed), max_new_tokens=max_new_tokens
    )
    total, count = 0.0, 0
    for prompt, (sample,) in zip(prompts, samples, strict=True):
        completion = sample.ids
        if completions is not None:
            completions.append(list(completion))
        if not completion:
            continue
        ids = torch.tensor([prompt + completion])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float() / temperature
        logp = torch.log_softmax(logits, dim=-1)
        total += float(-(logp.exp() * logp).sum())
        count += len(completion)
    return total / max(count, 1)


def _sampled_figures(sampler, tokenizer, task, rows, *, groups: int, eval_set: str, max_new_tokens: int,
                     keep_completions: int, log) -> dict[str, Any]:  # fmt: skip
    """pass@1/pass@4 at T = 0.8, greedy accuracy, and the 8-sample groups on the training distribution."""
    from ..evaluation.evaluate import evaluate

    common = dict(task=task, max_new_tokens=max_new_tokens, seed=0)
    sampled = evaluate(sampler, tokenizer, rows, samples=4, temperature=EVAL_TEMPERATURE, per_puzzle=True,
                       keep_completions=keep_completions, **common)  # fmt: skip
    greedy = evaluate(sampler, tokenizer, rows, samples=1, temperature=0.0, **common)["overall"]
    overall = sampled["overall"]
    log(f"pass@1 (T=0.8) {overall['pass@1']:.3f} {overall['pass@1_ci95']}, greedy {greedy['pass@1']:.3f}")
    group_rows = [{"numbers": list(p.numbers), "target": p.target} for p in group_puzzles(task, groups, eval_set)]
    grouped = evaluate(sampler, tokenizer, group_rows, samples=8, temperature=EVAL_TEMPERATURE, per_puzzle=True,
                       **common)  # fmt: skip
    return {"sampled": sampled, "greedy": greedy, "grouped": grouped}


def _entropy_and_texts(model_dir, tokenizer, task, rows, *, entropy_puzzles: int, max_new_tokens: int, sampled):
    """The policy entropy over ``entropy_puzzles`` puzzles (``None`` when 0) and the completion texts whose
    paragraphs are counted: the entropy's samples, else the T = 0.8 eval's kept completions."""
    if not entropy_puzzles:
        return None, [text for p in sampled["puzzles"] for text in p["completions"]]
    import torch
    from transformers import AutoModelForCausalLM

    from countdown_env import Puzzle

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    puzzles = [Puzzle.from_dict(r) for r in rows[:entropy_puzzles]]
    completions: list[list[int]] = []
    entropy = policy_entropy(
        model, tokenizer, task, puzzles, temperature=EVAL_TEMPERATURE, max_new_tokens=max_new_tokens,
        completions=completions,
    )
    return entropy, [tokenizer.decode(ids, skip_special_tokens=True) for ids in completions]


def measure_warm_start(
    model_dir: str | Path,
    *,
    eval_limit: int | None = None,
    groups: int = 64,
    max_new_tokens: int = 256,
    backend: str = "auto",
    eval_set: str = EVAL_SET,
    entropy_puzzles: int = 128,
    log=print,
) -> dict[str, Any]:
    """The four figures of the module docstring for the checkpoint in ``model_dir`` (JSON-ready), and the shape of
    its completions: paragraphs per completion (of the entropy samples, else of the T = 0.8 samples) and the mean
    completion length in tokens (of the T = 0.8 samples).

    ``backend``: the sampler of every figure but the entropy (``"hf"``, ``"vllm"``, one engine for all of them, or
    ``"auto"``: :func:`learners.pipeline.evaluation.eval_models.resolve_backend`); ``eval_set``: a committed eval set
    (its train split gives the group puzzles); ``entropy_puzzles``: puzzles of the entropy measurement
    (``transformers``, teacher-forced; 0 skips it)."""
    import numpy as np

    from countdown_env.splits.eval_sets import load_eval_set

    from ..data import model_task, tiny_task
    from ..evaluation.eval_models import model_sampler, resolve_backend
    from ..models.tokenizer_io import load_tokenizer

    start = time.perf_counter()
    backend = resolve_backend(backend, model_dir)
    tokenizer = load_tokenizer(model_dir)
    task = model_task(model_dir) or tiny_task()
    rows = load_eval_set(eval_set, as_dataset=False)
    rows = rows[:eval_limit] if eval_limit else rows
    # float32, as every recorded calibration row was measured (precision: auto would be bf16 for SmolLM2 on AMX)
    sampler = model_sampler(model_dir, tokenizer, backend, batch_size=64, precision="fp32")
    try:
        figures = _sampled_figures(sampler, tokenizer, task, rows, groups=groups, eval_set=eval_set,
                                   max_new_tokens=max_new_tokens, keep_completions=0 if entropy_puzzles else 4,
                                   log=log)  # fmt: skip
    finally:
        getattr(sampler, "close", lambda: None)()
    sampled, greedy, grouped = figures["sampled"]["overall"], figures["greedy"], figures["grouped"]
    mean_length = float(np.mean([n for p in figures["sampled"]["puzzles"] for n in p["lengths"]]))
    entropy, texts = _entropy_and_texts(model_dir, tokenizer, task, rows, entropy_puzzles=entropy_puzzles,
                                        max_new_tokens=max_new_tokens, sampled=figures["sampled"])  # fmt: skip
    paragraphs = float(np.mean([paragraph_count(text) for text in texts]))
    log(f"{paragraphs:.2f} paragraphs per completion, mean length {mean_length:.1f} tokens")
    correct = np.array([sum(p["correct"]) for p in grouped["puzzles"]])
    all_equal = float(np.mean((correct == 0) | (correct == 8)))
    log(f"entropy {entropy} nats/token, all-equal share of 8-sample groups {all_equal:.3f}")
    return {
        "eval_set": eval_set,
        "backend": backend,
        "eval_puzzles": len(rows),
        "pass@1": sampled["pass@1"],
        "pass@1_ci95": sampled["pass@1_ci95"],
        "pass@4": sampled.get("pass@4"),
        "pass@4_ci95": sampled.get("pass@4_ci95"),
        "format_rate": sampled["format_rate"],
        "truncation_rate": sampled["truncation_rate"],
        "greedy": greedy["pass@1"],
        "greedy_ci95": greedy["pass@1_ci95"],
        "entropy_nats_per_token": None if entropy is None else round(entropy, 4),
        "group_puzzles": len(grouped["puzzles"]),
        "all_equal_share": all_equal,
        "train_distribution_pass@1": float(correct.mean() / 8),
        "paragraphs_per_completion": round(paragraphs, 3),
        "mean_completion_tokens": round(mean_length, 1),
        "max_new_tokens": max_new_tokens,
        "eval_minutes": round((time.perf_counter() - start) / 60, 2),
        "task": task.to_dict(),
    }
