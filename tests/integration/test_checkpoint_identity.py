"""Checkpoints that say which run they belong to and appear whole (issue 67 item 1; issue 44's lost items 2 and 5).

- ``--resume PATH`` into a new folder used to train on another run's weights under the new run's name (the new folder
  had no record to hold the settings against): every checkpoint now carries ``run_identity.json`` and the resume is
  held against it, refused by name before any model loads; ``--allow-changes`` records where the weights came from.
- a save that failed half-way (a full disk) left a ``checkpoint-N`` without its weights: checkpoints are now built
  beside their place and renamed whole, and a failed save says one line and leaves nothing.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from test_run_folders import _train_argv


def _no_model_may_load(monkeypatch):
    """Fail the test if the run gets as far as building its trainer (where the model loads)."""
    from learners.pipeline.runs import driver

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded before the refusal")

    monkeypatch.setattr(driver, "build_trainer", refuse)


@pytest.mark.slow
def test_a_resume_from_another_runs_checkpoint_is_held_against_that_run(tiny_model_dir, tmp_path, capsys,
                                                                        monkeypatch):  # fmt: skip
    from countdown_env.cli import main

    source = tmp_path / "B"
    assert main(_train_argv(tiny_model_dir, tmp_path, source, 2, "--set", "trainer.save_steps=1")) == 0
    checkpoint = source / "checkpoint-2"
    identity = json.loads((checkpoint / "run_identity.json").read_text())
    assert identity["model"] == str(tiny_model_dir) and identity["learner"] == "grpo"
    manifest = json.loads((checkpoint / "checkpoint_manifest.json").read_text())
    assert "run_identity.json" in manifest["files"]  # written before the manifest: covered by it

    # another model (and more steps) on B's weights, into a new folder: refused, naming both, nothing written
    other_model = tmp_path / "other-model"
    other_model.symlink_to(tiny_model_dir)
    target = tmp_path / "A"
    capsys.readouterr()
    with monkeypatch.context() as patch:
        _no_model_may_load(patch)
        argv = _train_argv(other_model, tmp_path, target, 4, "--resume", str(checkpoint))
        assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(checkpoint) in err and "--allow-changes" in err
    assert f"model: {str(tiny_model_dir)!r} -> {str(other_model)!r}" in err and "trainer.max_steps: 2 -> 4" in err
    assert not target.exists() or not any(p for p in target.iterdir() if not p.name.startswith("."))

    # with --allow-changes the run continues, and its record says where its weights came from
    argv = _train_argv(tiny_model_dir, tmp_path, target, 3, "--resume", str(checkpoint), "--allow-changes",
                       "--set", "trainer.save_steps=1")  # fmt: skip
    assert main(argv) == 0
    record = json.loads((target / "resolved_config.json").read_text())
    assert record["changes"][-1]["resumed_from"] == str(checkpoint) and record["changes"][-1]["from_step"] == 2
    assert record["changes"][-1]["settings"]["trainer.max_steps"] == [2, 3]
    assert json.loads((target / "checkpoint-3" / "run_identity.json").read_text())["changes"] == record["changes"]


def test_allow_changes_without_resume_is_refused(tmp_path, capsys):
    from countdown_env.cli import main

    assert main(["train", "--output-dir", str(tmp_path / "run"), "--allow-changes"]) == 2
    assert "--allow-changes is a setting of --resume" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_checkpoint_of_another_folder_without_any_record_is_refused(tmp_path):
    from learners.pipeline.runs.record import check_resume

    loose = tmp_path / "loose" / "checkpoint-2"
    loose.mkdir(parents=True)
    record = {"learner": "grpo", "model": "tiny"}
    with pytest.raises(ValueError, match="nothing says which run it continues"):
        check_resume(tmp_path / "new", record, allow_changes=False, checkpoint=loose)
    assert check_resume(tmp_path / "new", record, allow_changes=True, checkpoint=loose) == {}
    # a checkpoint inside the run's own folder, saved before identities: held against the folder's record
    own = tmp_path / "new" / "checkpoint-1"
    own.mkdir(parents=True)
    (tmp_path / "new" / "resolved_config.json").write_text(json.dumps({"learner": "grpo", "model": "warm-start"}))
    with pytest.raises(ValueError, match="'warm-start' -> 'tiny'"):
        check_resume(tmp_path / "new", record, allow_changes=False, checkpoint=own)


def _fail_optimizer_save_at(step: int, monkeypatch):
    """From ``step`` on, the optimizer's save writes part of its file and then finds the disk full."""
    from transformers import Trainer

    save = Trainer._save_optimizer_and_scheduler

    def full_disk(self, output_dir):
        if self.state.global_step < step:
            return save(self, output_dir)
        Path(output_dir, "optimizer.pt").write_bytes(b"\0" * 512)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(output_dir, "optimizer.pt")))

    monkeypatch.setattr(Trainer, "_save_optimizer_and_scheduler", full_disk)


@pytest.mark.slow
@pytest.mark.parametrize("failing_step", [1, 2])
def test_a_failed_save_says_one_line_and_leaves_no_partial_checkpoint(tiny_model_dir, tmp_path, capsys, monkeypatch,
                                                                      failing_step):  # fmt: skip
    from countdown_env.cli import main
    from learners.core.checkpoints import checkpoint_problem

    out = tmp_path / "run"
    _fail_optimizer_save_at(failing_step, monkeypatch)
    assert main(_train_argv(tiny_model_dir, tmp_path, out, 2, "--set", "trainer.save_steps=1")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    line = [x for x in err if x.startswith("countdown train: error:")]
    assert len(line) == 1 and f"could not save {out / f'checkpoint-{failing_step}'}" in line[0]
    assert "No space left on device" in line[0]
    names = sorted(p.name for p in out.iterdir())
    assert not [n for n in names if "checkpoint" in n and n != "checkpoint-1"], names  # nothing partial, no staging
    if failing_step == 1:
        assert "no checkpoint was kept" in line[0] and "checkpoint-1" not in names
    else:
        assert "checkpoint-1 is the newest complete one" in line[0]
        assert checkpoint_problem(out / "checkpoint-1") is None  # the last good one stays, whole
