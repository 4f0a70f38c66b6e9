r"""E8 (docs/experiments.md): Monte-Carlo values of states against their exact values (no training).

Exactly as the pre-registered protocol E8 says:

1. tiny multi-step: every row of E7b's batch (``batch.jsonl.gz``) of its first ``--tiny-puzzles`` puzzles; a state is
   the completion up to the token where a step's segment ends, its exact value the step oracle's ``solvable_after``;
2. SmolLM2: ``smollm2-135m-warm-start``, the first ``--smollm-puzzles`` puzzles of R2's band, 4 completions each at
   T = 0.8 (vLLM, seed 0), a state per answer token, its exact value ``prefix_solvable``;
3. from every state 64 continuations at T = 0.8 (``_sampled_groups.prefix_values`` on a vLLM engine), success = the
   verifier's verdict (reward >= 1); the K-rollout estimate is the mean of the first K;
4. figures per model: sibling ranking by K with intervals over puzzles, the smallest K reaching 0.9, and the
   disagreements by construction.

    python experiments/monte_carlo_vs_exact_values.py --out experiments/results/monte_carlo_vs_exact_values
    python experiments/monte_carlo_vs_exact_values.py --out /tmp/e8-quick --quick   # 1 puzzle each, 8 rollouts
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from countdown_env.helpers.jsonl import read_jsonl, write_jsonl  # noqa: E402
from experiments._sampled_groups import (  # noqa: E402
    TEMPERATURE,
    Measurement,
    cluster_bootstrap,
    prefix_values,
    provenance_lines,
)
from experiments.credit_assignment_v2 import token_of  # noqa: E402

KS = (1, 2, 4, 8, 16, 32, 64)
TARGET_RANKING = 0.9
TINY, SMOLLM = "warm-start-multistep", "smollm2-135m-warm-start"
PROTOCOL = "docs/experiments.md#e8-monte-carlo-values-against-the-exact-ones-no-training"
BAND = ROOT / "experiments" / "r2_smollm2" / "band" / "band.jsonl"


def offsets_of(tokenizer, ids: list[int]) -> tuple[str, list[int]]:
    """The completion's text and each token's start offset, then its end."""
    from learners.contrastive.paragraphs import token_texts

    pieces = token_texts(tokenizer, ids)
    return "".join(pieces), [0, *np.cumsum([len(p) for p in pieces]).tolist()]


def tiny_states(batch_rows: list[dict], tokenizer, task) -> list[dict]:
    """One state per labelled step of every row: the prefix up to the token ending the step's segment."""
    from countdown_env import Puzzle
    from countdown_env.solving.oracle import StepOracle
    from countdown_env.steps.labels import label_completion

    rules = dict(use_all_numbers=task.use_all_numbers, integer_intermediates=task.integer_intermediates)
    states = []
    for row in batch_rows:
        puzzle = Puzzle(row["numbers"], row["target"])
        text, offsets = offsets_of(tokenizer, row["ids"])
        labels = label_completion(text, puzzle, StepOracle(puzzle.target, **rules))
        for index, labelled in enumerate(labels.steps):
            end = token_of(offsets, labelled.segment_end) + 1
            states.append(dict(model=TINY, prompt=row["prompt"], row=row["row"], unit="step", index=index,
                               prefix=row["ids"][:end], exact=bool(labelled.solvable_after)))  # fmt: skip
    return states


def smollm_states(rows: list[dict], tokenizer, puzzles, task) -> list[dict]:
    """One state per answer token of every row: the prefix up to that token."""
    from countdown_env.solving.answer_prefix import AnswerPrefixOracle
    from countdown_env.steps.answer_tokens import label_answer_tokens

    rules = dict(use_all_numbers=task.use_all_numbers, integer_intermediates=task.integer_intermediates)
    states = []
    for row in rows:
        text, offsets = offsets_of(tokenizer, row["ids"])
        spans = [(offsets[t], offsets[t + 1]) for t in range(len(offsets) - 1)]
        labels = label_answer_tokens(text, lambda _t, s=spans: s, AnswerPrefixOracle(puzzles[row["prompt"]], **rules))
        if labels is None or "tokens" not in labels:
            continue
        for index, entry in enumerate(labels["tokens"]):
            end = token_of(offsets, entry["end"]) + 1
            states.append(dict(model=SMOLLM, prompt=row["prompt"], row=row["row"], unit="answer token", index=index,
                               prefix=row["ids"][:end], exact=bool(entry["solvable"])))  # fmt: skip
    return states


