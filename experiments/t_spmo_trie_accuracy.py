r"""E2 (docs/experiments.md): how good is T-SPMO's trie advantage A(v|p), by prefix depth? (Monte Carlo, no training)

The referee of arXiv 2504.20834 (major comment 4) objects that the trie's advantage

    A(v|p) = mean reward of the completions through p∘v  -  mean reward of the completions through p

rests, beyond the first tokens, on one or two completions and is therefore mostly noise. This script measures it
against a Monte Carlo reference on the shipped warm start, exactly as the pre-registered protocol E2 says:

1. the first ``--prompts`` puzzles of the seed-0 training split as ``countdown compare`` builds it (its full
   ``train_size``, the ``tiny_n3`` eval set excluded);
2. per group size G: G completions per prompt at T = 0.8, at most ``--max-new-tokens`` tokens, through the project's
   sampler (``learners.sampling.HFSampler``), rewarded by the task's verifier (``score_trajectories``, the task's
   reward settings, stop at eos, a truncated completion scores 0); the trie advantages from
   ``learners.t_spmo.prefix_trie.prefix_advantages`` called as ``TSPMOTrainer.shape_batch`` calls it (rows with
   their TRL completion masks, group ids ``row // G``, start positions 0, NaN reward for an empty row); the unique
   transitions are the positions of its ``loss_mask``;
3. transitions (p, v) drawn uniformly without replacement within the depth buckets 1, 2-3, 4-7, 8-15, 16-31, 32+
   (depth = len(p) in completion tokens, the prompt excluded; up to ``--per-bucket`` per bucket and G, seeded), each
   with the trie's A(v|p) and its node count |G_{p∘v}|, and the reference A*(v|p) = Q̂(p∘v) - V̂(p) from ``M =
   --continuations`` fresh continuations of prompt+p∘v and of prompt+p (same policy and temperature, the prefix
   counting against the token budget, same reward). When p∘v already ends (v is eos, or the budget is spent) its
   value is its own reward, exactly (standard error 0);
4. per bucket and G: the share of the drawn transitions with |G_{p∘v}| = 1 (singletons), mean |A - A*| with a
   percentile-bootstrap 95 % interval over transitions (1000 resamples), the Pearson correlation of A with A*,
   and the reference's own standard errors sqrt(var/M) of Q̂ and V̂ (var with ddof 1), so that the part of
   |A - A*| that is reference noise can be read off: with SE(A*)² = SE(Q̂)² + SE(V̂)², the noise alone would
   give a mean |A - A*| of about sqrt(2/π)·SE(A*) if A were exact, and sqrt(max(0, mean (A-A*)² - mean SE(A*)²))
   estimates the RMS error of A against the true advantage (A* is independent of the trie's samples).

Outputs (``--out DIR``): ``results.json`` (every transition, the settings, the command, versions), ``summary.md``
(a table per G by bucket, then the pre-registered decision rule applied) and ``error_by_depth.png``.

    python experiments/t_spmo_trie_accuracy.py --out experiments/results/t_spmo_trie_accuracy
    python experiments/t_spmo_trie_accuracy.py --out /tmp/e2-quick --quick        # seconds: a smoke run
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments._sampled_groups import (  # noqa: E402
    TEMPERATURE,
    command_line,
    load_setting,
    prefix_values,
    rewards_of,
    versions,
    without_nan,
)

# Depth buckets (depth = len(p) in completion tokens); None: no upper end.
BUCKETS: tuple[tuple[int, int | None], ...] = ((1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, None))
DEEP = ("8-15", "16-31", "32+")  # the decision rule's pooled "8+" buckets
FULL_DEFAULTS = dict(group_sizes=[8, 50], prompts=16, continuations=32, per_bucket=24)
QUICK_DEFAULTS = dict(group_sizes=[4, 8], prompts=2, continuations=4, per_bucket=2)
BOOTSTRAP_RESAMPLES = 1000


def bucket_name(bucket: tuple[int, int | None]) -> str:
    low, high = bucket
    return f"{low}+" if high is None else str(low) if low == high else f"{low}-{high}"


def bucket_of(depth: int) -> str | None:
    for low, high in BUCKETS:
        if depth >= low and (high is None or depth <= high):
            return bucket_name((low, high))
    return None


# ------------------------------------------------------------------------------------------------ the trie
def build_trie(rows: list[list[int]], rewards: list[float], group: int, pad_id: int):
    """``prefix_advantages`` as ``TSPMOTrainer.shape_batch`` calls it (no replay rows)."""
    import torch

    from learners.t_spmo.prefix_trie import prefix_advantages

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1  # TRL's completion_mask: every token up to and including the first eos
    reward = torch.tensor(rewards, dtype=torch.float32)
    groups = torch.arange(ids.size(0)) // group
    starts = torch.zeros_like(groups)
    reward = torch.where(mask.sum(dim=1) > 0, reward, torch.full_like(reward, float("nan")))
    return prefix_advantages(ids, reward, mask, group_ids=groups, start_positions=starts)


def draw_transitions(trie, group: int, per_bucket: int, rng) -> tuple[list[dict], dict[str, dict]]:
    """Up to ``per_bucket`` unique transitions per depth bucket, uniformly without replacement (all prompts
    pooled); also each bucket's population (how many unique transitions, how many singletons)."""
    import numpy as np

    loss = trie.loss_mask.numpy().astype(bool)
    rows, positions = np.nonzero(loss)
    node_counts = trie.node_counts.numpy()
    by_bucket: dict[str, list[tuple[int, int]]] = {bucket_name(b): [] for b in BUCKETS}
    for r, t in zip(rows.tolist(), positions.tolist(), strict=True):
        name = bucket_of(t)  # depth = len(p) = the position of v in the completion
        if name is not None:
            by_bucket[name].append((r, t))
    drawn, population = [], {}
    for name, members in by_bucket.items():
        singles = sum(int(node_counts[r, t] == 1) for r, t in members)
        population[name] = dict(transitions=len(members), singletons=singles)
        take = min(per_bucket, len(members))
        for k in sorted(rng.choice(len(members), size=take, replace=False).tolist()) if take else []:
            r, t = members[k]
            drawn.append(dict(row=r, prompt=r // group, depth=t, bucket=name))
    return drawn, population


# ------------------------------------------------------------------------------------------------ statistics
def pearson(x, y) -> float:
    import numpy as np

    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def summarise(rows: list[dict], seed: int) -> dict:
    """The protocol's statistics over a set of transition rows."""
    import numpy as np

    from learners.pipeline.evaluation.statistics import bootstrap_ci

    if not rows:
        return dict(n=0)
    a = np.array([r["A"] for r in rows])
    ref = np.array([r["A_star"] for r in rows])
    err = np.abs(a - ref)
    se_q = np.array([r["Q_se"] for r in rows])
    se_v = np.array([r["V_se"] for r in rows])
    se_ref = np.sqrt(se_q**2 + se_v**2)
    singleton = np.array([float(r["node_count"] == 1) for r in rows])
    low, high = bootstrap_ci(err, resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    s_low, s_high = bootstrap_ci(singleton, resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    corrected = float(np.mean((a - ref) ** 2) - np.mean(se_ref**2))
    return dict(
        n=len(rows),
        singleton_share=float(singleton.mean()),
        singleton_ci=[s_low, s_high],
        mean_node_count=float(np.mean([r["node_count"] for r in rows])),
        mean_abs_error=float(err.mean()),
        mean_abs_error_ci=[low, high],
        pearson_A_Astar=pearson(a, ref),
        mean_abs_A=float(np.abs(a).mean()),
        mean_abs_A_star=float(np.abs(ref).mean()),
        share_A_zero=float((a == 0).mean()),
        mean_Q_se=float(se_q.mean()),
        mean_V_se=float(se_v.mean()),
        mean_A_star_se=float(se_ref.mean()),
        noise_floor=float(math.sqrt(2 / math.pi) * se_ref.mean()),
        rms_error_noise_corrected=math.sqrt(max(corrected, 0.0)),
    )


def decision(stats_by_bucket: dict[str, dict], deep: dict) -> dict:
    """The pre-registered rule at G = 8: (a) mean error of the pooled 8+ buckets >= 2x bucket 1's; (b) their
    singleton share > 50 %. Both: confirmed; neither: not confirmed; else partly."""
    first = stats_by_bucket.get("1", {})
    if not first.get("n") or not deep.get("n"):
        return dict(verdict="undetermined (a bucket is empty)", ratio=math.nan, a=None, b=None)
    ratio = deep["mean_abs_error"] / first["mean_abs_error"] if first["mean_abs_error"] > 0 else math.inf
    a, b = ratio >= 2.0, deep["singleton_share"] > 0.5
    verdict = "objection confirmed at this scale" if a and b else "not confirmed" if not (a or b) else "partly"
    return dict(verdict=verdict, ratio=ratio, a=bool(a), b=bool(b))


def ratio_ci(first_rows: list[dict], deep_rows: list[dict], seed: int) -> list[float]:
    """Bootstrap 95 % interval of (mean error 8+) / (mean error bucket 1), both resampled (context only)."""
    import numpy as np

    e1 = np.array([abs(r["A"] - r["A_star"]) for r in first_rows])
    ed = np.array([abs(r["A"] - r["A_star"]) for r in deep_rows])
    if not e1.size or not ed.size:
        return [math.nan, math.nan]
    rng = np.random.default_rng(seed)
    m1 = e1[rng.integers(0, e1.size, (BOOTSTRAP_RESAMPLES, e1.size))].mean(axis=1)
    md = ed[rng.integers(0, ed.size, (BOOTSTRAP_RESAMPLES, ed.size))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = md / m1
    low, high = np.nanquantile(ratios, [0.025, 0.975])
    return [float(low), float(high)]


# ------------------------------------------------------------------------------------------------ outputs
def fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def summary_markdown(report: dict) -> str:
    s = report["settings"]
    lines = [
        "# E2: T-SPMO trie advantage accuracy by prefix depth (Monte Carlo)",
        "",
        "Protocol: `docs/experiments.md`, E2 (pre-registered). Written by `experiments/t_spmo_trie_accuracy.py`.",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}; wall time {report['runtime_s'] / 60:.1f} min; {report['versions']['platform']}, "
        f"torch {report['versions']['torch']} ({s['torch_threads']} thread), "
        f"transformers {report['versions']['transformers']}",
        f"- model: the shipped warm start (`{s['model']}`); task: {s['task_summary']}",
        f"- {s['prompts']} prompts (the first of the seed-{s['split_seed']} training split of `countdown compare`, "
        f"train_size {s['split_train_size']}, {s['split_exclude']} excluded); G in {s['group_sizes']}; "
        f"T = {s['temperature']}; at most {s['max_new_tokens']} new tokens (the prefix counts against them); "
        f"M = {s['continuations']} continuations per reference value; up to {s['per_bucket']} transitions per "
        f"bucket and G; seed {s['seed']}",
        "- depth = len(p) in completion tokens (the prompt excluded): depth 0, the first completion token, lies in "
        "no bucket. Buckets are drawn from all prompts' unique transitions pooled.",
        "",
        "Columns: n = transitions drawn (of `pop` unique transitions in the bucket; `pop single` = singleton share "
        "of the whole bucket); single = share of the drawn ones with |G_{p∘v}| = 1; mean |G| = mean node count; "
        "|A−A*| = mean absolute error with its bootstrap 95 % interval over transitions; r = Pearson correlation "
        "of A with A* (n/a: A constant); A=0 = share of drawn transitions with A exactly 0; |A*| = mean |A*|; "
        "SE Q̂ / SE V̂ = mean standard errors sqrt(var/M) of the reference's two means; noise = sqrt(2/π)·mean "
        "SE(A*), about the |A−A*| the reference's noise alone would give; RMS corr. = sqrt(mean (A−A*)² − mean "
        "SE(A*)²), the RMS error of A against the true advantage with the reference noise taken out.",
        "",
    ]
    for g in s["group_sizes"]:
        info = report["groups"][str(g)]
        lines += [
            f"## G = {g}",
            "",
            f"{info['completions']} completions, mean reward {info['mean_reward']:.3f}, mean length "
            f"{info['mean_length']:.1f} tokens; trie: {int(info['trie_stats']['num_transitions'])} unique transitions, "
            f"singleton share {info['trie_stats']['singleton_share']:.3f}, mean deepest branching depth "
            f"{fmt(info['trie_stats']['mean_max_branch_depth'], 1)}.",
            "",
            "| bucket | n | pop | pop single | single | mean \\|G\\| | \\|A−A*\\| [95 % CI] | r | A=0 | \\|A*\\| "
            "| SE Q̂ | SE V̂ | noise | RMS corr. |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in [bucket_name(b) for b in BUCKETS] + ["8+ pooled"]:
            st = info["buckets"][name]
            pop = info["population"].get(name)
            pop_text = (
                (str(pop["transitions"]), fmt(pop["singletons"] / pop["transitions"]) if pop["transitions"] else "n/a")
                if pop
                else ("", "")
            )
            if not st.get("n"):
                lines.append(f"| {name} | 0 | {pop_text[0]} | {pop_text[1]} | | | | | | | | | | |")
                continue
            ci = st["mean_abs_error_ci"]
            lines.append(
                f"| {name} | {st['n']} | {pop_text[0]} | {pop_text[1]} | {fmt(st['singleton_share'])} | "
                f"{fmt(st['mean_node_count'], 1)} | {fmt(st['mean_abs_error'])} [{fmt(ci[0])}, {fmt(ci[1])}] | "
                f"{fmt(st['pearson_A_Astar'], 2)} | {fmt(st['share_A_zero'], 2)} | {fmt(st['mean_abs_A_star'])} | "
                f"{fmt(st['mean_Q_se'])} | {fmt(st['mean_V_se'])} | {fmt(st['noise_floor'])} | "
                f"{fmt(st['rms_error_noise_corrected'])} |"
            )
        lines.append("")
    d = report["decision"]
    lines += [
        "## Decision rule (pre-registered, applied at G = 8)",
        "",
        "*Objection confirmed at this scale* if, at G = 8, the mean error in the 8+ buckets (8-15, 16-31, 32+ pooled) "
        "is at least twice that of bucket 1 **and** the singleton share there exceeds 50 %; *not confirmed* if "
        "neither holds; otherwise *partly*.",
        "",
    ]
    if d.get("a") is None:
        lines.append(f"Verdict: **{d['verdict']}**.")
    else:
        lines += [
            f"- (a) mean |A−A*|: 8+ pooled {fmt(d['deep_error'])} vs bucket 1 {fmt(d['first_error'])}: ratio "
            f"{fmt(d['ratio'], 2)} (bootstrap 95 % interval {fmt(d['ratio_ci'][0], 2)}-{fmt(d['ratio_ci'][1], 2)}, "
            f"context only) -> {'holds' if d['a'] else 'does not hold'} (needs >= 2)",
            f"- (b) singleton share in the 8+ buckets: {fmt(d['deep_singleton_share'])} -> "
            f"{'holds' if d['b'] else 'does not hold'} (needs > 0.5)",
            "",
            f"Verdict: **{d['verdict']}**. {d['words']}",
        ]
    lines.append("")
    return "\n".join(lines)


def verdict_words(d: dict, report: dict) -> str:
    g8 = report["groups"].get("8", {}).get("buckets", {})
    deep, first = g8.get("8+ pooled", {}), g8.get("1", {})
    if d.get("a") is None:
        return ""
    parts = []
    if d["a"] and d["b"]:
        parts.append(
            "At G = 8 the trie's advantage beyond depth 8 mostly rests on a single completion and its error "
            "against the Monte Carlo reference is at least twice that at depth 1."
        )
    elif not (d["a"] or d["b"]):
        parts.append(
            "At G = 8 neither part of the objection holds at this scale: the deep transitions are not mostly "
            "singletons and their error is less than twice that at depth 1."
        )
    else:
        held = "the singleton share beyond depth 8 exceeds 50 %" if d["b"] else "the deep error is >= 2x depth 1's"
        missed = "the deep error is not twice depth 1's" if d["b"] else "the deep transitions are not mostly singletons"
        parts.append(f"At G = 8 only one part holds: {held}, but {missed}.")
    if first.get("n") and deep.get("n"):
        parts.append(
            f"Reference noise: at depth 1 the expected |A−A*| from the reference alone is about "
            f"{fmt(first['noise_floor'])} (measured {fmt(first['mean_abs_error'])}); in the 8+ buckets "
            f"{fmt(deep['noise_floor'])} (measured {fmt(deep['mean_abs_error'])}, noise-corrected RMS error "
            f"{fmt(deep['rms_error_noise_corrected'])}, r = {fmt(deep['pearson_A_Astar'], 2)})."
        )
    return " ".join(parts)


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [bucket_name(b) for b in BUCKETS]
    fig, (ax_err, ax_single) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k, g in enumerate(report["settings"]["group_sizes"]):
        info = report["groups"][str(g)]["buckets"]
        xs = [i + (k - 0.5) * 0.08 for i, n in enumerate(names) if info[n].get("n")]
        present = [n for n in names if info[n].get("n")]
        for ax, key, ci_key in (
            (ax_err, "mean_abs_error", "mean_abs_error_ci"),
            (ax_single, "singleton_share", "singleton_ci"),
        ):
            ys = [info[n][key] for n in present]
            lo = [info[n][key] - info[n][ci_key][0] for n in present]
            hi = [info[n][ci_key][1] - info[n][key] for n in present]
            line = ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=f"G = {g}")
        noise = [info[n]["noise_floor"] for n in present]
        ax_err.plot(xs, noise, linestyle=":", color=line[0].get_color(), label=f"G = {g}: reference noise alone")
    ax_err.set_ylabel("mean |A − A*|  (95 % bootstrap CI)")
    ax_single.set_ylabel("share of transitions with |G_{p∘v}| = 1")
    ax_single.set_ylim(-0.03, 1.03)
    for ax in (ax_err, ax_single):
        ax.set_xticks(range(len(names)), names)
        ax.set_xlabel("depth bucket (len(p), completion tokens)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("E2: T-SPMO trie advantage vs Monte Carlo reference (shipped warm start)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------ main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--group-sizes", type=int, nargs="+", help="group sizes G (default 8 50)")
    parser.add_argument("--prompts", type=int, help="prompts (default 16)")
    parser.add_argument("--continuations", type=int, help="M, continuations per reference value (default 32)")
    parser.add_argument("--per-bucket", type=int, help="transitions drawn per depth bucket and G (default 24)")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="completion budget (default 128)")
    parser.add_argument("--seed", type=int, default=0, help="sampling and drawing seed (default 0)")
    parser.add_argument("--batch-size", type=int, default=256, help="sampler rows per generate call (default 256)")
    parser.add_argument(
        "--quick", action="store_true", help="a seconds-long smoke run (G 4 8, 2 prompts, M 4, 2/bucket)"
    )
    args = parser.parse_args(argv)
    defaults = QUICK_DEFAULTS if args.quick else FULL_DEFAULTS
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.continuations < 2:
        parser.error("--continuations must be >= 2 (the standard error needs two)")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    import numpy as np
    import torch

    from learners.sampling import HFSampler, Sampling

    torch.set_num_threads(1)
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f}s] {message}", flush=True)

    from learners.pipeline.compare.settings import EVAL_SET, FULL

    setting = load_setting(args.prompts)
    task, tokenizer, model, puzzles, model_dir = (
        setting.task,
        setting.tokenizer,
        setting.model,
        setting.puzzles,
        setting.model_dir,
    )
    prompt_ids = setting.prompt_ids
    sampler = HFSampler(model, tokenizer, batch_size=args.batch_size)
    pad_id = tokenizer.pad_token_id
    log(f"{len(puzzles)} prompts, G in {args.group_sizes}, M = {args.continuations}, {args.per_bucket}/bucket")

    transitions: list[dict] = []
    groups: dict[str, dict] = {}
    for g in args.group_sizes:
        seed = 1000 * args.seed + g
        samples = sampler.sample(
            prompt_ids, Sampling(temperature=TEMPERATURE, seed=seed), n=g, max_new_tokens=args.max_new_tokens
        )
        rows = [s.ids for per_prompt in samples for s in per_prompt]
        row_puzzles = [puzzles[i // g] for i in range(len(rows))]
        rewards = rewards_of(task, tokenizer, sampler.stop_ids, row_puzzles, rows, args.max_new_tokens)
        trie = build_trie(rows, rewards, g, pad_id)
        drawn, population = draw_transitions(trie, g, args.per_bucket, np.random.default_rng([args.seed, g]))
        log(
            f"G = {g}: {len(rows)} completions, mean reward {np.mean(rewards):.3f}, "
            f"{trie.stats.num_transitions} unique transitions, {len(drawn)} drawn"
        )
        requests = []
        for d in drawn:
            full = rows[d["row"]]
            requests.append((d["prompt"], list(full[: d["depth"] + 1])))  # p∘v
            requests.append((d["prompt"], list(full[: d["depth"]])))  # p
        values = prefix_values(
            requests, sampler, seed * 100_000 + 1, task, tokenizer, puzzles, prompt_ids,
            continuations=args.continuations, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, log=log,
        )  # fmt: skip
        for k, d in enumerate(drawn):
            q, v = values[2 * k], values[2 * k + 1]
            r, t = d["row"], d["depth"]
            full = rows[r]
            transitions.append(
                dict(
                    G=g,
                    prompt=d["prompt"],
                    completion_row=r,
                    depth=t,
                    bucket=d["bucket"],
                    token_id=int(full[t]),
                    token=tokenizer.convert_ids_to_tokens(int(full[t])),
                    prefix_text=tokenizer.decode(full[:t]),
                    A=float(trie.advantages[r, t]),
                    node_count=int(trie.node_counts[r, t]),
                    parent_count=int(trie.parent_counts[r, t]),
                    A_star=q["mean"] - v["mean"],
                    Q=q["mean"],
                    Q_se=q["se"],
                    Q_n=q["n"],
                    V=v["mean"],
                    V_se=v["se"],
                    V_n=v["n"],
                )
            )
        mine = [t for t in transitions if t["G"] == g]
        buckets = {bucket_name(b): summarise([t for t in mine if t["bucket"] == bucket_name(b)], args.seed)
                   for b in BUCKETS}  # fmt: skip
        deep_rows = [t for t in mine if t["bucket"] in DEEP]
        buckets["8+ pooled"] = summarise(deep_rows, args.seed)
        pop_deep = [population[n] for n in DEEP]
        population["8+ pooled"] = dict(
            transitions=sum(p["transitions"] for p in pop_deep), singletons=sum(p["singletons"] for p in pop_deep)
        )
        groups[str(g)] = dict(
            completions=len(rows),
            mean_reward=float(np.mean(rewards)),
            mean_length=float(np.mean([len(r) for r in rows])),
            trie_stats=trie.stats.as_dict(),
            population=population,
            buckets=buckets,
        )
        log(f"G = {g} done")

    report = dict(
        experiment="E2",
        protocol="docs/experiments.md#e2",
        date=datetime.date.today().isoformat(),
        command=command_line(sys.argv[1:] if argv is None else list(argv)),
        runtime_s=0.0,
        versions=versions(),
        settings=dict(
            model=str(Path(model_dir).resolve().relative_to(ROOT)) if Path(model_dir).is_relative_to(ROOT) else "",
            task=task.to_dict(),
            task_summary=f"{task.n_numbers} numbers on {tuple(task.value_range)}, targets {tuple(task.target_range)}, "
            f"template {task.template!r}",
            split_seed=0,
            split_train_size=FULL["train_size"],
            split_exclude=EVAL_SET,
            prompts=args.prompts,
            puzzles=[dict(numbers=list(p.numbers), target=p.target) for p in puzzles],
            group_sizes=args.group_sizes,
            temperature=TEMPERATURE,
            max_new_tokens=args.max_new_tokens,
            continuations=args.continuations,
            per_bucket=args.per_bucket,
            buckets=[bucket_name(b) for b in BUCKETS],
            seed=args.seed,
            sampling_seeds="completions: 1000*seed + G; continuations: (1000*seed + G)*100000 + 1 + call",
            draw_seed="numpy default_rng([seed, G])",
            bootstrap_resamples=BOOTSTRAP_RESAMPLES,
            batch_size=args.batch_size,
            torch_threads=torch.get_num_threads(),
            quick=args.quick,
            depth="len(p) in completion tokens (prompt excluded); depth-0 transitions lie in no bucket",
        ),
        groups=groups,
    )
    rule_group = "8" if "8" in groups else None
    if rule_group is None:
        report["decision"] = dict(verdict="undetermined (G = 8 not run)", a=None)
    else:
        info = groups[rule_group]["buckets"]
        d = decision(info, info["8+ pooled"])
        g8 = [t for t in transitions if t["G"] == 8]
        d.update(
            first_error=info["1"].get("mean_abs_error"),
            deep_error=info["8+ pooled"].get("mean_abs_error"),
            deep_singleton_share=info["8+ pooled"].get("singleton_share"),
            ratio_ci=ratio_ci(
                [t for t in g8 if t["bucket"] == "1"], [t for t in g8 if t["bucket"] in DEEP], args.seed
            ),  # fmt: skip
        )
        report["decision"] = d
        report["decision"]["words"] = verdict_words(d, report)
    report["transitions"] = transitions
    report["runtime_s"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(without_nan(report), indent=1, allow_nan=False) + "\n")
    (args.out / "summary.md").write_text(summary_markdown(report))
    plot(report, args.out / "error_by_depth.png")
    log(f"verdict: {report['decision']['verdict']}; wrote {args.out}")


if __name__ == "__main__":
    main()
