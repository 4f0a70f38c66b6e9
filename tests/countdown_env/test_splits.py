"""Split builder: columns, verified solutions, disjointness by canonical key, byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from countdown_env.expressions.verifier import verify
from countdown_env.helpers.jsonl import read_jsonl
from countdown_env.puzzle import Puzzle
from countdown_env.splits import SPLIT_COLUMNS, SplitError, SplitSpec, build_split_records
from countdown_env.splits.folders import write_splits

SMALL = SplitSpec(n_numbers=(3, 4), train_size=41, eval_size=12, seed=5)


@pytest.fixture(scope="module")
def small():
    return build_split_records(SMALL)


def _keys(rows):
    return [Puzzle(r["numbers"], r["target"]).key for r in rows]


def test_columns_sizes_and_verified_solutions(small):
    assert list(small) == ["test", "train"]
    assert len(small["test"]) == 12 and len(small["train"]) == 41
    assert [r["n_numbers"] for r in small["train"]].count(3) == 21  # 41 shared: 21 + 20, earlier count first
    assert [r["n_numbers"] for r in small["test"][:4]] == [3, 4, 3, 4]  # interleaved
    for row in small["test"] + small["train"]:
        assert tuple(row) == SPLIT_COLUMNS
        puzzle = Puzzle(row["numbers"], row["target"])
        assert row["n_numbers"] == len(row["numbers"])
        assert verify(row["solution"], puzzle).correct
        assert row["num_solutions"] >= 1 and row["difficulty"] in {"easy", "medium", "hard"}
        assert row["target"] not in row["numbers"]  # no trivial puzzles
        roles = [m["role"] for m in row["prompt"]]
        assert roles[-1] == "user" and str(row["target"]) in row["prompt"][-1]["content"]


def test_disjoint_and_unique_by_canonical_key(small):
    eval_keys, train_keys = _keys(small["test"]), _keys(small["train"])
    assert len(set(eval_keys)) == len(eval_keys) and len(set(train_keys)) == len(train_keys)
    assert not set(eval_keys) & set(train_keys)


def test_permuted_duplicates_count_as_one_puzzle():
    """A space so small that permutations must collide: the split still holds each canonical puzzle once."""
    rows = build_split_records(n_numbers=(2,), train_size=20, eval_size=5, value_range=(1, 6), target_range=(2, 36))
    keys = _keys(rows["test"] + rows["train"])
    assert len(keys) == 25 and len(set(keys)) == 25


def test_eval_does_not_depend_on_train_size(small):
    other = build_split_records(SplitSpec(n_numbers=(3, 4), train_size=3, eval_size=12, seed=5))
    assert other["test"] == small["test"]
    assert build_split_records(SplitSpec(n_numbers=(3, 4), train_size=3, eval_size=12, seed=6))["test"] != small["test"]


def test_exclude_keeps_puzzles_out(small):
    banned = [Puzzle(list(reversed(r["numbers"])), r["target"]) for r in small["test"][:3] + small["train"][:3]]
    again = build_split_records(SplitSpec(n_numbers=(3, 4), train_size=41, eval_size=12, seed=5, exclude=banned))
    kept = set(_keys(again["test"] + again["train"]))
    assert not kept & {p.key for p in banned}
    assert len(again["test"]) == 12 and len(again["train"]) == 41


def _tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_same_arguments_give_byte_identical_files(tmp_path):
    spec = SplitSpec(n_numbers=(3,), train_size=15, eval_size=6, seed=1)
    hashes = [write_splits(build_split_records(spec), tmp_path / name, spec=spec) for name in ("a", "b")]
    assert hashes[0] == hashes[1]
    first, second = _tree_hashes(tmp_path / "a"), _tree_hashes(tmp_path / "b")
    assert {"train.jsonl", "test.jsonl", "manifest.json", "dataset_dict.json"} <= set(first)
    assert any(name.endswith(".arrow") for name in first)
    assert first == second  # jsonl, arrow shards, state and info files: all the same bytes
    assert hashlib.sha256((tmp_path / "a" / "train.jsonl").read_bytes()).hexdigest() == hashes[0]["train"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["rows"] == {"test": 6, "train": 15} and manifest["spec"]["seed"] == 1


def test_splits_take_hf_names_drawn_from_the_eval_streams(tmp_path):
    """Issue 36 item 7: the held-out split is ``test`` (HF datasets' name, TRL's --dataset_test_split default) in
    the rows, the files and the DatasetDict, drawn from the same streams as when it was ``eval`` (the committed eval
    sets rebuild byte for byte: tests/countdown_env/test_datasets_dir.py); a folder without the asked split is one
    line naming the
    splits it has."""
    from countdown_env.splits import SPLIT_NAMES, stream_seed
    from countdown_env.splits.folders import read_split_rows

    assert SPLIT_NAMES == ("train", "test") and stream_seed(3, 4, "test") == stream_seed(3, 4, "eval")
    spec = SplitSpec(n_numbers=(3,), train_size=4, eval_size=2, seed=2)
    rows = build_split_records(spec)
    folder = tmp_path / "splits"
    write_splits({"test": rows["test"], "train": rows["train"]}, folder, spec=spec)
    assert read_split_rows(folder) == rows["test"] and read_split_rows(folder, "train") == rows["train"]
    with pytest.raises(FileNotFoundError, match=r"has no valid\.jsonl \(its splits: test, train\)"):
        read_split_rows(folder, "valid")


def test_hf_round_trip(tmp_path, small):
    from datasets import load_from_disk

    from countdown_env.splits.hf_datasets import build_splits

    spec = SplitSpec(n_numbers=(3,), train_size=4, eval_size=2, seed=2)
    splits = build_splits(spec)
    write_splits(splits, tmp_path, spec=spec)
    loaded = load_from_disk(str(tmp_path))
    assert sorted(loaded) == ["test", "train"]
    assert loaded["train"].to_list() == read_jsonl(tmp_path / "train.jsonl") == splits["train"].to_list()
    assert loaded["test"].column_names == list(SPLIT_COLUMNS)


def test_cli_build_splits(tmp_path, capsys):
    from countdown_env.cli import main

    out = tmp_path / "splits"
    args = ["build-splits", "--n-numbers", "3", "--train", "5", "--eval", "3", "--seed", "0", "--jsonl-only"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert "built 8 puzzles" in capsys.readouterr().out
    assert len(read_jsonl(out / "train.jsonl")) == 5 and len(read_jsonl(out / "test.jsonl")) == 3
    assert not (out / "dataset_dict.json").exists()
    # --exclude with the eval file of another seed keeps its puzzles out
    assert main([*args, "--out", str(tmp_path / "x"), "--no-progress", "--exclude", str(out / "test.jsonl")]) == 0
    excluded = set(_keys(read_jsonl(out / "test.jsonl")))
    assert not excluded & set(
        _keys(read_jsonl(tmp_path / "x" / "test.jsonl") + read_jsonl(tmp_path / "x" / "train.jsonl"))
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_numbers": ()}, "non-empty"),
        ({"n_numbers": (3, 3)}, "distinct"),
        ({"n_numbers": (7,)}, "1..6"),
        ({"train_size": -1}, "non-negative"),
        ({"train_size": 0, "eval_size": 0}, "nothing to build"),
        ({"value_range": (5, 1)}, "value_range"),
        ({"template": "nope"}, "unknown prompt template"),
        ({"exclude": ["3,4"]}, "exclude"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SplitSpec(**kwargs)


def test_exhausted_puzzle_space_is_an_error_not_a_hang():
    # 12 (numbers, target) pairs exist, fewer of them solvable and non-trivial: found out by drawing
    with pytest.raises(SplitError, match="too small"):
        build_split_records(n_numbers=(2,), train_size=0, eval_size=10, value_range=(1, 2), target_range=(1, 4))


def test_a_size_beyond_every_distinct_puzzle_is_refused_at_once():
    import itertools

    pairs = len(list(itertools.combinations_with_replacement(range(1, 6), 3))) * len(range(10, 13))  # 35 x 3
    with pytest.raises(SplitError, match=f"111 distinct puzzles with 3 numbers asked for, but at most {pairs} exist"):
        SplitSpec(n_numbers=(3,), train_size=100, eval_size=11, value_range=(1, 5), target_range=(10, 12))
    with pytest.raises(SplitError, match="at most"):  # the command: no 84 836-hour ETA
        SplitSpec(train_size=10**12)


def test_spec_holds_a_task_and_the_manifest_records_it(tmp_path):
    from countdown_env.task import CountdownTask

    task = CountdownTask(value_range=(1, 20), target_range=(10, 200), template="compact", seed=4)
    spec = SplitSpec(n_numbers=(3,), train_size=3, eval_size=2, task=task)
    assert spec == SplitSpec(n_numbers=(3,), train_size=3, eval_size=2, value_range=(1, 20), target_range=(10, 200),
                             template="compact", seed=4)  # fmt: skip
    assert spec.seed == 4 and spec.task.n_numbers == 3 and spec.value_range == (1, 20)
    records = build_split_records(spec)
    assert records["test"][0]["prompt"] == [{"role": "user", "content": task.messages(Puzzle(
        records["test"][0]["numbers"], records["test"][0]["target"]))[0]["content"]}]  # fmt: skip
    assert records["test"][0]["prompt"][0]["content"].startswith("Numbers: ")
    write_splits(records, tmp_path, spec=spec, save_to_disk=False)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert CountdownTask.from_dict(manifest["task"]) == spec.task
    with pytest.raises(ValueError, match="require_solvable"):
        SplitSpec(n_numbers=(3,), require_solvable=False)
    with pytest.raises(ValueError, match="not both"):
        SplitSpec(task=task, seed=1)


def test_spec_keeps_a_mixed_task_whose_counts_it_builds():
    from countdown_env.task import CountdownTask

    task = CountdownTask(n_numbers=(3, 4), seed=2)
    assert SplitSpec(task=task, train_size=2, eval_size=0).task == task
    assert SplitSpec(n_numbers=(4, 3), task=task, train_size=2, eval_size=0).task.n_numbers == ((4, 1.0), (3, 1.0))


def test_build_splits_no_progress_prints_no_bars(tmp_path):
    """``--no-progress`` silences datasets' "Saving the dataset" bars too; a forced-tty run would show them
    (subprocess: stderr is a pipe, and --no-progress must hold even where a bar would be wanted)."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "countdown_env.cli", "build-splits", "--n-numbers", "3", "--train", "8",
            "--eval", "2", "--value-range", "1", "20", "--target-range", "10", "100", "--no-progress"]  # fmt: skip
    result = subprocess.run([*argv, "--out", str(tmp_path / "s")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Saving the dataset" not in result.stderr and "%|" not in result.stderr
