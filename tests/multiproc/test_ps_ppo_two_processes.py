"""PS-PPO's survival functions are identical under one process and under two (a group split across ranks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from two_process_launch import one_and_two_processes

SCRIPT = Path(__file__).with_name("ps_ppo_survival_run.py")


@pytest.mark.slow
def test_survival_matches_between_one_and_two_processes(tiny_model_dir, tmp_path):
    single, double = one_and_two_processes(SCRIPT, tiny_model_dir, tmp_path)

    assert {r["processes"] for r in double.values()} == {2}
    assert single.keys() == double.keys() and len(single) == 2 * 12
    # The design actually ran: some group is mixed and some ξ is below 1 (budget 2 < completion lengths).
    assert any(min(r["survival"]) < 1 for r in single.values())
    for key, a in single.items():
        b = double[key]
        assert a["reward"] == b["reward"], key
        assert a["survival"] == pytest.approx(b["survival"], rel=1e-4, abs=1e-6), key
    # Rows of one group share ξ over their common length.
    for (step, row), a in single.items():
        first = single[(step, row - row % 4)]["survival"]
        n = min(len(first), len(a["survival"]))
        assert a["survival"][:n] == pytest.approx(first[:n], rel=1e-6), (step, row)
