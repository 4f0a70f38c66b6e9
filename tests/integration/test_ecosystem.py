"""Ecosystem conventions (issue 16): HF dataset cards and layouts, the ``nums`` alias, the verifiers ``answer``
column, ``dir(countdown_env)``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_env import Puzzle

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "datasets"
EVAL_SET_NAMES = ["tiny_n3", "countdown_n3", "countdown_n4", "countdown_n5", "countdown_n6", "tinyzero_3to4"]


# ------------------------------------------------------------------------------------------------ datasets
def test_datasets_card_gives_one_config_per_eval_set(tmp_path, monkeypatch):
    from datasets import get_dataset_config_names, load_dataset

    monkeypatch.chdir(ROOT)  # load_dataset("datasets") resolves the folder from the working directory
    assert sorted(get_dataset_config_names("datasets")) == sorted(EVAL_SET_NAMES)
    for name in EVAL_SET_NAMES:
        loaded = load_dataset("datasets", name, cache_dir=str(tmp_path))
        assert list(loaded) == ["test"]
        expected = [json.loads(line) for line in (DATASETS / f"{name}.jsonl").read_text().splitlines()]
        assert loaded["test"].num_rows == len(expected) == 512
        assert loaded["test"][0] == expected[0] and loaded["test"][-1] == expected[-1]
    assert load_dataset("datasets", cache_dir=str(tmp_path))["test"].num_rows == 512  # default: tiny_n3


def test_split_folder_card_loads_with_load_dataset_and_load_from_disk(tmp_path):
    from datasets import DatasetDict, load_dataset, load_from_disk

    from countdown_env.helpers.jsonl import read_jsonl
    from countdown_env.splits import SplitSpec
    from countdown_env.splits.folders import write_splits
    from countdown_env.splits.hf_datasets import build_splits
    from countdown_env.splits.manifest import verify_split

    spec = SplitSpec(n_numbers=(3,), train_size=5, eval_size=3, seed=4)
    splits = build_splits(spec)
    assert isinstance(splits, DatasetDict) and sorted(splits) == ["test", "train"]
    out = tmp_path / "split"
    write_splits(splits, out, spec=spec)
    card = (out / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n") and "path: train.jsonl" in card and '"seed": 4' in card
    assert verify_split(out)["files"]["README.md"]  # the card is covered by the manifest
    by_card = load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    by_disk = load_from_disk(str(out))
    for name, size in (("train", 5), ("test", 3)):
        rows = read_jsonl(out / f"{name}.jsonl")
        assert len(rows) == size
        assert by_card[name].to_list() == rows == by_disk[name].to_list() == splits[name].to_list()


def test_sft_folder_has_the_split_layout(tmp_path, capsys):
    from datasets import DatasetDict, load_dataset, load_from_disk

    from countdown_env.cli import main
    from countdown_env.helpers.jsonl import read_jsonl
    from countdown_env.sft import build_sft_records

    out = tmp_path / "sft"
    assert main(["build-sft", "--size", "5", "--style", "direct", "--out", str(out), "--no-progress"]) == 0
    expected = build_sft_records(3, 5, style="direct")
    assert read_jsonl(out / "train.jsonl") == expected
    on_disk = load_from_disk(str(out))
    assert isinstance(on_disk, DatasetDict) and list(on_disk) == ["train"]
    assert on_disk["train"].to_list() == expected
    assert not (out / "hf").exists()
    assert load_dataset(str(out), cache_dir=str(tmp_path / "cache"))["train"].to_list() == expected

    # clean-sft writes the same layout (issue 36 item 7: both an HF copy, or neither), plus its report
    external = tmp_path / "external.jsonl"
    replies = [{"numbers": r["numbers"], "target": r["target"], "response": r["completion"][0]["content"]}
               for r in expected]  # fmt: skip
    external.write_text("".join(json.dumps(r) + "\n" for r in replies))
    cleaned = tmp_path / "clean"
    assert main(["clean-sft", str(external), str(cleaned), "--template", "default"]) == 0
    rows = read_jsonl(cleaned / "train.jsonl")
    # clean-sft keeps the answers that use every number exactly once (the post's filter), in order
    import re

    every = [r for r in expected if sorted(map(int, re.findall(r"\d+", r["solution"]))) == sorted(r["numbers"])]
    assert rows and [r["solution"] for r in rows] == [r["solution"] for r in every]
    assert load_from_disk(str(cleaned))["train"].to_list() == rows
    assert load_dataset(str(cleaned), cache_dir=str(tmp_path / "cache2"))["train"].to_list() == rows
    assert (cleaned / "report.json").is_file() and sorted(p.name for p in cleaned.glob("*.jsonl")) == ["train.jsonl"]
    assert '"style": "direct"' in (out / "README.md").read_text()


def test_load_eval_set_returns_a_dataset():
    from datasets import Dataset

    from countdown_env.splits.eval_sets import load_eval_set

    ds = load_eval_set("tiny_n3", template="compact")
    rows = load_eval_set("tiny_n3", template="compact", as_dataset=False)
    assert isinstance(ds, Dataset) and isinstance(rows, list)
    assert ds.num_rows == len(rows) == 512 and ds.to_list() == rows
    assert ds.column_names[0] == "prompt" and ds[0]["numbers"] == rows[0]["numbers"]


# ------------------------------------------------------------------------------------------------ nums alias
def test_nums_alias_in_reward_puzzle_and_loaders(tmp_path):
    from countdown_env.rewards import countdown_reward, make_reward_function
    from countdown_env.splits.eval_sets import load_eval_set
    from countdown_env.task import CountdownTask

    right = "<reasoning>x</reasoning><solution>25 * 3 + 7</solution>"
    wrong = "<reasoning>x</reasoning><solution>25 + 3 + 7</solution>"
    kwargs = dict(nums=[[25, 3, 7], [25, 3, 7]], target=[82, 82])
    assert countdown_reward(None, [right, wrong], **kwargs) == [1.0, 0.0]
    assert make_reward_function()(None, [right, wrong], **kwargs) == [1.0, 0.0]
    assert CountdownTask(template="default").reward_function()(None, [right], nums=[[25, 3, 7]], target=[82]) == [1.0]
    assert Puzzle.from_dict({"nums": [25, 3, 7], "target": 82}) == Puzzle([25, 3, 7], 82)
    with pytest.raises(ValueError, match="'numbers' \\(or 'nums'\\)"):
        countdown_reward(None, [right], target=[82])

    path = tmp_path / "hub.jsonl"
    path.write_text('{"target": 82, "nums": [25, 3, 7]}\n{"target": 10, "nums": [2, 5]}\n')
    rows = load_eval_set(str(path), as_dataset=False)
    assert [r["numbers"] for r in rows] == [[25, 3, 7], [2, 5]] and "nums" not in rows[0]
    assert "82" in rows[0]["prompt"][-1]["content"]


def test_nums_alias_in_eval_rows_and_trainer_inputs(tmp_path):
    from learners.core.trainer import puzzles_from_inputs
    from learners.pipeline.evaluation.evaluate import load_rows
    from verifiers_ext.reply_scoring import puzzle_from_info

    path = tmp_path / "hub.jsonl"
    path.write_text('{"nums": [25, 3, 7], "target": 82}\n')
    assert load_rows(path) == [{"numbers": [25, 3, 7], "target": 82}]
    assert puzzles_from_inputs([{"nums": [1, 2], "target": 3}]) == [Puzzle([1, 2], 3)]
    assert puzzle_from_info({"nums": [1, 2], "target": 3}) == Puzzle([1, 2], 3)


# ------------------------------------------------------------------------------------------------ verifiers
@pytest.mark.parametrize("fields", [{"n_numbers": 4}, {"n_numbers": 3, "use_all_numbers": True}, {"n_numbers": 6}])
def test_verifiers_rows_carry_a_reference_solution(fields):
    from countdown_env.expressions.verifier import verify
    from countdown_env.task import CountdownTask
    from verifiers_ext.dataset_rows import PuzzleSource

    task = CountdownTask(seed=3, **fields)
    rows = PuzzleSource(task).rows(6, start=10)
    for offset, row in enumerate(rows):
        puzzle = task.puzzle(10 + offset)
        assert row["info"]["index"] == 10 + offset and row["answer"]
        check = verify(row["answer"], puzzle, use_all_numbers=task.use_all_numbers)
        assert check.correct, (row["answer"], puzzle, check.reason)


# ------------------------------------------------------------------------------------------------ package
def test_dir_lists_lazy_exports_without_loading_heavy_modules():
    code = (
        "import sys, countdown_env; names = dir(countdown_env);"
        "assert {'verify', 'solve', 'CountdownTask', 'Puzzle', 'countdown_reward'} <= set(names), names;"
        "assert not {'torch', 'transformers', 'trl', 'datasets'} & set(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ------------------------------------------------------------------------------------------------ reasoning-gym
def test_procedural_dataset_entries_and_score_answer():
    from countdown_env.expressions.verifier import verify
    from countdown_env.procedural import CountdownDataset, create_dataset, score_answer
    from countdown_env.task import CountdownTask

    task = CountdownTask(n_numbers=4, value_range=(1, 30), target_range=(10, 300), template="tinyzero", seed=5)
    ds = create_dataset("countdown", task=task, size=6)
    assert isinstance(ds, CountdownDataset) and len(ds) == 6 and len(list(ds)) == 6
    assert create_dataset("countdown", task=task, size=6, seed=9)[0] != ds[0]  # seed replaces the task's
    for i, entry in enumerate(ds):
        assert set(entry) == {"question", "answer", "metadata"}
        puzzle = task.puzzle(i)
        meta = entry["metadata"]
        assert (meta["numbers"], meta["target"], meta["source_index"]) == (list(puzzle.numbers), puzzle.target, i)
        assert entry["question"] == task.prompt_text(puzzle) and str(puzzle.target) in entry["question"]
        assert verify(entry["answer"], puzzle).correct
        assert ds.score_answer(entry["answer"], entry) == 1.0 == score_answer(entry["answer"], entry)
        assert score_answer(f"<think>x</think><answer>{entry['answer']}</answer>", entry) == 1.0  # template's tags
        assert score_answer(f"{entry['answer']} + 1", entry) == 0.0
    assert ds[-1] == ds[5]
    for bad in (None, "", "1/0", "import os", "((((("):
        assert score_answer(bad, ds[0]) == 0.0
    with pytest.raises(IndexError):
        ds[6]
    with pytest.raises(ValueError, match="countdown"):
        create_dataset("chain_sum")


def test_score_answer_uses_the_entry_rules():
    from countdown_env.procedural import entry, score_answer
    from countdown_env.task import CountdownTask

    task = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), use_all_numbers=True, seed=1)
    e = entry(task, 0)
    numbers, target = e["metadata"]["numbers"], e["metadata"]["target"]
    assert score_answer(e["answer"], e) == 1.0
    # a correct value with a number left out: right under "at most once", wrong under use_all_numbers
    partial = {**e, "metadata": {**e["metadata"], "numbers": [*numbers, 7], "task": task.to_dict()}}
    assert score_answer(e["answer"], partial) == 0.0
    loose = {**partial, "metadata": {**partial["metadata"], "task": {**task.to_dict(), "use_all_numbers": False}}}
    assert score_answer(e["answer"], loose) == 1.0 and target > 0


def test_difficulty_bounds_select_the_labels():
    from countdown_env.procedural import CountdownCurriculum
    from countdown_env.solving.distinct_solutions import count_solutions
    from countdown_env.solving.generator import difficulty_label
    from countdown_env.task import CountdownTask

    base = CountdownTask(value_range=(1, 20), target_range=(10, 200), seed=2)
    for n in (3, 4):
        for level, label in ((0, "easy"), (1, "medium"), (2, "hard")):
            curriculum = CountdownCurriculum(n_numbers=(n,), difficulty=("easy", "medium", "hard"))
            curriculum.set_attr_level("difficulty", level)
            task = curriculum.task(base)
            for i in range(4):
                puzzle = task.puzzle(i)
                assert puzzle.n_numbers == n and difficulty_label(count_solutions(puzzle), n) == label


def test_curriculum_schedule():
    from countdown_env.procedural import CountdownCurriculum

    c = CountdownCurriculum(n_numbers=(3, 4), difficulty=("easy", "hard"), threshold=0.5, patience=2)
    assert (c.get_attr_value("n_numbers"), c.get_attr_value("difficulty")) == (3, "easy")
    assert [c.update(a, step=s) for s, a in enumerate([0.6, 0.4, 0.6, 0.7])] == [False, False, False, True]
    assert (c.get_attr_value("n_numbers"), c.get_attr_value("difficulty")) == (3, "hard")
    assert not c.update(0.9) and c.update(0.9)  # patience 2, then the next count from the first difficulty
    assert (c.get_attr_value("n_numbers"), c.get_attr_value("difficulty")) == (4, "easy")
    assert c.update(1.0) is False and c.update(1.0) is True and c.at_top
    assert c.update(1.0) is False and c.update(1.0) is False  # nothing above the top
    assert c.history == [(3, 3, "hard"), (None, 4, "easy"), (None, 4, "hard")]
    assert c.decrement_attr_level("n_numbers") and c.get_attr_value("n_numbers") == 3
    assert c.to_dict()["level"] == {"n_numbers": 3, "difficulty": "hard"}
    for bad, match in (
        ({"n_numbers": [7]}, "1..6"),
        ({"difficulty": ["trivial"]}, "unknown difficulty"),
        ({"threshold": 2}, "threshold"),
        ({"patience": 0}, "patience"),
        ({"step": 1}, "unknown"),
    ):
        with pytest.raises(ValueError, match=match):
            CountdownCurriculum.from_dict(bad)


def test_curriculum_callback_restores_and_records_levels_through_the_curriculum():
    """The callback in learners is the training loop's side only: a resumed run's levels come back from the log
    history, each logged metric goes to the curriculum and its levels land in that step's log entry."""
    from types import SimpleNamespace

    from countdown_env.procedural import CountdownCurriculum
    from learners.pipeline.runs.curriculum_callback import CurriculumCallback

    c = CountdownCurriculum(n_numbers=(3, 4), difficulty=("easy", "hard"), threshold=0.5, metric="reward")
    history = [
        {"step": 1, "curriculum/n_numbers": 3, "curriculum/difficulty_level": 0},
        {"step": 2, "curriculum/n_numbers": 3, "curriculum/difficulty_level": 1},
        {"step": 3, "curriculum/n_numbers": 5, "curriculum/difficulty_level": 0},  # not a count of c: skipped
        {"step": 4, "loss": 0.1},
    ]
    callback = CurriculumCallback(c)
    callback.on_train_begin(None, SimpleNamespace(log_history=history), None)
    assert (c.get_attr_value("n_numbers"), c.get_attr_value("difficulty")) == (3, "hard")
    history.append({"step": 5, "reward": 0.9})
    callback.on_log(None, SimpleNamespace(log_history=history, global_step=5), None, logs={"reward": 0.9})
    assert history[-1] == {"step": 5, "reward": 0.9, "curriculum/n_numbers": 4, "curriculum/difficulty_level": 0}
    assert c.history == [(5, 4, "easy")]
    callback.on_log(None, SimpleNamespace(log_history=history, global_step=6), None, logs={"loss": 0.2})
    assert c.history == [(5, 4, "easy")] and c.streak == 0  # a line without the metric changes nothing


