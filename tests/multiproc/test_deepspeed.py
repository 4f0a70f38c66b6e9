"""DeepSpeed ZeRO-3 on CPU (2 processes, deepspeed's CPU accelerator) through ``countdown train``: T-SPMO with replay
(each process replays its own number of rows while every ZeRO-3 forward is a collective) and an eval every step.

Runs only where ``deepspeed`` is installed (not in CI: ``pip install deepspeed``; README, "Scaling out")."""

from __future__ import annotations

import json
import sys

import pytest
from cli_launch import ACCELERATE_CONFIGS, finish, free_port, start

pytest.importorskip("deepspeed")


@pytest.mark.slow
def test_zero3_trains_t_spmo_with_replay_and_evals_on_cpu(tmp_path):
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ACCELERATE_CONFIGS / "zero3.yaml")]
    cmd += ["--num_processes", "2", "--mixed_precision", "no", "--main_process_port", str(free_port())]
    cmd += ["--module", "countdown_env.cli"]
    sets = ["data.train_size=8", "data.eval_size=4", "trainer.max_completion_length=96", "trainer.num_generations=4",
            "trainer.per_device_train_batch_size=4", "trainer.logging_steps=1", "trainer.replay_success=1",
            "trainer.replay_failure=1", "eval.every=1", "eval.samples=2", "eval.max_new_tokens=96"]  # fmt: skip
    cmd += ["train", "--learner", "t_spmo", "--config", "cpu-tiny", "--model", "warm-start", "--max-steps", "2"]
    cmd += ["--output-dir", str(tmp_path / "run"), "--no-progress", *[x for s in sets for x in ("--set", s)]]
    code, _, err = finish(start(cmd))
    assert code == 0, err[-4000:]
    assert "asked for DeepSpeed" not in err  # DeepSpeed itself ran (its CPU accelerator), not a DDP stand-in
    history = json.loads((tmp_path / "run" / "log_history.json").read_text())
    assert sorted(e["step"] for e in history if "eval_pass@1" in e) == [0, 1, 2]  # one eval per step, logged once
    assert sum(e.get("tspmo/replay_rows", 0) for e in history) > 0
