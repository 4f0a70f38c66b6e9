"""Group statistics in seam 1 are identical under one process and under two (groups split across processes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from two_process_launch import one_and_two_processes

SCRIPT = Path(__file__).with_name("group_stats_run.py")


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
    single, double = one_and_two_processes(SCRIPT, tiny_model_dir, tmp_path)

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
