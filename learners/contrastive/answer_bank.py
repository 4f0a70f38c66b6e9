"""The answer bank of one group of rollouts (the shaping post): B+ (correct submitted answers), B− (incorrect ones).

Rules, from the shaping post and issue 8:

- Every rollout that submitted an answer (text inside the answer tag) contributes it, graded by the verifier.
  A rollout without an answer contributes nothing; neither does a rollout that hit the token budget.
- Equivalent answers are kept once, keyed by ``countdown_env.expression.canonical_form`` (``5+11``, ``11 + 5``
  and ``(5 + 11)`` are one answer); an answer that does not parse is keyed by its whitespace-free text. The
  first surface form met is kept, because the potential scores answers "as the policy writes them".
- The ground truth a* may join B+ (``ground_truth="always"``), or join it only when no rollout is correct
  (``"when_all_wrong"``, the slow-start fix the seed suggests), or never (``"never"``, the default). It never
  duplicates a correct answer already in the bank.
- A bank with an empty side is *homogeneous*: the group falls back to a plain GRPO update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

GROUND_TRUTH_MODES = ("never", "always", "when_all_wrong")


@dataclass(frozen=True)
class AnswerBank:
    """The deduplicated answers of one group: ``positive`` (B+) and ``negative`` (B−), as strings."""

    positive: tuple[str, ...]
    negative: tuple[str, ...]

    @property
    def homogeneous(self) -> bool:
        """True when B+ or B− is empty: no contrast, plain GRPO for this group."""
        return not self.positive or not self.negative

    @property
    def answers(self) -> tuple[str, ...]:
        """B+ then B−, the order in which the scorers return log-likelihood columns."""
        return self.positive + self.negative


def _default_canonical(answer: str) -> str:
    from countdown_env.expression import canonical_form

    return canonical_form(answer)


def answer_key(answer: str, canonical: Callable[[str], str] | None = None) -> str:
    """The deduplication key of an answer: its canonical form, or its whitespace-free text if it does not parse."""
    try:
        return "canonical:" + (canonical or _default_canonical)(answer)
    except ValueError:  # ExpressionError is a ValueError: unparsable or out-of-limits text
        return "text:" + "".join(answer.split())


def build_answer_bank(
    answers: Sequence[str | None],
    correct: Sequence[bool],
    truncated: Sequence[bool] | None = None,
    *,
    ground_truth: str | None = None,
    ground_truth_mode: str = "never",
    canonical: Callable[[str], str] | None = None,
) -> AnswerBank:
    """Build the bank of one group.

    Args:
        answers: the submitted answer of each rollout (the text inside the answer tag), ``None`` when absent.
        correct: the verifier's verdict for each rollout.
        truncated: whether each rollout hit the token budget (those contribute nothing); default none did.
        ground_truth: a correct expression for the puzzle (required unless ``ground_truth_mode="never"``).
        ground_truth_mode: ``"never"``, ``"always"`` or ``"when_all_wrong"`` (see the module docstring).
        canonical: the canonical-form function (default ``countdown_env.expression.canonical_form``).
    """
    n = len(answers)
    if len(correct) != n or (truncated is not None and len(truncated) != n):
        raise ValueError(
            f"answers, correct and truncated must have one entry per rollout, got {n}, {len(correct)} and "
            f"{None if truncated is None else len(truncated)}"
        )
    if ground_truth_mode not in GROUND_TRUTH_MODES:
        raise ValueError(f"ground_truth_mode must be one of {GROUND_TRUTH_MODES}, got {ground_truth_mode!r}")
    if ground_truth_mode != "never" and not (isinstance(ground_truth, str) and ground_truth.strip()):
        raise ValueError(f"ground_truth_mode={ground_truth_mode!r} needs a ground-truth expression")
    truncated = truncated if truncated is not None else [False] * n

    seen: set[str] = set()
    positive: list[str] = []
    negative: list[str] = []
    for answer, ok, cut in zip(answers, correct, truncated, strict=True):
        if cut or answer is None or not answer.strip():
            continue
        key = answer_key(answer, canonical)
        if key in seen:
            continue
        seen.add(key)
        (positive if ok else negative).append(answer)

    add_truth = ground_truth_mode == "always" or (ground_truth_mode == "when_all_wrong" and not positive)
    if add_truth and answer_key(ground_truth, canonical) not in seen:
        positive.append(ground_truth.strip())
    return AnswerBank(positive=tuple(positive), negative=tuple(negative))
