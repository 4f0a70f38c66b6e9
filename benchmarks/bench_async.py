"""Synchronous vs asynchronous rollouts (learners/core/async_rollouts.py), the same run in one invocation.

Each arm is one ``countdown train`` process with the colocated vLLM engine, the same settings, seed and steps:
``sync`` (generation, then the update) on one torch thread and on two, ``async K=0`` (the synchronous run through the
async worker, which times generation apart from the rest of a step), ``async K=1`` and ``async K=2``. Per arm it
prints steps and samples per hour over the training loop (``train_runtime``: the engine's start and the model's load
are before it), the share of time each core was busy while the arm ran (``/proc/stat``), the staleness histogram of
its steps, and pass@1 of the final policy on held-out puzzles (a ``countdown eval`` after the run, outside its
timing); for the async arms the median seconds and CPU share of a step's generation (the worker thread) and of the
rest (the training thread); then each arm's ratio of samples per hour to ``sync``'s, and the ceiling that K=0's split
puts on any overlap. The importance-sampling correction is on in every arm (async needs it).

    python benchmarks/bench_async.py --model smollm2 --steps 6          # SmolLM2-135M warm start, LoRA r16
    python benchmarks/bench_async.py --model tiny --steps 20 --seeds 0 1 2   # the tiny warm start; pass@1 per seed
    python benchmarks/bench_async.py --summarize benchmarks/results/async/tiny*.json   # pass@1 over every file's seeds
    python benchmarks/bench_async.py --contention     # an update beside a decoding process vs a decoding thread

Figures depend on the machine and on what else runs on it; the script reports them, it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

PRESETS = {
    "tiny": ("cpu-tiny-vllm", ["model=warm-start", "eval.max_new_tokens=128", "trainer.max_completion_length=128",
                               "trainer.per_device_train_batch_size=32", "trainer.temperature=1.0"]),
    "smollm2": ("cpu-smollm2-vllm", []),
}  # fmt: skip
"""``--model`` -> (preset, its extra ``--set``s): the tiny one at 4 prompts x 8 completions like SmolLM2's."""

ARMS = {
    "sync": [],
    "sync 2 threads": ["--threads", "2"],
    "async K=0": ["--async", "--max-staleness", "0"],
    "async K=1": ["--async", "--max-staleness", "1"],
    "async K=2": ["--async", "--max-staleness", "2"],
    "async K=1 2 threads": ["--threads", "2", "--async", "--max-staleness", "1"],
}
"""Every arm runs one torch thread (``OMP_NUM_THREADS=1``) except the ``2 threads`` ones (``--threads 2``: both cores
for the update, and for generation when it does not overlap). ``async K=0`` is the synchronous run through the async
worker: its timings split a step into generation and the rest (scoring, update), which bounds what any overlap can
give: (G + U) / max(G, U)."""
TIMINGS = ("async/generate_seconds", "async/generate_cpu_share", "async/train_seconds", "async/train_cpu_share")


def cpu_times() -> list[tuple[int, int]]:
    """(busy, total) jiffies of each core since boot."""
    rows = []
    with open("/proc/stat") as fh:
        for line in fh:
            if line.startswith("cpu") and line[3].isdigit():
                values = [int(v) for v in line.split()[1:]]
                idle = values[3] + values[4]  # idle + iowait
                rows.append((sum(values) - idle, sum(values)))
    return rows


def run_arm(model: str, flags: list[str], steps: int, seed: int, eval_limit: int, out: Path) -> dict:
    preset, sets = PRESETS[model]
    sets = [*sets, f"trainer.max_steps={steps}", f"trainer.seed={seed}", "trainer.logging_steps=1", "eval.every=0",
            'trainer.save_strategy="no"', "trainer.vllm_importance_sampling_correction=true"]  # fmt: skip
    argv = [sys.executable, "-m", "countdown_env.cli", "train", "--learner", "grpo", "--config", preset,
            "--output-dir", str(out), "--no-progress", *[x for s in sets for x in ("--set", s)], *flags]  # fmt: skip
    before, start = cpu_times(), time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall, after = time.perf_counter() - start, cpu_times()
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stderr[-3000:]}")
    history = json.loads((out / "log_history.json").read_text())
    runtime = next(e["train_runtime"] for e in history if "train_runtime" in e)
    config = json.loads((out / "resolved_config.json").read_text())["trainer"]
    samples_per_step = config["per_device_train_batch_size"] * config.get("gradient_accumulation_steps", 1)
    busy = [(a[0] - b[0]) / max(a[1] - b[1], 1) for a, b in zip(after, before, strict=True)]
    return {
        "seed": seed,
        "wall_seconds": wall,
        "train_runtime": runtime,
        "steps_per_hour": steps / runtime * 3600,
        "samples_per_hour": steps * samples_per_step / runtime * 3600,
        "core_busy": busy,
        "staleness": dict(Counter(int(e["async/staleness"]) for e in history if "async/staleness" in e)),
        "dropped": max([e["async/dropped"] for e in history if "async/dropped" in e], default=0),
        "wait_seconds": sum(e["async/wait_seconds"] for e in history if "async/wait_seconds" in e),
        # medians over the steps after the first (which also starts the engine's caches)
        **{
            name.split("/")[1]: float(np.median(values[1:])) if len(values) > 1 else None
            for name in TIMINGS
            for values in [[e[name] for e in history if name in e]]
        },  # fmt: skip
        "pass@1": final_pass_at_1(out / "final", eval_limit) if eval_limit else None,
    }


