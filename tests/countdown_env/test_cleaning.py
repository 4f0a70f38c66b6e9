"""External SFT cleaner (the shaping post's filters) on a small fixture: what is kept, and why rows drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from countdown_env.expressions.answers import has_valid_format
from countdown_env.expressions.verifier import verify_completion
from countdown_env.puzzle import Puzzle
from countdown_env.sft.cleaning import (
    clean_file,
    clean_row,
    is_arithmetic,
    normalize_operators,
    split_response,
    split_stated_result,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "external_sft.jsonl"
EXPECTED_DROPS = {
    "forbidden_characters": 1,
    "unused_number": 1,
    "reused_number": 1,
    "wrong_value": 1,
    "no_answer": 1,
    "bad_row": 2,
    "empty_reasoning": 1,
    "no_response": 1,
    "unknown_number": 1,
}


def test_steps():
    assert normalize_operators("4 × 9 − 2 ÷ 1") == "4 * 9 - 2 / 1"
    assert normalize_operators("$(８ ⋅ 2)$.") == "(8 * 2)"
    assert normalize_operators(r"6 \times 5 \div 3") == "6 * 5 / 3"
    assert split_stated_result("25 * 3 + 7 = 82") == ("25 * 3 + 7", "82")
    assert split_stated_result("25 * 3 + 7 = banana") == ("25 * 3 + 7 = banana", None)
    assert is_arithmetic("(1 + 2) * 3 / 4 - 5") and not is_arithmetic("3 x 4") and not is_arithmetic("2^3")
    assert split_response("a <think>why</think> b <answer>1+2</answer> <answer>3</answer>") == ("why", "3")
    assert split_response("just text") is None


def test_fixture_counts_per_reason(tmp_path):
    report = clean_file(FIXTURE, tmp_path / "out")
    assert report.read == 14 and report.kept == 4
    assert dict(report.dropped) == EXPECTED_DROPS
    assert json.loads((tmp_path / "out" / "report.json").read_text())["dropped"] == EXPECTED_DROPS
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    assert [r["solution"] for r in rows] == ["25 * 3 + 7", "4 * 9 - 2", "(8 / 2) * 5", "6 * 5 + 3"]
    for row in rows:
        puzzle = Puzzle(row["numbers"], row["target"])
        (message,) = row["completion"]
        assert message["role"] == "assistant" and has_valid_format(message["content"])
        assert verify_completion(message["content"], puzzle, use_all_numbers=True).correct
        assert row["prompt"][-1]["role"] == "user" and "exactly once" in row["prompt"][-1]["content"]
    assert rows[0]["completion"][0]["content"] == (
        "<reasoning>\n25*3 is 75, plus 7 is 82.\n</reasoning>\n<solution>25 * 3 + 7</solution>"
    )
    assert rows[2]["completion"][0]["content"].startswith("<reasoning>\nFirst 8 ÷ 2 = 4, then times 5.\n</reasoning>")


def test_response_field_and_reasoning_option():
    row = {"nums": [3, 4, 5], "target": 17, "chosen": "<answer>3*4+5</answer>", "response": "<answer>1</answer>"}
    assert clean_row(row)[1] == "empty_reasoning"  # "response" comes first by default
    cleaned, reason = clean_row(row, response_field="chosen", require_reasoning=False)
    assert reason == "ok" and cleaned["solution"] == "3*4+5"
    assert cleaned["completion"][0]["content"] == "<reasoning>\n\n</reasoning>\n<solution>3*4+5</solution>"


def test_cli_clean_sft(tmp_path, capsys):
    from countdown_env.cli import main

    assert main(["clean-sft", str(FIXTURE), str(tmp_path / "clean.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "read 14, kept 4, dropped 10" in out and "bad_row: 2" in out
    assert len((tmp_path / "clean.jsonl").read_text().splitlines()) == 4
    assert main(["clean-sft", str(tmp_path / "missing.jsonl"), str(tmp_path / "x.jsonl")]) == 2
    assert "no such input file" in capsys.readouterr().err


@pytest.mark.parametrize("row", [None, [], {"nums": "3 4", "target": 7}, {"nums": [3, 4], "target": -7}])
def test_bad_rows_never_crash(row):
    assert clean_row(row) == (None, "bad_row")


def test_hostile_rows_are_bad_rows_and_a_missing_field_is_an_error(tmp_path):
    """One hostile row (an escaped lone surrogate, a 100 000-deep array, a 5 000-digit integer) is a bad_row among
    good ones (it aborted the whole file); --response-field that no row has is refused (it dropped all and exited 0)."""
    import json

    from countdown_env.sft.cleaning import clean_file

    good = {"numbers": [3, 7, 11], "target": 32,
            "response": "<reasoning>3*7=21, 21+11=32</reasoning>\n<solution>3 * 7 + 11</solution>"}  # fmt: skip
    lines = [json.dumps(good), '{"numbers": [3, 7, 11], "target": 21, "response": "\\ud800"}',
             "[" * 100_000 + "]" * 100_000, '{"target": ' + "9" * 5000 + "}", json.dumps(good)]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    report = clean_file(src, tmp_path / "out")
    assert report.read == 5 and report.kept == 2 and report.dropped["bad_row"] == 3
    assert len((tmp_path / "out" / "train.jsonl").read_text().splitlines()) == 2
    with pytest.raises(ValueError, match="response field 'nope' is in no row"):
        clean_file(src, tmp_path / "out2", response_field="nope")
    assert not (tmp_path / "out2").exists()


def test_ten_megabyte_inputs_cost_no_scan():
    """10 MB responses and expressions are refused or returned before any scan (2.1 s and 0.5 s before): the
    cleaner drops the row as too_long, and normalisation returns the text untouched (its × not rewritten)."""
    from countdown_env.expressions.answers import normalize_expression
    from countdown_env.sft.cleaning import TOO_LONG, clean_row

    huge = "<reasoning>" + "1 × 2 " * 2_000_000 + "</reasoning><solution>1</solution>"
    assert clean_row({"numbers": [1, 2], "target": 3, "response": huge})[1] == TOO_LONG
    assert normalize_expression(huge) == huge


# ---------------------------------------------------------------------------------- issue 35 item 11: one rule
@pytest.mark.parametrize("answer", ["25*3+7", "25*3+7 = 82", "25*3+7 = 83", "25*3+7 = banana", "25*3+7 = 82 = 82",
                                    "$25 * 3 + 7 = 82$", "25*3+7 =", "82 = 25*3+7"])  # fmt: skip
def test_clean_sft_keeps_an_answer_exactly_when_verify_accepts_it(answer):
    from countdown_env.expressions.verifier import verify
    from countdown_env.sft.cleaning import clean_row

    puzzle = Puzzle([25, 3, 7], 82)
    row = {"numbers": [25, 3, 7], "target": 82, "response": f"<think>t</think><answer>{answer}</answer>"}
    cleaned, reason = clean_row(row)
    assert (cleaned is not None) == verify(answer, puzzle, use_all_numbers=True).correct, (answer, reason)
    if cleaned is not None:
        assert cleaned["solution"] == "25*3+7" or cleaned["solution"] == "25 * 3 + 7"


def test_a_non_utf8_line_is_one_bad_row(tmp_path):
    from countdown_env.sft.cleaning import clean_file

    good = json.dumps({"numbers": [3, 4], "target": 7, "response": "<think>a</think><answer>3 + 4</answer>"})
    data = tmp_path / "data.jsonl"
    data.write_bytes(good.encode() + b"\n" + b'{"numbers": [3, 4], "target": 7, "response": "\xff\xfe"}\n'
                     + good.encode() + b"\n")  # fmt: skip
    report = clean_file(data, tmp_path / "out.jsonl")
    assert (report.read, report.kept, dict(report.dropped)) == (3, 2, {"bad_row": 1})
