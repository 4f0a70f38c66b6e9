"""Outputs that cannot be lost or mixed (issue 24 items 2, 4, 5): an exclusive claim on every output, a re-check of
``--overwrite`` at rename time, a replace that survives a kill between its renames, writes through a symlinked
output, full-disk errors that name the path, and checkpoints verified by their manifest before any resume."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_careless_user import ENV, ROOT, SMALL, assert_user_error, countdown, tree_digest

from countdown_env.helpers.atomic import OutputBusy, OutputError, atomic_dir, atomic_file, output_claim


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------------------- the output claim
def test_a_second_writer_is_refused_while_the_first_builds(tmp_path):
    out = tmp_path / "splits"
    with atomic_dir(out) as tmp:
        (tmp / "mine.txt").write_text("first")
        result = countdown("build-splits", *SMALL, "--jsonl-only", "--no-progress", "--out", out)
        assert_user_error(result, "build-splits", "being written by another process", f"PID {os.getpid()}")
        assert not out.exists()  # the second writer wrote nothing
    assert (out / "mine.txt").read_text() == "first"
    assert leftovers(tmp_path) == []  # no temporary folder, no lock file


def test_a_claim_is_exclusive_across_processes_reentrant_in_one_and_released_by_a_kill(tmp_path):
    out = tmp_path / "run"
    with output_claim(out):
        with output_claim(out):  # a command that claims its output, then builds it with atomic_dir
            pass
        other = subprocess.run(
            [sys.executable, "-c", "import sys\nfrom countdown_env.helpers.atomic import output_claim\n"
             "with output_claim(sys.argv[1]):\n    pass\n", str(out)],
            env=ENV, cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert other.returncode == 1 and "OutputBusy" in other.stderr and f"PID {os.getpid()}" in other.stderr
    assert leftovers(tmp_path) == []
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom countdown_env.helpers.atomic import output_claim\n"
         "with output_claim(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(60)\n", str(out)],
        env=ENV, cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusy, match=f"PID {holder.pid}"):
            with output_claim(out):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with output_claim(out):  # the kernel dropped the killed holder's lock
        pass


def test_a_waiting_claim_takes_over_when_the_holder_finishes_and_gives_up_in_one_line_otherwise(tmp_path):
    """Two runs that start together on one model both build the shared cache folder (an install, a merged warm
    start): the second waits for the first instead of failing, and says once that it waits."""
    out = tmp_path / "models" / "shared"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom countdown_env.helpers.atomic import output_claim\n"
         "with output_claim(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n", str(out)],
        env=ENV, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusy, match=f"PID {holder.pid}\\) after waiting 0.3 s"):
            with output_claim(out, wait=0.3):
                pass
        told = []

        def release(message):  # the holder finishes once the waiter has said it waits
            told.append(message)
            holder.stdin.close()

        with output_claim(out, wait=600, on_wait=release) as claimed:
            assert claimed == out
        assert len(told) == 1 and f"process {holder.pid}: waiting up to 600 s" in told[0]
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert leftovers(out.parent) == []


def test_two_clean_sft_runs_into_one_output_never_both_succeed(tmp_path):
    data = tmp_path / "data.jsonl"
    row = {"numbers": [3, 4], "target": 7, "response": "<think>add</think><answer>3 + 4</answer>"}
    data.write_text(json.dumps(row) + "\n")
    for out in (tmp_path / "sft.jsonl", tmp_path / "sft"):
        with output_claim(out):  # a first writer still at work
            assert_user_error(countdown("clean-sft", data, out), "clean-sft", "being written by another process")
            assert_user_error(
                countdown("build-sft", "--size", "2", "--out", out), "build-sft", "being written by another process"
            )
        assert not out.exists()


def test_overwrite_is_checked_again_at_rename(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(OutputError, match="not empty"):
        with atomic_dir(out) as tmp:
            (tmp / "new.txt").write_text("new")
            out.mkdir()  # another program (no claim) filled the output meanwhile
            (out / "theirs.txt").write_text("theirs")
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]
    assert leftovers(tmp_path) == []


KILL_BETWEEN_RENAMES = """
import os, signal, sys
from countdown_env.helpers import atomic
real = os.replace
def replace(src, dst):
    real(src, dst)
    if str(src).endswith(sys.argv[1]):  # the existing output was just renamed aside
        os.kill(os.getpid(), signal.SIGKILL)
atomic.os.replace = replace
with atomic.atomic_dir(sys.argv[2], overwrite=True) as tmp:
    (tmp / "new.txt").write_text("new")