def overlap_ceiling(rows: list[dict]) -> float | None:
    """The most any overlap of generation (G) with the rest of a step (U) can give over running them one after the
    other, (G + U) / max(G, U), from the synchronous split of ``async K=0``'s per-step medians (averaged over seeds)."""
    pairs = [(r["generate_seconds"], r["train_seconds"]) for r in rows if r.get("train_seconds")]
    if not pairs:
        return None
    g, u = np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs])
    return float((g + u) / max(g, u))


def _update_seconds(repeats: int = 12) -> float:
    """Median seconds of one forward and backward of 8 SmolLM2-sized MLP blocks (576 -> 1536 -> 576, frozen weights as
    under LoRA) on 400 tokens, one torch thread: the kind of work a step's update is made of."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    ups = [torch.nn.Linear(576, 1536).requires_grad_(False) for _ in range(8)]
    downs = [torch.nn.Linear(1536, 576).requires_grad_(False) for _ in range(8)]
    x = torch.randn(400, 576, requires_grad=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        h = x
        for up, down in zip(ups, downs, strict=True):
            h = down(torch.nn.functional.silu(up(h))) + h
        h.sum().backward()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _decode(stop) -> None:
    """Until ``stop`` is set, what decoding does to memory: a batch of 32 rows through 530 MB of weights, one torch
    thread (each SmolLM2 decode step reads all its float32 weights)."""
    import torch

    torch.set_num_threads(1)
    weights = [torch.randn(576, 1536) for _ in range(150)]
    x = torch.randn(32, 576)
    while not stop.is_set():
        for w in weights:
            x @ w


def contention() -> dict[str, float]:
    """Median seconds of :func:`_update_seconds` alone, beside a decoding process and beside a decoding thread of the
    same process: how much of async's loss is the machine (both) and how much the interpreter lock (the thread's
    extra over the process's)."""
    import multiprocessing
    import threading

    figures = {"alone": _update_seconds()}
    for name, event, worker in (("beside a process", multiprocessing.Event(), multiprocessing.Process),
                                ("beside a thread", threading.Event(), threading.Thread)):  # fmt: skip
        other = worker(target=_decode, args=(event,))
        other.start()
        time.sleep(3)  # the decoder's weights are built and it is streaming
        figures[name] = _update_seconds()
        event.set()
        other.join()
    return figures


def final_pass_at_1(model: Path, limit: int) -> float:
    """pass@1 (4 samples at T = 0.8, 128 tokens) of ``model`` on the first ``limit`` tiny_n3 puzzles (held out)."""
    report = model.parent / "final_eval.json"
    argv = [sys.executable, "-m", "countdown_env.cli", "eval", "--model", str(model), "--split",
            str(ROOT / "datasets" / "tiny_n3.jsonl"), "--limit", str(limit), "--samples", "4", "--temperature", "0.8",
            "--max-new-tokens", "128", "--out", str(report)]  # fmt: skip
    subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(report.read_text())["overall"]["pass@1"]


