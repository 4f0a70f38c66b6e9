r"""Verifier feedback: the message a multi-turn episode (or the ``check`` tool) answers an attempt with.

The message is built only from the :class:`~countdown_env.expressions.verifier.Verification` of the attempt and the
puzzle's target: the value the expression reached, which numbers it misused, why it could not be read. It never contains
a solution (nothing here calls the solver). The attempt's own expression is echoed back, cut to
:data:`MAX_ECHO_CHARS` and to printable ASCII.

Verdict reasons fall into six groups, each with its own sentence in a :class:`FeedbackTemplate`:

=============  =================================================================================================
``correct``    ``ok``
``wrong``      ``wrong_value``
``misused``    ``unknown_number``, ``reused_number``, ``unused_number``
``invalid``    ``division_by_zero``, ``non_integer_intermediate``, ``non_positive_intermediate``, ``too_large``,
               ``wrong_stated_value``
``unreadable`` ``empty``, ``parse_error``, ``forbidden_token``, ``too_deep``, ``too_many_numbers``, ``too_long``
``no_answer``  ``no_answer`` (no complete answer block)
=============  =================================================================================================

>>> from countdown_env.puzzle import Puzzle
>>> from countdown_env.expressions.verifier import verify
>>> p = Puzzle([3, 7, 11], 21)
>>> verdict_text(verify("3 + 7", p), p)
'Your expression 3 + 7 evaluates to 10, not 21.'
>>> feedback_text(verify("3 + 3", p), p, "compact", turns_left=2)
'Numbers: [3] used more often than given ([3, 7, 11])\nTurns left: 2'
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from fractions import Fraction

from .expressions.verifier import Verification
from .puzzle import Puzzle

MAX_ECHO_CHARS = 200
"""Longest expression (or verifier detail) echoed back in a message; longer ones end with ``...``."""

_PRINTABLE = frozenset(string.printable) - set("\x0b\x0c\r")

REASON_GROUPS: dict[str, str] = {
    "ok": "correct",
    "wrong_value": "wrong",
    "unknown_number": "misused",
    "reused_number": "misused",
    "unused_number": "misused",
    "division_by_zero": "invalid",
    "non_integer_intermediate": "invalid",
    "non_positive_intermediate": "invalid",
    "too_large": "invalid",
    "wrong_stated_value": "invalid",
    "empty": "unreadable",
    "parse_error": "unreadable",
    "forbidden_token": "unreadable",
    "too_deep": "unreadable",
    "too_many_numbers": "unreadable",
    "too_long": "unreadable",
    "no_answer": "no_answer",
    "episode_error": "unreadable",  # recorded by rollouts for a failed episode; never fed back
}


@dataclass(frozen=True)
class FeedbackTemplate:
    """One sentence per verdict group (``str.format`` fields: ``expression``, ``value``, ``target``, ``detail``,
    ``answer_tag``) and the retry suffix (``turns_left``, ``attempts`` = "attempt"/"attempts")."""

    name: str
    correct: str
    wrong: str
    misused: str
    invalid: str
    unreadable: str
    no_answer: str
    retry: str


DEFAULT_FEEDBACK = FeedbackTemplate(
    name="default",
    correct="Your expression {expression} evaluates to {value}: it reaches the target {target}.",
    wrong="Your expression {expression} evaluates to {value}, not {target}.",
    misused="Your expression {expression} does not follow the number rules: {detail}.",
    invalid="Your expression {expression} breaks the arithmetic rules: {detail}.",
    unreadable="Your answer could not be read as an expression: {detail}.",
    no_answer="No answer found: write the expression inside <{answer_tag}> </{answer_tag}> tags.",
    retry=" Try again ({turns_left} {attempts} left).",
)

COMPACT_FEEDBACK = FeedbackTemplate(
    name="compact",
    correct="Value: {value}\nCorrect",
    wrong="Value: {value}",
    misused="Numbers: {detail}",
    invalid="Invalid: {detail}",
    unreadable="Unreadable: {detail}",
    no_answer="No answer",
    retry="\nTurns left: {turns_left}",
)
"""Short lines in the style of the compact prompt (``Numbers: …`` / ``Target: …``) for character-level models."""

FEEDBACK_TEMPLATES: dict[str, FeedbackTemplate] = {t.name: t for t in (DEFAULT_FEEDBACK, COMPACT_FEEDBACK)}


def get_feedback_template(name: str | FeedbackTemplate) -> FeedbackTemplate:
    """A feedback template by name (``"default"``, ``"compact"``) or passed through."""
    if isinstance(name, FeedbackTemplate):
        return name
    try:
        return FEEDBACK_TEMPLATES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown feedback template {name!r}; choose one of {sorted(FEEDBACK_TEMPLATES)}") from None


def _echo(text: str | None) -> str:
    text = "" if text is None else "".join(c if c in _PRINTABLE else "?" for c in text)
    return text if len(text) <= MAX_ECHO_CHARS else text[: MAX_ECHO_CHARS - 3] + "..."


def _value_text(value: Fraction | int | None) -> str:
    if value is None:
        return "?"
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def verdict_text(
    verification: Verification,
    puzzle: Puzzle,
    template: str | FeedbackTemplate = "default",
    *,
    answer_tag: str = "solution",
) -> str:
    """The one-sentence verdict on an attempt (what the ``check`` tool answers)."""
    t = get_feedback_template(template)
    group = REASON_GROUPS.get(verification.reason, "unreadable")
    return getattr(t, group).format(
        expression=_echo(verification.expression),
        value=_value_text(verification.value),
        target=puzzle.target,
        detail=_echo(verification.message) or verification.reason,
        answer_tag=answer_tag,
    )


def feedback_text(
    verification: Verification,
    puzzle: Puzzle,
    template: str | FeedbackTemplate = "default",
    *,
    turns_left: int,
    answer_tag: str = "solution",
    max_verdict_chars: int | None = None,
) -> str:
    """The message after a failed turn: the verdict, then the retry suffix with the attempts left.

    ``max_verdict_chars`` cuts the verdict (which echoes model text: the expression, the value it reached, the
    numbers it misused) to that many characters, ending in ``...``; the retry suffix is always whole."""
    t = get_feedback_template(template)
    verdict = verdict_text(verification, puzzle, t, answer_tag=answer_tag)
    if max_verdict_chars is not None and len(verdict) > max_verdict_chars:
        verdict = verdict[: max(max_verdict_chars - 3, 0)] + "..." if max_verdict_chars >= 3 else ""
    attempts = "attempt" if turns_left == 1 else "attempts"
    return verdict + t.retry.format(turns_left=turns_left, attempts=attempts)
