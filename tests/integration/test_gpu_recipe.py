"""The GPU recipe ``qwen2.5-3b-tinyzero-vllm`` (learners/pipeline/configs/): its task is the ``tinyzero-3to4`` preset,
its eval split is the committed ``datasets/tinyzero_3to4.jsonl``, and it trains on the CPU at smoke size with the
tiny model (model, sizes and vLLM overridden; nothing else of the recipe changed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RECIPE = "qwen2.5-3b-tinyzero-vllm"
COMMITTED = Path(__file__).resolve().parents[2] / "datasets" / "tinyzero_3to4.jsonl"


def committed_puzzles() -> list[tuple[list[int], int]]:
    return [(r["numbers"], r["target"]) for r in map(json.loads, COMMITTED.read_text().splitlines())]


def test_the_recipe_trains_the_tinyzero_task_and_evaluates_on_the_committed_set():
    from countdown_env.splits import build_split_records
    from countdown_env.task import CountdownTask
    from countdown_env.task_presets import task_preset
    from learners.pipeline.runs.config import load_config
    from learners.pipeline.runs.driver import task_split_spec

    config = load_config(RECIPE)
    task = CountdownTask.from_dict(config["task"])
    assert task == task_preset("tinyzero-3to4")
    assert config["model"] == "Qwen/Qwen2.5-3B-Instruct" and config["trainer"]["use_vllm"] is True
    built = build_split_records(task_split_spec(task, 200, config["data"]["eval_size"]))
    assert [(r["numbers"], r["target"]) for r in built["test"]] == committed_puzzles()
    held_out = {(tuple(sorted(n)), t) for n, t in committed_puzzles()}
    assert not any((tuple(sorted(r["numbers"])), r["target"]) in held_out for r in built["train"])


SMOKE = [
    "model=tiny",
    "data={train_size: 16, eval_size: 4}",
    "eval.every=2",
    "eval.samples=2",
    "eval.max_new_tokens=8",
    "eval.limit=4",
    "eval.batch_size=4",
    "trainer.max_steps=2",
    "trainer.per_device_train_batch_size=8",
    "trainer.gradient_accumulation_steps=1",
    "trainer.num_generations=4",
    "trainer.max_completion_length=8",
    "trainer.use_vllm=false",
    "trainer.save_steps=2",
    "trainer.disable_tqdm=true",
]


@pytest.mark.slow  # ~15 s: the TRL import and two GRPO steps of the tiny model
def test_the_recipe_runs_on_the_cpu_at_smoke_size(tmp_path):
    from countdown_env.cli import main

    out = tmp_path / "run"
    args = ["train", "--learner", "grpo", "--config", RECIPE, "--output-dir", str(out)]
    assert main(args + [x for o in SMOKE for x in ("--set", o)]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 2
    resolved = json.loads((out / "resolved_config.json").read_text())
    assert resolved["task"]["format_score"] == 0.1 and resolved["task"]["use_all_numbers"] is True
    assert resolved["trainer"]["beta"] == 0.04 and resolved["trainer"]["lr_scheduler_type"] == "cosine"
    evaluated = [
        (r["numbers"], r["target"]) for r in map(json.loads, (out / "data" / "test.jsonl").read_text().split("\n")[:-1])
    ]
    assert evaluated == committed_puzzles()[:4]  # the committed set's first puzzles
    history = json.loads((out / "log_history.json").read_text())
    assert [e["step"] for e in history if "eval_pass@1" in e] == [0, 2]


def smoke_script():
    from tests.scripts import load_script

    return load_script("benchmarks/gpu_recipe_smoke.py")


def test_the_device_script_reads_trls_step_times_and_refuses_a_machine_without_a_gpu(tmp_path, capsys):
    script = smoke_script()
    log = "\n".join([
        "{'loss': '0.1', 'step_time': '12.5', 'epoch': '0.1'}",
        "noise {'step_time': '99'}",  # not a log dict line
        "{'eval_pass@1': '0', 'epoch': 0}",
        "{'loss': '0', 'step_time': '11.25'}",
    ])  # fmt: skip
    assert script.step_times(log) == [12.5, 11.25]
    assert script.main(["--out", str(tmp_path), "--steps", "0"]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    assert script.main(["--out", str(tmp_path)]) == 2  # this machine has no CUDA GPU
    assert "no CUDA GPU" in capsys.readouterr().err and not list(tmp_path.iterdir())


@pytest.mark.slow  # ~25 s: builds a 2-layer model and runs the recipe 2 steps through the CLI, as on the GPU
def test_the_device_script_plumbing_on_the_cpu(tmp_path):
    assert smoke_script().main(["--out", str(tmp_path), "--cpu-smoke"]) == 0
    result = json.loads((tmp_path / "gpu_recipe_smoke.json").read_text())
    assert result["steps_done"] == 2 and result["exit_status"] == 0 and result["seconds_per_step_median"] > 0
    assert result["backend"].startswith("transformers") and result["parameters"] == 81344
    assert "SCRATCH/model" in result["command"] and "/tmp" not in (tmp_path / "train.log").read_text()
