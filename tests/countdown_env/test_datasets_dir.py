"""The committed eval sets in datasets/: present, valid, rebuilt byte for byte, and never a Python package."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from countdown_env.expressions.verifier import verify
from countdown_env.helpers.jsonl import jsonl_line
from countdown_env.puzzle import Puzzle
from countdown_env.splits import build_split_records
from countdown_env.splits.eval_sets import (
    EVAL_SET_SIZE,
    EVAL_SETS,
    STORED_COLUMNS,
    eval_set_bytes,
    load_eval_set,
    stored_rows,
)
from tests.brute_force import fewest

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
# Rows rebuilt in the fast test: counting solutions of 6 numbers takes ~0.5 s a puzzle.
PREFIX = {
    "countdown_n3": 12,
    "countdown_n4": 12,
    "countdown_n5": 4,
    "countdown_n6": 2,
    "tiny_n3": 12,
    "tinyzero_3to4": 12,
}


def test_not_a_python_package():
    assert not (DATASETS / "__init__.py").exists()
    import datasets

    assert Path(datasets.__file__).resolve().parent != DATASETS  # the HF library, not this folder


def test_card_documents_every_set():
    card = (DATASETS / "README.md").read_text()
    assert "python -m countdown_env.splits.eval_sets" in card
    for name in EVAL_SETS:
        assert f"{name}.jsonl" in card


@pytest.mark.parametrize("name", sorted(EVAL_SETS))
def test_rows_are_valid(name):
    spec = EVAL_SETS[name]
    lines = (DATASETS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == EVAL_SET_SIZE
    keys = set()
    for line in lines:
        row = json.loads(line)
        assert tuple(row) == STORED_COLUMNS
        puzzle = Puzzle(row["numbers"], row["target"])
        assert puzzle.n_numbers == row["n_numbers"] and row["n_numbers"] in spec.n_numbers
        assert spec.value_range[0] <= min(puzzle.numbers) and max(puzzle.numbers) <= spec.value_range[1]
        assert spec.target_range[0] <= puzzle.target <= spec.target_range[1]
        assert verify(row["solution"], puzzle, use_all_numbers=spec.task.use_all_numbers).correct
        keys.add(puzzle.key)
    assert len(keys) == EVAL_SET_SIZE


@pytest.mark.parametrize("name", sorted(EVAL_SETS))
def test_rebuilt_prefix_is_byte_identical(name):
    """Each set is a prefix-stable stream: the first k rows rebuilt alone equal the committed first k lines."""
    k = PREFIX[name]
    rows = build_split_records(dataclasses.replace(EVAL_SETS[name], eval_size=k))["test"]
    rebuilt = b"".join(jsonl_line(r) for r in stored_rows(EVAL_SETS[name], rows))
    committed = b"".join((DATASETS / f"{name}.jsonl").read_bytes().splitlines(keepends=True)[:k])
    assert rebuilt == committed


# Whole-file rebuilds for the sets that count solutions quickly (n <= 4: ~4 s each). Counting 512 puzzles of 5 and 6
# numbers takes minutes, too long for CI; those sets are covered by the prefix test above and by
# `python -m countdown_env.splits.eval_sets --check`, which rebuilds every set in full.
QUICK_TO_REBUILD = sorted(name for name, spec in EVAL_SETS.items() if max(spec.n_numbers) <= 4)


@pytest.mark.slow
@pytest.mark.parametrize("name", QUICK_TO_REBUILD)
def test_full_rebuild_is_byte_identical(name):
    assert eval_set_bytes(name) == (DATASETS / f"{name}.jsonl").read_bytes()


def test_the_tinyzero_set_follows_tinyzeros_rules():
    """3 and 4 numbers in 1..99 (both counts present), every number used exactly once by the reference solution
    (checked here as TinyZero's ``validate_equation`` does: the solution's numbers, sorted, are the given ones)."""
    import re

    rows = [json.loads(line) for line in (DATASETS / "tinyzero_3to4.jsonl").read_text().splitlines()]
    assert {r["n_numbers"] for r in rows} == {3, 4}
    assert all(1 <= n <= 99 for r in rows for n in r["numbers"])
    assert all(sorted(int(n) for n in re.findall(r"\d+", r["solution"])) == sorted(r["numbers"]) for r in rows)
    prompt = load_eval_set("tinyzero_3to4", directory=DATASETS, as_dataset=False)[0]["prompt"][-1]["content"]
    assert "exactly once" in prompt and "<answer>" in prompt  # the set's own rules and template by default


@pytest.mark.parametrize("name", ["tiny_n3", "countdown_n4"])
def test_fewest_steps_are_certified_by_brute_force(name):
    """The stored fewest steps of the first rows agree with an independent brute force (tests/brute_force.py), and
    a puzzle with one operation to go has a solution (the count and the steps certify the same puzzles)."""
    rows = [json.loads(line) for line in (DATASETS / f"{name}.jsonl").read_text().splitlines()[:40]]
    for row in rows:
        assert row["fewest_steps"] == fewest(row["numbers"], row["target"], use_all=False, integer=False), row
        assert row["num_solutions"] >= 1 and 1 <= row["fewest_steps"] <= row["n_numbers"] - 1


def test_card_gives_the_certified_difficulty_of_every_set():
    card = (DATASETS / "README.md").read_text()
    assert "`fewest_steps`" in card and "`num_solutions`" in card
    for name in EVAL_SETS:
        rows = [json.loads(line) for line in (DATASETS / f"{name}.jsonl").read_text().splitlines()]
        by_steps = {k: sum(r["fewest_steps"] == k for r in rows) for k in range(1, 6)}
        counts = sorted(r["num_solutions"] for r in rows)
        cells = [*(str(by_steps[k]) for k in range(1, 6)), str(counts[len(counts) // 2]), str(counts.count(1))]
        assert f"| `{name}.jsonl` | " + " | ".join(cells) + " |" in card.splitlines()


def test_loader_adds_prompts():
    rows = load_eval_set("tiny_n3", directory=DATASETS)
    assert len(rows) == EVAL_SET_SIZE and rows[0]["prompt"][-1]["role"] == "user"
    assert str(rows[0]["target"]) in rows[0]["prompt"][-1]["content"]
    with pytest.raises(FileNotFoundError, match="rebuild"):
        load_eval_set("tiny_n3", directory=DATASETS / "missing")
    with pytest.raises(ValueError, match="unknown eval set"):
        eval_set_bytes("countdown_n9")


def test_eval_set_check_can_show_a_progress_bar(capsys):
    """``python -m countdown_env.splits.eval_sets --check`` builds the sets puzzle by puzzle (~26 s): a bar over them
    when stderr is a terminal (forced here with progress=True), none when asked not to."""
    from countdown_env.splits.eval_sets import eval_set_rows

    rows = eval_set_rows("tiny_n3", progress=True)
    assert "building puzzles" in capsys.readouterr().err and len(rows) == 512
    eval_set_rows("tiny_n3", progress=False)
    assert "building puzzles" not in capsys.readouterr().err
