"""``experiments/real_model_gain.py``: the registered statistic of R1 (docs/experiments.md), on hand-made evals."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "real_model_gain", Path(__file__).resolve().parents[2] / "experiments" / "real_model_gain.py"
)
real_model_gain = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(real_model_gain)
gain, markdown = real_model_gain.gain, real_model_gain.markdown


def write_run(folder, seed, step, start, end):
    """A finished run whose two evals score 4 puzzles with these correct counts (of 4 samples each)."""
    run = folder / "runs" / f"grpo-s{seed}"
    (run / "evals").mkdir(parents=True)
    for s, counts in ((0, start), (step, end)):
        lines = [json.dumps({"numbers": [i, 2, 3], "target": 10 + i, "correct": [True] * c + [False] * (4 - c)})
                 for i, c in enumerate(counts)]  # fmt: skip
        (run / "evals" / f"step-{s}.jsonl").write_text("\n".join(lines) + "\n")
    (run / "DONE").write_text("{}")


def test_the_gain_is_the_mean_over_seeds_of_paired_differences_with_a_t_interval(tmp_path):
    write_run(tmp_path, 0, 30, [0, 1, 2, 4], [1, 1, 3, 4])  # +2 of 16 samples
    write_run(tmp_path, 1, 30, [0, 0, 2, 4], [0, 2, 2, 4])  # +2
    write_run(tmp_path, 2, 30, [1, 1, 2, 4], [1, 1, 3, 3])  # 0
    (tmp_path / "runs" / "grpo-s3" / "evals").mkdir(parents=True)  # unfinished (no DONE): left out
    result = gain(tmp_path, "grpo")
    per_seed = [2 / 16, 2 / 16, 0.0]
    mean = sum(per_seed) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_seed) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2 degrees of freedom)
    assert result["gain_t"]["seeds"] == 3 and sorted(result["seeds"]) == [0, 1, 2]
    assert result["gain_t"]["mean"] == pytest.approx(mean)
    assert result["gain_t"]["low"] == pytest.approx(mean - half) and result["gain_t"]["high"] == pytest.approx(
        mean + half
    )
    assert result["seeds"][0]["start"] == pytest.approx(7 / 16) and result["seeds"][0]["step"] == 30
    assert "**no**" in markdown(result, None)  # the interval reaches below 0


def test_evals_of_different_puzzles_are_refused(tmp_path):
    write_run(tmp_path, 0, 10, [0, 1, 2, 3], [0, 1, 2, 3])
    path = tmp_path / "runs" / "grpo-s0" / "evals" / "step-10.jsonl"
    path.write_text(path.read_text().replace('"target": 10', '"target": 99'))
    with pytest.raises(ValueError, match="different puzzles"):
        gain(tmp_path, "grpo")


def test_a_shared_step_0_draw_is_resampled_jointly_and_cut_completions_are_counted(tmp_path):
    # three seeds on one step-0 draw (as R1's colocated engines, all seeded 0); each seed's end differs
    starts = [0, 1, 0, 2, 1, 0, 0, 3]
    ends = ([1, 1, 0, 2, 2, 0, 1, 3], [0, 2, 1, 2, 1, 1, 0, 4], [0, 1, 0, 3, 1, 0, 0, 2])
    for seed, end in enumerate(ends):
        write_run(tmp_path, seed, 12, starts, end)
    run = tmp_path / "runs" / "grpo-s0" / "evals" / "step-12.jsonl"
    rows = [json.loads(line) for line in run.read_text().splitlines()]
    rows[0]["lengths"], rows[1]["lengths"] = [128, 50, 128, 60], [10, 20, 30, 40]
    for row in rows[2:]:
        row["lengths"] = [5, 5, 5, 5]
    run.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "compare.json").write_text(json.dumps({"max_new_tokens": 128}))
    result = gain(tmp_path, "grpo")
    # the joint bootstrap is the bootstrap of the per-puzzle mean over seeds of (end - start), computed here
    per_puzzle = np.mean([(np.array(e) - np.array(starts)) / 4 for e in ends], axis=0)
    means = per_puzzle[np.random.default_rng(5).integers(0, 8, size=(20000, 8))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    boot = result["gain_puzzle_bootstrap"]
    assert boot["mean"] == pytest.approx(per_puzzle.mean())
    assert boot["low"] == pytest.approx(low, abs=0.02) and boot["high"] == pytest.approx(high, abs=0.02)
    assert result["seeds"][0]["cut_end"] == {"cut": 2, "completions": 32}
    assert result["seeds"][1]["cut_end"] is None  # its evals carry no lengths
    assert "2 of 32 (6.2%)" in markdown(result, None)
