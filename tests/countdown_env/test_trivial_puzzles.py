"""Trivial puzzles (the target is one of the numbers, so the answer "23" scores 1.0) are one task rule (issue 23
item 4): ``CountdownTask.allow_trivial`` (default False) reaches every consumer that draws puzzles, and the split
builder keeps its rows (the committed eval sets are rebuilt byte for byte by tests/countdown_env/test_datasets_dir.py).

Each consumer is checked over a few hundred draws, where the unfiltered generator gives about 2 % trivial puzzles;
"trivial" is tested here as ``target in numbers``, not through the project's function."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from countdown_env import CountdownTask, Puzzle
from verifiers_ext.classic_env import classic_api_installed

ROOT = Path(__file__).resolve().parents[2]
DRAWS = 300


def _trivial(numbers, target) -> bool:
    return target in list(numbers)


def _count_trivial(pairs) -> int:
    return sum(_trivial(numbers, target) for numbers, target in pairs)


# ---------------------------------------------------------------------------------------------- the task rule
def test_the_task_field_defaults_to_false_and_round_trips(tmp_path):
    assert CountdownTask().allow_trivial is False
    task = CountdownTask(n_numbers=3, allow_trivial=True)
    data = task.to_dict()
    assert data["allow_trivial"] is True
    assert CountdownTask.from_dict(json.loads(json.dumps(data))) == task
    assert CountdownTask.from_dict(CountdownTask().to_dict()).allow_trivial is False
    task.save(tmp_path)
    assert CountdownTask.load(tmp_path).allow_trivial is True


def test_a_task_saved_before_the_field_loads_with_the_default():
    shipped = ROOT / "learners" / "pipeline" / "tiny_warm_start" / "countdown_task.json"
    data = json.loads(shipped.read_text())
    assert "allow_trivial" not in data  # written before the field existed
    assert CountdownTask.from_dict(data).allow_trivial is False
    old = {k: v for k, v in CountdownTask(n_numbers=3).to_dict().items() if k != "allow_trivial"}
    assert CountdownTask.from_dict(old) == CountdownTask(n_numbers=3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"allow_trivial": "yes"}, "allow_trivial must be True or False"),
        ({"n_numbers": 1}, "every solvable 1-number puzzle is trivial"),
        ({"n_numbers": ((1, 1.0), (3, 1.0))}, "set allow_trivial=True"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        CountdownTask(**kwargs)
    assert "\n" not in str(info.value)


def test_one_number_tasks_need_the_option():
    task = CountdownTask(n_numbers=1, value_range=(1, 50), target_range=(1, 50), allow_trivial=True)
    assert all(_trivial(p.numbers, p.target) for p in (task.puzzle(i) for i in range(5)))


def test_generator_redraws_within_the_index_and_moves_no_other_index():
    strict, loose = CountdownTask(), CountdownTask(allow_trivial=True)
    pairs = [(strict.puzzle(i), loose.puzzle(i)) for i in range(DRAWS)]
    assert _count_trivial((s.numbers, s.target) for s, _ in pairs) == 0
    trivial_indices = [i for i, (_, raw) in enumerate(pairs) if _trivial(raw.numbers, raw.target)]
    assert len(trivial_indices) >= 3  # the rule has something to do at these settings
    assert 4 in trivial_indices and pairs[4][1] == Puzzle([46, 89, 47, 23], 23)  # the example
    for i, (s, raw) in enumerate(pairs):
        assert (s == raw) == (i not in trivial_indices)
    # the witness of a redrawn index solves the redrawn puzzle
    from countdown_env.expressions.verifier import verify

    record = strict.record(4)
    assert record.puzzle == pairs[4][0] and verify(record.solution, record.puzzle).correct


def test_the_rule_holds_under_counting_and_uniform_targets():
    for task in (
        CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(1, 40), target_mode="uniform"),
        CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(1, 40), min_solutions=4),
        CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(1, 40), require_solvable=False),
    ):
        puzzles = [task.puzzle(i) for i in range(60)]
        assert _count_trivial((p.numbers, p.target) for p in puzzles) == 0, task


# ---------------------------------------------------------------------------------------------- consumers
def _env_pairs(**kwargs):
    import gymnasium as gym

    env = gym.make("Countdown-v0", **kwargs)
    _, info = env.reset(seed=0)
    pairs = [(info["puzzle"].numbers, info["puzzle"].target)]
    for _ in range(DRAWS - 1):
        _, info = env.reset()
        pairs.append((info["puzzle"].numbers, info["puzzle"].target))
    env.close()
    return pairs


def test_countdown_v0_resets():
    import countdown_env  # noqa: F401  (registers the ids)

    assert _count_trivial(_env_pairs()) == 0
    assert _count_trivial(_env_pairs(allow_trivial=True)) > 0


def test_verifiers_puzzle_source_and_classic_dataset():
    from verifiers_ext.dataset_rows import PuzzleSource

    def pairs(source):
        return [(p.numbers, p.target) for _, p in source.puzzles(DRAWS)]

    assert _count_trivial(pairs(PuzzleSource.from_options())) == 0
    assert _count_trivial(pairs(PuzzleSource.from_options(allow_trivial=True))) > 0

    if not classic_api_installed():
        pytest.skip("the classic API is verifiers 0.3.x: `make test` runs it in .venv-vf-classic")
    import signal

    from verifiers_ext.classic_env import load_environment

    def dataset_pairs(**kwargs):
        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            env = load_environment(num_train_examples=DRAWS, num_eval_examples=50, seed=0, **kwargs)
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
        rows = list(env.get_dataset()["info"]) + list(env.get_eval_dataset()["info"])
        return [(r["numbers"], r["target"]) for r in rows]

    assert _count_trivial(dataset_pairs()) == 0
    assert _count_trivial(dataset_pairs(allow_trivial=True)) > 0


def test_create_dataset():
    from countdown_env.procedural import create_dataset

    def pairs(**kwargs):
        entries = create_dataset(size=DRAWS, seed=0, **kwargs)
        return [(e["metadata"]["numbers"], e["metadata"]["target"]) for e in entries]

    assert _count_trivial(pairs()) == 0
    loose = pairs(allow_trivial=True)
    assert _count_trivial(loose) > 0
    entry = create_dataset(size=1, seed=0, allow_trivial=True)[0]
    assert entry["metadata"]["task"]["allow_trivial"] is True  # the entry's task says so


def test_curriculum_rows_follow_the_base_task():
    from itertools import islice

    from countdown_env.procedural import CountdownCurriculum

    base = CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(1, 60))
    curriculum = CountdownCurriculum(n_numbers=(3,), difficulty=("any",))
    strict = [(r["numbers"], r["target"]) for r in islice(curriculum.rows(base), DRAWS)]
    assert _count_trivial(strict) == 0
    loose = [(r["numbers"], r["target"]) for r in islice(curriculum.rows(CountdownTask(**{**base.to_dict(),
             "allow_trivial": True})), DRAWS)]  # fmt: skip
    assert _count_trivial(loose) > 0


def _generate(*args: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "countdown_env.cli", "generate", *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_countdown_generate_subprocess():
    strict = _generate("--count", str(DRAWS))
    loose = _generate("--count", str(DRAWS), "--allow-trivial")
    assert [r["index"] for r in strict] == [r["index"] for r in loose] == list(range(DRAWS))
    assert _count_trivial((r["numbers"], r["target"]) for r in strict) == 0
    assert _count_trivial((r["numbers"], r["target"]) for r in loose) > 0
    assert (loose[4]["numbers"], loose[4]["target"]) == ([46, 89, 47, 23], 23)
    assert (strict[4]["numbers"], strict[4]["target"]) != ([46, 89, 47, 23], 23)
    for a, b in zip(strict, loose, strict=True):  # an index moves only where its first draw is trivial
        same = (a["numbers"], a["target"]) == (b["numbers"], b["target"])
        assert same != _trivial(b["numbers"], b["target"])
    help_text = subprocess.run(
        [sys.executable, "-m", "countdown_env.cli", "generate", "--help"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=60,
    ).stdout  # fmt: skip
    assert "--allow-trivial" in help_text


# ---------------------------------------------------------------------------------------------- splits
def test_split_spec_reads_and_records_the_task_field():
    from countdown_env.splits import SplitError, SplitSpec, build_split_records

    assert SplitSpec(train_size=4, eval_size=0).allow_trivial is False
    spec = SplitSpec(train_size=4, eval_size=0, task=CountdownTask(allow_trivial=True))
    assert spec.allow_trivial is True and spec.task.allow_trivial is True and spec.to_dict()["allow_trivial"] is True
    spec = SplitSpec(train_size=4, eval_size=0, allow_trivial=True, seed=0)
    assert spec.task.allow_trivial is True
    with pytest.raises(SplitError, match="allow_trivial must be"):
        SplitSpec(train_size=4, eval_size=0, allow_trivial="no")

    # the split skips a trivial index of the raw stream: its rows are the raw stream's non-trivial puzzles
    spec = SplitSpec(n_numbers=(4,), train_size=0, eval_size=60, seed=0, counts=False)
    raw = spec.stream_task(4, "eval")
    assert raw.allow_trivial is True
    expected, index = [], 0
    while len(expected) < 60:
        p = raw.puzzle(index)
        index += 1
        if not _trivial(p.numbers, p.target) and p.key not in {q.key for q in expected}:
            expected.append(p)
    rows = build_split_records(spec, progress=False)["test"]
    assert [(r["numbers"], r["target"]) for r in rows] == [(list(p.numbers), p.target) for p in expected]
    loose = SplitSpec(n_numbers=(4,), train_size=0, eval_size=200, seed=0, counts=False, allow_trivial=True)
    assert _count_trivial((r["numbers"], r["target"]) for r in build_split_records(loose, progress=False)["test"]) > 0