def test_curriculum_stream_follows_the_level():
    from countdown_env.procedural import CountdownCurriculum
    from countdown_env.task import CountdownTask

    c = CountdownCurriculum(n_numbers=(3, 5), difficulty=("any",))
    rows = c.rows(CountdownTask(value_range=(1, 20), target_range=(10, 200), template="compact"))
    first = [next(rows) for _ in range(3)]
    assert all(len(r["numbers"]) == 3 and r["target"] not in r["numbers"] for r in first)
    assert c.raise_level()
    assert all(len(next(rows)["numbers"]) == 5 for _ in range(3))


@pytest.mark.slow
def test_countdown_train_with_a_curriculum_section(tiny_model_dir, tmp_path):
    from countdown_env.cli import main

    out = tmp_path / "run"
    sets = [
        f"model={tiny_model_dir}",
        "curriculum=" + json.dumps({"n_numbers": [3, 4], "difficulty": ["any"], "threshold": 0.0, "metric": "reward"}),
        "data=" + json.dumps({"train_size": 0, "eval_size": 2}),
        "eval.every=0",
        "trainer.max_steps=2",
        "trainer.per_device_train_batch_size=4",
        "trainer.num_generations=2",
        "trainer.max_completion_length=4",
        "trainer.logging_steps=1",
        "trainer.save_strategy='no'",
        "trainer.disable_tqdm=true",
    ]
    args = ["train", "--config", "cpu-tiny", "--output-dir", str(out), *[x for s in sets for x in ("--set", s)]]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    # threshold 0: the first logged step raises 3 -> 4 numbers; nothing above
    assert summary["curriculum"]["level"] == {"n_numbers": 4, "difficulty": "any"}
    assert summary["curriculum"]["history"] == [[1, 4, "any"]]
    history = json.loads((out / "log_history.json").read_text())
    assert [e["curriculum/n_numbers"] for e in history if "curriculum/n_numbers" in e] == [4, 4]


