"""SFT warm-start rows: TRL conversational prompt/completion, verified traces, deterministic, disjoint from eval."""

from __future__ import annotations

import pytest

from countdown_env.expressions.answers import has_valid_format
from countdown_env.expressions.verifier import verify_completion
from countdown_env.puzzle import Puzzle
from countdown_env.sft import SFT_COLUMNS, build_sft_dataset, build_sft_records


@pytest.fixture(scope="module")
def rows():
    return build_sft_records((3,), 60, seed=4, style="mixed")


def test_rows_are_conversational_and_verified(rows):
    assert len(rows) == 60
    for row in rows:
        assert tuple(row) == SFT_COLUMNS
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        (message,) = row["completion"]
        assert message["role"] == "assistant" and has_valid_format(message["content"])
        puzzle = Puzzle(row["numbers"], row["target"])
        assert verify_completion(message["content"], puzzle).correct
        assert max(row["numbers"]) <= 20 and 10 <= row["target"] <= 200 and row["target"] not in row["numbers"]
    assert len({Puzzle(r["numbers"], r["target"]).key for r in rows}) == 60
    assert len({r["style"] for r in rows}) >= 3


def test_deterministic_and_seeded(rows):
    assert build_sft_records((3,), 60, seed=4, style="mixed") == rows
    assert build_sft_records((3,), 60, seed=5, style="mixed") != rows


def test_exclude_and_several_counts(rows):
    banned = [Puzzle(r["numbers"], r["target"]) for r in rows[:20]]
    again = build_sft_records((3, 4), 30, seed=4, style="short", exclude=banned)
    assert not {Puzzle(r["numbers"], r["target"]).key for r in again} & {p.key for p in banned}
    assert [r["n_numbers"] for r in again[:4]] == [3, 4, 3, 4]


def test_dataset_columns_and_features():
    ds = build_sft_dataset(3, 8, seed=0, style="short", template="default")
    assert ds.column_names == list(SFT_COLUMNS) and len(ds) == 8
    assert ds.to_list() == build_sft_records(3, 8, seed=0, style="short")
    assert ds[0]["completion"][0]["content"].endswith("</solution>")


@pytest.mark.slow  # importing trl takes 5-20 s on a shared CPU box
def test_trl_sees_conversational_prompt_completion():
    from trl.data_utils import is_conversational

    ds = build_sft_dataset(3, 2, seed=0)
    assert is_conversational(ds[0])


def test_bad_style():
    with pytest.raises(ValueError, match="unknown trace style"):
        build_sft_records(3, 2, style="verbose")


def test_cli_build_sft(tmp_path, capsys):
    from countdown_env.cli import main
    from countdown_env.helpers.jsonl import read_jsonl

    assert main(["build-sft", "--size", "6", "--style", "long", "--out", str(tmp_path / "sft.jsonl")]) == 0
    assert "wrote 6 SFT rows" in capsys.readouterr().out
    rows = read_jsonl(tmp_path / "sft.jsonl")
    assert rows == build_sft_records(3, 6, style="long")
