"""The shipped warm start: files, tokenizer round trip, the recorded recipe and task, one-call loading."""

from __future__ import annotations

import json

import pytest

from learners.pipeline.data import tiny_task
from learners.pipeline.runs.warm_start import (
    RECIPE,
    RECIPE_FILE,
    REPORT_FILE,
    SHIPPED_DIR,
    WarmStartRecipe,
)


def test_shipped_files_are_small_and_complete():
    names = {p.name for p in SHIPPED_DIR.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "countdown_task.json", RECIPE_FILE} <= names
    assert REPORT_FILE in names
    assert (SHIPPED_DIR / "model.safetensors").stat().st_size <= 5 * 1024 * 1024


def test_recorded_recipe_and_task_are_the_module_constants():
    recorded = json.loads((SHIPPED_DIR / RECIPE_FILE).read_text())
    assert WarmStartRecipe.from_dict(recorded) == RECIPE
    assert recorded["styles"] == {"direct": 1.0} and recorded["steps"] == 1100 and recorded["batch_size"] == 64
    task = json.loads((SHIPPED_DIR / "countdown_task.json").read_text())
    assert task["template"] == "compact" and task["value_range"] == [1, 20] and task["target_range"] == [10, 200]
    report = json.loads((SHIPPED_DIR / REPORT_FILE).read_text())
    assert report["eval_set"] == "tiny_n3" and report["eval_puzzles"] == 512
    assert 0.0 <= report["pass@1"] <= 1.0 and report["task"] == task


def test_load_warm_start_offline_with_a_round_tripping_tokenizer():
    from learners.pipeline.models.tiny import ROUND_TRIP_TEXT, TAGS
    from learners.pipeline.runs.warm_start import load_warm_start

    model, tokenizer, task = load_warm_start()
    assert task == tiny_task()
    text = ROUND_TRIP_TEXT + "\n<reasoning>\nTry 3 * 7 = 21.\n</reasoning>\n<solution>3 * 7</solution>"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False) == text
    assert len(ids) == len(text) - sum(text.count(tag) * (len(tag) - 1) for tag in TAGS)  # a token per character
    assert tokenizer.eos_token == "<|im_end|>" and next(model.parameters()).dtype.is_floating_point


def test_model_name_warm_start_is_the_shipped_folder_in_train_configs():
    from learners.pipeline.models import check_model, resolve_model
    from learners.pipeline.runs.config import load_config

    assert resolve_model("warm-start") == SHIPPED_DIR
    assert resolve_model("runs/x") == "runs/x"
    check_model("warm-start")  # a complete model folder: no error
    config = load_config("cpu-tiny", ["model=warm-start"])
    assert resolve_model(config["model"]) == SHIPPED_DIR


def test_from_scratch_refuses_a_non_empty_out_at_once(tmp_path, capsys, monkeypatch):
    """A file the user kept in --out survives: no --overwrite, no replacement (it was deleted), and the refusal
    comes before any SFT work (building the traces would fail this test). With --overwrite the folder is still
    refused: it holds a file a warm start never writes."""
    from countdown_env.cli import main
    from learners.pipeline.runs import warm_start

    def no_work(*args, **kwargs):
        raise AssertionError("SFT work started before the refusal")

    monkeypatch.setattr(warm_start, "sft_records", no_work)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["warm-start", "--from-scratch", "--out", str(out)]) == 2
    assert (out / "notes.txt").read_text() == "keep me"
    assert "--overwrite" in capsys.readouterr().err
    assert main(["warm-start", "--from-scratch", "--out", str(out), "--overwrite"]) == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text() == "keep me"


def test_shipped_multi_step_warm_start_loads_offline_and_records_its_recipe():
    from learners.pipeline.models import SHIPPED_MULTI_STEP_DIR, WARM_START_MULTI_STEP, check_model, resolve_model
    from learners.pipeline.runs.warm_start import MULTI_STEP_RECIPE, load_warm_start

    assert resolve_model(WARM_START_MULTI_STEP) == resolve_model("warm-start-multistep") == SHIPPED_MULTI_STEP_DIR
    check_model("warm-start-multistep")
    size = sum(p.stat().st_size for p in SHIPPED_MULTI_STEP_DIR.iterdir())
    assert size <= 5 * 1024 * 1024
    recorded = json.loads((SHIPPED_MULTI_STEP_DIR / RECIPE_FILE).read_text())
    assert WarmStartRecipe.from_dict(recorded) == MULTI_STEP_RECIPE
    assert set(recorded["styles"]) <= {"search", "long"} and recorded["init"] == "warm-start"
    report = json.loads((SHIPPED_MULTI_STEP_DIR / REPORT_FILE).read_text())
    assert report["paragraphs_per_completion"] > 2 and report["mean_completion_tokens"] > 32
    model, tokenizer, task = load_warm_start(SHIPPED_MULTI_STEP_DIR)
    assert task == tiny_task() and tokenizer.eos_token == "<|im_end|>"


def test_a_changed_byte_in_a_shipped_warm_start_is_named(tmp_path):
    import shutil

    import pytest

    from learners.pipeline.models import SHIPPED_DIR, SHIPPED_MULTI_STEP_DIR, check_model

    for shipped in (SHIPPED_DIR, SHIPPED_MULTI_STEP_DIR):
        copy = tmp_path / shipped.name
        shutil.copytree(shipped, copy)
        check_model(str(copy))  # as shipped: its manifest holds
        weights = copy / "model.safetensors"
        data = bytearray(weights.read_bytes())
        data[-1] ^= 0x01  # one bit of one weight (a NaN written there loads and fails far later, unnamed)
        weights.write_bytes(bytes(data))
        with pytest.raises(ValueError, match="model.safetensors differs from its manifest"):
            check_model(str(copy))


@pytest.mark.slow
def test_the_report_of_a_warm_start_is_what_its_evals_measure():
    """``measure_warm_start`` on a small slice: its pass@1 and greedy figures are those of ``evaluate`` run alone
    with the same sampler settings, its all-equal share that of its own 8-sample groups."""
    from countdown_env.splits.eval_sets import load_eval_set
    from learners.pipeline.evaluation.eval_models import model_sampler
    from learners.pipeline.evaluation.evaluate import evaluate
    from learners.pipeline.models.tokenizer_io import load_tokenizer
    from learners.pipeline.runs.warm_start_report import measure_warm_start

    report = measure_warm_start(SHIPPED_DIR, eval_limit=6, groups=3, max_new_tokens=24, backend="hf",
                                entropy_puzzles=2, log=lambda _: None)  # fmt: skip
    tokenizer = load_tokenizer(SHIPPED_DIR)
    sampler = model_sampler(SHIPPED_DIR, tokenizer, "hf", batch_size=64, precision="fp32")
    rows = load_eval_set("tiny_n3", as_dataset=False)[:6]
    alone = evaluate(sampler, tokenizer, rows, samples=4, temperature=0.8, task=tiny_task(), max_new_tokens=24, seed=0)
    assert report["pass@1"] == alone["overall"]["pass@1"] and report["eval_puzzles"] == 6
    greedy = evaluate(sampler, tokenizer, rows, samples=1, temperature=0.0, task=tiny_task(), max_new_tokens=24, seed=0)
    assert report["greedy"] == greedy["overall"]["pass@1"]
    assert report["group_puzzles"] == 3 and report["all_equal_share"] in (0.0, 1 / 3, 2 / 3, 1.0)
    assert report["entropy_nats_per_token"] > 0 and report["paragraphs_per_completion"] >= 1
