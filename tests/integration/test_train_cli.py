"""``countdown train`` / ``countdown eval``: presets, overrides, checkpoints and resume, the PNG, clear errors."""

from __future__ import annotations

import dataclasses
import json

import pytest


def _write_split(tmp_path, toy_puzzles):
    from countdown_env.helpers.jsonl import write_jsonl

    rows = [{"numbers": list(p.numbers), "target": p.target} for p in toy_puzzles]
    write_jsonl(rows, tmp_path / "train.jsonl")
    write_jsonl(rows[:4], tmp_path / "eval.jsonl")
    return tmp_path / "train.jsonl", tmp_path / "eval.jsonl"


def _overrides(model_dir, train, eval_, steps):
    return [
        f"model={model_dir}",
        "data=" + json.dumps({"train": str(train), "eval": str(eval_)}),
        "eval.every=2",
        "eval.samples=2",
        "eval.max_new_tokens=8",
        f"trainer.max_steps={steps}",
        "trainer.per_device_train_batch_size=8",
        "trainer.num_generations=4",
        "trainer.max_completion_length=8",
        "trainer.logging_steps=1",
        "trainer.save_steps=2",
        "trainer.learning_rate=1e-3",
        "trainer.disable_tqdm=true",
    ]


def test_overrides_and_config_lookup(tmp_path):
    from learners.pipeline.runs.config import find_config, load_config, merge_layer, parse_sets

    config = load_config("cpu-tiny", ["trainer.max_steps=3", "eval.every=0", "task.n_numbers=[3, 4]"])
    assert config["trainer"]["max_steps"] == 3 and config["eval"]["every"] == 0
    assert config["task"]["n_numbers"] == [3, 4] and config["task"]["template"] == "compact"
    with pytest.raises(ValueError, match="unknown config section 'trainr'"):
        load_config("cpu-tiny", ["trainr.max_steps=3"])
    with pytest.raises(ValueError, match="task.template"):
        load_config("cpu-tiny", ["template=tinyzero"])
    assert find_config("qwen3-0.6b-vllm-server.yaml").is_file() and find_config("qwen3-0.6b-vllm-colocate")
    with pytest.raises(FileNotFoundError, match="cpu-tiny"):
        find_config("nope")
    with pytest.raises(ValueError, match="section.key=value"):
        parse_sets(["novalue"])
    with pytest.raises(ValueError, match="not a section"):
        merge_layer({"model": "tiny"}, parse_sets(["model.x=1"]))


def test_gpu_presets_follow_seed_000():
    from learners.pipeline.runs.config import load_config

    for name in ("qwen3-0.6b-vllm-server", "qwen3-0.6b-vllm-colocate"):
        t = load_config(name)["trainer"]
        assert t["use_vllm"] and t["num_generations"] == 8 and t["learning_rate"] == 2e-6
        assert t["max_completion_length"] == 768 and t["temperature"] == 1.0
        per_step = t["per_device_train_batch_size"] * t.get("gradient_accumulation_steps", 1)
        assert per_step // t["num_generations"] == 16
    assert load_config("qwen3-0.6b-vllm-server")["trainer"]["vllm_mode"] == "server"
    assert load_config("qwen3-0.6b-vllm-colocate")["trainer"]["vllm_mode"] == "colocate"


