"""extract_answer, has_valid_format and every normalize_expression rule (and what it must never do)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from countdown_env.expressions.answers import extract_answer, has_valid_format, normalize_expression
from countdown_env.prompts import format_completion


# ------------------------------------------------------------------------------------------------ extract_answer
@pytest.mark.parametrize(
    "completion, expected",
    [
        ("<solution>1+2</solution>", "1+2"),
        ("<solution>\n(10 * 9) - 42\n</solution>", "(10 * 9) - 42"),
        ("<solution>1</solution> text <solution>2</solution>", "2"),
        ("<solution>1</solution><solution>2", "1"),  # a truncated last block does not count
        ("<solution>1<solution>2</solution>", "2"),  # nearest opening tag before the last closing one
        ("<solution></solution>", ""),
        ("no tags", None),
        ("</solution><solution>", None),
        ("<solution>1+2", None),
        ("1+2</solution>", None),
        ("<Solution>1</Solution>", None),  # tags are case-sensitive
    ],
)
def test_extract_answer(completion, expected):
    assert extract_answer(completion) == expected


def test_extract_answer_custom_tag_and_validation():
    assert extract_answer("<answer> 3*4 </answer><solution>9</solution>", tag="answer") == "3*4"
    with pytest.raises(ValueError):
        extract_answer("<a b>1</a b>", tag="a b")
    with pytest.raises(TypeError):
        extract_answer(None)


# ------------------------------------------------------------------------------------------------ has_valid_format
@pytest.mark.parametrize(
    "completion, ok",
    [
        ("<reasoning>\nthink\n</reasoning>\n<solution>1+2</solution>", True),
        ("  <reasoning>x</reasoning><solution>1</solution>\n", True),
        ("<reasoning></reasoning>\n<solution>1</solution>", True),  # empty reasoning is still the format
        ("<reasoning>x</reasoning>\n<solution>  </solution>", False),  # the answer may not be empty
        ("Sure! <reasoning>x</reasoning><solution>1</solution>", False),
        ("<reasoning>x</reasoning><solution>1</solution> done", False),
        ("<reasoning>x</reasoning> and <solution>1</solution>", False),
        ("<solution>1</solution><reasoning>x</reasoning>", False),
        ("<reasoning>x</reasoning><solution>1</solution><solution>2</solution>", False),
        ("<reasoning>a</reasoning>b</reasoning><solution>1</solution>", False),
        ("<reasoning>x<solution>1</solution></reasoning>", False),
        ("<reasoning>x</reasoning>", False),
        ("<solution>1</solution>", False),
        ("<reasoning>x</reasoning><solution>1", False),
    ],
)
def test_has_valid_format(completion, ok):
    assert has_valid_format(completion) is ok


def test_has_valid_format_custom_tags_and_prompt_template_output():
    assert has_valid_format("<think>x</think><answer>1</answer>", reasoning_tag="think", answer_tag="answer")
    assert not has_valid_format("<think>x</think><answer>1</answer>")
    assert has_valid_format(format_completion("25 - 3 = 22, 22 * 7 = 154", "(25 - 3) * 7"))


# ------------------------------------------------------------------------------------------------ normalize
@pytest.mark.parametrize(
    "text, expected",
    [
        # rule 1: surrounding whitespace, $ and backticks
        ("  1 + 2 \n", "1 + 2"),
        ("$1+2$", "1+2"),
        ("$$ 1+2 $$", "1+2"),
        ("`1+2`", "1+2"),
        ("```\n1+2\n```", "1+2"),
        ("$`1+2`$", "1+2"),
        # rule 2: Unicode operators and full-width forms
        ("3 × 4", "3 * 4"),
        ("3 ✕ 4", "3 * 4"),
        ("3 ∗ 4", "3 * 4"),
        ("3 · 4", "3 * 4"),
        ("3 ⋅ 4", "3 * 4"),
        ("8 ÷ 4", "8 / 4"),
        ("8 ∕ 4", "8 / 4"),
        ("8 − 4", "8 - 4"),
        ("8 – 4", "8 - 4"),
        ("8 — 4", "8 - 4"),
        ("１２＋３", "12+3"),
        ("（１＋２）＊３／４－５", "(1+2)*3/4-5"),
        ("1\u00a0+\u20092\u202f*\u30003", "1 + 2 * 3"),
        # rule 3: LaTeX
        ("3 \\times 4", "3 * 4"),
        ("3 \\cdot 4", "3 * 4"),
        ("8 \\div 4", "8 / 4"),
        ("\\left( 1 + 2 \\right) * 3", "( 1 + 2 ) * 3"),
        ("\\frac{8}{4}", "(8)/(4)"),
        ("\\frac{25 - 3}{2} + 1", "(25 - 3)/(2) + 1"),
        ("\\dfrac{6}{3}", "(6)/(3)"),
        ("\\frac{\\frac{8}{4}}{2}", "((8)/(4))/(2)"),
        ("$\\frac{10 \\times 9}{3}$", "(10 * 9)/(3)"),
        # rule 4: one trailing '= <number>'
        ("(25 - 3) * 7 = 154", "(25 - 3) * 7"),
        ("1+2=3", "1+2"),
        ("$1+2 = 3$", "1+2"),
        ("$1+2$ = 3", "1+2"),
        ("1 × 2 = ３", "1 * 2"),
        # plain text passes through unchanged
        ("(25-3)*7", "(25-3)*7"),
    ],
)
def test_normalize_rules(text, expected):
    assert normalize_expression(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1+2=3=3", "1+2=3"),  # only one trailing '=' is stripped; the middle one stays (and is refused)
        ("3 = 1+2", "3 = 1+2"),  # a leading result is not a trailing one
        ("1+2 = x", "1+2 = x"),
        ("1+2 = 3.0", "1+2 = 3.0"),
        ("1 2", "1 2"),  # digits are never joined
        ("(1)(2)", "(1)(2)"),  # no operator is inserted
        ("2x3", "2x3"),  # a letter x is not a multiplication sign
        ("$1+2", "$1+2"),  # unmatched delimiters stay
        ("\\frac{1}{2", "\\frac{1}{2"),  # incomplete LaTeX stays
        ("\\timesx", "\\timesx"),  # only whole LaTeX command names are replaced
        ("٣+٤", "٣+٤"),  # other scripts' digits are not guessed
    ],
)
def test_normalize_never_guesses(text, expected):
    assert normalize_expression(text) == expected


def test_normalize_type_error():
    with pytest.raises(TypeError):
        normalize_expression(b"1+2")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789+-*/() =$`\\{}fractimesdivleftright×÷−１（", max_size=400))
def test_normalize_never_raises_and_returns_stripped_text(text):
    once = normalize_expression(text)
    assert isinstance(once, str)
    assert once == once.strip()


def test_normalize_adversarial_inputs_return_text():
    """Each returns its normalised text (their time, linear, is printed by benchmarks/bench_refusals.py)."""
    for text in ["$" * 99_999, " " * 99_990 + "=1x", "\\frac{" * 16_000, "`" * 50_000 + "1" + "`" * 49_999]:
        once = normalize_expression(text)
        assert isinstance(once, str) and once == once.strip() and len(once) <= len(text)
