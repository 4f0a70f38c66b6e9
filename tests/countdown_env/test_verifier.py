"""verify / verify_completion: every reason, multiset accounting, options, and robustness on arbitrary text."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_env.expressions.expression import BinOp, Limits, Num, to_infix
from countdown_env.expressions.verifier import REASONS, Verification, verify, verify_completion
from countdown_env.puzzle import Puzzle

P = Puzzle([25, 3, 7, 1], 154)


def test_correct_answer():
    v = verify("(25 - 3) * 7", P)
    assert v == Verification(True, "ok", Fraction(154), (25, 3, 7), "(25 - 3) * 7", "")
    assert isinstance(v.value, Fraction)


@pytest.mark.parametrize(
    "answer, reason",
    [
        ("", "empty"),
        ("  $ $ ", "empty"),
        ("1 2", "parse_error"),
        ("(25-3", "parse_error"),
        ("9**9**9", "forbidden_token"),
        ("25 % 3", "forbidden_token"),
        ("1.5*2", "forbidden_token"),
        ("-3+25", "forbidden_token"),
        ("sqrt(25)", "forbidden_token"),
        ("25 = 7 = 154", "forbidden_token"),  # only one trailing '= <number>' is stripped
        ("12", "unknown_number"),  # digits are never concatenated: 12 is not a given number
        ("253", "unknown_number"),
        ("25/0", "unknown_number"),
        ("25*7*7", "reused_number"),
        ("25+25", "reused_number"),
        ("25*7", "wrong_value"),
        ("(7/3)*3*25/25", "reused_number"),
        ("7/(3-3)", "reused_number"),
        ("7/(1-1)", "reused_number"),
        ("(25-3)*7/(1)", "ok"),
        ("(" * 10_000 + "1" + ")" * 10_000, "too_deep"),
        ("1" * 1_000_000, "too_long"),
        ("+".join(["1"] * 65), "too_many_numbers"),
    ],
)
def test_reasons(answer, reason):
    v = verify(answer, P)
    assert v.reason == reason, v.message
    assert v.correct == (reason == "ok")
    assert v.reason in REASONS


def test_trailing_result_versus_middle_equals():
    assert verify("25 = 25", Puzzle([25], 25)).reason == "ok"  # one trailing '= 25' stripped
    assert verify("3 + 4 = 7 = 7", Puzzle([3, 4], 7)).reason == "forbidden_token"  # a middle '=' is never dropped
    assert verify("3 + 4 = 8", Puzzle([3, 4], 7)).reason == "wrong_stated_value"  # a false stated result


def test_division_by_zero_and_non_integer_intermediates():
    puzzle = Puzzle([5, 3, 3, 2, 7], 5)
    assert verify("5/(3-3)", puzzle).reason == "division_by_zero"
    assert verify("(7/2)*2+3-3", Puzzle([7, 2, 2, 3, 3], 7)).reason == "ok"
    v = verify("(7/2)*2", Puzzle([7, 2, 2], 7), integer_intermediates=True)
    assert v.reason == "non_integer_intermediate"
    v = verify("(3-5)+7", Puzzle([3, 5, 7], 5), integer_intermediates=True)
    assert v.reason == "non_positive_intermediate"
    assert verify("(3-5)+7", Puzzle([3, 5, 7], 5)).reason == "ok"
    assert verify("(3-3)+5", Puzzle([3, 3, 5], 5), integer_intermediates=True).reason == "non_positive_intermediate"


def test_too_large():
    puzzle = Puzzle([10**12] * 4, 1)
    assert verify("1000000000000*1000000000000*1000000000000*1000000000000", puzzle).reason == "too_large"
    small = Limits(max_magnitude=100)
    assert verify("25*7", P, limits=small).reason == "too_large"


def test_multiset_accounting():
    twice = Puzzle([5, 5, 2], 12)
    assert verify("5+5+2", twice).reason == "ok"
    assert verify("5+5+5-3", Puzzle([5, 5, 3], 12)).reason == "reused_number"
    assert verify("(5+5)+2", twice, use_all_numbers=True).reason == "ok"
    assert verify("5*2+2", twice).reason == "reused_number"
    assert verify("5+5", Puzzle([5, 5, 2], 10), use_all_numbers=True).reason == "unused_number"
    assert verify("5+5", Puzzle([5, 5, 2], 10)).reason == "ok"  # at most once by default
    v = verify("5*2", Puzzle([5, 5, 2], 10), use_all_numbers=True)
    assert v.reason == "unused_number" and "5" in v.message


def test_unknown_reported_before_reused_and_unused():
    assert verify("25+25+4", P, use_all_numbers=True).reason == "unknown_number"
    assert verify("25+25", P, use_all_numbers=True).reason == "reused_number"


def test_unary_minus_option():
    puzzle = Puzzle([3, 25], 22)
    assert verify("-3+25", puzzle).reason == "forbidden_token"
    assert verify("-3+25", puzzle, allow_unary_minus=True).reason == "ok"


def test_normalisation_happens_before_parsing():
    v = verify("$(25 − 3) × 7 = 154$", P)
    assert v.correct and v.expression == "(25 - 3) * 7"


def test_verdict_fields_on_refusal():
    v = verify("25*7", P)
    assert v.value == 175 and v.numbers_used == (25, 7) and v.expression == "25*7" and "175" in v.message
    v = verify("25 ** 2", P)
    assert v.value is None and v.numbers_used == () and v.message
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.reason = "ok"
    assert hash(verify("25", P)) == hash(verify("25", P))


def test_none_and_type_errors():
    assert verify(None, P).reason == "no_answer"
    with pytest.raises(TypeError):
        verify(25, P)
    with pytest.raises(TypeError):
        verify("25", ([25], 25))


def test_verify_completion():
    good = "<reasoning>\n25-3=22\n</reasoning>\n<solution>(25-3)*7</solution>"
    assert verify_completion(good, P).correct
    assert verify_completion("no tags at all", P).reason == "no_answer"
    assert verify_completion("<solution>(25-3)*7", P).reason == "no_answer"  # truncated
    last = "<solution>25*7</solution> on second thought <solution>(25-3)*7</solution>"
    assert verify_completion(last, P).correct
    assert verify_completion("<answer>(25-3)*7</answer>", P, tag="answer").correct
    assert verify_completion("<solution>25+3</solution>", Puzzle([25, 3], 28), use_all_numbers=True).correct
    assert verify_completion("<solution>25</solution>", Puzzle([25, 3], 25), use_all_numbers=True).reason == (
        "unused_number"
    )


# ------------------------------------------------------------------------------------------------ properties
@st.composite
def puzzle_and_tree(draw):
    numbers = draw(st.lists(st.integers(1, 100), min_size=1, max_size=6))
    used = draw(st.permutations(numbers))[: draw(st.integers(1, len(numbers)))]
    items = [Num(n) for n in used]
    while len(items) > 1:
        i = draw(st.integers(0, len(items) - 2))
        items[i : i + 2] = [BinOp(draw(st.sampled_from("+-*/")), items[i], items[i + 1])]
    return numbers, used, items[0]


def reference(node):
    if isinstance(node, Num):
        return Fraction(node.value)
    a, b = reference(node.left), reference(node.right)
    if node.op == "/":
        return a / b
    return {"+": a + b, "-": a - b, "*": a * b}[node.op]


def positive_integer_steps(node) -> bool:
    if isinstance(node, Num):
        return True
    value = reference(node)
    return (
        value.denominator == 1
        and value > 0
        and positive_integer_steps(node.left)
        and (positive_integer_steps(node.right))
    )


@settings(max_examples=300, deadline=None)
@given(puzzle_and_tree(), st.booleans())
def test_random_valid_expressions_verify_with_the_right_value(case, integer_intermediates):
    numbers, used, tree = case
    text = to_infix(tree)
    try:
        value = reference(tree)
    except ZeroDivisionError:
        v = verify(text, Puzzle(numbers, 1), integer_intermediates=integer_intermediates)
        # with integer intermediates the zero divisor (or an earlier fraction) is already a refused step
        allowed = ("division_by_zero", "non_positive_intermediate", "non_integer_intermediate")
        assert v.reason in (allowed if integer_intermediates else allowed[:1])
        return
    target = int(value) if value.denominator == 1 and value > 0 else 1
    v = verify(text, Puzzle(numbers, target), integer_intermediates=integer_intermediates)
    assert v.numbers_used == tuple(used)
    if integer_intermediates and not positive_integer_steps(tree):
        assert v.reason in ("non_integer_intermediate", "non_positive_intermediate")
        return
    assert v.value == value
    assert v.correct == (value == target)
    assert v.reason == ("ok" if value == target else "wrong_value")
    all_used = verify(text, Puzzle(numbers, target), use_all_numbers=True)
    assert (all_used.reason == "unused_number") == (len(used) < len(numbers))


_ALPHABET = "0123456789+-*/() .=xe^%!$`\\{}[]×÷−\n<>/solution"


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet=_ALPHABET, max_size=300)), st.booleans(), st.booleans())
def test_arbitrary_text_never_raises(text, use_all, integer_only):
    v = verify(text, P, use_all_numbers=use_all, integer_intermediates=integer_only, allow_unary_minus=True)
    assert v.reason in REASONS
    assert v.correct == (v.reason == "ok")
    v = verify_completion(text, P)
    assert v.reason in REASONS


@pytest.mark.parametrize(
    "text",
    [
        "(" * 99_999,
        ")" * 99_999,
        "1" + "+1" * 49_999,
        "$" * 99_999,
        " " * 99_990 + "=1x",
        "\\frac{" * 16_000,
        "\\frac{1}{" * 10_000 + "2" + "}" * 10_000,
        "`" * 50_000 + "1" + "`" * 49_999,
        "9" * 99_999,
        "<solution>" * 9_000,
    ],
)
def test_adversarial_inputs_get_a_reason(text):
    """A verdict with a known reason (their time, linear, is printed by benchmarks/bench_refusals.py)."""
    v = verify(text, P)
    v2 = verify_completion(text + "</solution>", P)
    assert v.reason in REASONS and v2.reason in REASONS and not v.correct


def test_docstring_examples():
    import doctest

    from countdown_env import rewards
    from countdown_env.expressions import answers, expression, verifier

    for module in (expression, verifier, answers, rewards):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0 or module is rewards, module.__name__  # rewards has no examples


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("25*3+7 = 82", "ok"),  # the stated result is the value
        ("25*3+7 = 0082", "ok"),
        ("$25 \\times 3 + 7 = 82$", "ok"),
        ("25*3+7 = 83", "wrong_stated_value"),  # a false equation, although 25*3+7 reaches the target
        ("25*3+7 = 999", "wrong_stated_value"),
        ("25*3 = 75", "wrong_value"),  # a true equation that misses the target
        ("25*3 = 82", "wrong_stated_value"),  # claims the target, evaluates to 75
        ("25/3+7 = 15", "wrong_stated_value"),  # 46/3 is not an integer
        ("25*3+7 = " + "9" * 5000, "wrong_stated_value"),  # no int parsing of a huge stated number
    ],
)
def test_a_stated_result_must_be_the_value(answer, reason):
    """``expr = N`` is accepted only when N is the expression's exact value (expected verdicts by hand)."""
    verdict = verify(answer, Puzzle([25, 3, 7], 82))
    assert verdict.reason == reason and verdict.correct == (reason == "ok")
    if reason == "wrong_stated_value":
        assert "states" in verdict.message and verdict.value is not None


def test_a_false_equation_earns_no_reward():
    from countdown_env.rewards import countdown_reward

    rewards = countdown_reward(
        None, ["<solution>25*3+7 = 999</solution>", "<solution>25*3+7 = 82</solution>"], numbers=[[25, 3, 7]] * 2,
        target=[82, 82],
    )  # fmt: skip
    assert rewards == [0.0, 1.0]


def test_countdown_verify_refuses_a_false_equation(capsys):
    from countdown_env.cli import main

    assert main(["verify", "25*3+7 = 83", "--numbers", "25", "3", "7", "--target", "82"]) == 1
    assert "wrong_stated_value" in capsys.readouterr().out
    assert main(["verify", "25*3+7 = 82", "--numbers", "25", "3", "7", "--target", "82"]) == 0
