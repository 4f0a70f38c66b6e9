"""RunConfig, the one settings type of a training run: the order its layers are applied in (preset -> YAML -> --set
-> flags), the round trip through its YAML shape, its checks on every rebuild, and what it hands the learner's
config class. Expected values are read from the preset file itself, not from the code under test."""

from __future__ import annotations

import pytest
import yaml

from learners.pipeline.runs.config import find_config
from learners.pipeline.runs.run_config import RunConfig
from learners.pipeline.runs.sections import AsyncSection, EvalSection


def preset(name: str) -> dict:
    return yaml.safe_load(find_config(name).read_text())


def test_each_layer_wins_over_the_one_before():
    base = preset("cpu-tiny")["trainer"]["learning_rate"]
    assert RunConfig.load("cpu-tiny").trainer["learning_rate"] == base
    yaml_layer = {"trainer": {"learning_rate": base * 2}}
    assert RunConfig.load("cpu-tiny", yaml=yaml_layer).trainer["learning_rate"] == base * 2
    sets = [f"trainer.learning_rate={base * 3}"]
    assert RunConfig.load("cpu-tiny", yaml=yaml_layer, sets=sets).trainer["learning_rate"] == base * 3
    run = RunConfig.load("cpu-tiny", yaml=yaml_layer, sets=sets, flags={"trainer": {"learning_rate": base * 4}})
    assert run.trainer["learning_rate"] == base * 4
    # a layer that does not name a key leaves the one below it: the preset's batch size survives all four
    assert run.trainer["per_device_train_batch_size"] == preset("cpu-tiny")["trainer"]["per_device_train_batch_size"]


def test_sections_become_typed_with_the_presets_values():
    expected = preset("cpu-tiny")["eval"]
    run = RunConfig.load("cpu-tiny", sets=["eval.samples=8"])
    assert isinstance(run.eval, EvalSection) and run.eval.samples == 8
    assert (run.eval.temperature, run.eval.max_new_tokens, run.eval.limit) == (
        expected["temperature"], expected["max_new_tokens"], expected["limit"])  # fmt: skip
    assert run.eval.batch_size == EvalSection().batch_size  # a key the preset leaves out: the section's default


def test_the_yaml_shape_round_trips_and_a_rebuild_is_checked_again():
    run = RunConfig.load("cpu-tiny-vllm", flags={"async": {}})
    again = RunConfig.from_mapping(run.learner, run.to_mapping())
    assert again == run and again.async_rollouts == AsyncSection()
    assert run.replace(model="warm-start").model == "warm-start"
    with pytest.raises(ValueError):
        run.replace(eval={"every": -1})
    with pytest.raises(ValueError, match="config section"):
        RunConfig.load("cpu-tiny", flags={"nonsense": {"key": 1}})


def test_what_the_learner_config_receives(tmp_path):
    run = RunConfig.load("cpu-tiny-vllm", sets=["async.max_staleness=2", "precision=fp32"])
    config = run.learner_config(output_dir=str(tmp_path))
    assert config.async_max_staleness == 2 and config.bf16 is False
    assert config.learning_rate == preset("cpu-tiny-vllm")["trainer"]["learning_rate"]
    assert config.output_dir == str(tmp_path) and config.report_to == [] and config.ddp_find_unused_parameters is False
    assert "async_max_staleness" not in run.to_mapping()["trainer"]  # one holder: the async section


def test_the_planned_steps_fall_back_to_the_learners_default():
    from learners.core.registry import get_learner
    from learners.core.trainer_fields import trainer_fields

    assert RunConfig.load("cpu-tiny", flags={"trainer": {"max_steps": 7}}).max_steps == 7
    mapping = RunConfig.load("cpu-tiny").to_mapping()
    del mapping["trainer"]["max_steps"]
    assert RunConfig.from_mapping("grpo", mapping).max_steps == trainer_fields(get_learner("grpo"))["max_steps"]


def test_the_accepted_sections_are_the_run_configs_fields():
    """config.SECTIONS (what a YAML may hold, read before RunConfig is imported) names RunConfig's fields, ``async``
    for ``async_rollouts``: a field added to one and not the other fails here."""
    import dataclasses

    from learners.pipeline.runs.config import SECTIONS

    fields = {f.name for f in dataclasses.fields(RunConfig)} - {"learner"}
    assert set(SECTIONS) == (fields - {"async_rollouts"}) | {"async"}


