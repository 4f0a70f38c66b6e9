"""Verify a model's answer to a Countdown puzzle: one exact verdict with a reason from a fixed vocabulary.

``verify`` never raises on model text (any string, any size): every refusal is a :class:`Verification` with
``correct=False`` and a ``reason`` from :data:`REASONS`. The order of checks is

1. ``too_long`` on the raw text (before normalisation or anything else),
2. ``normalize_expression`` (see :mod:`countdown_env.expressions.answers`), then ``empty``,
3. parsing: ``forbidden_token``, ``parse_error``, ``too_deep``, ``too_many_numbers``,
4. number accounting on the multiset of literals: ``unknown_number`` (a value not among the given numbers, e.g.
   ``12`` when 1 and 2 are given), ``reused_number`` (used more often than given), ``unused_number`` (only with
   ``use_all_numbers=True``),
5. exact evaluation: ``division_by_zero``, ``too_large``, ``non_integer_intermediate``,
   ``non_positive_intermediate`` (the last two only with ``integer_intermediates=True``),
6. ``wrong_stated_value`` when the answer states a result (``expr = N``) other than the expression's exact value
   (``= 82`` after an expression worth 82 is accepted; ``= 83`` is a false equation, refused even when the
   expression itself reaches the target),
7. ``wrong_value`` unless the exact value equals the target, else ``ok``.

Values are ``int``/``Fraction`` throughout; there is no float anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..puzzle import Puzzle
from . import expression as _ex
from .answers import extract_answer, normalize_answer
from .expression import ExpressionError, Limits

__all__ = [
    "REASONS",
    "OK",
    "EMPTY",
    "NO_ANSWER",
    "PARSE_ERROR",
    "FORBIDDEN_TOKEN",
    "UNKNOWN_NUMBER",
    "REUSED_NUMBER",
    "UNUSED_NUMBER",
    "WRONG_VALUE",
    "WRONG_STATED_VALUE",
    "NON_INTEGER_INTERMEDIATE",
    "NON_POSITIVE_INTERMEDIATE",
    "DIVISION_BY_ZERO",
    "TOO_LONG",
    "TOO_DEEP",
    "TOO_LARGE",
    "TOO_MANY_NUMBERS",
    "Verification",
    "verify",
    "verify_completion",
]

OK = "ok"
EMPTY = _ex.EMPTY
NO_ANSWER = "no_answer"
PARSE_ERROR = _ex.PARSE_ERROR
FORBIDDEN_TOKEN = _ex.FORBIDDEN_TOKEN
UNKNOWN_NUMBER = "unknown_number"
REUSED_NUMBER = "reused_number"
UNUSED_NUMBER = "unused_number"
WRONG_VALUE = "wrong_value"
WRONG_STATED_VALUE = "wrong_stated_value"
NON_INTEGER_INTERMEDIATE = _ex.NON_INTEGER_INTERMEDIATE
NON_POSITIVE_INTERMEDIATE = _ex.NON_POSITIVE_INTERMEDIATE
DIVISION_BY_ZERO = _ex.DIVISION_BY_ZERO
TOO_LONG = _ex.TOO_LONG
TOO_DEEP = _ex.TOO_DEEP
TOO_LARGE = _ex.TOO_LARGE
TOO_MANY_NUMBERS = _ex.TOO_MANY_NUMBERS
EPISODE_ERROR = "episode_error"
"""Not a verdict of :func:`verify`: the reason a rollout records for an episode the environment failed on
(``learners.pipeline.rollouts``); it scores 0 and carries the error in ``message``."""

REASONS: tuple[str, ...] = (
    OK,
    EMPTY,
    NO_ANSWER,
    PARSE_ERROR,
    FORBIDDEN_TOKEN,
    UNKNOWN_NUMBER,
    REUSED_NUMBER,
    UNUSED_NUMBER,
    WRONG_VALUE,
    WRONG_STATED_VALUE,
    NON_INTEGER_INTERMEDIATE,
    NON_POSITIVE_INTERMEDIATE,
    DIVISION_BY_ZERO,
    TOO_LONG,
    TOO_DEEP,
    TOO_LARGE,
    TOO_MANY_NUMBERS,
    EPISODE_ERROR,
)
"""Every reason a :class:`Verification` can carry; ``ok`` is the only one with ``correct=True``."""


@dataclass(frozen=True)
class Verification:
    """The verdict on one answer.

    ``value`` is the exact value when the expression evaluated (``None`` otherwise); ``numbers_used`` are the
    number literals in order of appearance (empty when parsing failed); ``expression`` is the normalised text
    that was judged (``None`` when there was no answer).
    """

    correct: bool
    reason: str
    value: Fraction | None
    numbers_used: tuple[int, ...]
    expression: str | None
    message: str = ""


_new_verification = object.__new__


def _verdict(correct, reason, value, numbers_used, expression, message) -> Verification:
    # The hot path builds verdicts without the frozen dataclass __init__ (six object.__setattr__ calls):
    # filling __dict__ directly gives an identical, still-frozen instance several times faster.
    v = _new_verification(Verification)
    v.__dict__.update(
        correct=correct, reason=reason, value=value, numbers_used=numbers_used, expression=expression, message=message
    )
    return v


def _states(value, digits: str) -> bool:
    """Whether the decimal ``digits`` (no sign, maybe leading zeros) write the exact ``value``; compared as text,
    so a stated result of any length costs one string comparison (no int parsing of model text)."""
    if isinstance(value, Fraction) and value.denominator != 1:
        return False
    return str(int(value)) == (digits.lstrip("0") or "0")


def _echo_digits(digits: str, limit: int = 40) -> str:
    return digits if len(digits) <= limit else digits[: limit - 3] + "..."


def _account(used: list[int], given: tuple[int, ...], use_all_numbers: bool) -> tuple[str, str] | None:
    """Multiset check of the numbers used against the numbers given; ``None`` when it passes."""
    remaining = list(given)
    try:
        for n in used:
            remaining.remove(n)  # ValueError: n is not (or no longer) available
    except ValueError:
        return _account_refusal(used, given)
    if use_all_numbers and remaining:
        return UNUSED_NUMBER, f"{sorted(remaining)} not used; every number must be used exactly once"
    return None


def _account_refusal(used: list[int], given: tuple[int, ...]) -> tuple[str, str]:
    """Which rule the used numbers break (only called once the fast check in ``_account`` failed)."""
    unknown = [n for n in used if n not in given]
    if unknown:
        return UNKNOWN_NUMBER, f"{sorted(set(unknown))} not among the given numbers {list(given)}"
    reused = sorted(n for n in set(used) if used.count(n) > given.count(n))
    return REUSED_NUMBER, f"{reused} used more often than given ({list(given)})"


_FRACTIONS: dict[int, Fraction] = {}


def _fraction(value: int | Fraction) -> Fraction:
    """``Fraction(value)``, memoised for small integers (building a Fraction costs more than the whole check)."""
    if type(value) is not int:
        return value  # already a Fraction (evaluation keeps integral values as int)
    if not -10_000 <= value <= 10_000:
        return Fraction(value)
    cached = _FRACTIONS.get(value)
    if cached is None:
        cached = _FRACTIONS[value] = Fraction(value)
    return cached


def verify(
    answer: str | None,
    puzzle: Puzzle,
    *,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    allow_unary_minus: bool = False,
    limits: Limits | None = None,
) -> Verification:
    """Judge ``answer`` (the expression text, e.g. the content of the ``<solution>`` tags) for ``puzzle``.

    The text is normalised with :func:`~countdown_env.expressions.answers.normalize_expression` first (after the length
    check). Each given number may be used at most once (multiset: a number given twice may appear twice);
    with ``use_all_numbers=True`` exactly once. ``integer_intermediates=True`` requires every intermediate to be
    a positive integer (0 is refused as well, as in the TV rules). ``answer=None`` gives reason ``no_answer``.

    >>> verify("(25 - 3) * 7 = 154", Puzzle([25, 3, 7], 154)).reason
    'ok'
    """
    if not isinstance(puzzle, Puzzle):
        raise TypeError(f"puzzle must be a Puzzle, got {type(puzzle).__name__}")
    if answer is None:
        return _verdict(False, NO_ANSWER, None, (), None, "no answer given")
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a str or None, got {type(answer).__name__}")
    limits = limits or _ex.DEFAULT_LIMITS
    if len(answer) > limits.max_length:
        return _verdict(
            False, TOO_LONG, None, (), None, f"answer has {len(answer)} characters, the limit is {limits.max_length}"
        )
    try:
        text, stated = normalize_answer(answer)
    except Exception as exc:  # noqa: BLE001 - a normaliser bug must not crash a training run
        return _verdict(False, PARSE_ERROR, None, (), None, f"could not normalise the answer: {exc}")
    if not text:
        return _verdict(False, EMPTY, None, (), text, "answer is empty")
    try:
        postfix, used = _ex._parse(text, allow_unary_minus, limits)
    except ExpressionError as exc:
        return _verdict(False, exc.reason, None, (), text, str(exc))
    numbers_used = tuple(used)
    refusal = _account(used, puzzle.numbers, use_all_numbers)
    if refusal is not None:
        return _verdict(False, refusal[0], None, numbers_used, text, refusal[1])
    try:
        value = _ex._evaluate_postfix(postfix, integer_intermediates, limits.max_magnitude)
    except ExpressionError as exc:
        return _verdict(False, exc.reason, None, numbers_used, text, str(exc))
    if stated is not None and not _states(value, stated):
        return _verdict(
            False, WRONG_STATED_VALUE, _fraction(value), numbers_used, text,
            f"the answer states {_echo_digits(stated)} but the expression evaluates to {value}",
        )  # fmt: skip
    if value == puzzle.target:
        return _verdict(True, OK, _fraction(value), numbers_used, text, "")
    return _verdict(
        False, WRONG_VALUE, _fraction(value), numbers_used, text, f"value {value} != target {puzzle.target}"
    )


def verify_completion(completion: str, puzzle: Puzzle, *, tag: str = "solution", **verify_kwargs) -> Verification:
    """Extract the last complete ``<tag>…</tag>`` of ``completion`` and :func:`verify` it (``no_answer`` if none).

    >>> verify_completion("<reasoning>25-3=22, 22*7=154</reasoning><solution>(25-3)*7</solution>",
    ...                   Puzzle([25, 3, 7], 154)).correct
    True
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    answer = extract_answer(completion, tag=tag)
    if answer is None:
        return _verdict(False, NO_ANSWER, None, (), None, f"no complete <{tag}>...</{tag}> block")
    return verify(answer, puzzle, **verify_kwargs)