"""


def test_a_kill_between_the_renames_keeps_the_old_copy(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    killed = subprocess.run([sys.executable, "-c", KILL_BETWEEN_RENAMES, "out", str(out)], env=ENV, cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL
    assert not out.exists() and any(name.endswith(".old") for name in leftovers(tmp_path))
    with pytest.raises(OutputError, match="recovered from an interrupted replace"):
        with atomic_dir(out) as tmp:  # without overwrite: the recovered copy is kept
            (tmp / "third.txt").write_text("third")
    assert tree_digest(out) == tree_digest_of({"old.txt": "old"}, tmp_path / "expected")
    with atomic_dir(out, overwrite=True) as tmp:
        (tmp / "third.txt").write_text("third")
    assert sorted(p.name for p in out.iterdir()) == ["third.txt"]
    assert leftovers(tmp_path) == []


def tree_digest_of(files: dict[str, str], folder: Path) -> dict[str, str]:
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return tree_digest(folder)


def test_a_symlinked_output_is_written_where_it_points(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "old.txt").write_text("old")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    with atomic_dir(link, overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert sorted(p.name for p in real.iterdir()) == ["new.txt"]
    assert leftovers(tmp_path) == []


def test_a_full_disk_names_the_path(tmp_path):
    target = tmp_path / "data.jsonl"
    with pytest.raises(OSError) as caught:
        with atomic_file(target) as fh:
            fh.write(b"x")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what write() raises on a full disk
    assert caught.value.errno == errno.ENOSPC and str(target) in str(caught.value)
    assert not target.exists() and leftovers(tmp_path) == []


# -------------------------------------------------------------------------------------- checkpoint manifests
def fake_checkpoint(run: Path, step: int) -> Path:
    from learners.core.checkpoints import write_checkpoint_manifest

    folder = run / f"checkpoint-{step}"
    (folder / "sub").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    (folder / "optimizer.pt").write_bytes(os.urandom(1024))
    (folder / "sub" / "state.json").write_text(json.dumps({"step": step}))
    write_checkpoint_manifest(folder)
    return folder


def test_a_damaged_or_unfinished_checkpoint_is_skipped_with_its_name(tmp_path):
    from learners.core.checkpoints import (
        CheckpointError,
        checkpoint_problem,
        newest_complete_checkpoint,
        resume_checkpoint,
    )

    run = tmp_path / "run"
    for step in (2, 4, 6, 8):
        fake_checkpoint(run, step)
    assert checkpoint_problem(run / "checkpoint-8") is None
    # 8: the tail of the weights zeroed (same size); 6: the optimizer missing; 4: a save killed before its manifest
    data = bytearray((run / "checkpoint-8" / "model.safetensors").read_bytes())
    data[-512:] = bytes(512)
    (run / "checkpoint-8" / "model.safetensors").write_bytes(bytes(data))
    (run / "checkpoint-6" / "optimizer.pt").unlink()
    (run / "checkpoint-4" / "checkpoint_manifest.json").unlink()
    warnings: list[str] = []
    assert newest_complete_checkpoint(run, warn=warnings.append) == run / "checkpoint-2"
    assert [w.split(":")[0] for w in warnings] == [f"skipping {run / f'checkpoint-{s}'}" for s in (8, 6, 4)]
    assert "model.safetensors differs" in warnings[0] and "optimizer.pt missing" in warnings[1]
    assert "checkpoint_manifest.json missing" in warnings[2]
    (run / "checkpoint-2" / "sub" / "state.json").write_text("{")  # truncated
    with pytest.raises(CheckpointError, match="none of its 4 checkpoint-\\* folders is complete"):
        resume_checkpoint(run)
    with pytest.raises(CheckpointError, match="state.json has 1 bytes"):
        resume_checkpoint(run, run / "checkpoint-2")


def test_rotation_never_removes_the_newest_complete_checkpoint(tmp_path):
    from learners.core.checkpoints import MANIFEST, checkpoints, rotate

    run = tmp_path / "run"
    for step in (1, 2, 3):
        fake_checkpoint(run, step)
    (run / "checkpoint-4").mkdir()  # being saved (no manifest yet)
    rotate(run, keep=1)
    assert [c.name for c in checkpoints(run)] == ["checkpoint-3", "checkpoint-4"]
    (run / "checkpoint-4" / MANIFEST).write_text("{}")  # stands for a completed save
    rotate(run, keep=2)
    assert [c.name for c in checkpoints(run)] == ["checkpoint-3", "checkpoint-4"]


# --------------------------------------------------------------------------------------------- train run folders
def _train_argv(model, tmp_path, out, steps, *extra):
    from conftest import TOY_PUZZLES
    from test_train_cli import _overrides, _write_split

    from countdown_env import Puzzle

    if not (tmp_path / "train.jsonl").is_file():
        _write_split(tmp_path, [Puzzle(n, t) for n, t in TOY_PUZZLES])
    sets = _overrides(model, tmp_path / "train.jsonl", tmp_path / "eval.jsonl", steps)
    return ["train", "--config", "cpu-tiny", "--output-dir", str(out), *[x for o in sets for x in ("--set", o)], *extra]


def test_train_refuses_a_non_empty_output_without_resume_or_overwrite(tiny_model_dir, tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(_train_argv(tiny_model_dir, tmp_path, out, 2)) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and "--resume" in err and "--overwrite" in err
    assert main(_train_argv(tiny_model_dir, tmp_path, out, 2, "--overwrite")) == 2
    assert "refusing to empty a folder" in capsys.readouterr().err
    assert main(_train_argv(tiny_model_dir, tmp_path, out, 2, "--resume")) == 2
    assert "no checkpoint-* folder" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_train_resume_finishes_converges_and_skips_damaged_checkpoints(tiny_model_dir, tmp_path, capsys):
    from safetensors.torch import load_file

    from countdown_env.cli import main

    out = tmp_path / "run"
    argv = _train_argv(tiny_model_dir, tmp_path, out, 4, "--set", "trainer.save_total_limit=3")
    assert main(argv) == 0
    assert sorted(c.name for c in out.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    final_bytes = (out / "final" / "model.safetensors").read_bytes()
    summary = (out / "summary.json").read_bytes()

    # a finished run: --resume trains nothing and replaces nothing
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    assert "already finished at step 4" in capsys.readouterr().err
    assert (out / "final" / "model.safetensors").read_bytes() == final_bytes
    assert (out / "summary.json").read_bytes() == summary

    # killed after the last checkpoint, before final/: --resume finishes from checkpoint-4 without a step more
    (out / "summary.json").unlink()
    (out / "final" / "model.safetensors").unlink()
    assert main([*argv, "--resume"]) == 0
    assert "finishing the run from it" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["steps"] == 4
    expected = load_file(out / "checkpoint-4" / "model.safetensors")
    finished = load_file(out / "final" / "model.safetensors")
    assert all((finished[k] == v).all() for k, v in expected.items() if k in finished)
    logged = [e["step"] for e in json.loads((out / "log_history.json").read_text()) if "loss" in e]
    assert logged == [1, 2, 3, 4]

    # a damaged newest checkpoint (the tail of its weights zeroed): skipped by name, resumed from checkpoint-2
    weights = out / "checkpoint-4" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-2048:] = bytes(2048)
    weights.write_bytes(bytes(data))
    (out / "summary.json").unlink()
    assert main([*argv, "--resume"]) == 0
    err = capsys.readouterr().err
    assert f"skipping {out / 'checkpoint-4'}: model.safetensors differs" in err
    assert f"resuming from {out / 'checkpoint-2'}" in err
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    assert [e["step"] for e in state["log_history"] if "loss" in e] == [1, 2, 3, 4]
    assert (out / "checkpoint-4" / "checkpoint_manifest.json").is_file()  # saved again, whole


# ------------------------------------------------------------------------------------------- compare --resume
@pytest.mark.slow
def test_compare_resume_converges_after_a_kill_before_done(tiny_model_dir, tmp_path, capsys):
    """Kills at compare's risky points: after the final checkpoint but before DONE (it must finish, not train past
    --steps), and with the newest checkpoint's counters truncated (it must fall back to the older checkpoint and keep
    the run's rows)."""
    from test_compare import quick_args, same_rows

    from countdown_env.cli import main
    from learners.pipeline.compare import read_rows

    out = tmp_path / "out"
    assert main(quick_args(tiny_model_dir, out, "--learners", "grpo", "--keep-checkpoints")) == 0
    original = read_rows(out / "results.csv")
    run = out / "runs" / "grpo-s0"
    assert sorted(c.name for c in run.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]

    for kill in ("before DONE", "truncated counters"):
        (run / "DONE").unlink()
        (run / "final_eval.jsonl").unlink()
        if kill == "truncated counters":
            state = run / "checkpoint-2" / "compare_state.json"
            state.write_text(state.read_text()[:40])
        capsys.readouterr()
        assert main(quick_args(tiny_model_dir, out, "--learners", "grpo", "--resume", "--keep-checkpoints")) == 0
        err = capsys.readouterr().err
        assert json.loads((run / "DONE").read_text())["steps"] == 2, kill
        rows = read_rows(out / "results.csv")
        assert [r["step"] for r in rows] == [0, 1, 2], kill
        assert same_rows(rows[:2], original[:2]), kill  # restored (or, from checkpoint-1, recomputed alike)
        if kill == "truncated counters":
            assert "skipping" in err and "checkpoint-2" in err and "resuming from checkpoint-1" in err


def test_a_folder_holding_only_dotfiles_is_not_empty(tmp_path):
    """``--output-dir ~ --overwrite`` wrote a whole run into the home folder (issue 44 item 8): a folder that holds
    only dotfiles counted as empty. Any entry a run did not create makes it non-empty; only this project's own lock
    files and temporaries do not count."""
    from learners.pipeline.runs.folder import prepare_run_folder

    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".bashrc").write_text("export A=1\n")
    before = tree_digest(home)
    with pytest.raises(ValueError, match="is not empty"):
        prepare_run_folder(home, resume=None, overwrite=False, max_steps=2)
    with pytest.raises(ValueError, match="holds no countdown run"):
        prepare_run_folder(home, resume=None, overwrite=True, max_steps=2)
    assert tree_digest(home) == before
    scratch = tmp_path / "fresh"
    scratch.mkdir()
    (scratch / ".summary.json.tmp-123").write_text("{")  # a writer's temporary left by a kill: the run's own
    assert prepare_run_folder(scratch, resume=None, overwrite=False, max_steps=2).checkpoint is None