def summarize(paths: list[Path]) -> dict[str, dict]:
    """pass@1 per arm over the seeds of several result files (``--out`` of earlier runs of the same settings): the
    mean with its Student t 95 % interval over seeds, and each async arm's paired difference from ``sync`` over the
    seeds both ran."""
    from learners.pipeline.evaluation.statistics import mean_ci

    by_arm: dict[str, dict[int, float]] = {}
    for path in paths:
        for arm, rows in json.loads(path.read_text())["arms"].items():
            for row in rows:
                if row.get("pass@1") is not None:
                    by_arm.setdefault(arm, {})[row["seed"]] = row["pass@1"]
    summary = {}
    for arm, seeds in by_arm.items():
        summary[arm] = {"seeds": sorted(seeds), "pass@1": mean_ci(list(seeds.values()))}
        shared = sorted(set(seeds) & set(by_arm.get("sync", {}))) if arm != "sync" else []
        if shared:
            summary[arm]["minus_sync"] = mean_ci([seeds[s] - by_arm["sync"][s] for s in shared])
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--eval-limit", type=int, default=64, help="held-out puzzles of the final eval (0: none)")
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--out", type=Path, help="write every figure as JSON here")
    parser.add_argument("--summarize", type=Path, nargs="+", help="run nothing: pass@1 over these result files' seeds")
    parser.add_argument(
        "--contention",
        action="store_true",
        help="run nothing else: an update's slowdown beside a "
        "decoding process and beside a decoding thread (is it the machine or the interpreter lock?)",
    )
    args = parser.parse_args(argv)
    if args.contention:
        figures = contention()
        for name, seconds in figures.items():
            print(f"update {name:16s}: {seconds:.3f} s ({seconds / figures['alone']:.2f}x alone)")
        return 0
    if args.summarize:
        for arm, figures in summarize(args.summarize).items():
            mean, low, high = figures["pass@1"]
            line = f"{arm:10s}: pass@1 {mean:.3f} [{low:.3f}, {high:.3f}] over seeds {figures['seeds']}"
            if "minus_sync" in figures:
                line += " ; minus sync {:+.3f} [{:+.3f}, {:+.3f}]".format(*figures["minus_sync"])
            print(line)
        return 0

    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as work:
        for seed in args.seeds:
            for arm in args.arms:
                out = Path(work) / f"{arm}-{seed}".replace(" ", "_")
                figures = run_arm(args.model, ARMS[arm], args.steps, seed, args.eval_limit, out)
                results.setdefault(arm, []).append(figures)
                print(f"{arm:10s} seed {seed}: {figures['samples_per_hour']:8.0f} samples/h "
                      f"({figures['steps_per_hour']:.1f} steps/h, loop {figures['train_runtime']:.0f} s of "
                      f"{figures['wall_seconds']:.0f} s), cores busy {[round(b, 2) for b in figures['core_busy']]}, "
                      f"staleness {figures['staleness'] or '-'}, dropped {figures['dropped']:.0f}, "
                      f"waited {figures['wait_seconds']:.0f} s, pass@1 {figures['pass@1']}", flush=True)  # fmt: skip
                if figures["generate_seconds"] is not None:
                    print(f"{'':10s} per step (median): generate {figures['generate_seconds']:.1f} s at CPU share "
                          f"{figures['generate_cpu_share']:.2f}, train {figures['train_seconds'] or 0:.1f} s at CPU "
                          f"share {figures['train_cpu_share'] or 0:.2f}", flush=True)  # fmt: skip
    rates = {arm: float(np.mean([r["samples_per_hour"] for r in rows])) for arm, rows in results.items()}
    baselines = {"sync": ("ratio_to_sync", "sync"), "sync 2 threads": ("ratio_to_sync_2_threads", "sync on 2 threads")}
    summary = {"model": args.model, "steps": args.steps, "seeds": args.seeds, "arms": results}
    for arm, rows in results.items():
        rate = rates[arm]
        passes = [r["pass@1"] for r in rows if r["pass@1"] is not None]
        line = f"{arm:10s}: {rate:8.0f} samples/h"
        for baseline, (key, label) in baselines.items():
            if baseline in rates:
                summary.setdefault(key, {})[arm] = rate / rates[baseline]
                line += f" = {rate / rates[baseline]:.2f}x {label}"
        if passes:
            line += f"; pass@1 {np.mean(passes):.3f} (seeds {', '.join(f'{p:.3f}' for p in passes)})"
        print(line)
    ceiling = overlap_ceiling(results.get("async K=0", []))
    if ceiling:
        summary["overlap_ceiling"] = ceiling
        print(f"overlap ceiling from async K=0's split: (G + U) / max(G, U) = {ceiling:.2f}x sync")
    if args.out:
        from countdown_env.helpers.atomic import write_text
        from learners.pipeline.machine import cpu_record

        summary["cpu"] = cpu_record()
        write_text(args.out, json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