def rollouts(states, sampler, task, tokenizer, puzzles, prompt_ids, *, continuations, max_new_tokens, log) -> None:
    """Each state's continuation outcomes (1 = the verifier accepts), in place: ``successes``."""
    requests = [(s["prompt"], s["prefix"]) for s in states]
    values = prefix_values(
        requests, sampler, 0, task, tokenizer, puzzles, prompt_ids, continuations=continuations,
        max_new_tokens=max_new_tokens, batch_size=64 * continuations, log=log,
    )  # fmt: skip
    for state, value in zip(states, values, strict=True):
        outcomes = [int(r >= 1.0) for r in value["rewards"]]
        state["successes"] = outcomes if value["n"] else outcomes * continuations  # an ended prefix: exact
        state["ended"] = not value["n"]


def estimate(state: dict, k: int) -> float:
    return float(np.mean(state["successes"][:k]))


def sibling_ranking(states: list[dict], k: int, prompts: list[int] | None = None) -> float:
    """Over pairs of states of one puzzle with different exact values: the share where the K-rollout estimate ranks
    the solvable one above (ties 1/2); ``prompts``: the puzzles drawn (a bootstrap resample, repeats counted)."""
    by_prompt: dict[int, list[dict]] = {}
    for s in states:
        by_prompt.setdefault(s["prompt"], []).append(s)
    agree, pairs = 0.0, 0
    for prompt in by_prompt if prompts is None else prompts:
        group = by_prompt.get(prompt, [])
        good = np.array([estimate(s, k) for s in group if s["exact"]])
        bad = np.array([estimate(s, k) for s in group if not s["exact"]])
        if good.size and bad.size:
            diff = good[:, None] - bad[None, :]
            agree += float((diff > 0).sum() + 0.5 * (diff == 0).sum())
            pairs += diff.size
    return agree / pairs if pairs else float("nan")


