"""R2's shared step-0 eval (PROTOCOL.md): the start on the first 256 puzzles of tiny_n3 x 16 samples at T = 0.8, 128
new tokens, vLLM, written per puzzle in the layout of a compare run's ``evals/step-N.jsonl`` (``numbers``, ``target``,
``correct``, ``lengths``) so that each seed's end eval pairs with it puzzle by puzzle::

    python experiments/r2_smollm2/step0_eval.py --out experiments/r2_smollm2/step0_256x16.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-warm-start")
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="the engine's seed (on the CPU it alone sets the draw)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from countdown_env.helpers.atomic import write_text
    from countdown_env.splits.eval_sets import load_eval_set
    from learners.pipeline.data import model_task
    from learners.pipeline.evaluation.eval_models import model_sampler
    from learners.pipeline.evaluation.evaluate import evaluate
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    model_dir = resolve_model(args.model)
    tokenizer = load_tokenizer(model_dir)
    rows = load_eval_set("tiny_n3", as_dataset=False)[: args.limit]
    # float32, as registered (precision auto would be bf16 for SmolLM2 on an AMX CPU)
    sampler = model_sampler(model_dir, tokenizer, "vllm", progress=True, seed=args.seed, precision="fp32")
    try:
        report = evaluate(sampler, tokenizer, rows, task=model_task(model_dir), samples=args.samples, temperature=0.8,
                          max_new_tokens=128, seed=args.seed, per_puzzle=True)  # fmt: skip
    finally:
        sampler.close()
    write_text(args.out, "".join(json.dumps(p, separators=(",", ":")) + "\n" for p in report["puzzles"]))
    overall = report["overall"]
    print(f"pass@1 {overall['pass@1']:.4f} {overall['pass@1_ci95']}, format {overall['format_rate']:.3f}, "
          f"{report['generated_tokens_per_second']:.0f} tokens/s", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
