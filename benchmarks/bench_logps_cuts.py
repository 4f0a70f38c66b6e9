"""The base trainer's log-probabilities against TRL's own call, one micro-batch forward + backward (issue 63 item 3).

``CountdownGRPOTrainer._get_per_token_logps_and_entropies`` runs TRL's fused LM head on the completion tokens only
(TRL scores every position off Triton devices) and skips PEFT's input casts under bf16 autocast. This script builds
the SmolLM2 warm start's trainer (``cpu-smollm2-vllm``: LoRA r16 on every linear layer; without vLLM, which this
call does not use), takes one micro-batch shaped like a Countdown step's (8 rows, 47 prompt tokens, completions of
40-128 tokens right-padded to 128), and alternates the two calls in one process, so that a change of load on the
machine falls on both alike. It prints the largest difference of log-probabilities and gradients between them, the
median seconds of each and their ratio; it asserts nothing.

    python benchmarks/bench_logps_cuts.py --precision bf16
    python benchmarks/bench_logps_cuts.py --precision fp32 --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROMPT, COMPLETION, ROWS = 47, 128, 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="bf16")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each, alternated")
    args = parser.parse_args()

    import torch
    from trl import GRPOTrainer

    from learners.pipeline.runs.driver import build_trainer
    from learners.pipeline.runs.run_config import RunConfig

    torch.set_num_threads(args.threads)
    sets = ["trainer.use_vllm=false", "eval.every=0"]
    run = RunConfig.load("cpu-smollm2-vllm", sets=sets, flags={"precision": args.precision})
    with tempfile.TemporaryDirectory() as tmp:
        trainer = build_trainer(run, tmp)
    model = trainer.model
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(100, 40000, (ROWS, PROMPT + COMPLETION), generator=generator)
    mask = torch.ones_like(input_ids)
    for row, length in enumerate(torch.randint(40, COMPLETION + 1, (ROWS,), generator=generator).tolist()):
        mask[row, PROMPT + length :] = 0
    completion_mask = mask[:, PROMPT:].bool()

    def call(method):
        model.zero_grad(set_to_none=True)
        logps, _, _ = method(trainer, model, input_ids, mask, COMPLETION, compute_entropy=True)
        (logps * completion_mask).sum().backward()
        return logps.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    calls = {
        "ours": type(trainer)._get_per_token_logps_and_entropies,
        "trl": GRPOTrainer._get_per_token_logps_and_entropies,
    }
    ours, trl = call(calls["ours"]), call(calls["trl"])  # also the warm-up of each
    logp_diff = (ours[0] - trl[0])[completion_mask].abs().max().item()
    grad_diff = max(
        ((a - b).abs().max() / b.abs().max().clamp(min=1e-30)).item() for a, b in zip(ours[1], trl[1], strict=True)
    )
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, method in calls.items():
            start = time.perf_counter()
            call(method)
            seconds[name].append(time.perf_counter() - start)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"{args.precision}, {args.threads} thread(s), {ROWS} rows x ({PROMPT} + {COMPLETION}) tokens, "
          f"{int(completion_mask.sum())} completion tokens")  # fmt: skip
    print(f"max |log p ours - log p TRL| {logp_diff:.2e}; largest gradient difference / its max {grad_diff:.2e}")
    print(f"forward + backward: ours {median['ours']:.2f} s, TRL's {median['trl']:.2f} s "
          f"(TRL / ours {median['trl'] / median['ours']:.2f}x; each the median of {args.repeats})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
