"""Asynchronous rollouts (issue 47, learners/core/async_rollouts.py) on the tiny model with the colocated vLLM engine
(CPU build): the machinery with nothing ahead reproduces the synchronous run, one step ahead trains every learner that
supports it with its samples one policy version old, and every refusal is one line before any engine starts."""

from __future__ import annotations

import json
import threading

import pytest

from tests.integration.test_vllm import sampling_metric, train_argv

pytestmark = pytest.mark.slow

STEPS = 3


def _run(learner, model_dir, out, *flags, sets=()):
    from countdown_env.cli import main

    argv = train_argv(learner, out, f"model={model_dir}", f"trainer.max_steps={STEPS}",
                      "trainer.vllm_importance_sampling_correction=true", *sets)  # fmt: skip
    assert main([*argv, *flags]) == 0
    return json.loads((out / "log_history.json").read_text())


def _per_step(history, name):
    return [entry[name] for entry in history if name in entry]


def test_max_staleness_zero_reproduces_the_synchronous_run(tiny_model_dir, tmp_path):
    """With nothing ahead the worker generates each step's batch on fresh weights while the trainer waits: the same
    samples (the engine's log-probs of them) and the same updates (losses) as the synchronous run."""
    sync = _run("grpo", tiny_model_dir, tmp_path / "sync")
    zero = _run("grpo", tiny_model_dir, tmp_path / "zero", "--async", "--max-staleness", "0")
    assert len(_per_step(sync, "loss")) == STEPS
    assert _per_step(zero, "loss") == _per_step(sync, "loss")
    assert _per_step(zero, "completions/mean_length") == _per_step(sync, "completions/mean_length")
    assert sampling_metric(zero, "mean") == sampling_metric(sync, "mean")
    assert _per_step(zero, "async/staleness") == [0.0] * STEPS
    assert "async/staleness" not in json.dumps(sync)


def test_one_step_ahead_trains_on_samples_one_version_old(tiny_model_dir, tmp_path):
    """The first step generates on its own; every later step takes the batch generated while the step before it
    updated, one policy version old, none dropped; the sampling log-probs stay those of the engine that sampled
    them (TRL's truncated importance weight corrects the loss), and the resolved config records the section. (ps_ppo
    and s_grpo train async too, on the real model's layers: tests/integration/test_real_model_async.py.)"""
    history = _run("grpo", tiny_model_dir, tmp_path / "run", "--async")
    assert _per_step(history, "async/staleness") == [0.0] + [1.0] * (STEPS - 1)
    assert _per_step(history, "async/dropped") == [0.0] * STEPS
    assert len(_per_step(history, "loss")) == STEPS
    assert all(abs(x) < 1e6 for x in _per_step(history, "loss"))
    assert len(_per_step(history, "sampling/importance_sampling_ratio/max")) == STEPS
    # where the time went: the worker's generation of each step's batch, the training thread between two handovers
    assert len(_per_step(history, "async/generate_seconds")) == STEPS
    assert all(s > 0 for s in _per_step(history, "async/generate_seconds"))
    assert len(_per_step(history, "async/train_seconds")) == STEPS - 1  # none before the first generation
    shares = _per_step(history, "async/generate_cpu_share") + _per_step(history, "async/train_cpu_share")
    assert all(0 < share <= 1.01 for share in shares)  # one thread's CPU time cannot exceed its wall time
    resolved = json.loads((tmp_path / "run" / "resolved_config.json").read_text())
    assert resolved["async"] == {"max_staleness": 1}
    assert not [t for t in threading.enumerate() if t.name == "countdown-async-rollouts"]  # no worker left behind


@pytest.mark.parametrize(
    ("learner", "sets", "expected"),
    [
        ("t_spmo", (), "T-SPMO cannot train on async rollouts"),
        ("grpo", ("trainer.vllm_importance_sampling_correction=false",), "need vllm_importance_sampling_correction"),
        ("grpo", ("trainer.use_vllm=false",), "generate with the colocated vLLM engine"),
    ],
)
def test_a_learner_or_setting_that_cannot_is_refused_in_one_line(learner, sets, expected, tiny_model_dir, tmp_path,
                                                                capsys):  # fmt: skip
    from countdown_env.cli import main

    argv = train_argv(learner, tmp_path / "run", f"model={tiny_model_dir}",
                      "trainer.vllm_importance_sampling_correction=true", *sets)  # fmt: skip
    assert main([*argv, "--async"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert expected in line


def test_max_staleness_needs_async_and_is_an_integer(tmp_path, capsys):
    from countdown_env.cli import main

    assert main(["train", "--max-staleness", "2", "--output-dir", str(tmp_path / "a")]) == 2
    assert "--max-staleness is a setting of --async" in capsys.readouterr().err
    assert main(["train", "--config", "cpu-tiny-vllm", "--set", "async.max_staleness=-1",
                 "--output-dir", str(tmp_path / "b")]) == 2  # fmt: skip
    assert "async.max_staleness must be >= 0" in capsys.readouterr().err


def test_compare_gives_every_run_the_async_section(tiny_model_dir, tmp_path):
    """``countdown compare --vllm --async`` (no engine started here): the settings record it, their command
    reproduces it, and each run's RunConfig carries it into the learner's options."""
    import argparse

    from countdown_env.helpers.jsonl import write_jsonl
    from countdown_env.task import CountdownTask
    from learners.commands.compare import add_arguments, settings_from_args
    from learners.pipeline.compare.settings import run_config

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    settings = settings_from_args(parser.parse_args(["--learners", "grpo", "--quick", "--vllm", "--async"]))
    assert settings.async_max_staleness == 1 and "--async --max-staleness 1" in settings.command()
    write_jsonl([{"numbers": [3, 4, 5], "target": 12}], tmp_path / "train-s0.jsonl")
    run = run_config(settings, "grpo", 0, tmp_path / "run", model=tiny_model_dir, task=CountdownTask(),
                     train_file=tmp_path / "train-s0.jsonl")  # fmt: skip
    assert run.async_rollouts.max_staleness == 1 and run.learner_config().async_max_staleness == 1
    with pytest.raises(ValueError, match="--max-staleness is a setting of --async"):
        settings_from_args(parser.parse_args(["--learners", "grpo", "--max-staleness", "2"]))


def test_a_sync_that_leaves_the_engine_behind_stops_the_run(tmp_path, monkeypatch, capfd):
    """With the weight sync switched off, the engine keeps the start's weights; after one update of the warm start at
    lr 1e-3 (96 tokens, so that some answers are right and the update is not zero) the probe's log-probs differ from
    the trainer's by far more than the tolerance (8.6 when written), and the run stops in one line at that step
    instead of training on the stale engine."""
    from countdown_env.cli import main
    from learners.core import vllm_sync

    monkeypatch.setattr(
        vllm_sync, "use_layerwise_sync", lambda trainer: setattr(trainer.vllm_generation, "sync_weights", lambda: None)
    )
    argv = train_argv("grpo", tmp_path / "run", "model=warm-start", f"trainer.max_steps={STEPS}",
                      "trainer.vllm_importance_sampling_correction=true", "trainer.learning_rate=1e-3",
                      "trainer.max_completion_length=96", "trainer.num_generations=8")  # fmt: skip
    assert main([*argv, "--async"]) == 2
    (line,) = [x for x in capfd.readouterr().err.splitlines() if "error:" in x]  # capfd: vLLM's engine needs fileno
    assert "engine does not hold the trainer's weights" in line and "at step 1" in line
