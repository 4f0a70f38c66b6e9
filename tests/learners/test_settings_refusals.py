"""Settings that were taken without a word (issue 67 item 2): async staleness beyond bounds or of the wrong type once
``--async`` replaced the YAML's section, a YAML ``async`` section silently reset by ``--async``, and keys given twice
in one YAML mapping (the last won)."""

from __future__ import annotations

import argparse

import pytest


def _run_config(argv):
    from learners.commands import train

    parser = argparse.ArgumentParser()
    train.add_arguments(parser)
    return train.run_config(parser.parse_args(argv))[0]


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--max-staleness", "99999999999999999999"], "async.max_staleness must be <= 64"),
     (["--set", "async.max_staleness=nan"], "async.max_staleness must be int, got 'nan'"),
     (["--set", "async.max_staleness=true"], "async.max_staleness must be int, got True"),
     (["--set", "async.foo=1"], "unknown async key 'foo'")],  # fmt: skip
)
def test_async_settings_are_checked_with_async_given(extra, message):
    with pytest.raises(ValueError, match=message):
        _run_config(["--config", "cpu-tiny-vllm", "--async", *extra])


@pytest.mark.parametrize("extra", [[], ["--async"]])
def test_the_staleness_has_one_spelling_in_a_run_config(extra):
    """``trainer.async_max_staleness`` was a second holder: alone it turned async on without the section, beside
    ``--async`` the section's 1 silently won over its 2."""
    with pytest.raises(ValueError, match="trainer.async_max_staleness: a run sets its staleness in the async section"):
        _run_config(["--config", "cpu-tiny-vllm", *extra, "--set", "trainer.async_max_staleness=2"])


def test_async_keeps_the_yaml_section(tmp_path):
    from learners.pipeline.runs.config import find_config

    config = tmp_path / "async.yaml"
    config.write_text(find_config("cpu-tiny-vllm").read_text() + "async: {max_staleness: 3}\n")
    assert _run_config(["--config", str(config), "--async"]).async_rollouts.max_staleness == 3
    assert _run_config(["--config", str(config), "--async", "--max-staleness", "0"]).async_rollouts.max_staleness == 0
    assert _run_config(["--config", "cpu-tiny-vllm", "--async"]).async_rollouts.max_staleness == 1  # the default


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [("model: tiny\ntrainer:\n  learning_rate: 1.0e-5\n  learning_rate: 2.0e-5\n", "learning_rate", 4),
     ("trainer:\n  max_steps: 2\nmodel: tiny\ntrainer:\n  max_steps: 3\n", "trainer", 4)],  # fmt: skip
)
def test_a_key_given_twice_is_refused_naming_it_and_its_line(tmp_path, text, key, line):
    config = tmp_path / "twice.yaml"
    config.write_text(text)
    with pytest.raises(ValueError) as caught:
        _run_config(["--config", str(config)])
    assert f"{config}:{line}:" in str(caught.value) and f"the key {key!r} is given twice" in str(caught.value)
    with pytest.raises(ValueError, match="given twice"):
        _run_config(["--set", "trainer.model_init_kwargs={a: 1, a: 2}"])
    assert _run_config(["--set", "trainer.learning_rate=3.0e-5"]).trainer["learning_rate"] == 3.0e-5  # once is fine


def test_a_learner_folder_without_init_is_named_not_dropped(tmp_path):
    """A folder with spec.py but no __init__.py was skipped by the registry's listing: its learners vanished from
    every command without a word (issue 65)."""
    from learners.core.registry import project_algorithms

    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "spec.py").write_text("SPEC = None\n")
    (tmp_path / "alpha" / "__init__.py").write_text("")
    (tmp_path / "notes").mkdir()  # a folder without spec.py is no learner, and no error
    with pytest.raises(RuntimeError, match="beta has a spec.py but no __init__.py"):
        project_algorithms(tmp_path)
    (tmp_path / "beta" / "__init__.py").write_text("")
    assert project_algorithms(tmp_path) == [("alpha", "learners.alpha.spec:SPEC"), ("beta", "learners.beta.spec:SPEC")]


REFUSED_EARLY = [
    (["--config", "cpu-tiny-vllm", "--model", "warm-start", "--async", "--learner", "t_spmo"], "T-SPMO cannot train"),
    (["--config", "cpu-tiny-vllm", "--model", "warm-start", "--async", "--learner", "contrastive", "--set",
      "trainer.scorer=moving"], "scorer='moving' cannot train on async"),
    (["--model", "tiny", "--set", "trainer.num_generations=3"], "num_generations: 3 does not divide"),
    (["--model", "tiny", "--set", "task.n_numbers=7"], "each n_numbers must be an integer in 1..6"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), REFUSED_EARLY)
def test_settings_are_refused_before_the_folder_is_claimed_or_trl_imported(tmp_path, argv, message):
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    code = (
        "import json, sys\nfrom countdown_env.cli import main\n"
        f"status = main({json.dumps(['train', *argv, '--output-dir', str(out), '--max-steps', '2'])})\n"
        "print(json.dumps([status, 'trl' in sys.modules, 'torch' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    status, trl, torch = json.loads(done.stdout.strip().splitlines()[-1])
    assert status == 2 and message in done.stderr
    assert not trl and not torch  # refused from the settings alone
    assert not out.exists()


@pytest.mark.slow
def test_a_refusal_inside_the_build_leaves_no_partial_folder(tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "out"
    argv = ["train", "--model", "tiny", "--output-dir", str(out), "--max-steps", "1", "--async"]
    assert main(argv) == 2  # refused while the trainer is built, after its data and init model were written
    assert "async rollouts generate with the colocated vLLM engine" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())  # no data/ or init-model/ left: the folder is not stuck


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b"# only a comment\n"])
def test_a_config_without_settings_is_refused_by_name(tmp_path, content):
    config = tmp_path / "empty.yaml"
    config.write_bytes(content)
    with pytest.raises(ValueError, match="empty.yaml: the file holds no settings"):
        _run_config(["--config", str(config)])


def test_async_in_bf16_is_refused_before_the_folder_is_claimed(tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "out"
    argv = ["train", "--config", "cpu-tiny-vllm", "--model", "warm-start", "--output-dir", str(out), "--async",
            "--precision", "bf16", "--max-steps", "1"]  # fmt: skip
    assert main(argv) == 2  # it used to start the engine and stop at the first sync (probe difference 0.09)
    assert "--async needs precision fp32" in capsys.readouterr().err
    assert not out.exists()
