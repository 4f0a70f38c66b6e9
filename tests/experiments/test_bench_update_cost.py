"""Smoke test of benchmarks/bench_update_cost.py on tiny lengths (the figures themselves are not asserted)."""

from __future__ import annotations

import pytest

from tests.scripts import load_script

pytestmark = pytest.mark.slow


def test_benchmark_runs_and_prints_every_method(capsys):
    module = load_script("benchmarks/bench_update_cost.py")
    module.main(
        ["--lengths", "24", "48", "--budget", "8", "--rows", "8", "--group", "4", "--micro-batch", "4", "--prompt", "6"]
        + ["--repeats", "1", "--random-repeats", "2"]
    )
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines if line.split() and line.split()[0] in ("24", "48")]
    assert [r[1] for r in rows] == list(module.METHODS) * 2
    for row in rows:
        assert float(row[3]) > 0 and float(row[4]) > 0  # update seconds and ratio to GRPO
    assert all(float(r[4]) == 1.0 for r in rows if r[1] == "grpo")
