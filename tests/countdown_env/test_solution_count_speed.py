"""The fast counting's parts: exact int/pair values agree with Fraction; 6-number counts pinned to the values of
the Fraction-based implementation (e6ec602) that the speed-up must not change."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from countdown_env.puzzle import Puzzle
from countdown_env.solving import distinct_solutions as ds
from countdown_env.solving.distinct_solutions import count_solutions


def _value(x: Fraction):
    return x.numerator if x.denominator == 1 else (x.numerator, x.denominator)


def _fraction(v) -> Fraction:
    return Fraction(v) if type(v) is int else Fraction(*v)


_fractions = st.fractions(min_value=-50, max_value=50, max_denominator=30)


@given(a=_fractions, b=_fractions, k=st.integers(1, 4))
def test_values_agree_with_fraction(a, b, k):
    va, vb = _value(a), _value(b)
    assert ds._add(va, vb) == _value(a + b)
    assert ds._sub(va, vb) == _value(a - b)
    assert ds._neg(va) == _value(-a)
    assert ds._mul(va, vb) == _value(a * b)
    assert ds._times(va, k) == _value(a * k)
    assert ds._power(va, k) == _value(a**k)
    if b != 0:
        assert ds._div(va, vb) == _value(a / b)
        assert ds._inv(vb) == _value(1 / b)
    assert _fraction(ds._add(va, vb)) == a + b  # the representation is unique, so keys match values


@pytest.mark.parametrize(
    ("numbers", "target", "options", "expected"),
    [
        ((25, 50, 75, 100, 3, 6), 952, {}, 7),
        ((86, 64, 52, 27, 31, 5), 84, {}, 31),
        ((1, 13, 1, 68, 53, 65), 264, {}, 28),
        ((2, 2, 3, 3, 7, 7), 42, {}, 258),  # every number repeated: the Polya path
        ((4, 4, 4, 4, 4, 4), 24, {"use_all_numbers": True}, 15),
        ((38, 69, 96, 66, 85, 69), 707, {"integer_intermediates": True}, 1),
        ((3, 7, 8, 9, 10, 50), 123, {"operators": "+-*"}, 43),
    ],
)
def test_six_number_counts_are_unchanged(numbers, target, options, expected):
    assert count_solutions(Puzzle(numbers, target), **options) == expected