# ------------------------------------------------------------------------------------------------ trl grpo route
def _printed_trl_grpo_flags() -> list[str]:
    """The ``--flags`` of the ``trl grpo`` command printed in docs/training.md, split as the shell splits them."""
    import shlex

    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith("trl grpo ")]
    return [token for token in shlex.split(line, comments=True) if token.startswith("--")]


@pytest.mark.slow
def test_trl_grpo_cli_on_a_build_splits_folder(tiny_model_dir, tmp_path):
    """README's route: `trl grpo --dataset_name DIR --reward_funcs countdown_env.rewards.countdown_reward`, one step
    of the tiny model on CPU and one eval on the test split (trl's script reads DIR with load_dataset, through the
    folder's card)."""
    import os

    from countdown_env.cli import main

    split = tmp_path / "split"
    args = ["build-splits", "--n-numbers", "3", "--train", "8", "--eval", "2", "--value-range", "1", "20",
            "--target-range", "10", "200", "--template", "compact", "--jsonl-only", "--no-progress"]  # fmt: skip
    assert main([*args, "--out", str(split)]) == 0
    trl = Path(sys.executable).parent / "trl"
    command = [
        str(trl), "grpo", "--model_name_or_path", str(tiny_model_dir), "--dataset_name", str(split),
        "--reward_funcs", "countdown_env.rewards.countdown_reward", "--output_dir", str(tmp_path / "out"),
        "--max_steps", "1", "--per_device_train_batch_size", "4", "--num_generations", "4",
        "--max_completion_length", "8", "--learning_rate", "2e-5", "--use_cpu", "--bf16", "False",
        "--gradient_checkpointing", "False",
        "--report_to", "none", "--logging_steps", "1", "--save_strategy", "no", "--disable_tqdm", "True",
        # TRL's default --dataset_test_split is "test", the folder's held-out split (it was "eval": KeyError 'test')
        "--eval_strategy", "steps", "--eval_steps", "1", "--per_device_eval_batch_size", "4",
    ]  # fmt: skip
    assert set(_printed_trl_grpo_flags()) <= set(command)  # docs/training.md's command is not run: its flags are these
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(tmp_path / "c")}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rewards/countdown_reward/mean" in done.stdout + done.stderr
    assert "eval_loss" in done.stdout + done.stderr  # the eval ran on the folder's test split
    assert (tmp_path / "out" / "model.safetensors").is_file()


