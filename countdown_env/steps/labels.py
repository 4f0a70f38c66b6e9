"""Step labels from the exact oracle: which written step is valid, which leaves the target reachable, and where the
first mistake is.

The units of :mod:`countdown_env.steps.grammar` move a state (the multiset of values at hand) from the given
numbers: a chain's steps are taken in order (``Try`` first goes back to the given numbers); a probe's steps are taken
from the current state and then dropped (the state after a probe is the one it started from); ``Back up.`` returns to
the state before the previous chain or probe (again to the one before, when repeated); ``Dead end.`` returns to the
given numbers. Each step gets

- ``valid``: its two operands are available in the current state (as a multiset), the rules allow the operation
  (:func:`~countdown_env.solving.oracle.combine_step`: the operator, no division by zero, under
  ``integer_intermediates`` a positive whole result, the verifier's magnitude bound) and its stated result is exact.
  An invalid step *breaks* the state: the reasoning has left the rules, so no value is at hand in it (every later
  step is invalid) and the target counts as unreachable, until ``Try``, ``Dead end.`` or ``Back up.`` returns to a
  state read before (a probe started from a sound state ends there again);
- ``solvable_after``: the oracle on the state it leads to (``False`` for an invalid step).

The completion gets ``solvable_before`` (the oracle on the given numbers) and ``first_mistake``: the index of the
first step after which the target is no longer reachable (the first step with ``solvable_after`` false), or ``None``
when no step loses it or it was never reachable. An ``unparsed`` unit leaves the state unknown, so labelling stops
there: the steps before it are labelled, it and every unit after it are listed in ``unparsed`` (never guessed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..puzzle import Puzzle
from ..solving.oracle import StepOracle, combine_step
from .grammar import Step, Unit, parse_units, reasoning_span

__all__ = ["CompletionLabels", "LabelledStep", "label_completion"]

State = tuple | None  # a sorted multiset of exact values; None: broken by an invalid step


@dataclass(frozen=True)
class LabelledStep:
    """One step with its labels and the state it leads to (``None`` after an invalid step). ``segment_end``: where
    the text that goes with the step ends (its unit's end, verdict and ``.`` included, for a unit's last step)."""

    step: Step
    valid: bool
    solvable_after: bool
    state_after: State
    segment_end: int = -1

    def to_dict(self) -> dict:
        return {"text": self.step.text, "valid": self.valid, "solvable_after": self.solvable_after}


@dataclass(frozen=True)
class CompletionLabels:
    """The labels of one completion (see the module docstring).

    ``timeline`` holds, after each unit read (in order), its end offset in the completion and whether the target is
    reachable from the current state then: what a paragraph ending at that offset leaves behind.
    """

    steps: tuple[LabelledStep, ...]
    solvable_before: bool
    first_mistake: int | None
    unparsed: tuple[str, ...]
    timeline: tuple[tuple[int, bool], ...]
    reasoning_span: tuple[int, int]

    @property
    def parsed(self) -> bool:
        return not self.unparsed

    def reachable_at(self, offset: int) -> bool:
        """Whether the target is reachable from the state the reasoning is in at character ``offset`` (after every
        unit that ends at or before it); refuses an offset past an unparsed unit."""
        reachable = self.solvable_before
        for end, value in self.timeline:
            if end > offset:
                break
            reachable = value
        if self.unparsed and offset > (self.timeline[-1][0] if self.timeline else self.reasoning_span[0]):
            raise ValueError("the state after an unparsed unit is unknown")
        return reachable

    def to_dict(self) -> dict:
        return {
            "steps": [s.to_dict() for s in self.steps],
            "first_mistake": self.first_mistake,
            "solvable_before": self.solvable_before,
            "unparsed": list(self.unparsed),
        }


def label_completion(completion: str, puzzle: Puzzle, oracle: StepOracle) -> CompletionLabels:
    """Label every step of ``completion`` for ``puzzle`` with ``oracle`` (built for the puzzle's target and rules)."""
    if oracle.target != puzzle.target:
        raise ValueError(f"the oracle is for target {oracle.target}, the puzzle's is {puzzle.target}")
    root: State = oracle.key(puzzle.numbers)
    solvable_before = oracle.reachable(root)
    current, history = root, []
    labelled: list[LabelledStep] = []
    timeline: list[tuple[int, bool]] = []
    units = parse_units(completion)
    unparsed: tuple[str, ...] = ()
    for index, unit in enumerate(units):
        if unit.kind == "unparsed":
            unparsed = tuple(u.text for u in units[index:])
            break
        current, history = _advance(unit, current, history, root, oracle, labelled)
        timeline.append((unit.end, current is not None and oracle.reachable(current)))
    first_mistake = None
    if solvable_before:
        first_mistake = next((i for i, s in enumerate(labelled) if not s.solvable_after), None)
    return CompletionLabels(
        tuple(labelled), solvable_before, first_mistake, unparsed, tuple(timeline), reasoning_span(completion)
    )


def _advance(
    unit: Unit, current: State, history: list[State], root: State, oracle: StepOracle, out: list[LabelledStep]
) -> tuple[State, list[State]]:
    """The state after ``unit`` and the back-up history, appending the unit's labelled steps to ``out``."""
    if unit.kind == "note":
        return current, history
    if unit.kind == "dead_end":
        return root, history
    if unit.kind == "back_up":
        return (history.pop() if history else root), history
    history.append(current)
    state = root if unit.attempt else current
    start = state
    for number, step in enumerate(unit.steps, 1):
        labelled = _take(step, state, oracle)
        out.append(replace(labelled, segment_end=unit.end if number == len(unit.steps) else step.end))
        state = labelled.state_after
    return (start if unit.kind == "probe" else state), history


def _take(step: Step, state: State, oracle: StepOracle) -> LabelledStep:
    if state is None:
        return LabelledStep(step, False, False, None)
    rest = list(state)
    for operand in (step.left, step.right):
        if operand not in rest:
            return LabelledStep(step, False, False, None)
        rest.remove(operand)
    value = combine_step(
        _plain(step.left), step.op, _plain(step.right),
        ops=oracle.ops, integer=oracle.integer, max_magnitude=oracle.limits.max_magnitude,
    )  # fmt: skip
    if value is None or value != step.result:
        return LabelledStep(step, False, False, None)
    after = oracle.key([*rest, value])
    return LabelledStep(step, True, oracle.reachable(after), after)


def _plain(value: Fraction) -> int | Fraction:
    return value.numerator if value.denominator == 1 else value
