"""Nothing lost (issue 35 items 1-3): every writer refuses an output that is one of its inputs (by name, through a
symlink or a hard link, around or inside one), ``--overwrite`` removes only what the command itself writes, and two
writers of one report never both succeed. One helper does it for all:
:func:`countdown_env.helpers.atomic.check_output`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_careless_user import SMALL, assert_user_error, countdown, tree_digest

from countdown_env.cli import main
from countdown_env.helpers.atomic import OutputError, check_output, foreign_entries, output_claim, remove_owned

SHIPPED = Path(__file__).resolve().parents[2] / "learners" / "pipeline" / "tiny_warm_start"


def one_error_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


# ------------------------------------------------------------------------------------------- the one helper
def test_check_output_refuses_an_input_by_any_name(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("{}\n")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    link = tmp_path / "link.jsonl"
    link.symlink_to(data)
    hard = tmp_path / "hard.jsonl"
    os.link(data, hard)
    for out in (data, link, hard, tmp_path, folder / "model.safetensors", folder / "new.json"):
        with pytest.raises(OutputError, match="input"):
            check_output(out, [data, folder], overwrite=True)
    assert check_output(tmp_path / "elsewhere.json", [data, folder]) == tmp_path / "elsewhere.json"
    with pytest.raises(OutputError, match="root"):
        check_output("/", [])


def test_foreign_entries_and_remove_owned_touch_nothing_else(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoint-2").mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    (run / ".summary.json.tmp-1").write_text("")  # a writer's temporary is never the user's
    assert foreign_entries(run, ("checkpoint-*", "summary.json")) == []
    (run / "thesis").mkdir()
    (run / "thesis" / "chapter1.tex").write_text("x")
    assert foreign_entries(run, ("checkpoint-*", "summary.json")) == ["thesis"]
    with pytest.raises(OutputError, match="thesis"):
        remove_owned(run, ("checkpoint-*", "summary.json"))
    assert (run / "thesis" / "chapter1.tex").read_text() == "x" and (run / "summary.json").is_file()
    shutil.rmtree(run / "thesis")
    remove_owned(run, ("checkpoint-*", "summary.json"))
    assert [p.name for p in run.iterdir()] == [".summary.json.tmp-1"]


# -------------------------------------------------------------------------------------------- 1. eval --out
def test_eval_never_writes_its_report_over_the_split_or_the_model(tmp_path, capsys):
    model = tmp_path / "finalcopy"
    shutil.copytree(SHIPPED, model)
    split = tmp_path / "myeval.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n')
    (tmp_path / "notes.txt").write_text("mine")
    before = tree_digest(tmp_path)
    base = ["eval", "--model", str(model), "--split", str(split), "--samples", "1", "--max-new-tokens", "4"]
    for out, needle in [
        (split, "is (or contains) the input"),
        (model / "model.safetensors", "is (or contains) the input"),
        (model / "config.json", "is (or contains) the input"),
        (tmp_path, "is (or contains) the input"),
        (tmp_path / "notes.txt", "not an eval report"),
    ]:
        assert main([*base, "--out", str(out)]) == 2, out
        line = one_error_line(capsys)
        assert line.startswith("countdown eval: error: --out") and needle in line, line
    assert tree_digest(tmp_path) == before  # nothing written, nothing replaced


def test_eval_report_path_check_accepts_its_own_reports(tmp_path):
    from learners.pipeline.evaluation.report import check_report_path, is_eval_report

    model = tmp_path / "model"
    shutil.copytree(SHIPPED, model)
    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n')
    assert is_eval_report(model / "eval_report.json")  # the shipped report: replaced by a new eval of the model
    assert check_report_path(model / "eval_report.json", model, split) == model / "eval_report.json"
    (model / "mine.json").write_text(json.dumps({"samples": 4, "overall": {}}))
    assert check_report_path(model / "mine.json", model, split) == model / "mine.json"  # a rerun's report


# ------------------------------------------------------------------------------------------- 2. --overwrite
def test_train_overwrite_never_empties_a_folder_holding_the_users_files(tmp_path, capsys):
    sb = tmp_path / "sb"
    (sb / "final").mkdir(parents=True)
    (sb / "thesis").mkdir()
    (sb / "thesis" / "chapter1.tex").write_text("x")
    (sb / "summary.json").write_text("{}")
    before = tree_digest(sb)
    argv = ["train", "--config", "cpu-tiny", "--max-steps", "1", "--output-dir", str(sb), "--overwrite"]
    assert main(argv) == 2
    line = one_error_line(capsys)
    assert "thesis" in line and "refusing to delete" in line
    assert tree_digest(sb) == before and sorted(p.name for p in sb.iterdir()) == ["final", "summary.json", "thesis"]


def test_train_output_dir_is_never_an_input(tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(SHIPPED, model)
    before = tree_digest(model)
    for out in (model, model / "run", tmp_path):
        assert main(["train", "--config", "cpu-tiny", "--model", str(model), "--output-dir", str(out)]) == 2
        assert "input" in one_error_line(capsys)
    assert main(["train", "--config", "cpu-tiny", "--output-dir", "/"]) == 2
    assert "root" in one_error_line(capsys)
    assert tree_digest(model) == before


@pytest.mark.parametrize("command", ["build-splits", "build-sft", "clean-sft"])
def test_dataset_writers_overwrite_only_their_own_folders(command, tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"numbers": [3, 4], "target": 7, "response": "<think>a</think><answer>3+4</answer>"}))
    out = tmp_path / "out"
    argv = {
        "build-splits": ["build-splits", *SMALL, "--jsonl-only", "--no-progress", "--out", str(out)],
        "build-sft": ["build-sft", "--size", "2", "--no-progress", "--out", str(out)],
        "clean-sft": ["clean-sft", str(data), str(out)],
    }[command]
    assert main(argv) == 0
    assert main([*argv, "--overwrite"]) == 0  # a folder the command wrote is replaced
    (out / "thesis").mkdir()
    (out / "thesis" / "chapter1.tex").write_text("x")
    before = tree_digest(out)
    capsys.readouterr()
    assert main([*argv, "--overwrite"]) == 2
    assert "thesis" in one_error_line(capsys)
    assert tree_digest(out) == before


def test_compare_never_adopts_or_empties_a_foreign_folder(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "chapter1.tex").write_text("x")
    base = ["compare", "--quick", "--learners", "grpo", "--no-progress", "--out", str(out)]
    assert main([*base, "--resume"]) == 2
    assert "holds no comparison" in capsys.readouterr().err
    (out / "compare.json").write_text("{}")  # a comparison's folder that also holds the user's file
    assert main([*base, "--overwrite"]) == 2
    assert "chapter1.tex" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["chapter1.tex", "compare.json"]


# ------------------------------------------------------------------------------------- 3. one report, one writer
def test_two_evals_into_one_report_never_both_succeed(tmp_path):
    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n')
    out = tmp_path / "same.json"
    with output_claim(out):  # the first eval, still generating
        second = countdown("eval", "--model", "warm-start", "--split", split, "--max-new-tokens", "4", "--out", out)
        assert_user_error(second, "eval", "being written by another process", f"PID {os.getpid()}")
    assert not out.exists()


def test_demo_out_is_neither_the_warm_start_nor_the_users_folder(tmp_path, capsys):
    assert main(["demo-train", "--quick", "--out", str(SHIPPED / "runs")]) == 2
    assert "lies inside the input folder" in one_error_line(capsys) and not (SHIPPED / "runs").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("x")
    assert main(["demo-train", "--quick", "--out", str(mine)]) == 2
    assert "chapter1.tex" in one_error_line(capsys) and sorted(p.name for p in mine.iterdir()) == ["chapter1.tex"]
