"""Amendments 3 and 4 (PROTOCOL.md): seeds 1-12 take seed 1's step-0 eval instead of sampling it again.

From seed 1 on, a seed's step-0 eval is the same draw whatever the training seed: every seed starts from the same
warm start, TRL builds the colocated engine with seed ``process_index`` (0), and vLLM's CPU build samples no
per-request seed, so the eval's ``seed`` reaches nothing (seeds 1 and 2 wrote byte-identical per-puzzle files). This
script prepares seed N's folder so that the registered command, started with ``--resume``, reads that draw back as
it reads a step-0 eval saved by an earlier process of its own folder, and trains without evaluating step 0. Since
amendment 4 each arm runs as its own process in its own folder::

    python experiments/r3_smollm2/reuse_step0.py --seed 3 --arm grpo   # writes $COUNTDOWN_CACHE/r3/seed-3-grpo
    # then the registered command with --learners grpo --seeds 3 --resume --out "$COUNTDOWN_CACHE/r3/seed-3-grpo"

Amendment 4 keeps that draw on another machine kind: there it is not the draw that machine would sample (its float
kernels differ) but the one amendment 3 fixed for seeds 3-12 before any of their data, and the statistics treat step 0
as one draw shared by the seeds. Seeds 1 and 2 (their lost arms restart) read their own draw: it is that one.

It writes, as one folder that appears whole (``$COUNTDOWN_CACHE/r3/seed-N-ARM`` unless ``--out``):

- ``step0-evals/seed-N.json``: seed 1's saved step-0 report (``seed-1/step0-eval.json.gz`` beside this file)
  unchanged — its ``seed`` field stays the eval seed that draw was requested with, its intervals and timing stay
  seed 1's — plus ``reused_from`` naming the source and the amendment;
- ``compare.json``: seed 1's recorded settings with ``seeds: [N]``, so that ``--resume`` accepts the folder (the
  settings check compares everything but the seeds).

It refuses, in one line and exit status 2: a seed outside 1-12; an ``--out`` that exists and is not empty; a
machine whose library versions (torch, transformers, TRL, PEFT, vLLM) differ from seed 1's run record. On another
CPU (model or recorded flags) it writes the folder and names the kind the draw was sampled on in ``reused_from``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent
SOURCE_SEED = 1
SOURCE = FOLDER / f"seed-{SOURCE_SEED}"
SEEDS = range(1, 13)
ARMS = ("grpo", "t_spmo", "s_grpo", "contrastive")
AMENDMENTS = "PROTOCOL.md amendments 3 and 4"


def source_report(source: Path = SOURCE) -> dict[str, Any]:
    """Seed 1's saved step-0 report, as its first process wrote it."""
    return json.loads(gzip.decompress((source / "step0-eval.json.gz").read_bytes()))


def source_machine(source: Path = SOURCE) -> dict[str, Any]:
    """CPU and library versions of seed 1's first run (the one that sampled the step-0 eval)."""
    record = json.loads((source / "runs" / f"grpo-s{SOURCE_SEED}" / "resolved_config.json").read_text())
    return {"cpu": record["cpu"], "versions": record["versions"]}


def this_machine() -> dict[str, Any]:
    """This machine's CPU and library versions, in the form a run record states them."""
    from learners.pipeline.machine import library_versions
    from learners.pipeline.precision import precision_record

    return {"cpu": precision_record("fp32", "fp32")["cpu"], "versions": library_versions()}


def machine_differences(here: dict[str, Any], there: dict[str, Any]) -> list[str]:
    """``field: here != there`` for each CPU or version field that differs."""
    differences = []
    for part in ("cpu", "versions"):
        for key in sorted(set(here[part]) | set(there[part])):
            if here[part].get(key) != there[part].get(key):
                differences.append(f"{part}.{key}: {here[part].get(key)!r} here, {there[part].get(key)!r} for seed 1")
    return differences


def seed_folder_files(seed: int, report: dict[str, Any], settings: dict[str, Any], sampled_on: str | None = None
                      ) -> dict[str, str]:  # fmt: skip
    """The files of seed ``seed``'s prepared folder, by relative path: the reused report and the settings.
    ``sampled_on``: the CPU the draw was sampled on, named in ``reused_from`` when this machine is another kind."""
    if seed not in SEEDS:
        raise ValueError(f"--seed {seed}: amendments 3 and 4 cover seeds {SEEDS.start}-{SEEDS.stop - 1} only")
    if settings.get("seeds") != [SOURCE_SEED]:
        raise ValueError(f"the source settings are for seeds {settings.get('seeds')}, not seed {SOURCE_SEED}")
    kind = f", sampled on another machine kind: {sampled_on}" if sampled_on else ""
    reused = {**report, "reused_from": f"seed {SOURCE_SEED}'s step-0 eval ({AMENDMENTS}{kind})"}
    seed_settings = {**settings, "seeds": [seed]}
    return {
        f"step0-evals/seed-{seed}.json": json.dumps(reused, separators=(",", ":")) + "\n",
        "compare.json": json.dumps(seed_settings, indent=2) + "\n",
    }


def prepare(seed: int, out: Path, *, source: Path = SOURCE, here: dict[str, Any] | None = None) -> Path:
    """Write seed ``seed``'s folder ``out`` from seed 1's folder ``source`` (refusals as in the module docstring;
    ``here``: this machine's record, read when not given); returns ``out``."""
    from countdown_env.helpers.atomic import atomic_dir

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} already exists: an arm's folder is prepared once, before its first process")
    there = source_machine(source)
    differences = machine_differences(this_machine() if here is None else here, there)
    versions = [d for d in differences if d.startswith("versions.")]
    if versions:
        raise ValueError("other library versions than seed 1's run, so its draw is not this code's: "
                         + "; ".join(versions))  # fmt: skip
    sampled_on = None
    if differences:
        sampled_on = f"{there['cpu']['model']} ({', '.join(there['cpu']['flags'])})"
    settings = json.loads((source / "compare.json").read_text())
    files = seed_folder_files(seed, source_report(source), settings, sampled_on)
    with atomic_dir(out) as tmp:
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text)
    return out


def main(argv: list[str] | None = None) -> int:
    from countdown_env.helpers.cache import cache_root

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True, help="the seed to prepare (1-12)")
    parser.add_argument("--arm", required=True, choices=ARMS, help="the arm whose own process uses the folder")
    parser.add_argument("--out", type=Path, default=None, help="its folder (default: $COUNTDOWN_CACHE/r3/seed-N-ARM)")
    args = parser.parse_args(argv)
    out = args.out if args.out is not None else cache_root() / "r3" / f"seed-{args.seed}-{args.arm}"
    try:
        prepare(args.seed, out)
    except (ValueError, OSError) as exc:
        print(f"reuse_step0: {exc}", file=sys.stderr)
        return 2
    print(f"{out}: seed {args.seed}'s step 0 is seed {SOURCE_SEED}'s saved eval; start the registered command with "
          f"--learners {args.arm} --seeds {args.seed} --resume --out {out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