def figures(states: list[dict]) -> dict:
    prompts = sorted({s["prompt"] for s in states})
    curve = {}
    for k in KS:
        curve[str(k)] = dict(
            ranking=sibling_ranking(states, k),
            ci=cluster_bootstrap(lambda idx, k=k: sibling_ranking(states, k, [prompts[i] for i in idx]), len(prompts)),
        )
    reaching = next((k for k in KS if curve[str(k)]["ranking"] >= TARGET_RANKING), None)
    solvable = [s for s in states if s["exact"]]
    unsolvable = [s for s in states if not s["exact"]]
    return dict(
        states=len(states),
        solvable=len(solvable),
        puzzles=len(prompts),
        k_curve=curve,
        smallest_k_reaching=reaching,
        never_solved_though_solvable=float(np.mean([not any(s["successes"]) for s in solvable])) if solvable else None,
        solved_though_unsolvable=float(np.mean([any(s["successes"]) for s in unsolvable])) if unsolvable else None,
        mean_estimate=dict(
            solvable=float(np.mean([estimate(s, 64) for s in solvable])) if solvable else None,
            unsolvable=float(np.mean([estimate(s, 64) for s in unsolvable])) if unsolvable else None,
        ),
    )


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, block in report["models"].items():
        curve = block["figures"]["k_curve"]
        ks = [int(k) for k in curve]
        ax.plot(ks, [curve[k]["ranking"] for k in curve], marker="o", label=f"{name} ({block['figures']['states']})")
        ax.fill_between(ks, [curve[k]["ci"][0] for k in curve], [curve[k]["ci"][1] for k in curve], alpha=0.2)
    ax.axhline(1.0, color="k", lw=0.8, label="exact (oracle)")
    ax.axhline(TARGET_RANKING, color="k", lw=0.8, ls="--", label="90 % of exact")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rollouts per state (K)")
    ax.set_ylabel("sibling pairs ranked as the oracle ranks them")
    ax.set_title("Monte-Carlo values against exact solvability")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=Path, default=ROOT / "experiments/results/credit_assignment_v2/batch.jsonl.gz")
    parser.add_argument("--tiny-puzzles", type=int, default=8)
    parser.add_argument("--smollm-puzzles", type=int, default=8)
    parser.add_argument("--continuations", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 puzzle each, 8 continuations")
    args = parser.parse_args(argv)
    if args.quick:
        args.tiny_puzzles, args.smollm_puzzles, args.continuations = 1, 1, 8
    measurement = Measurement("E8", argv, protocol=PROTOCOL)
    log = measurement.log

    from countdown_env import Puzzle
    from experiments._sampled_groups import load_setting
    from learners.pipeline.data import model_task
    from learners.pipeline.evaluation.evaluate import prompt_token_ids
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.sampling import Sampling
    from learners.sampling.vllm_engine import VLLMSampler

    report_models = {}
    # (a) the tiny multi-step warm start, on E7b's batch
    setting = load_setting(args.tiny_puzzles, TINY)
    rows = [r for r in read_jsonl(args.batch) if r["prompt"] < args.tiny_puzzles]
    states = tiny_states(rows, setting.tokenizer, setting.task)
    log(f"{TINY}: {len(rows)} completions, {len(states)} states")
    sampler = VLLMSampler.from_model_dir(setting.model_dir, setting.tokenizer, enable_prefix_caching=True)
    try:
        rollouts(states, sampler, setting.task, setting.tokenizer, setting.puzzles, setting.prompt_ids,
                 continuations=args.continuations, max_new_tokens=384, log=log)  # fmt: skip
    finally:
        sampler.close()
    all_states = list(states)
    report_models[TINY] = dict(completions=len(rows), unit="step", figures=figures(states))

    # (b) SmolLM2's warm start, on its own completions of R2's band
    model_dir = resolve_model(SMOLLM)
    tokenizer, task = load_tokenizer(model_dir), model_task(model_dir)
    puzzles = [Puzzle(**row) for row in read_jsonl(BAND)[: args.smollm_puzzles]]
    prompt_ids = prompt_token_ids(tokenizer, task, puzzles)
    sampler = VLLMSampler.from_model_dir(model_dir, tokenizer, dtype="float32", enable_prefix_caching=True)
    try:
        samples = sampler.sample(prompt_ids, Sampling(temperature=TEMPERATURE, seed=0), n=4, max_new_tokens=128)
        rows = [
            dict(prompt=p, row=4 * p + j, ids=list(s.ids)) for p, per in enumerate(samples) for j, s in enumerate(per)
        ]
        states = smollm_states(rows, tokenizer, puzzles, task)
        log(f"{SMOLLM}: {len(rows)} completions, {len(states)} states")
        rollouts(states, sampler, task, tokenizer, puzzles, prompt_ids, continuations=args.continuations,
                 max_new_tokens=128, log=log)  # fmt: skip
    finally:
        sampler.close()
    all_states += states
    report_models[SMOLLM] = dict(completions=len(rows), unit="answer token", figures=figures(states))

    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(
        [{k: v for k, v in s.items() if k != "prefix"} | dict(prefix_tokens=len(s["prefix"])) for s in all_states],
        args.out / "states.jsonl.gz",
    )
    payload = dict(
        settings=dict(
            continuations=args.continuations,
            temperature=TEMPERATURE,
            ks=list(KS),
            tiny_puzzles=args.tiny_puzzles,
            smollm_puzzles=args.smollm_puzzles,
        ),  # fmt: skip
        models=report_models,
    )
    plot(payload, args.out / "k_curve.png")
    return measurement.finish(args.out, payload, summary)


def summary(report: dict) -> str:
    lines = provenance_lines(report, "E8: Monte-Carlo values against exact ones",
                             "experiments/monte_carlo_vs_exact_values.py")  # fmt: skip
    lines[2] = "Protocol: `docs/experiments.md`, E8. Written by `experiments/monte_carlo_vs_exact_values.py`."
    for name, block in report["models"].items():
        f = block["figures"]
        lines += [
            "",
            f"## {name} (unit: {block['unit']})",
            "",
            f"{block['completions']} completions, {f['states']} states ({f['solvable']} solvable) from {f['puzzles']} "
            f"puzzles. Mean 64-rollout estimate: solvable {f['mean_estimate']['solvable']}, unsolvable "
            f"{f['mean_estimate']['unsolvable']}.",
            "",
            "| K | sibling ranking [95 % CI] |",
            "| --- | --- |",
        ]
        for k, v in f["k_curve"].items():
            lines.append(f"| {k} | {v['ranking']:.3f} [{v['ci'][0]:.3f}, {v['ci'][1]:.3f}] |")
        lines += [
            "",
            f"- smallest K reaching {TARGET_RANKING:.0%} of the oracle's ranking: "
            f"{f['smallest_k_reaching'] or 'beyond 64'}",
            f"- solvable states never solved in 64 rollouts: {f['never_solved_though_solvable']}",
            f"- unsolvable states solved at least once: {f['solved_though_unsolvable']}",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
