"""Run a worker script once as a plain process and once under two processes, and read back its rows.

Two processes on a machine without CUDA: ``accelerate launch --multi_gpu --num_processes 2`` (torchrun + gloo;
see probe_worker.py). Each worker writes ``rows-RANK.jsonl`` rows carrying ``step`` and ``row`` (global index).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def accelerate_launcher(port: int) -> list[str]:
    """The command prefix that starts a script in two CPU processes; ``port``: a free rendezvous port per test."""
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    launcher += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    return launcher + ["--main_process_port", str(port)]


def run_rows(cmd: list[str], out_dir: Path) -> dict[tuple[int, int], dict]:
    """Run ``cmd OUT_DIR`` from the repository root and return its rows keyed by (step, global row)."""
    out_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd + [str(out_dir)], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for f in sorted(out_dir.glob("rows-*.jsonl")) for line in f.read_text().splitlines()]
    return {(r["step"], r["row"]): r for r in rows}


def one_and_two_processes(script: Path, model_dir: Path, tmp_path: Path) -> tuple[dict, dict]:
    """The rows of ``script MODEL_DIR OUT_DIR`` run as one process and under two (see :func:`run_rows`), the two on
    a free port (a fixed one collides with a test running beside it)."""
    from cli_launch import free_port

    single = run_rows([sys.executable, str(script), str(model_dir)], tmp_path / "one")
    double = run_rows(accelerate_launcher(free_port()) + [str(script), str(model_dir)], tmp_path / "two")
    return single, double
