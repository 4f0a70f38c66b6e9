"""R2's helper scripts (experiments/r2_smollm2): the learnable band and the registered learning-rate rule, on
hand-built inputs whose answers are worked out here."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[1] / "experiments" / "r2_smollm2"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"r2_{name}", FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_band_keeps_puzzles_solved_sometimes_but_not_always():
    band = _load("learnable_band")
    puzzles = [
        {"numbers": [1, 2, 3], "target": 6, "correct": [False] * 4},  # never: out
        {"numbers": [4, 5, 6], "target": 15, "correct": [True, False, False, False]},  # 1 of 4: in
        {"numbers": [7, 8, 9], "target": 24, "correct": [True, True, True, False]},  # 3 of 4: in
        {"numbers": [2, 3, 4], "target": 24, "correct": [True] * 4},  # always: out
    ]
    assert band.band_of(puzzles, 4) == [{"numbers": [4, 5, 6], "target": 15}, {"numbers": [7, 8, 9], "target": 24}]


def _history(reward: float, kl: float, format_rate: float, steps: int = 30) -> list[dict]:
    return [{"step": s, "reward": reward, "kl": kl, "countdown/format_rate": format_rate} for s in range(1, steps + 1)]


@pytest.mark.parametrize(
    ("high", "expected"),
    [
        (dict(kl=0.02, format_rate=0.98), "high"),  # the higher reward passes both checks: chosen
        (dict(kl=0.30, format_rate=0.98), "low"),  # it drifts too far: the other
        (dict(kl=0.02, format_rate=0.70), "low"),  # it loses the format: the other
    ],
)
def test_the_probe_rule_takes_the_better_lr_unless_it_fails_a_check(high, expected):
    report = _load("report")
    histories = {"high": _history(0.40, **high), "low": _history(0.25, kl=0.01, format_rate=0.99)}
    choice = report.probe_choice({"high": 2e-4, "low": 5e-5}, histories)
    assert choice["chosen"] == expected
    assert choice["lr"] == {"high": 2e-4, "low": 5e-5}[expected]


def test_the_probe_rule_chooses_nothing_when_both_fail_and_windows_are_by_step():
    report = _load("report")
    bad = _history(0.3, kl=0.5, format_rate=0.5)
    assert report.probe_choice({"a": 1e-4, "b": 2e-4}, {"a": bad, "b": bad})["chosen"] is None
    # steps 1-10 do not enter the reward window (11-30)
    history = [{"step": s, "reward": 1.0 if s <= 10 else 0.0} for s in range(1, 31)]
    assert report.window_mean(history, "reward", 11, 30) == 0.0
    assert math.isnan(report.window_mean(history, "kl", 11, 30))


def test_the_probe_windows_scale_with_its_length():
    report = _load("report")
    # 20 steps (amendment 1): reward over 7-20, format and KL over 14-20; the early reward of a, the late KL of b
    a = [{"step": s, "reward": 0.9 if s <= 6 else 0.1, "kl": 0.0} for s in range(1, 21)]
    b = [{"step": s, "reward": 0.2, "kl": 0.5 if s >= 14 else 0.0} for s in range(1, 21)]
    choice = report.probe_choice({"a": 1e-4, "b": 2e-4}, {"a": a, "b": b}, steps=20)
    assert choice["figures"]["a"]["windows"] == {"reward": [7, 20], "format_and_kl": [14, 20]}
    assert choice["figures"]["a"]["reward"] == pytest.approx(0.1) and choice["figures"]["b"]["kl"] == 0.5
    assert choice["chosen"] == "a"  # b has the higher reward in the window but fails the KL check