# ------------------------------------------------------------------------------------------------ countdown eval
def test_eval_reports_difficulty_markdown_and_template(tiny_model_dir, tmp_path, capsys):
    from collections import Counter

    from countdown_env.cli import main
    from countdown_env.splits import SplitSpec, build_split_records
    from countdown_env.splits.folders import write_splits

    spec = SplitSpec(n_numbers=(3, 4), train_size=0, eval_size=8, seed=1, value_range=(1, 20),
                     target_range=(10, 200), template="compact")  # fmt: skip
    records = build_split_records(spec, progress=False)
    write_splits(records, tmp_path / "split", spec=spec, save_to_disk=False)
    base = ["eval", "--model", str(tiny_model_dir), "--split", str(tmp_path / "split" / "test.jsonl"), "--samples",
            "2", "--max-new-tokens", "4", "--no-progress"]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a.json"), "--markdown"]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["template"] == "compact" and report["template_source"] == "the split's manifest.json"
    assert report["split_prompts"] == "same"
    assert "prompt template: compact (from the split's manifest.json)" in out
    counts = Counter(r["difficulty"] for r in records["test"])
    assert {k: v["n_puzzles"] for k, v in report["by_difficulty"].items()} == dict(counts)
    order = ["easy", "medium", "hard"]
    assert list(report["by_difficulty"]) == [d for d in order if d in counts]
    weighted = sum(v["pass@1"] * v["n_puzzles"] for v in report["by_difficulty"].values()) / 8
    assert weighted == pytest.approx(report["overall"]["pass@1"])
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table[0].startswith("| group | puzzles | pass@1 (95 % CI) | pass@2 (95 % CI) |")
    assert len(table) == 2 + 2 + len(counts) + 1  # header, rule, two counts, difficulties, all
    assert table[-1].startswith("| **all** | 8 |") and any(line.startswith("| 3 numbers | 4 |") for line in table)

    assert main([*base, "--out", str(tmp_path / "b.json"), "--template", "default"]) == 0
    out = capsys.readouterr().out
    assert "prompt template: default (from --template); the split's prompt column differs and was not used" in out
    assert "difficulty=hard" in out and json.loads((tmp_path / "b.json").read_text())["split_prompts"] == "different"


