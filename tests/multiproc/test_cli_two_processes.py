"""``countdown train`` and ``countdown compare`` from the command line under ``accelerate launch`` with 2 CPU
processes (torchrun + gloo), against the same commands run as one process (in this process).

Decoding is greedy (:data:`cli_launch.GREEDY`), so a 2-process run generates exactly the 1-process run's batches and
every logged metric must agree: rewards, accuracy, lengths and token counts are gathered over both processes, and 12
rows of groups of 4 put one group on both processes. Each route runs once under 2 processes: ``dataset`` in the
kill-and-resume test, ``env`` in the comparison, ``tools`` in the two-machine loopback test. The first two launch
with the shipped ``ddp.yaml``, as docs/scaling.md prints them. (Groups with mixed rewards under 2 processes:
test_group_stats_two_processes.py and test_ps_ppo_two_processes.py.)
"""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import pytest
from cli_launch import DEADLINE_S, GREEDY, accelerate, finish, free_port, kill, run, start, wait_for, with_config

from countdown_env.cli import main
from learners.core.checkpoints import MANIFEST, checkpoint_step, newest_complete_checkpoint

pytestmark = pytest.mark.slow

GLOBAL_ROWS = 12  # 3 groups of 4 completions per step: under 2 processes the middle group is split 2 + 2
METRICS = (
    "reward",
    "countdown/accuracy",
    "countdown/format_rate",
    "countdown/truncation_rate",
    "countdown/mean_completion_length",
    "countdown/homogeneous_group_frac",
    "num_tokens",
    "eval_pass@1",
    "eval_format_rate",
)


def train_args(out: Path, route: str, steps: int, processes: int, save_steps: int | None = None) -> list[str]:
    """A greedy ``countdown train`` of the shipped warm start: ``GLOBAL_ROWS`` rows per step over ``processes``."""
    sets = [
        "data.train_size=16",  # 5 steps of 3 prompts in one epoch (resume across an epoch is issue 35's)
        "data.eval_size=4",
        "trainer.max_completion_length=96",  # the warm start's answers need ~80 tokens
        "trainer.num_generations=4",
        f"trainer.per_device_train_batch_size={GLOBAL_ROWS // processes}",
        "trainer.logging_steps=1",
        f"trainer.save_steps={save_steps or steps}",
        "eval.every=2",
        "eval.samples=2",
        "eval.max_new_tokens=96",
        GREEDY,
    ]
    args = ["train", "--config", "cpu-tiny", "--model", "warm-start", "--rollouts", route, "--max-steps", str(steps)]
    args += ["--output-dir", str(out), "--no-progress"]
    return args + [item for s in sets for item in ("--set", s)]


def metrics_by_step(out: Path) -> dict[int, dict[str, float]]:
    """The run's logged :data:`METRICS`, merged per step."""
    steps: dict[int, dict[str, float]] = {}
    for entry in json.loads((out / "log_history.json").read_text()):
        steps.setdefault(entry["step"], {}).update({k: v for k, v in entry.items() if k in METRICS})
    return steps


def assert_same_metrics(two: Path, one: Path) -> None:
    a, b = metrics_by_step(two), metrics_by_step(one)
    assert a.keys() == b.keys()
    for step in b:
        assert a[step].keys() == b[step].keys(), step
        assert a[step] == pytest.approx(b[step], rel=1e-6), step
    assert any(m.get("countdown/accuracy", 0) > 0 for m in b.values()) or "tools" in str(one)  # not all zeros


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """Runs as one plain process (in this process), made on first use: ``one_process(route, steps)``."""
    runs: dict[tuple[str, int], Path] = {}

    def get(route: str, steps: int) -> Path:
        if (route, steps) not in runs:
            out = tmp_path_factory.mktemp("one-process") / f"{route}-{steps}"
            assert main(train_args(out, route, steps, processes=1)) == 0
            runs[(route, steps)] = out
        return runs[(route, steps)]

    return get


