"""R2's training puzzles: the learnable band of the SmolLM2 warm start (those it solves 1 to 3 times in 4).

With binary rewards a GRPO group whose samples all agree has zero advantage and teaches nothing. A pool of puzzles
of the warm start's training distribution (the train split of tiny_n3's spec, drawn with ``--seed``, disjoint from
tiny_n3) is sampled ``--samples`` times each at ``--temperature`` (R2's training temperature) with vLLM; the puzzles
solved at least once and at most ``samples - 1`` times form the band. Writes, atomically:

* ``OUT/band.jsonl``: the band's puzzles (``numbers``, ``target``), the ``--train-file`` of R2's runs;
* ``OUT/pool_eval.json``: the pool's per-puzzle results (every sample's verdict and length), the pool's pass@1 and
  the share of mixed groups before the filter (and, by construction, 1.0 after it at this group size).

Run (about 20 minutes for 512 puzzles x 4 on one thread here)::

    python experiments/r2_smollm2/learnable_band.py --model smollm2-135m-warm-start --pool 512 \\
        --out experiments/r2_smollm2/band
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def band_of(puzzles: list[dict], samples: int) -> list[dict]:
    """The puzzles of an eval report's per-puzzle list solved at least once and at most ``samples - 1`` times."""
    return [{"numbers": p["numbers"], "target": p["target"]} for p in puzzles if 0 < sum(p["correct"]) < samples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-warm-start")
    parser.add_argument("--pool", type=int, default=512, help="puzzles sampled (default 512)")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1, help="seed of the pool's draw (default 1)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.samples < 2:
        parser.error("--samples must be >= 2 (a band needs a mixed group)")

    import dataclasses

    from countdown_env.helpers.atomic import atomic_dir
    from countdown_env.helpers.jsonl import write_jsonl
    from countdown_env.splits import SplitSpec, build_split_records
    from countdown_env.splits.eval_sets import EVAL_SETS
    from learners.pipeline.data import model_task
    from learners.pipeline.evaluation.eval_models import model_sampler
    from learners.pipeline.evaluation.evaluate import evaluate
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    model_dir = Path(resolve_model(args.model))
    spec = EVAL_SETS["tiny_n3"]
    pool_spec = SplitSpec(task=dataclasses.replace(spec.task, seed=args.seed), train_size=args.pool,
                          eval_size=0, exclude=eval_puzzles("tiny_n3"))  # fmt: skip
    pool = build_split_records(pool_spec, progress=False)["train"]
    tokenizer = load_tokenizer(model_dir)
    sampler = model_sampler(model_dir, tokenizer, "vllm", progress=True, precision="fp32")  # as registered
    try:
        report = evaluate(sampler, tokenizer, pool, task=model_task(model_dir), samples=args.samples,
                          temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=0,
                          per_puzzle=True)  # fmt: skip
    finally:
        sampler.close()
    band = band_of(report["puzzles"], args.samples)
    mixed = len(band) / len(report["puzzles"])
    summary = {"model": args.model, "pool": len(pool), "pool_seed": args.seed, "samples": args.samples,
               "temperature": args.temperature, "max_new_tokens": args.max_new_tokens,
               "pool_pass@1": report["overall"]["pass@1"], "pool_pass@1_ci95": report["overall"]["pass@1_ci95"],
               "band_puzzles": len(band), "mixed_share_before": mixed, "mixed_share_after": 1.0,
               "generated_tokens_per_second": report["generated_tokens_per_second"],
               "puzzles": report["puzzles"]}  # fmt: skip
    with atomic_dir(args.out, owned=("band.jsonl", "pool_eval.json")) as out:
        write_jsonl(band, out / "band.jsonl")
        (out / "pool_eval.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"band: {len(band)} of {len(pool)} puzzles (mixed share of {args.samples}-sample groups {mixed:.3f}); "
          f"pool pass@1 {summary['pool_pass@1']:.3f}", file=sys.stderr)  # fmt: skip
    return 0


def eval_puzzles(name: str) -> list[tuple[tuple[int, ...], int]]:
    """The committed eval set's puzzles, excluded from the pool (as the split builder's ``exclude``)."""
    from countdown_env.splits.eval_sets import load_eval_set

    return [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(name, as_dataset=False)]


if __name__ == "__main__":
    sys.exit(main())