def test_the_tiny_smoke_preset_is_the_tiny_cpu_keywords_and_loads_as_a_run(tmp_path):
    """``tiny_cpu_kwargs`` (tests, benchmarks) reads the ``tiny-smoke`` preset that ``countdown train --config
    tiny-smoke`` runs: values written here by hand; the preset passes every check of a run config."""
    from learners.pipeline.models.tiny import tiny_cpu_kwargs

    assert tiny_cpu_kwargs(tmp_path, seed=3) == {
        "use_cpu": True, "bf16": False, "gradient_checkpointing": False, "use_vllm": False, "report_to": "none",
        "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 16, "max_steps": 2,
        "learning_rate": 1e-3, "logging_steps": 1, "save_strategy": "no", "seed": 3, "disable_tqdm": True,
        "dataloader_num_workers": 0, "output_dir": str(tmp_path),
    }  # fmt: skip
    run = RunConfig.load("tiny-smoke")
    assert run.model == "tiny" and run.max_steps == 2 and run.eval.every == 0


def test_a_layer_merges_into_the_sections_below_it(tmp_path):
    """--set and flags write keys into sections; they replace a section only where its two forms exclude each other
    (data: split files or sizes), and a key written into a value that is not a section is refused by name."""
    from learners.pipeline.runs.config import merge_layer, parse_sets

    tiny = preset("cpu-tiny")
    run = RunConfig.load("cpu-tiny", sets=["trainer.seed=5", "trainer.model_init_kwargs.dtype=float32"])
    assert run.trainer["seed"] == 5 and run.trainer["model_init_kwargs"] == {"dtype": "float32"}
    assert run.trainer["learning_rate"] == tiny["trainer"]["learning_rate"]  # the rest of the section stays
    train = tmp_path / "train.jsonl"
    train.write_text('{"numbers": [3, 4, 5], "target": 12}\n')
    files = RunConfig.load("cpu-tiny", sets=[f"data.train={train}"]).data
    assert (files.train, files.train_size, files.eval_size) == (str(train), None, 0)  # the sizes dropped
    sizes = merge_layer({"data": {"train": "a.jsonl", "eval": "b.jsonl"}}, {"data": {"train_size": 9}})
    assert sizes == {"data": {"train_size": 9}}
    kept = RunConfig.load("cpu-tiny", sets=["data.eval_size=7"]).data
    assert (kept.train_size, kept.eval_size) == (tiny["data"]["train_size"], 7)
    assert parse_sets(["a.b=1", "a.c=[2, 3]"]) == {"a": {"b": 1, "c": [2, 3]}}
    with pytest.raises(ValueError, match="'model' is not a section"):
        RunConfig.load("cpu-tiny", sets=["model.x=1"])
    with pytest.raises(ValueError, match="not of the form"):
        parse_sets(["trainer..seed=1"])
    below = {"trainer": {"seed": 1}}
    merge_layer(below, {"trainer": {"seed": 2}})
    assert below == {"trainer": {"seed": 1}}  # neither layer is changed


@pytest.mark.slow
def test_a_run_into_a_log_prints_lines_instead_of_trls_bar(tmp_path, tiny_model_dir):
    """Where stderr is not a terminal (pytest captures it) the run prints progress lines, and TRL's bar is off in the
    config the trainer was built with (it was switched off in a copy after the config was built, so a log held both)."""
    from learners.pipeline.runs.driver import build_trainer

    sets = [f"model={tiny_model_dir}", "data.train_size=8", "data.eval_size=0", "eval.every=0"]
    trainer = build_trainer(RunConfig.load("cpu-tiny", sets=sets), tmp_path / "run")
    assert trainer.args.disable_tqdm is True
    assert "LineProgressCallback" in {type(callback).__name__ for callback in trainer.callback_handler.callbacks}


def test_the_train_flags_write_their_sections_as_they_are_parsed():
    """One hop from the command line into the config's flags layer: TRL's spellings read as YAML, this command's own
    flags typed, the last one given holding, TRL's script keys below them all."""
    import argparse

    from learners.commands import train

    parser = argparse.ArgumentParser()
    train.add_arguments(parser)
    args = parser.parse_args(["--learning_rate", "3e-4", "--bf16", "--report_to", "a", "b", "--max_steps", "3",
                              "--max-steps", "5", "--no-progress", "--async", "--max-staleness", "2",
                              "--model_name_or_path", "from-trl", "--model", "mine"])  # fmt: skip
    assert args.settings == {
        "trainer": {"learning_rate": 3e-4, "bf16": True, "report_to": ["a", "b"], "max_steps": 5, "disable_tqdm": True},
        "async": {"max_staleness": 2},
        "model": "mine",
    }
    assert getattr(args, "trl:model_name_or_path") == "from-trl"
    assert not hasattr(parser.parse_args([]), "settings")  # nothing given: nothing written over the preset
