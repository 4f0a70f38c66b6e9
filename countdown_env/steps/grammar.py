"""Read a completion's reasoning as a sequence of units: the project's trace grammar and plain ``a op b = c`` chains.

The reasoning is the body of the first ``<reasoning>`` (or ``<think>``) block; without one, the completion up to its
first answer tag. It is cut into paragraphs at blank lines, and a paragraph into units at each ``.`` followed by
white space and at each line break. A unit is one of (the project's traces, :mod:`countdown_env.sft.traces`, write
every form but the plain one):

- ``chain``: ``[Try ]STEP[, STEP ...].``: steps taken in order (``Try`` starts an attempt from the given numbers);
  a TinyZero-style line ``25 * 3 = 75`` (optionally ``Step 2: ...``) is a chain of one step;
- ``probe``: ``[Try ]STEP[, STEP ...], too high.`` (or ``too low``, ``that is N``): a line of steps explored and
  judged; afterwards the state is the one the probe started from (how the traces list several near misses from one
  state);
- ``back_up`` (``Back up.``): back to the state before the previous chain or probe;
- ``dead_end`` (``Dead end.``): back to the given numbers;
- ``note``: sentences that state and change nothing: ``Numbers 2, 3.``, ``Target 7.``, ``Reached 7.``, ``7 is
  already one of the numbers.``, a ``Check: ...`` paragraph (it replays the path found, taking no new step), and
  prose with no digit at all (``Let me think.``);
- ``unparsed``: anything else with a digit in it (``25 * 3 + 7 = 82``, ``I get 75``), and the last unit of a
  reasoning cut off before its closing tag unless it ends with ``.`` (``Try 4 * 3 = 1`` may be ``= 12`` cut short):
  never guessed.

``STEP`` is ``a op b = c`` with ``op`` one of ``+ - * /`` (``×``, ``÷`` read as ``*``, ``/``) and each number an
integer, possibly negative, or a fraction ``p/q`` written without spaces (as the traces write them); ``25/5 = 5``
without spaces reads as a division of integers. Numbers are read as the verifier reads them: ASCII digits only (a
step written in another script's digits, ``٧٥ + ٧ = ٨٢``, is unparsed), and a number longer than the verifier's
magnitude bound makes its step unparsed (never converted). Offsets are character positions in the completion text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from ..expressions.expression import DEFAULT_LIMITS

__all__ = ["Step", "Unit", "parse_units", "reasoning_span"]

_NUMBER = r"-?[0-9]+(?:/[0-9]+)?"  # ASCII digits only, as the verifier reads them (never \d: it takes any script's)
_SPACED_STEP = re.compile(rf"^({_NUMBER})\s+([-+*/×÷])\s+({_NUMBER})\s*=\s*({_NUMBER})$")
_COMPACT_STEP = re.compile(r"^(-?[0-9]+)\s*([-+*/×÷])\s*(-?[0-9]+)\s*=\s*(" + _NUMBER + r")$")
_VERDICT = re.compile(rf"^(?:too high|too low|that is {_NUMBER})$")
_STEP_PREFIX = re.compile(r"^(?:Step\s+[0-9]+\s*[:.)]\s*)", re.IGNORECASE)
_NOTES = (
    re.compile(r"^Numbers(?: [0-9]+,)* [0-9]+\.$"),
    re.compile(rf"^Target {_NUMBER}\.$"),
    re.compile(rf"^Reached {_NUMBER}\.$"),
    re.compile(r"^[0-9]+ is already one of the numbers\.$"),
)
_UNIT_END = re.compile(r"\.(?=\s)|\n")
_PARAGRAPH = re.compile(r"\n[ \t\r]*\n")
_OPS = {"×": "*", "÷": "/"}
_MAX_NUMBER_CHARS = 2 * DEFAULT_LIMITS.max_digits + 2  # a fraction p/q with a sign, each part within the bound


@dataclass(frozen=True)
class Step:
    """One written operation ``left op right = result`` at ``[start, end)`` of the completion."""

    left: Fraction
    op: str
    right: Fraction
    result: Fraction
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Unit:
    """One sentence of the reasoning: its kind (see the module docstring), its steps, its text and span."""

    kind: str
    text: str
    start: int
    end: int
    steps: tuple[Step, ...] = ()
    attempt: bool = False  # a chain or probe opened by "Try": it starts from the given numbers


def reasoning_span(completion: str) -> tuple[int, int]:
    """``[start, end)`` of the reasoning in ``completion`` (see the module docstring)."""
    for tag in ("reasoning", "think"):
        opening = completion.find(f"<{tag}>")
        if opening >= 0:
            start = opening + len(tag) + 2
            closing = completion.find(f"</{tag}>", start)
            return start, (closing if closing >= 0 else len(completion))
    ends = [i for i in (completion.find("<solution>"), completion.find("<answer>")) if i >= 0]
    return 0, min(ends) if ends else len(completion)


def parse_units(completion: str) -> list[Unit]:
    """The units of the completion's reasoning, in order."""
    start, end = reasoning_span(completion)
    units: list[Unit] = []
    for p_start, p_end in _spans(completion, start, end, _PARAGRAPH):
        paragraph = completion[p_start:p_end]
        lead = len(paragraph) - len(paragraph.lstrip())
        if paragraph.strip().startswith("Check:"):
            units.append(Unit("note", paragraph.strip(), p_start + lead, p_start + len(paragraph.rstrip())))
            continue
        for u_start, u_end in _spans(completion, p_start, p_end, _UNIT_END, keep_end=True):
            text = completion[u_start:u_end]
            stripped = text.strip()
            if stripped and stripped != ".":
                first = u_start + len(text) - len(text.lstrip())
                units.append(_unit(stripped, first))
    if units and _cut_off(completion, start) and not units[-1].text.endswith("."):
        last = units[-1]  # the reasoning was opened and never closed: its last unit may be cut short
        units[-1] = Unit("unparsed", last.text, last.start, last.end)
    return units


