"""PS-PPO's survival functions are identical under one process and under two (a group split across ranks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("ps_ppo_survival_run.py")
ROOT = Path(__file__).resolve().parents[2]


def _run(cmd, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd + [str(out_dir)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for f in sorted(out_dir.glob("rows-*.jsonl")) for line in f.read_text().splitlines()]
    return {(r["step"], r["row"]): r for r in rows}


@pytest.mark.slow
def test_survival_matches_between_one_and_two_processes(tiny_model_dir, tmp_path):
    single = _run([sys.executable, str(SCRIPT), str(tiny_model_dir)], tmp_path / "one")
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    launcher += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    launcher += ["--main_process_port", "29519"]
    double = _run(launcher + [str(SCRIPT), str(tiny_model_dir)], tmp_path / "two")

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
