"""experiments/r3_smollm2/collect_arm.py: a finished arm's comparison folder becomes the committed layout, and
nothing already committed, no other seed's split or settings, and no machine path gets in."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from tests.scripts import load_script


def _script():
    return load_script("experiments/r3_smollm2/collect_arm.py")


def _arm_folder(root: Path, arm: str, seed: int = 3, *, split: bytes = b'{"numbers":[1,2],"target":3}\n',
                max_steps: int = 50, log: str = "[]") -> Path:  # fmt: skip
    folder = root / f"seed-{seed}-{arm}"
    run = folder / "runs" / f"{arm}-s{seed}"
    (run / "evals").mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "data" / f"train-s{seed}.jsonl").write_bytes(split)
    settings = {"max_steps": max_steps, "learners": [arm], "seeds": [seed], "eval_batch_size": 128}
    (folder / "compare.json").write_text(json.dumps(settings))
    for name, text in {"DONE": "{}", "log_history.json": log, "rows.csv": "step,pass@1\n0,0.2\n",
                       "resolved_config.json": '{"output_dir": "/cache/r3/seed-3/runs"}'}.items():  # fmt: skip
        (run / name).write_text(text)
    for step in (0, 50):
        (run / "evals" / f"step-{step}.jsonl").write_text(json.dumps({"step": step, "correct": [True, False]}) + "\n")
    (run / "final_eval.jsonl").write_text(json.dumps({"final": arm, "folder": "/cache/r3"}) + "\n")
    return folder


def test_an_arm_is_committed_compressed_with_the_seeds_settings_and_split_digest(tmp_path):
    script = _script()
    folder = _arm_folder(tmp_path / "cache", "t_spmo")
    dest = tmp_path / "r3"
    assert script.collect(folder, dest, "/cache", ["/nowhere"]) == [dest / "seed-3" / "runs" / "t_spmo-s3"]
    run = dest / "seed-3" / "runs" / "t_spmo-s3"
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file()) == [
        "DONE", "evals/step-0.jsonl.gz", "evals/step-50.jsonl.gz", "final_eval.jsonl.gz", "log_history.json",
        "resolved_config.json", "rows.csv"]  # fmt: skip
    assert json.loads(gzip.decompress((run / "evals" / "step-50.jsonl.gz").read_bytes())) == {
        "step": 50, "correct": [True, False]}  # fmt: skip
    assert json.loads((run / "resolved_config.json").read_text()) == {"output_dir": "$COUNTDOWN_CACHE/r3/seed-3/runs"}
    assert json.loads(gzip.decompress((run / "final_eval.jsonl.gz").read_bytes())) == {
        "final": "t_spmo", "folder": "$COUNTDOWN_CACHE/r3"}  # fmt: skip
    expected = hashlib.sha256(b'{"numbers":[1,2],"target":3}\n').hexdigest()
    assert json.loads((dest / "seed-3" / "data_digests.json").read_text())["files"] == {"train-s3.jsonl": expected}

    grpo = _arm_folder(tmp_path / "cache", "grpo")
    script.collect(grpo, dest, "/cache", ["/nowhere"])
    settings = json.loads((dest / "seed-3" / "compare.json").read_text())
    assert settings["learners"] == ["grpo", "t_spmo"] and settings["seeds"] == [3] and settings["max_steps"] == 50


def test_a_committed_arm_is_left_as_it_is(tmp_path, capsys):
    script = _script()
    dest = tmp_path / "r3"
    script.collect(_arm_folder(tmp_path / "a", "grpo", log="[1]"), dest, cache="/cache", forbidden=[])
    (dest / "seed-3" / "compare.json").unlink()  # a stop between the run folder and the seed's files
    assert script.collect(_arm_folder(tmp_path / "b", "grpo", log="[2]"), dest, cache="/cache", forbidden=[]) == []
    assert "already committed" in capsys.readouterr().out
    assert (dest / "seed-3" / "runs" / "grpo-s3" / "log_history.json").read_text() == "[1]"
    assert json.loads((dest / "seed-3" / "compare.json").read_text())["learners"] == ["grpo"]


@pytest.mark.parametrize("other", [{"split": b"{}\n"}, {"max_steps": 60}])
def test_another_split_or_setting_for_the_same_seed_is_refused(tmp_path, other):
    script = _script()
    dest = tmp_path / "r3"
    script.collect(_arm_folder(tmp_path / "a", "grpo"), dest, cache="/cache", forbidden=[])
    with pytest.raises(ValueError, match="split differs|max_steps"):
        script.collect(_arm_folder(tmp_path / "b", "s_grpo", **other), dest, cache="/cache", forbidden=[])
    assert not (dest / "seed-3" / "runs" / "s_grpo-s3").exists()
    assert json.loads((dest / "seed-3" / "compare.json").read_text())["learners"] == ["grpo"]


def test_a_machine_path_an_unfinished_arm_or_two_seeds_are_refused(tmp_path, capsys):
    script = _script()
    folder = _arm_folder(tmp_path / "cache", "grpo", log='["/home/someone/.cache"]')
    with pytest.raises(ValueError, match="names /home/someone"):
        script.collect(folder, tmp_path / "r3", cache="/cache", forbidden=["/home/someone"])
    assert not (tmp_path / "r3" / "seed-3").exists()
    (folder / "runs" / "grpo-s3" / "DONE").unlink()
    assert script.main([str(folder)]) == 2 and "no finished arm" in capsys.readouterr().err
    (folder / "compare.json").write_text(json.dumps({"seeds": [3, 4]}))
    with pytest.raises(ValueError, match="not one seed"):
        script.collect(folder, tmp_path / "r3")
