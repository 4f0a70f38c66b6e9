"""Cost of the contrastive-potential scorer engines, as a ratio to one forward pass over the same rollouts.

Workload (the shaping post's worst case): R rollouts (8) × P paragraphs (~10, plus the empty-prefix point) × A
distinct answers (up to 8). Rollouts are random token ids from the model's vocabulary; paragraph lengths vary
±50 % around ``--paragraph-tokens``; answers are random ids (so they share no leading tokens: no trie saving, the
conservative case) of ±30 % around ``--answer-tokens``, each followed by the closing tag.

Baseline: one batched forward of the R full rollouts (prompt + completion, right-padded) computing the logits of
every position, i.e. what the trainer pays to get the policy's per-token log-probabilities.

Each engine is timed interleaved with the baseline (so both see the same machine load) and the median ratio over
``--repeats`` runs is printed.

Engines: (a) naive — one forward per rollout × point × answer; (b) prefix-shared — one forward per rollout chunk
for the KV cache, then the continuation trees in batches. Also printed: the token-count lower bound of (b),
1 + continuation tokens / rollout tokens, since every (point, answer) pair must run its own span tokens.

    python benchmarks/bench_scoring.py                       # embedded tiny model, CPU
    python benchmarks/bench_scoring.py --model qwen3-0.6b --device cuda --dtype bfloat16   # random-init, GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build_model(name: str, device: str, dtype: str):
    import torch

    torch_dtype = getattr(torch, dtype)
    if name == "tiny":
        from transformers import AutoModelForCausalLM

        from learners.pipeline.tiny import build_tiny_model

        path = build_tiny_model(Path(tempfile.mkdtemp(prefix="bench-scoring-")) / "tiny", seed=0)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    elif name == "qwen3-0.6b":
        from transformers import Qwen3Config, Qwen3ForCausalLM

        from benchmarks._common import QWEN3_0_6B

        config = Qwen3Config(  # Qwen3-0.6B's shape, random weights (no Hub access)
            **QWEN3_0_6B, max_position_embeddings=4096, tie_word_embeddings=True, attn_implementation="sdpa"
        )
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(config).to(torch_dtype)
    else:
        raise SystemExit(f"unknown model {name!r}")
    return model.to(device).eval()


def make_jobs(args, vocab_size: int):
    import numpy as np

    from learners.contrastive.scoring import ScoringJob

    rng = np.random.default_rng(args.seed)
    low = 10  # skip the lowest ids (special tokens of the tiny vocabulary)
    prompt = rng.integers(low, vocab_size, args.prompt_tokens).tolist()
    bridge = tuple(rng.integers(low, vocab_size, args.bridge_tokens).tolist())
    answers = tuple(
        tuple(rng.integers(low, vocab_size, max(1, round(args.answer_tokens * rng.uniform(0.7, 1.3)))).tolist())
        for _ in range(args.answers)
    )
    jobs = []
    for _ in range(args.rollouts):
        lengths = [max(1, round(args.paragraph_tokens * rng.uniform(0.5, 1.5))) for _ in range(args.paragraphs)]
        opening = 2  # "<reasoning>\n"
        completion = rng.integers(low, vocab_size, opening + sum(lengths) + args.tail_tokens).tolist()
        ends = np.cumsum([opening] + lengths)
        cuts = tuple(len(prompt) + int(e) for e in ends)  # Φ_0 … Φ_P
        jobs.append(ScoringJob(tuple(prompt + completion), cuts, bridge, answers))
    return jobs


def interleaved(fns: dict, repeats: int, sync) -> dict[str, list[float]]:
    """Time each function ``repeats`` times, round-robin (after one warm-up each), so that they share the machine's
    load; returns the seconds of every run."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    sync()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            sync()
            times[name].append(time.perf_counter() - start)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny", choices=["tiny", "qwen3-0.6b"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", 1)))
    p.add_argument("--rollouts", type=int, default=8)
    p.add_argument("--paragraphs", type=int, default=10)
    p.add_argument("--paragraph-tokens", type=int, default=60)
    p.add_argument("--answers", type=int, default=8)
    p.add_argument("--answer-tokens", type=int, default=10)
    p.add_argument("--bridge-tokens", type=int, default=3)
    p.add_argument("--prompt-tokens", type=int, default=40)
    p.add_argument("--tail-tokens", type=int, default=20)
    p.add_argument("--max-batch-tokens", type=int, default=32768)
    p.add_argument("--prefix-batch-size", type=int, default=16)
    p.add_argument("--kv-slack", type=float, default=0.25)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--skip-naive", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import numpy as np
    import torch

    from learners.contrastive.scoring import NaiveScorer, PrefixSharedScorer

    torch.set_num_threads(args.threads)
    model = build_model(args.model, args.device, args.dtype)
    jobs = make_jobs(args, model.config.vocab_size)
    device = next(model.parameters()).device
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    width = max(len(j.tokens) for j in jobs)
    ids = torch.zeros((len(jobs), width), dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for r, job in enumerate(jobs):
        ids[r, : len(job.tokens)] = torch.tensor(job.tokens, device=device)
        mask[r, : len(job.tokens)] = 1

    def forward():
        with torch.no_grad():
            model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float().log_softmax(-1)

    shared = PrefixSharedScorer(
        model, prefix_batch_size=args.prefix_batch_size, max_batch_tokens=args.max_batch_tokens, kv_slack=args.kv_slack
    )
    times = interleaved({"forward": forward, "shared": lambda: shared.score(jobs)}, args.repeats, sync)
    t_forward, t_shared = statistics.median(times["forward"]), statistics.median(times["shared"])
    ratio = statistics.median(s / f for s, f in zip(times["shared"], times["forward"], strict=True))
    rollout_tokens = sum(len(j.tokens) for j in jobs)
    points = sum(len(j.cuts) for j in jobs)
    per_call = {k: v // (args.repeats + 1) for k, v in shared.stats.items()}
    bound = 1 + per_call["continuation_tokens"] / rollout_tokens

    print(f"model={args.model} device={device} dtype={args.dtype} threads={args.threads} repeats={args.repeats}")
    print(
        f"workload: {len(jobs)} rollouts, {rollout_tokens} rollout tokens, {points} scoring points "
        f"({args.paragraphs} paragraphs + empty prefix each), {args.answers} answers of ~{args.answer_tokens}"
        f" tokens + bridge {args.bridge_tokens} -> {points * args.answers} likelihoods"
    )
    print(f"one forward over the rollouts (baseline): {t_forward * 1e3:9.1f} ms (median)")
    print(
        f"(b) prefix-shared:                        {t_shared * 1e3:9.1f} ms  = {ratio:6.2f}x forward"
        f"   [{per_call['forward_calls']} forward calls, {per_call['prefix_tokens']} prefix + "
        f"{per_call['continuation_tokens']} continuation tokens; token-count bound {bound:.2f}x]"
    )
    if not args.skip_naive:
        naive = NaiveScorer(model)
        runs = max(1, args.repeats // 3)
        naive_times = interleaved({"forward": forward, "naive": lambda: naive.score(jobs)}, runs, sync)
        t_naive = statistics.median(naive_times["naive"])
        naive_ratio = statistics.median(
            n / f for n, f in zip(naive_times["naive"], naive_times["forward"], strict=True)
        )
        print(
            f"(a) naive:                                {t_naive * 1e3:9.1f} ms  = {naive_ratio:6.2f}x forward"
            f"   ({t_naive / t_shared:.1f}x engine b)"
        )
        diff = max(float(np.abs(x - y).max()) for x, y in zip(naive.score(jobs), shared.score(jobs), strict=True))
        print(f"max |(a) - (b)| = {diff:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