# ------------------------------------------------------------------------------------------------ plots
def test_plot_helpers():
    from learners.pipeline.runs.plotting import curves, sft_losses, smooth, y_limits

    assert smooth([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]  # fewer than 5 points: unsmoothed
    # debiased EMA, weight 0.5: numerators 0.5*1, 0.25*1 + 0.5*3, ...; denominators 0.5, 0.75, 0.875
    expected = [1.0, (0.25 + 1.5) / 0.75, (0.125 + 0.75 + 2.5) / 0.875]
    assert smooth([1.0, 3.0, 5.0], weight=0.5) == pytest.approx(expected)
    assert y_limits([0.1, 0.2], rate=True) == pytest.approx((0.1 - 0.008, 0.2 + 0.008))
    assert y_limits([0.0, 0.0], rate=True) == pytest.approx((0.0, 0.029))  # 0.05 span, margin; a rate is never < 0
    low, high = y_limits([40.0, 80.0])
    assert low == pytest.approx(40 - 3.2) and high == pytest.approx(80 + 3.2)
    history = [{"step": 1, "reward": 0.5, "countdown/accuracy": 0.25, "completions/mean_length": 7, "loss": 1.0},
               {"step": 2, "reward": float("nan"), "countdown/mean_completion_length": 9.0,
                "completions/mean_length": 8, "countdown/truncation_rate": 0.5}]  # fmt: skip
    data = curves(history)
    assert data["reward"] == [(1, 0.5)] and data["accuracy"] == [(1, 0.25)]
    assert data["completion_length"] == [(1, 7.0), (2, 9.0)]  # the project's metric before TRL's
    assert data["truncation_rate"] == [(2, 0.5)]
    assert sft_losses([{"step": 10, "loss": 2.0}, {"step": 20, "train_loss": 1.0}]) == [(10, 2.0)]


def test_training_png_panels(tmp_path):
    import matplotlib.image as mpimg

    from learners.pipeline.runs.plotting import plot_training

    history = [{"step": s, "reward": s / 100, "countdown/accuracy": s / 200, "countdown/mean_completion_length": 50 + s,
                "countdown/truncation_rate": 0.1} for s in range(1, 31)]  # fmt: skip
    history += [{"step": s, "eval/pass@1": 0.1, "eval/pass@1_low": 0.05, "eval/pass@1_high": 0.2} for s in (0, 30)]
    with_sft = plot_training(history, tmp_path / "a.png", "t", sft_history=[{"step": 1, "loss": 3.0}])
    without = plot_training(history[:3], tmp_path / "b.png")
    high_a, high_b = mpimg.imread(with_sft).shape[0], mpimg.imread(without).shape[0]
    assert high_a > high_b  # five panels take three rows; reward/accuracy/length take two
    assert plot_training([], tmp_path / "c.png").is_file()


def test_training_png_says_what_it_shows(tmp_path):
    """Issue 36 item 10: reward and accuracy share a panel when they are the same numbers (binary reward) and get two
    when they differ; the eval panel's title gives the curve's puzzles and samples and names the headline evals
    drawn apart; the demo's SFT panel says whether the demo ran that SFT."""
    from learners.pipeline.runs.demo_report import headline_points, sft_title
    from learners.pipeline.runs.plotting import Headline, curves, eval_title, panels_of, plot_training

    binary = [{"step": s, "reward": s % 3 / 4, "countdown/accuracy": s % 3 / 4} for s in range(1, 9)]
    shaped = [{"step": s, "reward": s % 3 / 4 + 0.1, "countdown/accuracy": s % 3 / 4} for s in range(1, 9)]
    assert panels_of(curves(binary), [], [], []) == ["reward"]
    assert panels_of(curves(shaped), [], [], []) == ["reward", "accuracy"]
    evals = [{"step": s, "eval_pass@1": 0.3, "eval_puzzles": 128, "eval_samples": 4} for s in (0, 250, 500)]
    report = {"samples": 4, "overall": {"n_puzzles": 512, "pass@1": 0.303, "pass@1_ci95": [0.277, 0.329],
                                        "pass@4": 0.629}}  # fmt: skip
    points = headline_points(report, report, 500)
    assert points[0] == Headline(0, "before RL, 512 puzzles x 4", 0.303, (0.277, 0.329), (4, 0.629))
    assert points[1].step == 500 and points[1].label.startswith("after RL, 512 puzzles")
    title = eval_title(evals, points)
    assert "128 held-out puzzles x 4 samples" in title and "before RL, 512 puzzles x 4" in title
    assert "not run by this demo" in sft_title(False) and "this run" in sft_title(True)
    assert plot_training(binary + evals, tmp_path / "t.png", headline=points, sft_title=sft_title(False)).is_file()


# ------------------------------------------------------------------------------------------------ the CLI
def test_version(capsys):
    from countdown_env import __version__
    from countdown_env.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"countdown {__version__}"


@pytest.mark.parametrize("name", ["demo", "build-splits", "build-sft", "clean-sft", "train", "eval", "merge-splits",
                                  "compare", "demo-train", "warm-start", "generate", "solve", "verify"])  # fmt: skip
def test_every_option_has_help_and_shows_its_default(name, capsys):
    import argparse
    import importlib

    from countdown_env.cli import commands, main

    module = importlib.import_module(commands()[name][0])
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    for action in parser._actions:
        assert action.help, f"countdown {name} {action.option_strings or action.dest}: no help text"
        if action.dest in ("template", "style", "learner", "backend"):
            assert action.choices, f"countdown {name} --{action.dest}: an enumeration without choices"
    assert main([name, "--help"]) == 0
    assert "(default:" in capsys.readouterr().out


def test_generate_prints_the_tasks_puzzles(tmp_path, capsys):
    from countdown_env.cli import main
    from countdown_env.expressions.verifier import verify
    from countdown_env.task import CountdownTask

    assert main(["generate", "--n-numbers", "4", "--count", "5", "--seed", "3"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    task = CountdownTask(n_numbers=4, seed=3)
    assert [r["index"] for r in rows] == [0, 1, 2, 3, 4]
    for r in rows:
        puzzle = task.puzzle(r["index"])
        assert (r["numbers"], r["target"], r["n_numbers"]) == (list(puzzle.numbers), puzzle.target, 4)
        assert verify(r["solution"], puzzle).correct
    saved = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), seed=7).save(tmp_path)
    assert main(["generate", "--count", "2", "--task", str(saved)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), seed=7)
    assert [(r["numbers"], r["target"]) for r in rows] == [(list(expected.puzzle(i).numbers),
                                                            expected.puzzle(i).target) for i in (0, 1)]  # fmt: skip


def test_solve_and_verify_one_liners(capsys):
    from countdown_env.cli import main

    assert main(["solve", "25", "3", "7", "--target", "82"]) == 0
    answer = capsys.readouterr().out.strip()
    assert eval(answer, {"__builtins__": {}}) == 82  # noqa: S307 - the solver's own ASCII output
    assert main(["solve", "1", "2", "3", "--target", "6", "--count"]) == 0
    assert capsys.readouterr().out.strip() == "4"  # 2*3, 1+2+3, 1*2*3, 2*3/1 (count_solutions' docstring)
    assert main(["solve", "1", "2", "3", "--target", "6", "--all"]) == 0
    assert len(capsys.readouterr().out.split("\n")) - 1 == 4
    assert main(["solve", "2", "3", "--target", "100"]) == 1
    assert "no solution" in capsys.readouterr().out

    assert main(["verify", "25*3+7", "--numbers", "25", "3", "7", "--target", "82"]) == 0
    assert capsys.readouterr().out.strip() == "correct: ok, value 82"
    assert main(["verify", "25*3+8", "--numbers", "25", "3", "7", "--target", "82"]) == 1
    assert capsys.readouterr().out.startswith("wrong: unknown_number")
    assert main(["verify", "25+3", "--numbers", "25", "3", "7", "--target", "28", "--use-all-numbers"]) == 1
    assert capsys.readouterr().out.startswith("wrong: unused_number")
    assert main(["verify", "<reasoning>r</reasoning><solution>25*3+7</solution>", "--numbers", "25", "3", "7",
                 "--target", "82"]) == 0  # fmt: skip
    capsys.readouterr()


def test_progress_bars_follow_the_terminal(monkeypatch, capsys):
    from countdown_env.helpers.progress import LineProgress, NoBar, progress_bar, wanted
    from countdown_env.splits import build_split_records

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not wanted(None) and isinstance(progress_bar(3, "x"), LineProgress)  # plain lines into a log
    assert isinstance(progress_bar(3, "x", False), NoBar)
    build_split_records(n_numbers=(3,), train_size=3, eval_size=0, progress=None)
    assert "building puzzles" not in capsys.readouterr().err  # shorter than the line interval: silent
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert wanted(None) and not wanted(False)
    build_split_records(n_numbers=(3,), train_size=3, eval_size=0, progress=None)  # any size, on a terminal
    assert "building puzzles" in capsys.readouterr().err
    build_split_records(n_numbers=(3,), train_size=3, eval_size=0, progress=False)  # --no-progress
    assert "building puzzles" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["eval", "--samples", "many"], ["train", "--no-such-flag"], ["verify"], ["generate", "--count", "x"], ["nope"]],
)
def test_usage_errors_are_one_line(argv):
    """The README promises one line per user error: argparse's usage block is not printed (a subprocess, as a
    user runs it)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "countdown_env.cli", *argv], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "error:" in lines[0] and "--help" in lines[0], lines


def test_reasoning_gym_users_config_keywords_metadata_and_seeds():
    """reasoning-gym's own CountdownConfig keywords work, entries carry ``difficulty`` and a source name of their
    own (reasoning-gym's scorer for "countdown" has other rules), and ``seed=None`` is random as there."""
    from countdown_env.procedural import SOURCE_DATASET, create_dataset

    ds = create_dataset("countdown", min_numbers=3, max_numbers=4, min_value=1, max_value=20, min_target=10,
                        max_target=200, operators=("+", "-", "*", "/"), shuffle=True, size=4, seed=1)  # fmt: skip
    assert ds.task.n_numbers == (3, 4) and ds.task.value_range == (1, 20) and ds.task.target_range == (10, 200)
    assert ds.task.operators == "+-*/"
    meta = ds[0]["metadata"]
    assert meta["difficulty"] == {"numbers": (3, 4), "value": (1, 20), "target": (10, 200)}
    assert meta["source_dataset"] == SOURCE_DATASET != "countdown"
    assert all(3 <= len(e["metadata"]["numbers"]) <= 4 for e in ds)
    seeds = {create_dataset("countdown", size=1).seed for _ in range(4)}
    assert len(seeds) > 1  # random per dataset (2**31 choices: four equal draws would be a bug)
    assert create_dataset("countdown", size=2, seed=3)[1] == create_dataset("countdown", size=2, seed=3)[1]
    with pytest.raises(ValueError, match="not both"):
        create_dataset("countdown", n_numbers=3, min_numbers=3)


def test_generate_on_a_split_folder_says_it_prints_the_task_stream(tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "n3"
    args = ["build-splits", "--n-numbers", "3", "--train", "4", "--eval", "2", "--value-range", "1", "20",
            "--target-range", "10", "100", "--out", str(out), "--no-progress", "--jsonl-only"]  # fmt: skip
    assert main(args) == 0
    capsys.readouterr()
    assert main(["generate", "--task", str(out), "--count", "2"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2 and "is a split" in captured.err and "test.jsonl" in captured.err