def test_two_processes_resume_after_a_kill_and_match_one_process(tmp_path, one_process):
    out = tmp_path / "run"
    args = train_args(out, "dataset", steps=4, processes=2, save_steps=2)
    proc = start(with_config("ddp", free_port()) + args)  # the shipped ddp.yaml (docs/scaling.md): 2 processes
    wait_for(out / "checkpoint-2" / MANIFEST, proc)  # a complete checkpoint: written after both ranks' files
    kill(proc)  # SIGKILL to the launcher, torchrun and both ranks, mid-run
    proc.communicate()
    assert not (out / "summary.json").exists()
    manifest = json.loads((out / "checkpoint-2" / MANIFEST).read_text())
    assert {"rng_state_0.pth", "rng_state_1.pth", "model.safetensors"} <= set(manifest["files"])
    newest = newest_complete_checkpoint(out)

    stdout, stderr = run(with_config("ddp", free_port()) + args + ["--resume"])
    resumed = [line for line in stderr.splitlines() if "resuming from" in line]
    assert len(resumed) == 1 and resumed[0].endswith(str(newest)), resumed  # decided once, by the main process
    assert json.loads((out / "summary.json").read_text())["steps"] == 4
    assert stdout.count('"learner": "grpo"') == 1  # one summary, from the main process
    assert (out / "final" / "model.safetensors").is_file() and checkpoint_step(newest) >= 2
    # the resumed run's steps (after the checkpoint, on both ranks) and the ones before it match one process's run
    assert_same_metrics(out, one_process("dataset", 4))


def test_two_machines_on_loopback_match_one_process(tmp_path, one_process):
    out = tmp_path / "run"
    port, args = free_port(), train_args(out, "tools", steps=2, processes=2)
    machines = [start(accelerate(2, port, machines=2, machine_rank=rank) + args) for rank in (0, 1)]
    deadline = time.monotonic() + DEADLINE_S
    try:
        results = [finish(proc, deadline) for proc in machines]
    finally:
        for proc in machines:
            if proc.poll() is None:
                kill(proc)
    for rank, (code, _, err) in enumerate(results):
        assert code == 0, f"machine {rank}: exit {code}\n{err[-4000:]}"
    assert_same_metrics(out, one_process("tools", 2))


COMPARE = ["compare", "--quick", "--learners", "grpo", "--seeds", "0", "--rollouts", "env", "--prompts-per-step", "3",
           "--max-new-tokens", "96", "--no-progress", "--set", GREEDY]  # train's grammar  # fmt: skip


def test_compare_quick_with_two_processes_matches_one_process(tmp_path):
    assert main([*COMPARE, "--out", str(tmp_path / "one")]) == 0
    stdout, _ = run(with_config("ddp", free_port()) + [*COMPARE, "--out", str(tmp_path / "two")])  # the shipped one
    assert stdout.count('"finished": 1') == 1  # one report, from the main process

    def rows(name: str) -> list[dict]:
        with open(tmp_path / name / "results.csv", newline="") as f:
            return list(csv.DictReader(f))

    # pass@k of every eval, train reward and the token counters (summed over both processes) agree; not the time,
    # and not the forward columns: each process pads its micro-batches to its own longest row, so fewer
    uneven = ("wall_seconds", "forward_tokens")
    assert [{k: v for k, v in row.items() if k not in uneven} for row in rows("two")] == [
        {k: v for k, v in row.items() if k not in uneven} for row in rows("one")
    ]
    assert len(rows("one")) == 3
    for two, one in zip(rows("two"), rows("one"), strict=True):
        assert float(two["loss_tokens"]) <= float(two["forward_tokens"]) <= float(one["forward_tokens"])
    assert float(rows("one")[-1]["generated_tokens"]) > 0 and float(rows("one")[1]["train_reward"]) > 0
    run_one, run_two = (tmp_path / name / "runs" / "grpo-s0" for name in ("one", "two"))
    done_one, done_two = (json.loads((run / "DONE").read_text()) for run in (run_one, run_two))
    assert done_two["prompt_digest"] == done_one["prompt_digest"]  # the same prompts, in the same order
    assert [done["config"]["per_device_train_batch_size"] for done in (done_two, done_one)] == [6, 12]
    for step in (0, 1, 2):
        name = f"evals/step-{step}.jsonl"
        assert (run_two / name).read_text() == (run_one / name).read_text()


def test_a_launch_that_started_one_process_says_so(tmp_path):
    # without --multi_gpu, accelerate runs one process for --num_processes 2
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines", "1"]
    cmd += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port())]
    cmd += ["--module", "countdown_env.cli", "train", "--config", "cpu-tiny", "--output-dir", str(tmp_path), "--resume"]
    code, _, err = finish(start(cmd))
    assert code != 0  # the run itself stops: nothing to resume
    assert "asked for several processes but started one" in err and "--multi_gpu" in err