def _cut_off(completion: str, start: int) -> bool:
    """Whether the reasoning opens with a tag and no closing or answer tag follows (generation stopped inside)."""
    opened = start > 0 and completion[:start].endswith(("<reasoning>", "<think>"))
    tail = completion[start:]
    return opened and not any(tag in tail for tag in ("</reasoning>", "</think>", "<solution>", "<answer>"))


def _spans(text: str, start: int, end: int, separator: re.Pattern, keep_end: bool = False) -> list[tuple[int, int]]:
    """The pieces of ``text[start:end]`` between separators (``keep_end``: a ``.`` separator stays in its piece)."""
    out, begin = [], start
    for match in separator.finditer(text, start, end):
        stop = match.end() if keep_end and match.group() == "." else match.start()
        out.append((begin, stop))
        begin = match.end()
    out.append((begin, end))
    return out


def _unit(text: str, start: int) -> Unit:
    end = start + len(text)
    if text == "Back up.":
        return Unit("back_up", text, start, end)
    if text == "Dead end.":
        return Unit("dead_end", text, start, end)
    if any(pattern.match(text) for pattern in _NOTES) or not any(ch.isdigit() for ch in text):
        return Unit("note", text, start, end)
    body, offset, attempt = text, 0, False
    if body.startswith("Try "):
        body, offset, attempt = body[4:], 4, True
    prefix = _STEP_PREFIX.match(body)
    if prefix:
        body, offset = body[prefix.end() :], offset + prefix.end()
    if body.endswith((".", ",")):
        body = body[:-1]
    parts, steps, cursor = body.split(","), [], start + offset
    kind = "chain"
    for index, part in enumerate(parts):
        piece = part.strip()
        piece_start = cursor + len(part) - len(part.lstrip())
        cursor += len(part) + 1
        if index == len(parts) - 1 and index > 0 and _VERDICT.match(piece):
            kind = "probe"
            continue
        step = _step(piece, piece_start)
        if step is None:
            return Unit("unparsed", text, start, end)
        steps.append(step)
    return Unit(kind, text, start, end, tuple(steps), attempt)


def _step(piece: str, start: int) -> Step | None:
    match = _SPACED_STEP.match(piece) or _COMPACT_STEP.match(piece)
    if match is None:
        return None
    left, op, right, result = match.groups()
    if max(len(left), len(right), len(result)) > _MAX_NUMBER_CHARS:
        return None  # past the verifier's magnitude bound: unparsed, never converted (Python refuses 4300+ digits)
    try:
        values = [Fraction(left), Fraction(right), Fraction(result)]
    except ZeroDivisionError:  # a written "p/0"
        return None
    return Step(values[0], _OPS.get(op, op), values[1], values[2], piece, start, start + len(piece))
