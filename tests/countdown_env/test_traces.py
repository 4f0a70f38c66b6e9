"""Solver-derived reasoning traces: correct by construction, honest arithmetic, deterministic, short enough."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from countdown_env.expressions.answers import has_valid_format
from countdown_env.expressions.verifier import verify_completion
from countdown_env.puzzle import Puzzle
from countdown_env.sft.traces import STYLES, TraceError, TraceStyle, make_trace, resolve_style
from countdown_env.task import PuzzleGenerator

# "a op b = c" not inside a longer expression (the one-line check "Check: 16 * 3 - 3 = 45" is not a step).
STEP = re.compile(r"(?<![-+*/(] )(?<![\d/])(\d+(?:/\d+)?) ([-+*/]) (\d+(?:/\d+)?) = (\d+(?:/\d+)?)")
ALL_STYLES = [*STYLES, "mixed"]


def _puzzles(n, count, **kwargs):
    """``count`` generated puzzles whose target is not simply one of the numbers."""
    puzzles = PuzzleGenerator(n_numbers=n, seed=11, **kwargs).generate(2 * count)
    return [p for p in puzzles if p.target not in p.numbers][:count]


def _check_steps(reasoning):
    """Every 'a op b = c' the trace writes is true arithmetic; returns how many there were."""
    steps = STEP.findall(reasoning)
    for a, op, b, c in steps:
        a, b, c = Fraction(a), Fraction(b), Fraction(c)
        assert {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op] == c, (a, op, b, c, reasoning)
    return len(steps)


@pytest.mark.parametrize("style", ALL_STYLES)
@pytest.mark.parametrize("n", [3, 4])
def test_every_trace_verifies_and_its_arithmetic_is_true(style, n):
    for i, puzzle in enumerate(_puzzles(n, 25, value_range=(1, 20), target_range=(10, 200))):
        trace = make_trace(puzzle, style=style, seed=i)
        completion = trace.completion()
        assert has_valid_format(completion), completion
        assert completion.startswith("<reasoning>\n") and completion.endswith("</solution>")
        result = verify_completion(completion, puzzle)
        assert result.correct, (puzzle, completion, result.reason)
        assert _check_steps(trace.reasoning) >= 1
        assert f"Reached {puzzle.target}." in trace.reasoning


def test_five_and_six_numbers():
    for n in (5, 6):
        for i, puzzle in enumerate(_puzzles(n, 4)):
            trace = make_trace(puzzle, style="search", seed=i)
            assert verify_completion(trace.completion(), puzzle).correct
            _check_steps(trace.reasoning)


def test_dead_ends_are_real_dead_ends():
    """A 'Dead end.' paragraph's first combination cannot be part of any solution."""
    from countdown_env.sft.traces import _Search

    seen = 0
    for i, puzzle in enumerate(_puzzles(3, 20, value_range=(1, 20), target_range=(10, 200))):
        trace = make_trace(puzzle, style="long", seed=i)
        for paragraph in trace.reasoning.split("\n\n"):
            if not paragraph.endswith("Dead end."):
                continue
            a, op, b, c = STEP.match(paragraph.removeprefix("Try ")).groups()
            rest = list(puzzle.numbers)
            rest.remove(int(a))
            rest.remove(int(b))
            assert not _Search(puzzle.target, use_all_numbers=False, fractions=True).reachable([*rest, Fraction(c)])
            seen += 1
    assert seen >= 10


def test_paragraphs_and_styles_differ_in_length():
    puzzles = _puzzles(3, 40, value_range=(1, 20), target_range=(10, 200))
    mean = {s: sum(len(make_trace(p, style=s, seed=1).reasoning) for p in puzzles) / len(puzzles) for s in STYLES}
    assert mean["direct"] < mean["short"] < mean["search"] < mean["long"]
    short = [len(make_trace(p, style="short", seed=1).completion()) for p in puzzles]
    assert max(short) <= 400 and sorted(short)[len(short) // 2] >= 100  # the tiny model's budget
    long_trace = make_trace(Puzzle([3, 7, 25], 82), style="long", seed=0).reasoning
    assert long_trace.count("\n\n") >= 3 and "Dead end." in long_trace and long_trace.startswith("Numbers 3, 7, 25.")


def test_deterministic_in_seed():
    puzzle = Puzzle([4, 9, 13, 2], 61)
    assert make_trace(puzzle, style="long", seed=3) == make_trace(puzzle, style="long", seed=3)
    texts = {make_trace(puzzle, style="long", seed=s).reasoning for s in range(8)}
    assert len(texts) > 1


def test_mixed_draws_several_styles():
    puzzles = _puzzles(3, 30, value_range=(1, 20), target_range=(10, 200))
    assert len({make_trace(p, style="mixed", seed=0).style for p in puzzles}) >= 3


def test_use_all_numbers_uses_every_number():
    for i, puzzle in enumerate(_puzzles(4, 10, use_all_numbers=True)):
        trace = make_trace(puzzle, style="short", seed=i, use_all_numbers=True)
        assert verify_completion(trace.completion(), puzzle, use_all_numbers=True).correct


def test_fractions_only_when_needed_and_allowed():
    puzzle = Puzzle([1, 3, 4, 6], 24)  # 6 / (1 - 3 / 4): no whole-number route uses each number once
    trace = make_trace(puzzle, style="direct", use_all_numbers=True)
    assert verify_completion(trace.completion(), puzzle, use_all_numbers=True).correct
    assert "/" in trace.solution
    with pytest.raises(TraceError):
        make_trace(puzzle, use_all_numbers=True, integer_intermediates=True)


def test_target_among_numbers_and_unsolvable():
    trace = make_trace(Puzzle([5, 40, 2], 40), style="search")
    assert trace.solution == "40" and verify_completion(trace.completion(), Puzzle([5, 40, 2], 40)).correct
    with pytest.raises(TraceError, match="no solution"):
        make_trace(Puzzle([13, 14, 2], 76))


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown trace style"):
        make_trace(Puzzle([1, 2], 3), style="chatty")
    with pytest.raises(TypeError):
        make_trace(((1, 2), 3))
    with pytest.raises(ValueError):
        TraceStyle("bad", dead_ends=(3, 1))
    with pytest.raises(ValueError):
        TraceStyle("bad", backtrack=1.5)
    custom = TraceStyle("custom", dead_ends=(2, 2), misses=(0, 0))
    assert resolve_style(custom) is custom
    trace = make_trace(Puzzle([3, 7, 25], 82), style=custom)
    assert trace.style == "custom" and trace.reasoning.count("Dead end.") == 2


def test_other_template_tags():
    puzzle = Puzzle([3, 7, 25], 82)
    completion = make_trace(puzzle).completion("tinyzero")
    assert completion.startswith("<think>") and has_valid_format(completion, "think", "answer")
    assert verify_completion(completion, puzzle, tag="answer").correct
