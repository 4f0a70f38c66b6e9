"""R1 of docs/experiments.md: the pass@1 gain of RL on the real pretrained model, read from its ``countdown compare``
folder. Per seed, the eval at the last step minus the eval at step 0 on the same puzzles (``runs/LEARNER-sSEED/evals/
step-N.jsonl``); the statistic is the mean over seeds with a Student t 95 % interval over seeds
(``statistics.paired_seed_diff``: training variance inside) and its minimum detectable effect at 80 % power, beside
the puzzle bootstrap (``paired_bootstrap_diff``) and the per-seed figures. The bootstrap resamples puzzles jointly:
one set of puzzle indices per resample for every seed's step-0 and final evals, because the seeds evaluate the same
puzzles and R1's step-0 eval is one draw shared by every seed (TRL seeds each colocated engine with 0); resampled
independently per seed, that draw's noise would shrink by the square root of the number of seeds although it enters
every seed's gain. Per seed it also reports the share of eval completions that reached the token budget
(``max_new_tokens`` of the folder's ``compare.json``; a cut completion scores 0). Writes ``verdict.md`` and
``verdict.json`` into the folder.

    python experiments/real_model_gain.py experiments/results/r1_smollm2_grpo [--learner grpo]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countdown_env.helpers.jsonl import read_jsonl  # noqa: E402
from learners.pipeline.evaluation.statistics import eval_files  # noqa: E402


def cut_share(path: Path, budget: int | None) -> dict | None:
    """How many of an eval file's completions reached ``budget`` tokens (None without a budget or lengths)."""
    if budget is None:
        return None
    lengths = []
    for item in read_jsonl(path):
        if "lengths" not in item:
            return None
        lengths += item["lengths"]
    return {"cut": sum(n >= budget for n in lengths), "completions": len(lengths)}


def cut_words(cut: dict | None) -> str:
    return "-" if cut is None else f"{cut['cut']} of {cut['completions']} ({cut['cut'] / cut['completions']:.1%})"


def gain(folder: Path, learner: str, k: int = 1) -> dict:
    """Per-seed and pooled gain of pass@k between step 0 and the last evaluated step of every finished run."""
    from learners.pipeline.evaluation.statistics import (
        minimum_detectable_effect,
        paired_bootstrap_diff,
        paired_seed_diff,
        puzzle_scores,
    )

    budget = None
    if (folder / "compare.json").is_file():
        budget = json.loads((folder / "compare.json").read_text()).get("max_new_tokens")
    first, last, per_seed, puzzles = {}, {}, {}, None
    for run in sorted((folder / "runs").glob(f"{learner}-s*")):
        if not (run / "DONE").is_file():
            continue
        seed = int(run.name.rsplit("-s", 1)[1])
        files = eval_files(run)
        keys0, scores0 = puzzle_scores(files[0], k)
        keys1, scores1 = puzzle_scores(files[max(files)], k)
        if keys0 != keys1:
            raise ValueError(f"{run}: the step-0 and final evals cover different puzzles")
        if puzzles is not None and keys0 != puzzles:
            raise ValueError(
                f"{run}: its evals cover other puzzles than the other seeds' (the joint bootstrap needs one)"
            )
        puzzles = keys0
        first[seed], last[seed] = scores0, scores1
        per_seed[seed] = {"step": max(files), "start": float(scores0.mean()), "end": float(scores1.mean()),
                          "gain": float((scores1 - scores0).mean()), "cut_start": cut_share(files[0], budget),
                          "cut_end": cut_share(files[max(files)], budget)}  # fmt: skip
    if not per_seed:
        raise ValueError(f"no finished {learner} run in {folder / 'runs'}")
    t_gain = paired_seed_diff(last, first)
    boot = paired_bootstrap_diff(last, first, joint=True)
    return {
        "learner": learner,
        "k": k,
        "seeds": per_seed,
        "gain_t": {
            "mean": t_gain[0],
            "low": t_gain[1],
            "high": t_gain[2],
            "seeds": t_gain[3],
            "mde": minimum_detectable_effect([row["gain"] for row in per_seed.values()]),
        },  # fmt: skip
        "budget": budget,
        "gain_puzzle_bootstrap": {"mean": boot[0], "low": boot[1], "high": boot[2]},
        "puzzles": int(next(iter(first.values())).size),
    }


def markdown(result: dict, command: str | None) -> str:
    t, boot = result["gain_t"], result["gain_puzzle_bootstrap"]
    k = result["k"]
    lines = [
        f"# pass@{k} gain of `{result['learner']}` from step 0 ({result['puzzles']} puzzles per eval)",
        "",
        f"| seed | final step | pass@{k} at step 0 | at the final step | gain "
        f"| cut at the {result.get('budget')}-token budget: step 0 | final step |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for seed, row in sorted(result["seeds"].items()):
        lines.append(f"| {seed} | {row['step']} | {row['start']:.3f} | {row['end']:.3f} | {row['gain']:+.3f} "
                     f"| {cut_words(row.get('cut_start'))} | {cut_words(row.get('cut_end'))} |")  # fmt: skip
    lines += [
        "",
        f"Gain over {t['seeds']} seeds: **{t['mean']:+.3f}** [{t['low']:+.3f}, {t['high']:+.3f}] (Student t 95 %, "
        f"over seeds; minimum detectable effect at 80 % power {t['mde']:.3f}); puzzle bootstrap {boot['mean']:+.3f} "
        f"[{boot['low']:+.3f}, {boot['high']:+.3f}] (2000 resamples, one draw of puzzle indices per resample for "
        "every seed's step-0 and final evals: the seeds share the puzzles, and a step-0 eval shared by the seeds "
        "counts once). A cut completion scores 0.",
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
    from countdown_env.helpers.atomic import write_text

    folder = Path(args.folder)
    result = gain(folder, args.learner)
    settings = folder / "compare.json"
    command = None
    if settings.is_file():
        from learners.pipeline.compare.settings import CompareSettings

        command = CompareSettings(**CompareSettings.upgraded(json.loads(settings.read_text()))).command()
    text = markdown(result, command)
    write_text(folder / "verdict.md", text)
    write_text(folder / "verdict.json", json.dumps(result, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
