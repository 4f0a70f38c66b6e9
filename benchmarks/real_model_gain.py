"""R1 of docs/experiments.md: the pass@1 gain of RL on the real pretrained model, read from its ``countdown compare``
folder. Per seed, the eval at the last step minus the eval at step 0 on the same puzzles (``runs/LEARNER-sSEED/evals/
step-N.jsonl``); the statistic is the mean over seeds with a Student t 95 % interval over seeds
(``statistics.paired_seed_diff``: training variance inside), beside the puzzle bootstrap (``paired_bootstrap_diff``)
and the per-seed figures. Writes ``verdict.md`` and ``verdict.json`` into the folder.

    python benchmarks/real_model_gain.py benchmarks/results/r1_smollm2_grpo [--learner grpo]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def step_files(run: Path) -> dict[int, Path]:
    return {int(p.stem.split("-")[1]): p for p in (run / "evals").glob("step-*.jsonl")}


def gain(folder: Path, learner: str, k: int = 1) -> dict:
    """Per-seed and pooled gain of pass@k between step 0 and the last evaluated step of every finished run."""
    from learners.pipeline.evaluation.statistics import paired_bootstrap_diff, paired_seed_diff, puzzle_scores

    first, last, per_seed = {}, {}, {}
    for run in sorted((folder / "runs").glob(f"{learner}-s*")):
        if not (run / "DONE").is_file():
            continue
        seed = int(run.name.rsplit("-s", 1)[1])
        files = step_files(run)
        keys0, scores0 = puzzle_scores(files[0], k)
        keys1, scores1 = puzzle_scores(files[max(files)], k)
        if keys0 != keys1:
            raise ValueError(f"{run}: the step-0 and final evals cover different puzzles")
        first[seed], last[seed] = scores0, scores1
        per_seed[seed] = {"step": max(files), "start": float(scores0.mean()), "end": float(scores1.mean()),
                          "gain": float((scores1 - scores0).mean())}  # fmt: skip
    if not per_seed:
        raise ValueError(f"no finished {learner} run in {folder / 'runs'}")
    t_gain = paired_seed_diff(last, first)
    boot = paired_bootstrap_diff(last, first)
    return {
        "learner": learner,
        "k": k,
        "seeds": per_seed,
        "gain_t": {"mean": t_gain[0], "low": t_gain[1], "high": t_gain[2], "seeds": t_gain[3]},
        "gain_puzzle_bootstrap": {"mean": boot[0], "low": boot[1], "high": boot[2]},
        "puzzles": int(next(iter(first.values())).size),
    }


def markdown(result: dict, command: str | None) -> str:
    t, boot = result["gain_t"], result["gain_puzzle_bootstrap"]
    k = result["k"]
    lines = [
        f"# pass@{k} gain of `{result['learner']}` from step 0 ({result['puzzles']} puzzles per eval)",
        "",
        "| seed | final step | pass@1 at step 0 | at the final step | gain |".replace("pass@1", f"pass@{k}"),
        "| --- | --- | --- | --- | --- |",
    ]
    for seed, row in sorted(result["seeds"].items()):
        lines.append(f"| {seed} | {row['step']} | {row['start']:.3f} | {row['end']:.3f} | {row['gain']:+.3f} |")
    lines += [
        "",
        f"Gain over {t['seeds']} seeds: **{t['mean']:+.3f}** [{t['low']:+.3f}, {t['high']:+.3f}] (Student t 95 %, "
        f"over seeds); puzzle bootstrap {boot['mean']:+.3f} [{boot['low']:+.3f}, {boot['high']:+.3f}].",
        "",
        "Learning shown (the registered rule): "
        + ("**yes**: the t interval lies above 0." if t["low"] > 0 else "**no**: the t interval reaches 0 or below."),
    ]
    if command:
        lines += ["", f"Command: `{command}`"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the countdown compare folder")
    parser.add_argument("--learner", default="grpo")
    args = parser.parse_args()
    from countdown_env.atomic import write_text

    folder = Path(args.folder)
    result = gain(folder, args.learner)
    settings = folder / "compare.json"
    command = None
    if settings.is_file():
        from learners.pipeline.compare.settings import CompareSettings

        command = CompareSettings(**json.loads(settings.read_text())).command()
    text = markdown(result, command)
    write_text(folder / "verdict.md", text)
    write_text(folder / "verdict.json", json.dumps(result, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
