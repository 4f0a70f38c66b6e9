"""``countdown demo``: runs end to end, exits 0, and its wrong answers are refused for the stated reasons."""

from __future__ import annotations

import re
import sys

import pytest

from countdown_env.cli import main
from countdown_env.cli.demo import wrong_answers
from countdown_env.expressions.verifier import verify
from countdown_env.solving.solver import solve
from countdown_env.task import PuzzleGenerator


def test_demo_runs_and_summarises(capsys):
    assert main(["demo", "--count", "30", "--no-progress", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    for field in ("solvable", "solve time", "verified correct", "refused", "verifications/s", "reasons"):
        assert field in out
    solvable = int(re.search(r"solvable\s+(\d+)/30", out).group(1))
    accepted, total = map(int, re.search(r"solver answers\s+(\d+)/(\d+) verified correct", out).groups())
    assert 15 <= solvable == accepted == total  # half the puzzles are generated solvable


def test_demo_options_without_tqdm(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # tqdm is not a core dependency
    argv = ["demo", "--count", "8", "--n-numbers", "3", "--use-all-numbers", "--integer-intermediates"]
    assert main([*argv, "--operators", "+-*", "--solvable-share", "1"]) == 0
    captured = capsys.readouterr()
    assert "solving" not in captured.err  # captured stderr is no terminal: no bar
    assert "8/8 (100.0 %)" in captured.out


@pytest.mark.parametrize("argv", [["--count", "0"], ["--solvable-share", "2"], ["--n-numbers", "0"]])
def test_demo_bad_options_exit_2(argv, capsys):
    assert main(["demo", *argv, "--no-progress"]) == 2
    assert "countdown demo:" in capsys.readouterr().err


@pytest.mark.parametrize("use_all", [False, True])
def test_wrong_answers_get_the_expected_reasons(use_all):
    gen = PuzzleGenerator(n_numbers=4, use_all_numbers=use_all, seed=12)
    for puzzle in gen.generate(10):
        solution = solve(puzzle, use_all_numbers=use_all)
        assert verify(solution, puzzle, use_all_numbers=use_all).correct
        for answer, reason in wrong_answers(puzzle, solution, use_all):
            verdict = verify(answer, puzzle, use_all_numbers=use_all)
            assert not verdict.correct and verdict.reason == reason, (answer, verdict)


def test_countdown_demo_writes_no_bar_into_a_redirected_stderr():
    """stderr redirected to a file (not a terminal): no progress bar, as everywhere else (subprocess)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "countdown_env.cli", "demo", "--count", "30"], capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "solving" not in result.stderr and "\r" not in result.stderr
