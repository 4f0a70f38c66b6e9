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
    yaml_layer = {"trainer.learning_rate": base * 2}
    assert RunConfig.load("cpu-tiny", yaml=yaml_layer).trainer["learning_rate"] == base * 2
    sets = [f"trainer.learning_rate={base * 3}"]
    assert RunConfig.load("cpu-tiny", yaml=yaml_layer, sets=sets).trainer["learning_rate"] == base * 3
    run = RunConfig.load("cpu-tiny", yaml=yaml_layer, sets=sets, flags={"trainer.learning_rate": base * 4})
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
        RunConfig.load("cpu-tiny", flags={"nonsense.key": 1})


def test_what_the_learner_config_receives():
    run = RunConfig.load("cpu-tiny-vllm", sets=["async.max_staleness=2", "precision=fp32"])
    options = run.learner_options()
    assert options["async_max_staleness"] == 2 and options["bf16"] is False
    assert options["learning_rate"] == preset("cpu-tiny-vllm")["trainer"]["learning_rate"]
    assert "async_max_staleness" not in run.to_mapping()["trainer"]  # one holder: the async section


def test_the_planned_steps_fall_back_to_the_learners_default():
    from learners.core.registry import get_learner
    from learners.core.trainer_fields import trainer_fields

    assert RunConfig.load("cpu-tiny", flags={"trainer.max_steps": 7}).max_steps == 7
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
