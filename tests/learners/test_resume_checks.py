"""Resume is exact and checked (issue 35 items 6, 7 and 12): TRL's prompt sampler drew each epoch's order from one
generator seeded once, so a run resumed past the first epoch trained on other prompts (step-6 reward 0.875
uninterrupted vs 0.0 resumed): the base trainer's sampler now puts its generator where the epoch starts
(:mod:`learners.core.epoch_sampler`). A run's ``final/`` is verified by its manifest like a checkpoint, and a
manifest that lists no weights is not trusted."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest


def test_the_epoch_sampler_gives_each_epoch_the_uninterrupted_order():
    from trl.trainer.utils import RepeatSampler

    from learners.core.epoch_sampler import EpochRepeatSampler

    data = list(range(10))
    kwargs = dict(mini_repeat_count=2, batch_size=3, repeat_count=2, shuffle=True, seed=7)
    trl_sampler = RepeatSampler(data, **kwargs)
    uninterrupted = [list(trl_sampler) for _ in range(3)]  # TRL's order: one generator, epoch after epoch
    assert uninterrupted[0] != uninterrupted[2]
    ours = EpochRepeatSampler(data, **kwargs)
    walked = []
    for epoch in range(3):
        ours.set_epoch(epoch)  # what transformers does before each epoch
        walked.append(list(ours))
    assert walked == uninterrupted
    fresh = EpochRepeatSampler.like(RepeatSampler(data, **kwargs))  # a resumed run's new sampler
    fresh.set_epoch(2)
    assert list(fresh) == uninterrupted[2]


@pytest.mark.slow
def test_a_resume_past_the_first_epoch_matches_the_uninterrupted_run(make_trainer, cpu_grpo_kwargs):
    """8 toy puzzles, 2 prompts per step: 4 steps per epoch. Resumed from checkpoint-5 (inside the second epoch)
    and from checkpoint-4 (at its start), the per-step rewards and token counts equal the uninterrupted run's."""
    from learners.core.config import CountdownConfig
    from learners.core.trainer import CountdownGRPOTrainer

    out = Path(cpu_grpo_kwargs["output_dir"])
    kwargs = dict(cpu_grpo_kwargs, max_steps=7, save_strategy="steps", save_steps=1, temperature=1.0)

    def per_step(history):
        return [(e["step"], e["reward"], e["num_tokens"]) for e in history if "reward" in e]

    full = make_trainer(CountdownGRPOTrainer, CountdownConfig(**kwargs))
    full.train()
    expected = per_step(full.state.log_history)
    assert len(expected) == 7 and len({r for _, r, _ in expected}) > 1  # the parity reward has spread
    for resume_at in (5, 4):
        again = out.parent / f"again-{resume_at}"
        shutil.copytree(out / f"checkpoint-{resume_at}", again / f"checkpoint-{resume_at}")
        trainer = make_trainer(CountdownGRPOTrainer, CountdownConfig(**dict(kwargs, output_dir=str(again))))
        trainer.train(resume_from_checkpoint=str(again / f"checkpoint-{resume_at}"))
        assert per_step(trainer.state.log_history) == expected, resume_at


# ------------------------------------------------------------------------- items 7 and 12: trusted model folders
def _fake_save(folder: Path, step: int | None = None) -> Path:
    """A saved model folder (weights, config, trainer state) with its manifest written last."""
    from learners.core.checkpoints import write_checkpoint_manifest

    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 16)
    (folder / "config.json").write_text("{}")
    (folder / "tokenizer.json").write_text("{}")
    if step is not None:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    write_checkpoint_manifest(folder)
    return folder


def test_a_manifest_that_lists_no_weights_is_not_trusted(tmp_path):
    from learners.core.checkpoints import MANIFEST, CheckpointError, checkpoint_problem, resume_checkpoint

    run = tmp_path / "run"
    good = _fake_save(run / "checkpoint-2", 2)
    edited = _fake_save(run / "checkpoint-4", 4)
    (edited / MANIFEST).write_text(json.dumps({"step": 4, "files": {}}))  # edited to vouch for nothing
    assert checkpoint_problem(good) is None
    assert "lists no model weights" in checkpoint_problem(edited)
    assert resume_checkpoint(run) == good  # the edited one is skipped, by name
    with pytest.raises(CheckpointError, match="lists no model weights"):
        resume_checkpoint(run, edited)


def test_a_damaged_final_folder_is_not_a_finished_run(tmp_path, capsys):
    from learners.pipeline.models import check_model
    from learners.pipeline.runs.folder import prepare_run_folder

    run = tmp_path / "run"
    checkpoint = _fake_save(run / "checkpoint-2", 2)
    final = _fake_save(run / "final")
    (run / "summary.json").write_text(json.dumps({"steps": 2}))
    assert prepare_run_folder(run, resume=True, overwrite=False, max_steps=2).finished == {"steps": 2}
    check_model(final)
    weights = final / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    start = prepare_run_folder(run, resume=True, overwrite=False, max_steps=2)
    assert start.finished is None and start.checkpoint == checkpoint  # finished again from its last checkpoint
    assert "final: model.safetensors has 1000 bytes, its manifest 4096" in capsys.readouterr().err
    with pytest.raises(ValueError, match="model.safetensors has 1000 bytes"):
        check_model(final)  # countdown eval --model run/final refuses it in one line


def test_prompt_digests_that_differ_are_an_error(tmp_path, monkeypatch, capsys):
    """A resumed compare whose runs of one seed saw other prompts said "prompt digests differ" in its summary and
    exited 0; the command now exits 1 naming the seed."""
    from countdown_env.cli import main
    from learners.commands import compare as command
    from learners.pipeline.compare.settings import QUICK, CompareSettings
    from learners.pipeline.compare.summary import prompt_digest_mismatches

    settings = CompareSettings(learners=["grpo", "dapo"], seeds=[0, 1], **dataclasses.asdict(QUICK))
    for learner, seed, digest in [("grpo", 0, "a"), ("dapo", 0, "b"), ("grpo", 1, "c"), ("dapo", 1, "c")]:
        run = tmp_path / "runs" / f"{learner}-s{seed}"
        run.mkdir(parents=True)
        (run / "DONE").write_text(json.dumps({"prompt_digest": digest}))
    assert prompt_digest_mismatches(tmp_path, settings) == [0]
    (tmp_path / "summary.md").write_text("")
    monkeypatch.setattr(
        command, "run_compare", lambda *args, **kwargs: {"failures": {}, "prompt_digest_mismatches": [0]}
    )
    assert main(["compare", "--quick", "--learners", "grpo", "dapo", "--seeds", "0", "1", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "countdown compare: error: the learners of seed 0 trained on different prompts" in err
