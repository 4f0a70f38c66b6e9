"""Committed experiment results keep what recomputes their figures and drop what the code regenerates: each
comparison's training splits (``data/train-sSEED.jsonl``) are regenerated here from its ``compare.json`` and must
match the sha256 recorded in its ``data_digests.json`` byte for byte."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIGESTS = sorted((ROOT / "experiments").rglob("data_digests.json"))


def regenerated_split(folder: Path, seed: int) -> bytes:
    """The training split of seed ``seed`` that ``countdown compare`` wrote into ``folder/data``, rebuilt from the
    folder's settings with compare's own functions."""
    from countdown_env.helpers.jsonl import jsonl_line
    from countdown_env.splits.eval_sets import load_eval_set
    from learners.pipeline.compare import train_file_puzzles, train_split
    from learners.pipeline.compare.runs import has_shipped_warm_start
    from learners.pipeline.compare.settings import EVAL_SET
    from learners.pipeline.data import model_task, tiny_task
    from learners.pipeline.models import SHIPPED_DIR, resolve_model

    settings = json.loads((folder / "compare.json").read_text())
    exclude = [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]
    if settings.get("train_file"):
        puzzles = train_file_puzzles(ROOT / settings["train_file"], settings["train_size"], seed, exclude)
    else:
        assert settings["model"] is None or "smollm2" not in settings["model"], "a real model's task: not needed here"
        model = Path(resolve_model(settings["model"])) if settings["model"] else SHIPPED_DIR
        assert settings["model"] or has_shipped_warm_start()
        puzzles = train_split(model_task(model) or tiny_task(), settings["train_size"], seed, exclude)
    return b"".join(jsonl_line({"numbers": list(p.numbers), "target": p.target}) for p in puzzles)


def test_every_comparison_records_its_splits_and_commits_none():
    assert len(DIGESTS) >= 10
    for digests in DIGESTS:
        folder = digests.parent
        assert not list((folder / "data").glob("train-s*.jsonl")), f"{folder}: a regenerable split is committed"
        files = json.loads(digests.read_text())["files"]
        seeds = json.loads((folder / "compare.json").read_text())["seeds"]
        assert set(files) <= {f"train-s{seed}.jsonl" for seed in seeds}, folder


@pytest.mark.parametrize("relative", ["experiments/results/e6_trust_region", "experiments/r2_smollm2/lr_probe/lr-2e-4"])
def test_a_dropped_split_regenerates_byte_for_byte(relative):
    folder = next(d.parent for d in DIGESTS if d.parent.relative_to(ROOT).as_posix().startswith(relative))
    name, digest = sorted(json.loads((folder / "data_digests.json").read_text())["files"].items())[0]
    seed = int(name.removeprefix("train-s").removesuffix(".jsonl"))
    assert hashlib.sha256(regenerated_split(folder, seed)).hexdigest() == digest


def test_records_under_experiments_are_compressed():
    """Per-puzzle and per-completion records are committed as ``.jsonl.gz`` (experiments/compress_records.py); the
    readers find them under the names their commands wrote."""
    plain = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "experiments").rglob("*.jsonl"))
    assert not plain, f"uncompressed records (run experiments/compress_records.py on them): {plain[:5]}"
    assert len(list((ROOT / "experiments").rglob("*.jsonl.gz"))) > 500


def test_compress_records_keeps_the_rows_and_never_writes_over_a_file(tmp_path, capsys):
    from countdown_env.helpers.jsonl import read_jsonl, write_jsonl
    from tests.scripts import load_script

    compress = load_script("experiments/compress_records.py")
    rows = [{"numbers": [1, 2, 3], "target": 6, "correct": [True, False]}]
    write_jsonl(rows, tmp_path / "run" / "evals" / "step-0.jsonl")
    assert compress.main([str(tmp_path)]) == 0 and "compressed 1 files" in capsys.readouterr().out
    assert not (tmp_path / "run" / "evals" / "step-0.jsonl").exists()
    assert read_jsonl(tmp_path / "run" / "evals" / "step-0.jsonl.gz") == rows
    write_jsonl(rows[:0], tmp_path / "run" / "evals" / "step-0.jsonl")  # a plain file beside its compressed one
    with pytest.raises(SystemExit):
        compress.main([str(tmp_path)])
    assert "step-0.jsonl.gz exists" in capsys.readouterr().err
    assert read_jsonl(tmp_path / "run" / "evals" / "step-0.jsonl.gz") == rows  # untouched
