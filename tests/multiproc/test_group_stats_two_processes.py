"""Group statistics in seam 1 are identical under one process and under two (groups split across processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("group_stats_run.py")
ROOT = Path(__file__).resolve().parents[2]


def _run(cmd, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd + [str(out_dir)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for f in sorted(out_dir.glob("rows-*.jsonl")) for line in f.read_text().splitlines()]
    return {(r["step"], r["row"]): r for r in rows}


def _check_against_rows(rows: dict) -> None:
    """The statistics each row was given equal those recomputed from all rows of its group."""
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in rows.values():
        groups.setdefault((r["step"], r["group"]), []).append(r)
    for members in groups.values():
        assert len(members) == 4
        rewards = [m["reward"] for m in members]
        mean = sum(rewards) / 4
        for m in members:
            assert m["group_mean"] == pytest.approx(mean)
            assert m["group_tokens"] == pytest.approx(sum(x["length"] for x in members))
            assert m["homogeneous"] == (len(set(rewards)) == 1)
            assert m["numbers"] == members[0]["numbers"]


@pytest.mark.slow
def test_group_statistics_match_between_one_and_two_processes(tiny_model_dir, tmp_path):
    single = _run([sys.executable, str(SCRIPT), str(tiny_model_dir)], tmp_path / "one")
    launcher = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        "29517",
    ]
    double = _run(launcher + [str(SCRIPT), str(tiny_model_dir)], tmp_path / "two")

    assert {r["processes"] for r in single.values()} == {1}
    assert {r["processes"] for r in double.values()} == {2}
    assert {r["distributed_type"] for r in double.values()} == {"DistributedType.MULTI_CPU"}
    assert single.keys() == double.keys() and len(single) == 2 * 12
    # a group spread over both processes exists (rows 4-7: 2 on each rank with 6 rows per rank)
    assert any(r["group"] == 1 for k, r in double.items() if k[1] < 6)
    assert any(r["group"] == 1 for k, r in double.items() if k[1] >= 6)
    for key, a in single.items():
        b = double[key]
        for field in ("group", "numbers", "reward", "length", "homogeneous"):
            assert a[field] == b[field], (key, field)
        for field in ("group_mean", "group_std", "group_tokens", "advantage"):
            assert a[field] == pytest.approx(b[field], abs=1e-5), (key, field)
    _check_against_rows(single)
    _check_against_rows(double)
