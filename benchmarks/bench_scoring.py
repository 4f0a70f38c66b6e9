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
for the KV cache, then the continuation trees in batches; (c) vLLM (``--vllm``, an engine of its own on the same
weights, prefix caching on): prompt-logprob requests with prefix-cache reads up to each span, and the same requests
with reads off. Its line gives both wall times, their ratio (the shaping post's frozen-scorer runs: 216 minutes
naive vs 97 with the cache, 2.23x) and the prompt tokens computed vs served from the cache. Also printed: the
token-count lower bound of (b), 1 + continuation tokens / rollout tokens, since every (point, answer) pair must
run its own span tokens.

``--steps N`` then times N training steps (after one warm-up step) of ``contrastive`` (frozen vLLM scorer on the
shipped warm start) against ``prime_rl``, both generating with colocated vLLM (the post: 97 vs 93 minutes, 1.04x).

    python benchmarks/bench_scoring.py --vllm --steps 5          # embedded tiny model, CPU
    python benchmarks/bench_scoring.py --model mid --vllm         # random-init 43.7 M model, CPU
    python benchmarks/bench_scoring.py --model qwen3-0.6b --device cuda --dtype bfloat16 --vllm   # random-init, GPU
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
    """The model and the folder it was saved to (for the vLLM engine)."""
    import torch

    torch_dtype = getattr(torch, dtype)
    folder = Path(tempfile.mkdtemp(prefix="bench-scoring-")) / name
    if name == "tiny":
        from transformers import AutoModelForCausalLM

        from learners.pipeline.models.tiny import build_tiny_model

        path = build_tiny_model(folder, seed=0)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    elif name == "mid":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        from benchmarks._common import MID_43M

        torch.manual_seed(0)
        model = Qwen2ForCausalLM(Qwen2Config(**MID_43M, attn_implementation="sdpa")).to(torch_dtype)
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
    if name != "tiny":
        model.save_pretrained(folder)
    return model.to(device).eval(), folder


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
    p.add_argument("--model", default="tiny", choices=["tiny", "mid", "qwen3-0.6b"])
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
    p.add_argument("--vllm", action="store_true", help="add engine (c), vLLM, with cache reads on and off")
    p.add_argument("--block-size", type=int, help="the vLLM engine's KV block size (default: 32 on CPU, vLLM's on GPU)")
    p.add_argument("--steps", type=int, default=0, help="time N contrastive vs prime_rl steps on the vLLM path")
    args = p.parse_args(argv)

    import numpy as np
    import torch

    from learners.contrastive.scoring import NaiveScorer, PrefixSharedScorer

    torch.set_num_threads(args.threads)
    model, folder = build_model(args.model, args.device, args.dtype)
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
    if args.vllm:
        bench_vllm(args, folder, jobs, forward, sync, shared.score(jobs))
    if args.steps:
        bench_steps(args.steps)
    return 0


def bench_vllm(args, folder, jobs, forward, sync, reference) -> None:
    """Engine (c) with cache reads on and off, interleaved with the forward baseline."""
    import numpy as np

    from learners.contrastive.scoring import VLLMScorer
    from learners.sampling.vllm_engine import build_llm, on_cpu

    block = args.block_size or (32 if on_cpu() else None)
    start = time.perf_counter()
    llm = build_llm(
        str(folder),
        dtype=args.dtype,
        enable_prefix_caching=True,
        skip_tokenizer_init=True,
        max_model_len=max(len(j.tokens) for j in jobs) + 64,
        **({"block_size": block} if block else {}),
    )
    started = time.perf_counter() - start
    reads = VLLMScorer(llm, reset_cache=True)
    no_reads = VLLMScorer(llm, read_prefix_cache=False, reset_cache=True)
    times = interleaved(
        {"forward": forward, "on": lambda: reads.score(jobs), "off": lambda: no_reads.score(jobs)}, args.repeats, sync
    )
    t_on, t_off = statistics.median(times["on"]), statistics.median(times["off"])
    ratio_on = statistics.median(o / f for o, f in zip(times["on"], times["forward"], strict=True))
    stats = reads.last_stats
    computed = stats["prompt_tokens"] - stats["cached_tokens"]
    diff = max(float(np.abs(x - y).max()) for x, y in zip(reads.score(jobs), reference, strict=True))
    print(
        f"(c) vLLM, cache reads on:                 {t_on * 1e3:9.1f} ms  = {ratio_on:6.2f}x forward   "
        f"[{stats['requests']} requests, {stats['prompt_tokens']} prompt tokens: {computed} computed, "
        f"{stats['cached_tokens']} from the cache; {stats['reads_off']} planned without reads, "
        f"{stats['reruns']} re-runs; block {block or 'default'}; engine start {started:.0f} s]"
    )
    print(
        f"(c) vLLM, cache reads off:                {t_off * 1e3:9.1f} ms  -> off / on = {t_off / t_on:.2f}x "
        f"(the post: 216 / 97 min = 2.23x)"
    )
    print(f"max |(c) - (b)| = {diff:.2e}")
    llm.llm_engine.engine_core.shutdown()


def bench_steps(steps: int) -> None:
    """Seconds per training step of contrastive (frozen vLLM scorer) vs prime_rl, both on colocated vLLM."""
    from transformers import AutoModelForCausalLM, TrainerCallback

    from countdown_env.task import CountdownTask
    from learners.core.registry import get_learner
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.warm_start import SHIPPED_DIR

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.times = []

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.start)

    task = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), template="compact", seed=0)
    data = prompt_dataset([task.puzzle(i) for i in range(64)], task)
    results = {}
    frozen_vllm = dict(
        scorer="frozen",
        scorer_engine="vllm",
        scorer_model_name_or_path=str(SHIPPED_DIR),
        ground_truth_mode="when_all_wrong",
    )
    for learner, extra in [("prime_rl", {}), ("contrastive", frozen_vllm)]:
        spec = get_learner(learner)
        out = Path(tempfile.mkdtemp(prefix=f"bench-steps-{learner}-"))
        config = spec.make_config(
            **tiny_cpu_kwargs(
                out,
                use_vllm=True,
                vllm_mode="colocate",
                max_steps=steps + 1,
                per_device_train_batch_size=16,
                num_generations=8,
                max_completion_length=128,
                temperature=0.8,
                learning_rate=1e-5,
                **extra,
            )
        )
        _, trainer_class = spec.load()
        timer = StepTimes()
        trainer = trainer_class(
            model=AutoModelForCausalLM.from_pretrained(SHIPPED_DIR),
            args=config,
            task=task,
            train_dataset=data,
            processing_class=load_tokenizer(SHIPPED_DIR),
            callbacks=[timer],
        )
        trainer.train()
        results[learner] = statistics.median(timer.times[1:])
        print(f"{learner:>11} step on the vLLM path: {results[learner]:.2f} s (median of {len(timer.times) - 1})")
        del trainer
    print(
        f"contrastive / prime_rl: {results['contrastive'] / results['prime_rl']:.2f}x (the post: 97 / 93 min = 1.04x)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
