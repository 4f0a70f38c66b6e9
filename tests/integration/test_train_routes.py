"""``countdown train --rollouts env|tools`` (and the YAML ``rollouts:`` key): two steps on the tiny model."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("route", ["env", "tools"])
def test_train_two_steps_per_route(route, tiny_model_dir, toy_puzzles, tmp_path):
    from countdown_env.cli import main
    from countdown_env.helpers.jsonl import write_jsonl

    rows = [{"numbers": list(p.numbers), "target": p.target} for p in toy_puzzles]
    write_jsonl(rows, tmp_path / "train.jsonl")
    overrides = [
        f"model={tiny_model_dir}",
        "data=" + json.dumps({"train": str(tmp_path / "train.jsonl")}),
        "eval.every=0",
        "task.max_turns=2",
        "task.feedback=compact",
        "trainer.max_steps=2",
        "trainer.per_device_train_batch_size=8",
        "trainer.num_generations=4",
        "trainer.max_completion_length=12",
        "trainer.logging_steps=1",
        'trainer.save_strategy="no"',
        "trainer.disable_tqdm=true",
    ]
    args = [x for o in overrides for x in ("--set", o)]
    out = tmp_path / "run"
    assert main(["train", "--learner", "grpo", "--rollouts", route, "--output-dir", str(out), *args]) == 0
    history = json.loads((out / "log_history.json").read_text())
    reward_key = "rewards/env_episode_reward/mean" if route == "env" else "rewards/CountdownEnvironment/mean"
    assert sum(reward_key in entry for entry in history) == 2
    assert json.loads((out / "final" / "countdown_task.json").read_text())["max_turns"] == 2


def test_unknown_route_is_refused(tmp_path):
    from learners.pipeline.runs.checks import validate_config
    from learners.pipeline.runs.config import load_config

    config = load_config("cpu-tiny", ["rollouts=mdp"])
    with pytest.raises(ValueError, match="rollouts must be one of"):
        validate_config("grpo", config)


def test_compare_quick_with_env_rollouts(tiny_model_dir, tmp_path):
    from countdown_env.cli import main

    out = tmp_path / "compare"
    argv = ["compare", "--quick", "--seeds", "0", "--model", str(tiny_model_dir), "--out", str(out)]
    assert main([*argv, "--learners", "grpo", "--rollouts", "env"]) == 0
    settings = json.loads((out / "compare.json").read_text())
    assert settings.get("rollouts", settings.get("settings", {}).get("rollouts")) == "env"
