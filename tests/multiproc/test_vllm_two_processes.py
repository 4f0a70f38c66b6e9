"""TRL's colocate mode under 2 CPU processes: each process generates with an engine of its own (vLLM's CPU build,
``vllm_tensor_parallel_size: 1``), and the project's weight sync keeps both engines on the policy.

The check is tests/integration/test_vllm.py's (its run, its tolerances, which a run without the sync or with vLLM's
reload
alone fails there): after each update the sampling log-probability of every sampled token under the engine that
sampled it matches the trainer's; TRL gathers both processes' differences before it logs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_launch import free_port, run

pytest.importorskip("vllm")
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("vllm_sync_run.py")


def test_two_processes_each_with_a_colocated_engine_stay_in_sync(tiny_model_dir, tmp_path):
    from tests.integration.test_vllm import synced

    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    launcher += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    run([*launcher, "--main_process_port", str(free_port()), str(SCRIPT), str(tiny_model_dir), str(tmp_path)])
    record = json.loads((tmp_path / "sync.json").read_text())
    assert record["processes"] == 2 and len(record["means"]) == 4  # every step after the first update
    assert synced(record["means"], record["maxes"]), record