@pytest.mark.slow
def test_train_checkpoints_resume_and_plot(tiny_model_dir, toy_puzzles, tmp_path, capsys):
    from countdown_env.cli import main

    train, eval_ = _write_split(tmp_path, toy_puzzles)
    out = tmp_path / "run"
    base = ["train", "--learner", "grpo", "--config", "cpu-tiny", "--output-dir", str(out)]
    args = [x for o in _overrides(tiny_model_dir, train, eval_, 2) for x in ("--set", o)]
    args += ["--set", "task.template=compact"]
    assert main(base + args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and (out / "checkpoint-2").is_dir()
    recorded = json.loads((out / "checkpoint-2" / "countdown_task.json").read_text())
    assert recorded["template"] == "compact" and recorded["value_range"] == [1, 20]
    assert (out / "training.png").stat().st_size > 1000
    assert (out / "final" / "model.safetensors").is_file()
    history = json.loads((out / "log_history.json").read_text())
    assert [e["step"] for e in history if "eval_pass@1" in e] == [0, 2]
    resolved = json.loads((out / "resolved_config.json").read_text())  # the run can be redone from its folder
    assert resolved["learner"] == "grpo" and resolved["task"]["template"] == "compact"
    assert resolved["trainer"]["max_steps"] == 2 and resolved["model"] == str(tiny_model_dir)

    from learners.core.checkpoints import checkpoint_problem

    assert checkpoint_problem(out / "final") is None  # final/ has a manifest, verified like a checkpoint's

    # resume with another learner, task or setting: refused in one line, the record untouched (issue 35 item 5)
    record = (out / "resolved_config.json").read_bytes()
    capsys.readouterr()
    for changed in (["--learner", "dapo"], ["--set", "trainer.learning_rate=0.5"], ["--set", "task.template=tinyzero"],
                    ["--max-steps", "4"]):  # fmt: skip
        assert main(base + args + changed + ["--resume"]) == 2, changed
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "was trained with other settings" in err[0] and "--allow-changes" in err[0], err
    assert (out / "resolved_config.json").read_bytes() == record

    # resume: continue to step 4 from checkpoint-2 (a deliberate change, recorded with the step it took effect)
    assert main(base + args + ["--max-steps", "4", "--resume", "--allow-changes"]) == 0
    changes = json.loads((out / "resolved_config.json").read_text())["changes"]
    assert changes == [{"from_step": 2, "settings": {"trainer.max_steps": [2, 4]}}]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 4 and (out / "checkpoint-4").is_dir()
    state = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text())
    logged = [e["step"] for e in state["log_history"] if "loss" in e]
    assert logged == [1, 2, 3, 4]  # steps 1-2 from the first run, 3-4 after resuming, none repeated
    history = json.loads((out / "log_history.json").read_text())
    assert [e["step"] for e in history if "eval_pass@1" in e] == [0, 2, 4]

    # countdown eval on the final model (task recorded in the folder)
    report_path = tmp_path / "report.json"
    code = main(
        [
            "eval",
            "--model",
            str(out / "final"),
            "--split",
            str(eval_),
            "--samples",
            "2",
            "--max-new-tokens",
            "8",
            "--out",
            str(report_path),
        ]
    )
    assert code == 0
    report = json.loads(report_path.read_text())
    assert report["template"] == "compact" and report["overall"]["n_puzzles"] == 4
    assert report["task"] == recorded


