"""Progress lines when stderr is not a terminal (issue 36 item 9): long eval, SFT, builds and compare say where they
are, with rate and ETA, in a log; short jobs stay silent; a terminal keeps its tqdm bar."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_line_progress_prints_rate_and_eta_every_interval_and_a_last_line():
    from countdown_env.helpers.progress import LineProgress

    clock, out = FakeClock(), io.StringIO()
    display = LineProgress(200, "sampling", "completion", interval=30, stream=out, clock=clock)
    for _ in range(40):  # 40 completions in 20 s: under the interval, nothing yet
        clock.now += 0.5
        display.update()
    assert out.getvalue() == ""
    clock.now += 20  # 40 s in, 50 done: 1.25/s, 150 left -> 120 s
    display.update(10)
    assert out.getvalue() == "sampling: 50/200 completion (25%), 1.25 completion/s, ETA 2m 00s\n"
    clock.now += 10
    display.update(50)  # 10 s after the last line: no line
    assert out.getvalue().count("\n") == 1
    clock.now += 30
    display.set_postfix_str("pass@1 0.31")
    display.update(100)  # 80 s, 200 done
    assert out.getvalue().splitlines()[-1] == "sampling: 200/200 completion (100%), 2.5 completion/s [pass@1 0.31]"
    display.close()
    display.close()  # idempotent
    assert out.getvalue().splitlines()[-1] == "sampling: done, 200 completion in 1m 20s (2.5 completion/s)"

    quick = LineProgress(5, "quick", interval=30, stream=io.StringIO(), clock=FakeClock())
    for _ in range(5):
        quick.update()
    quick.close()
    assert quick.stream.getvalue() == ""  # a job shorter than the interval prints nothing at all


def test_progress_bar_chooses_by_terminal(monkeypatch):
    from countdown_env.helpers.progress import LineProgress, NoBar, progress_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert isinstance(progress_bar(3, "x"), LineProgress) and isinstance(progress_bar(3, "x", False), NoBar)
    assert "tqdm" in type(progress_bar(3, "x", True)).__module__  # asked for: a bar even into a log
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert "tqdm" in type(progress_bar(3, "x")).__module__


def test_compare_runs_print_step_lines_into_a_log(monkeypatch, capsys):
    from learners.pipeline.compare.run_progress import Progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.setenv("COUNTDOWN_PROGRESS_SECONDS", "0")
    progress = Progress(2)
    progress.start("gspo", 0, steps=4, first_step=2)
    progress.step()
    progress.step()
    progress.finish("done")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[1/2] gspo seed 0: 3/4 step (75%), ") and "ETA" in lines[0]
    assert lines[1].startswith("[1/2] gspo seed 0: 4/4 step (100%)")
    assert lines[-2].startswith("[1/2] gspo seed 0: done, 4 step in ") and lines[-1] == "[1/2] gspo seed 0: done"
    quiet = Progress(1, bars=False)  # --no-progress: no step lines
    quiet.start("grpo", 0, steps=2)
    quiet.step()
    quiet.finish("done")
    assert capsys.readouterr().err.splitlines() == ["[1/1] grpo seed 0: done"]


def test_training_gets_a_line_callback_only_off_a_terminal(monkeypatch, capsys):
    from types import SimpleNamespace

    from learners.pipeline.runs.trainer_progress import line_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    args = {}
    assert line_progress(args, "SFT") == [] and "disable_tqdm" not in args  # TRL's own bar on a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert line_progress({"disable_tqdm": True}, "SFT") == []  # --no-progress
    monkeypatch.setenv("COUNTDOWN_PROGRESS_SECONDS", "0")
    args = {}
    (callback,) = line_progress(args, "SFT")
    assert args["disable_tqdm"] is True  # no carriage-return bar in the log
    state = SimpleNamespace(max_steps=3, global_step=0)
    callback.on_train_begin(None, state, None)
    for _ in range(3):
        callback.on_step_end(None, state, None)
    callback.on_train_end(None, state, None)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("SFT: 1/3 step (33%)") and lines[-1].startswith("SFT: done, 3 step in")


def _progress_lines(args: list[str], prefix: str) -> list[str]:
    """``countdown ARGS`` with stderr piped (not a terminal) and a 0-second interval; its lines starting ``prefix``."""
    env = {**os.environ, "COUNTDOWN_PROGRESS_SECONDS": "0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "countdown_env.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [x for x in done.stderr.splitlines() if x.startswith(prefix)]


@pytest.mark.slow
def test_eval_and_builds_print_progress_lines_into_a_log(tiny_model_dir, tmp_path):
    """The real commands into a pipe, every update a line: a build, then an eval on its test split."""
    split = tmp_path / "split"
    lines = _progress_lines(["build-splits", "--n-numbers", "3", "--train", "6", "--eval", "2", "--value-range", "1",
                             "20", "--target-range", "10", "100", "--jsonl-only", "--out", str(split)],
                            "building puzzles: ")  # fmt: skip
    assert lines[0].startswith("building puzzles: 1/8 puzzle (12%), ") and "ETA" in lines[0]
    assert lines[-1].startswith("building puzzles: done, 8 puzzle in")
    lines = _progress_lines(["eval", "--model", str(tiny_model_dir), "--split", str(split / "test.jsonl"), "--samples",
                             "2", "--max-new-tokens", "4", "--batch-size", "2", "--out", str(tmp_path / "r.json")],
                            "sampling: ")  # fmt: skip
    assert lines[0].startswith("sampling: 2/4 completion (50%), ") and "ETA" in lines[0]
    assert lines[-1].startswith("sampling: done, 4 completion in")


def test_vllm_progress_counts_completions_in_lines_with_vllms_speed(monkeypatch, capsys):
    """The ``use_tqdm`` factory handed to ``vllm.LLM.generate``, driven as vLLM 0.31's ``_run_engine`` drives it: the
    prompts it renders pass through; the run's bar counts completions (a total of 3 prompts x 2 samples, 2 per
    finished prompt) and shows vLLM's tokens/s; ``--no-progress`` gives ``False`` (issue 44 item 11)."""
    from learners.sampling.vllm_progress import vllm_progress

    assert vllm_progress(False) is False
    monkeypatch.setenv("COUNTDOWN_PROGRESS_SECONDS", "0")
    factory = vllm_progress(None)  # stderr is captured: not a terminal, so lines
    prompts = [[1, 2], [3]]
    assert factory(prompts, desc="Rendering prompts") is prompts
    bar = factory(total=6, desc="Processed prompts", dynamic_ncols=True, postfix="est. speed input: 0.00 toks/s")
    for finished in range(3):
        bar.postfix = f"est. speed input: 1.00 toks/s, output: {finished}.00 toks/s"
        bar.update(2)
        assert bar.format_dict["elapsed"] > 0 and bar.n == 2 * (finished + 1)
    bar.refresh()
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("generating (vLLM): 2/6 completions (33%)")
    assert lines[2].startswith("generating (vLLM): 6/6 completions (100%)") and "output: 2.00 toks/s" in lines[2]
    assert lines[3].startswith("generating (vLLM): done, 6 completions in ") and len(lines) == 4
