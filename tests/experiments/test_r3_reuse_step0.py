"""R3 amendments 3 and 4 (experiments/r3_smollm2/reuse_step0.py): seeds 1-12 read seed 1's saved step-0 eval. The
committed source is the draw seed 1's runs evaluated; a prepared folder is accepted by ``compare --resume`` and its
planted step 0 comes back without an eval; the refusals keep the reuse to seed 1's library versions and to a fresh
folder, and another machine kind is named in the reused report."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from countdown_env.cli import main
from countdown_env.helpers.jsonl import read_jsonl
from tests.scripts import load_script

FOLDER = Path(__file__).resolve().parents[2] / "experiments" / "r3_smollm2"


def _script():
    return load_script("experiments/r3_smollm2/reuse_step0.py")


def test_the_committed_source_is_the_step0_draw_every_run_from_seed_1_on_evaluated_or_read():
    """The source report's puzzles are the committed step-0 evals of every run from seed 1 on (seed 2 sampled its
    own: the evidence that the draw does not depend on the training seed; later seeds read it, on either machine
    kind); seed 0 (older code) drew others."""
    puzzles = _script().source_report()["puzzles"]
    runs = sorted(
        p for p in FOLDER.glob("seed-*/runs/*/evals/step-0.jsonl.gz") if not p.is_relative_to(FOLDER / "seed-0")
    )
    assert any("seed-1" in str(run) for run in runs) and any("seed-2" in str(run) for run in runs)
    for run in runs:
        assert read_jsonl(run) == puzzles, run
    seed0 = FOLDER / "seed-0" / "runs" / "grpo-s0" / "evals" / "step-0.jsonl.gz"
    assert read_jsonl(seed0) != puzzles
    assert [(p["numbers"], p["target"]) for p in read_jsonl(seed0)] == [(p["numbers"], p["target"]) for p in puzzles]


def test_the_prepared_files_keep_the_report_and_change_only_the_seeds():
    script = _script()
    report = {"overall": {"pass@1": 0.25}, "puzzles": [{"correct": [True]}], "seed": 1}
    settings = {"seeds": [1], "x": 2}
    files = script.seed_folder_files(7, report, settings)
    assert json.loads(files["compare.json"]) == {"seeds": [7], "x": 2}
    reused = json.loads(files["step0-evals/seed-7.json"])
    assert {k: v for k, v in reused.items() if k != "reused_from"} == report
    assert "amendments 3 and 4" in reused["reused_from"] and "another machine kind" not in reused["reused_from"]
    assert settings == {"seeds": [1], "x": 2}  # the source is not changed
    elsewhere = json.loads(script.seed_folder_files(7, report, settings, "Xeon (amx_bf16)")["step0-evals/seed-7.json"])
    assert elsewhere["reused_from"].endswith("sampled on another machine kind: Xeon (amx_bf16))")
    for seed in (1, 2, 12):  # seeds 1 and 2 restart lost arms with their own draw (amendment 4)
        assert json.loads(script.seed_folder_files(seed, report, settings)["compare.json"])["seeds"] == [seed]
    for seed in (0, 13):
        with pytest.raises(ValueError, match="seeds 1-12"):
            script.seed_folder_files(seed, report, settings)
    with pytest.raises(ValueError, match="not seed 1"):
        script.seed_folder_files(3, report, {"seeds": [2]})


def test_other_versions_or_a_used_folder_are_refused_and_another_cpu_is_named(tmp_path, capsys):
    script = _script()
    there = script.source_machine()
    other_cpu = {"cpu": {"model": "AMD EPYC", "flags": [f for f in there["cpu"]["flags"] if f != "amx_bf16"]},
                 "versions": there["versions"]}  # fmt: skip
    other_vllm = {**other_cpu, "versions": {**there["versions"], "vllm": "0.0.1"}}
    differences = script.machine_differences(other_vllm, there)
    assert [d.split(":")[0] for d in differences] == ["cpu.flags", "cpu.model", "versions.vllm"]
    with pytest.raises(ValueError, match="versions.vllm"):
        script.prepare(3, tmp_path / "seed-3", here=other_vllm)
    assert not (tmp_path / "seed-3").exists()

    script.prepare(3, tmp_path / "seed-3", here=other_cpu)
    reused = json.loads((tmp_path / "seed-3" / "step0-evals" / "seed-3.json").read_text())
    assert f"another machine kind: {there['cpu']['model']} (" in reused["reused_from"]
    assert all(flag in reused["reused_from"] for flag in there["cpu"]["flags"])
    script.prepare(4, tmp_path / "seed-4", here=there)
    reused = json.loads((tmp_path / "seed-4" / "step0-evals" / "seed-4.json").read_text())
    assert "another machine kind" not in reused["reused_from"]

    written = (tmp_path / "seed-3" / "compare.json").read_text()
    assert script.main(["--seed", "3", "--arm", "grpo", "--out", str(tmp_path / "seed-3")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "seed-3" / "compare.json").read_text() == written


@pytest.mark.slow
def test_compare_resumes_a_prepared_folder_with_the_planted_step0_and_evaluates_no_step0(tiny_model_dir, tmp_path):
    """A tiny seed-1 comparison stands in for seed 1's folder; its saved report, with a pass@1 no eval of these
    puzzles gives planted in it, is what seed 3's run records at step 0."""
    first = tmp_path / "first"
    quick = ["compare", "--quick", "--learners", "grpo", "--model", str(tiny_model_dir)]
    assert main([*quick, "--seeds", "1", "--out", str(first)]) == 0
    source = tmp_path / "seed-1"
    (source / "runs" / "grpo-s1").mkdir(parents=True)
    shutil.copy(first / "compare.json", source / "compare.json")
    shutil.copy(first / "runs" / "grpo-s1" / "resolved_config.json", source / "runs" / "grpo-s1")
    report = json.loads((first / "step0-evals" / "seed-1.json").read_text())
    report["overall"]["pass@1"] = 0.123457  # its denominator is 4 x puzzles: no eval gives it
    report["puzzles"][0]["correct"] = [not c for c in report["puzzles"][0]["correct"]]
    (source / "step0-eval.json.gz").write_bytes(gzip.compress(json.dumps(report).encode()))

    out = _script().prepare(3, tmp_path / "seed-3", source=source)
    assert main([*quick, "--seeds", "3", "--resume", "--out", str(out)]) == 0
    rows = (out / "runs" / "grpo-s3" / "rows.csv").read_text().splitlines()
    header, step0 = rows[0].split(","), dict(zip(rows[0].split(","), rows[1].split(","), strict=True))
    assert "pass@1" in header and step0["step"] == "0" and float(step0["pass@1"]) == pytest.approx(0.123457)
    evals = (out / "runs" / "grpo-s3" / "evals" / "step-0.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in evals] == report["puzzles"]
    assert json.loads((out / "compare.json").read_text())["seeds"] == [3]
