"""Trie coverage of T-SPMO on the embedded tiny model, and the speed of the vectorised trie.

The referee of arXiv 2504.20834 (major comment 4) asks how well |G| sampled completions cover the prefix trie: how many
(prefix, next token) transitions rest on a single completion (their advantage is then one reward minus a mean),
how |G_{p∘v}| is distributed, and how deep the completions keep branching. This script measures exactly that on
short T-SPMO runs of the tiny model (optionally warm-started by SFT so that its completions share structure):

    python experiments/trie_coverage.py                      # SFT warm start (300 steps), then the runs
    python experiments/trie_coverage.py --sft-steps 0        # random-init model (everything is a singleton)

For each group size and replay budget it prints the mean over the run's generation batches of the statistics
``learners.t_spmo.prefix_trie.TrieStats`` reports, the |G_{p∘v}| histogram and the singleton share per depth band; then
the time of ``prefix_advantages`` against a plain-Python dict trie on the same batches (same process, same data).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _dict_trie_advantages(ids, rewards, mask, group_size):
    """Baseline: the same advantages from nested Python dicts (one trie per group), walked token by token."""
    rows = [row[: int(m.sum())].tolist() for row, m in zip(ids, mask, strict=True)]
    roots = {}
    for i, row in enumerate(rows):  # pass 1: count and sum the rewards through every node
        node = roots.setdefault(i // group_size, [0, 0.0, {}])
        node[0] += 1
        node[1] += rewards[i]
        for token in row:
            node = node[2].setdefault(token, [0, 0.0, {}])
            node[0] += 1
            node[1] += rewards[i]
    seen, out = set(), []
    for i, row in enumerate(rows):  # pass 2: one advantage per unique transition, first occurrence
        parent = roots[i // group_size]
        for token in row:
            node = parent[2][token]
            if id(node) not in seen:
                seen.add(id(node))
                out.append(node[1] / node[0] - parent[1] / parent[0])
            parent = node
    return out


def _synthetic(groups: int, size: int, length: int, seed: int):
    """A batch with trie-like sharing: each completion copies a random earlier one up to a random depth."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 100, (groups * size, length), generator=gen)
    for row in range(ids.size(0)):
        if row % size:
            source = row - 1 - int(torch.randint(row % size, (1,), generator=gen))
            depth = int(torch.randint(length // 4, (1,), generator=gen))
            ids[row, :depth] = ids[source, :depth]
    lengths = torch.randint(length // 2, length + 1, (ids.size(0),), generator=gen)
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    rewards = torch.randint(0, 2, (ids.size(0),), generator=gen).float()
    return ids, rewards, mask, size


def _model(out: Path, sft_steps: int, sft_batch: int, seed: int) -> Path:
    from learners.pipeline.models.tiny import build_tiny_model

    base = out / "tiny"
    if not (base / "config.json").exists():
        build_tiny_model(base, seed=seed)
    if sft_steps == 0:
        return base
    sft_dir = out / f"sft-{sft_steps}x{sft_batch}"
    if not (sft_dir / "config.json").exists():
        from countdown_env.sft import build_sft_records
        from learners.pipeline.runs.sft_training import run_sft

        start = time.perf_counter()
        records = build_sft_records(3, 2000, seed=seed)
        run_sft(
            base,
            records,
            sft_dir,
            max_steps=sft_steps,
            seed=seed,
            per_device_train_batch_size=sft_batch,
            warmup_steps=min(30, sft_steps // 4),
            logging_steps=max(sft_steps // 4, 1),
            disable_tqdm=True,
        )
        print(f"SFT warm start: {sft_steps} steps in {time.perf_counter() - start:.0f} s -> {sft_dir}")
    return sft_dir


def _prompts(n: int, seed: int):
    """``n`` solvable 3-number puzzles (numbers 1-20, target 10-200, the tiny model's range), seeded."""
    import random

    from countdown_env import Puzzle
    from countdown_env.solving.solver import solve

    rng, puzzles = random.Random(seed + 1000), []
    while len(puzzles) < n:
        puzzle = Puzzle(tuple(rng.randint(1, 20) for _ in range(3)), rng.randint(10, 200))
        if solve(puzzle) is not None:
            puzzles.append(puzzle)
    return puzzles


def _run(model_dir: Path, puzzles, group: int, replay: tuple[int, int], args, out: Path):
    """Train T-SPMO for ``args.steps`` steps (one prompt per step); return the log history and the tries."""
    from transformers import AutoModelForCausalLM, PrinterCallback

    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.t_spmo import TSPMOConfig, TSPMOTrainer

    micro = max(d for d in range(1, min(group, 10) + 1) if group % d == 0)
    config = TSPMOConfig(
        output_dir=str(out / f"run-g{group}-r{replay[0]}{replay[1]}"),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        use_vllm=False,
        report_to="none",
        per_device_train_batch_size=micro,
        steps_per_generation=group // micro,
        gradient_accumulation_steps=group // micro,
        num_generations=group,
        max_completion_length=args.max_new_tokens,
        temperature=args.temperature,
        top_k=0,
        learning_rate=2e-5,
        max_steps=args.steps,
        logging_steps=1,
        save_strategy="no",
        seed=args.seed,
        disable_tqdm=True,
        replay_success=replay[0],
        replay_failure=replay[1],
    )
    tries = []

    class Recorder(TSPMOTrainer):
        def shape_batch(self, batch, rollout):
            batch = super().shape_batch(batch, rollout)
            tries.append((self.last_trie, batch["completion_ids"].cpu(), rollout.rewards.cpu(), batch))
            return batch

    trainer = Recorder(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=None,
        args=config,
        train_dataset=prompt_dataset(puzzles, "compact"),
        processing_class=load_tokenizer(model_dir),
    )
    trainer.remove_callback(PrinterCallback)  # keep the per-step log dicts off stdout
    start = time.perf_counter()
    trainer.train()
    return trainer.state.log_history, tries, time.perf_counter() - start


def _mean(history, key):
    values = [e[key] for e in history if key in e and e[key] == e[key]]
    return statistics.fmean(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sft-steps", type=int, default=300, help="SFT warm-start steps (0: random-init model)")
    parser.add_argument("--sft-batch", type=int, default=64, help="SFT batch size")
    parser.add_argument("--steps", type=int, default=4, help="T-SPMO steps (one prompt each) per configuration")
    parser.add_argument("--groups", type=int, nargs="+", default=[16, 50], help="group sizes |G|")
    parser.add_argument("--max-new-tokens", type=int, default=192)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/trie_coverage"))
    args = parser.parse_args()

    import torch

    from learners.t_spmo.prefix_trie import prefix_advantages

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    args.out.mkdir(parents=True, exist_ok=True)
    model_dir = _model(args.out, args.sft_steps, args.sft_batch, args.seed)
    puzzles = _prompts(max(args.steps, 8), args.seed)
    print(
        f"model: {model_dir}  steps/config: {args.steps}  max_new_tokens: {args.max_new_tokens}  T={args.temperature}"
    )
    header = (
        f"{'|G|':>4} {'replay':>6} {'acc':>5} {'len':>5} {'U/tok':>6} {'single':>6} {'mean|G|':>7} {'A=0':>5} "
        f"{'|A|':>6} {'brmax':>5} {'brmean':>6} {'s/step':>6}"
    )
    timings = []
    for group in args.groups:
        for replay in ((0, 0), (1, 1)):
            history, tries, seconds = _run(model_dir, puzzles, group, replay, args, args.out)
            if replay == (0, 0) and group == args.groups[0]:
                print(header)
            m = {k: _mean(history, k) for k in {k for e in history for k in e}}
            print(
                f"{group:>4} {f'{replay[0]}/{replay[1]}':>6} {m['countdown/accuracy']:>5.2f} "
                f"{m['countdown/mean_completion_length']:>5.1f} {m['tspmo/loss_token_share']:>6.3f} "
                f"{m['tspmo/singleton_share']:>6.3f} {m['tspmo/mean_node_count']:>7.2f} "
                f"{m['tspmo/zero_advantage_share']:>5.2f} {m['tspmo/mean_abs_advantage']:>6.3f} "
                f"{m['tspmo/max_branch_depth']:>5.1f} {m['tspmo/mean_max_branch_depth']:>6.1f} "
                f"{seconds / args.steps:>6.2f}"
            )
            # |G_{p∘v}| histogram and singleton share by depth band, over the run's unique transitions
            counts, depths = [], []
            for trie, *_ in tries:
                where = trie.loss_mask.bool()
                counts.append(trie.node_counts[where])
                depths.append(torch.nonzero(where)[:, 1] + 1)
            counts, depths = torch.cat(counts), torch.cat(depths)
            bins = [(1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 10**9)]
            hist = "  ".join(
                f"{lo if lo == hi else f'{lo}-{hi}' if hi < 10**9 else f'{lo}+'}:"
                f"{float(((counts >= lo) & (counts <= hi)).float().mean()):.3f}"
                for lo, hi in bins
            )
            bands = [(1, 4), (5, 16), (17, 48), (49, 10**9)]
            parts = []
            for lo, hi in bands:
                band = (depths >= lo) & (depths <= hi)
                share = float((counts[band] == 1).float().mean()) if band.any() else float("nan")
                parts.append(f"d{lo}-{hi if hi < 10**9 else ''}:{share:.2f}(n={int(band.sum())})")
            by_depth = "  ".join(parts)
            print(f"{'':>12}|G_pv| share  {hist}")
            print(f"{'':>12}singleton share by depth  {by_depth}")
            if replay == (0, 0):
                timings.extend((ids, rewards, b["completion_mask"].cpu(), group) for _, ids, rewards, b in tries)

    print("\nprefix_advantages vs a plain-Python dict trie (median of 5 runs each); run batches, then synthetic:")
    timings = timings[:: max(len(timings) // 4, 1)] + [_synthetic(8, 50, 512, args.seed)]
    for ids, rewards, mask, group in timings:
        fast, slow = [], []
        for _ in range(5):
            start = time.perf_counter()
            prefix_advantages(ids, rewards, mask, group_size=group)
            fast.append(time.perf_counter() - start)
            start = time.perf_counter()
            _dict_trie_advantages(ids, rewards.tolist(), mask, group)
            slow.append(time.perf_counter() - start)
        f, s = statistics.median(fast), statistics.median(slow)
        print(
            f"  B={ids.shape[0]:>3} T={ids.shape[1]:>4}: vectorised {f * 1e3:7.2f} ms   "
            f"dict {s * 1e3:8.2f} ms   x{s / f:5.1f}"
        )
    print(
        "\ncolumns: U/tok = unique transitions per completion token (tokens in the loss); single = share of them "
        "seen by one completion;\nmean|G| = mean |G_{p∘v}|; A=0 = share with zero advantage; brmax/brmean = deepest "
        "branching node (max / mean over prompts)."
    )


if __name__ == "__main__":
    main()
