"""benchmarks/bench_async.py --summarize: pass@1 of sync and async arms over the seeds of several result files."""

from __future__ import annotations

import json
import math

import pytest

from tests.scripts import load_script


def test_summarize_pools_the_seeds_of_several_files_and_pairs_async_with_sync(tmp_path):
    from scipy.stats import t

    def rows(values):
        return [{"seed": seed, "pass@1": value} for seed, value in values.items()]

    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"arms": {"sync": rows({0: 0.30, 1: 0.34}), "async K=1": rows({0: 0.32, 1: 0.30})}}))
    second.write_text(json.dumps({"arms": {"sync": rows({2: 0.32}), "async K=1": rows({2: 0.35})}}))
    summary = load_script("benchmarks/bench_async.py").summarize([first, second])
    assert summary["sync"]["seeds"] == [0, 1, 2] and summary["async K=1"]["seeds"] == [0, 1, 2]
    mean, low, high = summary["sync"]["pass@1"]
    half = t.ppf(0.975, 2) * 0.02 / math.sqrt(3)  # values 0.30, 0.34, 0.32: mean 0.32, SD 0.02
    assert mean == pytest.approx(0.32) and (low, high) == (pytest.approx(0.32 - half), pytest.approx(0.32 + half))
    diff, _, _ = summary["async K=1"]["minus_sync"]  # +0.02, -0.04, +0.03 by seed
    assert diff == pytest.approx(0.01 / 3)
    assert "minus_sync" not in summary["sync"]


def test_the_overlap_ceiling_is_the_sum_of_the_two_phases_over_the_longer():
    ceiling = load_script("benchmarks/bench_async.py").overlap_ceiling
    rows = [{"generate_seconds": 10.0, "train_seconds": 30.0}, {"generate_seconds": 20.0, "train_seconds": 30.0}]
    assert ceiling(rows) == pytest.approx((15.0 + 30.0) / 30.0)  # the mean split over seeds: G 15 s, U 30 s
    assert ceiling([{"generate_seconds": 40.0, "train_seconds": 10.0}]) == pytest.approx(50.0 / 40.0)
    assert ceiling([{"generate_seconds": 5.0, "train_seconds": None}]) is None  # one step: nothing after the first
