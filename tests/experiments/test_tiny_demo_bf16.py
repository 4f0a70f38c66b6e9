"""The committed bf16 tiny-demo seeds (experiments/results/tiny_demo_bf16): each summary's pass@1 and gain come back
from its per-puzzle evals, and the README's mean over seeds from the summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "experiments" / "results" / "tiny_demo_bf16"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_seeds_figures_come_back_from_its_per_puzzle_evals(seed):
    from countdown_env.helpers.jsonl import read_jsonl

    summary = json.loads((FOLDER / f"seed-{seed}" / "summary.json").read_text())
    means = {}
    for name in ("before", "after"):
        rows = read_jsonl(FOLDER / f"seed-{seed}" / f"eval_{name}.jsonl.gz")
        assert len(rows) == 512 and all(len(r["correct"]) == 4 for r in rows)
        means[name] = sum(sum(r["correct"]) / 4 for r in rows) / len(rows)
        assert summary[name]["pass@1"] == pytest.approx(means[name])
    assert summary["gain"]["pass@1"] == pytest.approx(means["after"] - means["before"])
    assert summary["precision"] == "bf16"


def test_the_readme_states_the_mean_gain_over_seeds():
    from learners.pipeline.evaluation.statistics import mean_ci

    gains = [json.loads((FOLDER / f"seed-{s}" / "summary.json").read_text())["gain"]["pass@1"] for s in range(3)]
    mean, low, high = mean_ci(gains)
    assert f"**{mean:+.3f} [{low:+.3f}, {high:+.3f}]**" in (FOLDER / "README.md").read_text()