def test_clear_errors(tiny_model_dir, toy_puzzles, tmp_path, capsys):
    from countdown_env.cli import main

    train, eval_ = _write_split(tmp_path, toy_puzzles)
    common = ["train", "--config", "cpu-tiny", "--output-dir", str(tmp_path / "o")]
    data = ["--set", f"model={tiny_model_dir}", "--set", "data=" + json.dumps({"train": str(train)})]
    assert main(common + ["--learner", "nope"]) == 2
    assert "unknown learner 'nope'" in capsys.readouterr().err
    assert main(common + ["--resume", *data]) == 2
    assert "no checkpoint" in capsys.readouterr().err
    server = ["--set", "trainer.use_vllm=true", "--set", "trainer.vllm_mode=server"]
    assert main(common + [*server, *data]) == 2
    assert "NCCL" in capsys.readouterr().err
    assert main(common + ["--set", "trainer.no_such_option=1", *data]) == 2
    assert "no_such_option" in capsys.readouterr().err
    assert main(["eval", "--model", str(tiny_model_dir), "--split", str(tmp_path / "missing.jsonl")]) == 2
    assert "no split" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_pipeline_quick(tmp_path):
    """The demo's --quick chain from a warm start rebuilt with the shrunk recipe (the shipped one is tested in
    test_warm_start): warm start, data, eval, RL with evals, eval, summary and plot."""
    from learners.pipeline.runs.demo import QUICK, run_demo

    settings = {**dataclasses.asdict(QUICK), "max_new_tokens": 12}  # the --quick settings, shorter completions
    summary = run_demo(tmp_path / "demo", from_scratch=True, **settings)
    out = tmp_path / "demo"
    for name in ("summary.md", "summary.json", "training.png", "eval_before.json", "eval_after.json"):
        assert (out / name).is_file(), name
    assert (out / "warm-start" / "eval_report.json").is_file() and (out / "warm-start" / "recipe.json").is_file()
    assert summary["before"]["n_puzzles"] == summary["after"]["n_puzzles"] == settings["eval_limit"]
    text = (out / "summary.md").read_text()
    assert "pass@1" in text and "training.png" in text and "RL gain in pass@1" in text
    assert summary["gain"]["pass@1"] == pytest.approx(summary["after"]["pass@1"] - summary["before"]["pass@1"])
    history = json.loads((out / "grpo" / "log_history.json").read_text())
    expected_evals = list(range(0, settings["max_steps"] + 1, settings["eval_every"]))
    assert [e["step"] for e in history if "eval_pass@1" in e] == expected_evals
    train_rows = [json.loads(line) for line in (out / "data" / "train.jsonl").read_text().splitlines()]
    from countdown_env.splits.eval_sets import load_eval_set

    held_out = {(tuple(sorted(r["numbers"])), r["target"]) for r in load_eval_set("tiny_n3", as_dataset=False)}
    assert not held_out & {(tuple(sorted(r["numbers"])), r["target"]) for r in train_rows}


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--lr-scheduler", "step"], "invalid choice"), (["--max-steps", "0"], "--max-steps must be > 0"),
     (["--rl-steps", "0"], "--max-steps must be > 0")],  # the earlier spelling reads the same  # fmt: skip
)
def test_demo_train_refuses_bad_settings_before_any_work(argv, message, tmp_path, capsys):
    from countdown_env.cli import main

    assert main(["demo-train", "--out", str(tmp_path / "demo"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()


def test_demo_rl_gain_is_paired_by_puzzle():
    from learners.pipeline.runs.demo_report import rl_gain

    def report(correct, ci):
        return {"puzzles": [{"correct": c} for c in correct], "overall": {"pass@1_ci95": ci}}

    before = report([[0, 0], [1, 0], [1, 1], [0, 0]], [0.1, 0.6])  # per-puzzle pass@1 0, .5, 1, 0
    after = report([[1, 0], [1, 1], [1, 1], [0, 0]], [0.2, 0.8])  # .5, 1, 1, 0: +0.25 on average
    gain = rl_gain(before, after)
    assert gain["pass@1"] == pytest.approx(0.25)
    low, high = gain["pass@1_ci95"]
    assert 0.0 <= low <= 0.25 <= high <= 0.5  # per-puzzle differences are 0 or 0.5
    assert gain["cis_overlap"] is True
    assert rl_gain(before, report([[1, 1]] * 4, [0.7, 1.0]))["cis_overlap"] is False


@pytest.mark.slow
def test_tinyzero_task_rewards_a_correct_answer_in_training(tiny_model_dir, toy_puzzles, tmp_path, monkeypatch):
    """Two ``countdown train`` steps with ``task.template=tinyzero``: a correct ``<answer>`` earns reward 1.

    The random tiny model cannot answer, so the env reward is fed a policy that answers the first completion of
    every group with the solver's expression in the tinyzero tags and the rest with a wrong one; the rewards TRL
    receives must be 1 and 0 (before the task carried the tags, every tinyzero answer scored 0: no_answer).
    """
    from countdown_env import Puzzle, solve
    from countdown_env.cli import main
    from learners.core.trainer import CountdownGRPOTrainer

    seen: list[float] = []
    expected: list[float] = []
    original = CountdownGRPOTrainer.countdown_env_reward

    def answering(self, prompts, completions, completion_ids, numbers=None, target=None, **kwargs):
        texts = []
        for i, (ns, t) in enumerate(zip(numbers, target, strict=True)):
            right = i % self.num_generations == 0
            answer = solve(Puzzle(ns, t)) if right else f"{ns[0]} + {ns[0]} + {ns[0]} + {ns[0]}"
            texts.append(f"<think>\ntry it\n</think>\n<answer>{answer}</answer>")
            expected.append(1.0 if right else 0.0)
        tok = self.processing_class
        ids = [tok.encode(text, add_special_tokens=False) + [tok.eos_token_id] for text in texts]
        rewards = original(self, prompts, completions, ids, numbers=numbers, target=target, **kwargs)
        seen.extend(rewards)
        return rewards

    monkeypatch.setattr(CountdownGRPOTrainer, "countdown_env_reward", answering)
    train, eval_ = _write_split(tmp_path, toy_puzzles)
    args = [x for o in _overrides(tiny_model_dir, train, eval_, 2) for x in ("--set", o)]
    args += ["--set", "task.template=tinyzero", "--set", "eval.every=0", "--set", "trainer.max_completion_length=64"]
    out = tmp_path / "run"
    assert main(["train", "--learner", "grpo", "--config", "cpu-tiny", "--output-dir", str(out), *args]) == 0
    assert len(seen) == 16 and seen == expected and sum(seen) == 4.0
    assert json.loads((out / "final" / "countdown_task.json").read_text())["template"] == "tinyzero"


def test_a_random_model_is_named_and_a_missing_measure_folder_fails_in_one_line(tmp_path, capsys):
    from countdown_env.cli import main

    assert main(["warm-start", "--measure", str(tmp_path / "no" / "such" / "dir")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0] and "Repo id" not in err[0]
    data = ["--set", "data.train_size=8", "--set", "data.eval_size=0", "--set", "eval.every=0"]
    steps = ["--set", "trainer.max_steps=1", "--set", "trainer.per_device_train_batch_size=4"]
    steps += ["--set", "trainer.num_generations=4", "--set", "trainer.max_completion_length=4"]
    steps += ["--set", 'trainer.save_strategy="no"']
    assert main(["train", "--config", "cpu-tiny", "--output-dir", str(tmp_path / "o"), *data, *steps]) == 0
    assert "RANDOMLY INITIALISED" in capsys.readouterr().err


def test_a_trainer_key_typo_is_one_short_line(capsys):
    from countdown_env.cli import main

    assert main(["train", "--config", "cpu-tiny", "--set", "trainer.learning_rat=1e-5", "--output-dir", "unused"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "did you mean 'learning_rate'" in line and len(line) < 300


def test_a_missing_tracker_is_named_with_its_extra_before_any_work(capsys, monkeypatch):
    import importlib.util

    from countdown_env.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    assert main(["train", "--config", "cpu-tiny", "--report-to", "tensorboard", "--output-dir", "unused"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "pip install -e '.[tensorboard]'" in line


def test_eval_metrics_are_filed_under_eval_by_the_trackers():
    """HF's tracker callbacks file ``eval_*`` keys under ``eval/`` and everything else under ``train/``: the
    callback's keys must carry the ``eval_`` prefix (``eval/pass@1`` showed up as ``train/eval/pass@1``)."""
    from transformers.integrations.integration_utils import rewrite_logs

    rewritten = rewrite_logs({"eval_pass@1": 0.3, "eval_pass@1_low": 0.2, "loss": 1.0})
    assert set(rewritten) == {"eval/pass@1", "eval/pass@1_low", "train/loss"}


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("trainer.learning_rate=fast", "trainer.learning_rate must be a number, got 'fast'"),
        ("trainer.learning_rate=[1, 2]", "trainer.learning_rate must be a number"),
        ("trainer.max_steps=twelve", "trainer.max_steps must be int"),
        ("trainer.num_generations=0", "trainer.num_generations must be >= 2"),
        ("trainer.max_steps=-5", "trainer.max_steps must be >= 1 (or -1: epochs)"),
        ("trainer.max_steps=0", "trainer.max_steps must be >= 1"),
        ("trainer.save_steps=0", "trainer.save_steps must be > 0"),
        ("trainer.per_device_train_batch_size=0", "per_device_train_batch_size must be >= 1"),
    ],
)
def test_trainer_values_are_checked_in_one_line(setting, message, capsys):
    from countdown_env.cli import main

    assert main(["train", "--config", "cpu-tiny", "--set", setting, "--output-dir", "unused"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert message in line


def test_cached_trainer_fields_match_the_config_classes(tmp_path, monkeypatch):
    """The option list (read by config validation instead of importing TRL) is built once per stack into the cache,
    outside the repository, and lists every option of every learner's config class with its default, as the classes
    themselves do; a stale or damaged cache file is rebuilt."""
    import dataclasses
    import importlib

    from learners.core.registry import LEARNERS
    from learners.core.trainer_fields import fields_file, trainer_fields

    monkeypatch.setenv("COUNTDOWN_CACHE", str(tmp_path))
    assert not fields_file().exists()
    for spec in LEARNERS.values():
        config_class = getattr(importlib.import_module(spec.module), spec.config_class)
        expected = {f.name: f.default if isinstance(f.default, (bool, int, float, str)) else None
                    for f in dataclasses.fields(config_class)}  # fmt: skip
        assert trainer_fields(spec) == expected, spec.config_class
    assert fields_file().is_file() and fields_file().is_relative_to(tmp_path)
    fields_file().write_text("{not json")
    assert "learning_rate" in trainer_fields(LEARNERS["grpo"])
    assert json.loads(fields_file().read_text())["classes"]


def test_config_errors_need_no_trl_import(tmp_path):
    """Issue 24 item 6: a wrong type or range in the trainer section is one line before TRL, transformers or torch
    is imported (the README's "under 2 s" rests on this; timing itself is not asserted here)."""
    import subprocess
    import sys

    from learners.core.trainer_fields import all_fields

    assert all_fields()  # the cache holds this stack's list: built here if it did not
    code = (
        "import sys\nfrom countdown_env.cli import main\n"
        "rc = main(['train', '--output-dir', sys.argv[1], '--set', 'trainer.learning_rate=fast'])\n"
        "heavy = sorted(m for m in ('trl', 'transformers', 'torch', 'peft') if m in sys.modules)\n"
        "print(rc, heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True)
    assert result.stdout.strip() == "2 []", (result.stdout, result.stderr)
    assert "trainer.learning_rate must be a number, got 'fast'" in result.stderr


# ------------------------------------------------------------------------------------------------ TRL's spellings
def _captured_run(monkeypatch, argv):
    """What ``countdown train ARGV`` would train: (learner, config sections, output folder), without training (and
    without the trackers' packages: ``report_to`` names them here)."""
    import learners.pipeline.runs.checks as checks
    import learners.pipeline.runs.driver as run_driver
    from countdown_env.cli import main

    monkeypatch.setattr(checks, "_check_trackers", lambda report_to: None)
    seen = []
    monkeypatch.setattr(
        run_driver, "train", lambda run, out, **kw: seen.append((run.learner, run.to_mapping(), out)) or {}
    )
    assert main(["train", *argv]) == 0
    return seen[0]


def test_trl_flags_and_a_plain_grpoconfig_yaml(monkeypatch, tmp_path, capsys):
    """Issue 36 item 6: a TRL user's ``--output_dir/--learning_rate/--report_to/...`` and a flat GRPOConfig YAML
    (``trl grpo --config``'s shape) become the run config's trainer keys, model, data and run folder."""
    from countdown_env.cli import main
    from countdown_env.helpers.jsonl import write_jsonl

    _, config, out = _captured_run(monkeypatch, [
        "--output_dir", str(tmp_path / "run"), "--learning_rate", "1e-5", "--report_to", "tensorboard", "wandb",
        "--bf16", "--max_grad_norm", "0.5", "--model_name_or_path", "warm-start", "--lr_scheduler_type", "cosine",
    ])  # fmt: skip
    trainer = config["trainer"]
    assert out == str(tmp_path / "run") and config["model"] == "warm-start"
    assert trainer["learning_rate"] == 1e-5 and trainer["report_to"] == ["tensorboard", "wandb"]
    assert trainer["bf16"] is True and trainer["max_grad_norm"] == 0.5 and trainer["lr_scheduler_type"] == "cosine"
    assert trainer["num_generations"] == 8  # the rest of the preset (cpu-tiny) is kept
    _, _, out = _captured_run(monkeypatch, ["--output-dir", "mine", "--output_dir", "theirs"])
    assert out == "mine"  # the project's spelling wins when both are given

    folder = tmp_path / "data"
    folder.mkdir()
    write_jsonl([{"numbers": [3, 4, 5], "target": 12}], folder / "train.jsonl")
    write_jsonl([{"numbers": [3, 4, 6], "target": 13}], folder / "test.jsonl")
    flat = tmp_path / "grpo.yaml"
    flat.write_text(
        f"model_name_or_path: warm-start\ndataset_name: {folder}\noutput_dir: {tmp_path / 'flat'}\n"
        "learning_rate: 3.0e-6\nmax_steps: 7\nnum_generations: 4\nper_device_train_batch_size: 8\nbeta: 0.0\n"
    )
    learner, config, out = _captured_run(monkeypatch, ["--learner", "dapo", "--config", str(flat)])
    assert learner == "dapo" and out == str(tmp_path / "flat") and config["model"] == "warm-start"
    assert config["data"]["train"] == str(folder / "train.jsonl")
    assert config["data"]["eval"] == str(folder / "test.jsonl")
    assert (config["trainer"]["learning_rate"], config["trainer"]["max_steps"]) == (3e-6, 7)
    assert config["task"]["template"] == "compact"  # the cpu-tiny preset's task section under the flat keys

    # TRL options this command does not take: one line each, with a suggestion for a typo
    flat.write_text("learnig_rate: 1.0e-5\noutput_dir: x\n")
    assert main(["train", "--config", str(flat)]) == 2
    assert "did you mean 'learning_rate'" in capsys.readouterr().err
    assert main(["train", "--reward_funcs", "my.reward"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "unrecognized arguments: --reward_funcs my.reward" in line


@pytest.mark.slow
@pytest.mark.parametrize("learner", ["grpo", "ps_ppo"])
def test_the_built_trl_args_switch_off_ddps_unused_parameter_search(learner, tmp_path):
    """DDP warned ``find_unused_parameters=True ... did not find any unused parameters`` on every rank of every
    multi-process run (issue 44 item 10): transformers searches unless ``ddp_find_unused_parameters`` is set, and
    every parameter of these models takes part in each loss. The run's config sets it false; a value given wins."""
    from learners.pipeline.runs.run_config import RunConfig

    run = RunConfig(learner=learner)
    assert run.learner_config(output_dir=str(tmp_path)).ddp_find_unused_parameters is False
    given = run.learner_config(output_dir=str(tmp_path), ddp_find_unused_parameters=True)
    assert given.ddp_find_unused_parameters is True


def test_the_real_model_demo_is_refused_from_scratch_and_its_preset_loads(tmp_path, capsys):
    """``demo-train --model smollm2-135m``: the preset its RL stage uses loads and trains a LoRA adapter in loss
    micro-batches that divide the step's rows; ``--from-scratch`` (the tiny model's recipe) is one line."""
    from countdown_env.cli import main
    from learners.pipeline.runs.config import load_config
    from learners.pipeline.runs.demo import DEMO_MODELS, GROUP_SIZE

    profile = DEMO_MODELS["smollm2-135m"]
    config = load_config(profile.preset)
    assert config["model"] == profile.warm_start and config["lora"] == {"rank": 16, "targets": "all-linear"}
    rows = profile.defaults.prompts_per_step * GROUP_SIZE
    trainer = config["trainer"]
    assert trainer["per_device_train_batch_size"] == profile.micro_batch
    assert trainer["per_device_train_batch_size"] * trainer["gradient_accumulation_steps"] == rows
    assert main(["demo-train", "--model", "smollm2-135m", "--from-scratch", "--out", str(tmp_path / "demo")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--from-scratch rebuilds the tiny model's warm start only" in line
    assert not (tmp_path / "demo").exists()
