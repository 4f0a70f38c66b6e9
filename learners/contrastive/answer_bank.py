"""The answer bank of one group of rollouts (the shaping post): B+ (correct submitted answers), B− (incorrect ones).

The shaping post: "For a set of rollouts we extract all submitted answers and grade them with the verifier,
forming the answer bank B = B+ ∪ B−"; "rollouts that exceed the token budget contribute nothing to the bank";
the ground truth a* is "optionally added to B+"; a homogeneous group (B+ or B− empty) stays a plain GRPO update.
Its point about surface forms (``5 + 11``, ``11 + 5``, ``5+ 11``, ``(5 + 11)``) is that one answer's likelihood
is noisy and the bank averages over the forms the group wrote; what its scorer deduplicates is *identical
requests* ("if two answers are identical, we don't need to score both").

This package's reading:

- Every distinct submitted surface form is kept. Two answers are the same surface form when their
  whitespace-normalised texts agree (:func:`answer_key`: stripped, inner whitespace runs collapsed to one space),
  so ``5+11`` and ``5 + 11`` are two entries, ``\\n5 + 11\\n`` and ``5 + 11`` one. No algebraic canonical form is
  used (``5+11`` and ``11+5`` are two answers).
- Identical answers are scored once: one entry per (key, verdict). The text scored for an entry is one the policy
  actually wrote in this group (the verbatim text inside the tags, surrounding newlines included): the most
  frequent verbatim form of the key, ties broken by the smallest string — never "the first one met".
- The bank does not depend on rollout order: B+ and B− are sorted by (key, verbatim text), so a permutation of the
  group's rollouts gives the same bank and therefore the same Φ, bit for bit.
- A rollout without an answer contributes nothing; neither does a rollout that hit the token budget.
- The ground truth a* may join B+ (``ground_truth="always"``), join it only when no rollout is correct
  (``"when_all_wrong"``, the slow-start fix the seed suggests), or never (``"never"``, the default). It is added
  unless the same surface form is already in B+.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

GROUND_TRUTH_MODES = ("never", "always", "when_all_wrong")


@dataclass(frozen=True)
class AnswerBank:
    """The answers of one group, one per surface form: ``positive`` (B+) and ``negative`` (B−), sorted."""

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


def answer_key(answer: str) -> str:
    """The surface form of an answer: its text with whitespace normalised (stripped, runs collapsed to one space)."""
    return " ".join(answer.split())


def _side(forms: dict[str, Counter]) -> tuple[str, ...]:
    """One verbatim text per key (most frequent, then smallest), sorted by (key, text)."""
    chosen = [(key, min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]) for key, counts in forms.items()]
    return tuple(text for _, text in sorted(chosen))


def build_answer_bank(
    answers: Sequence[str | None],
    correct: Sequence[bool],
    truncated: Sequence[bool] | None = None,
    *,
    ground_truth: str | None = None,
    ground_truth_mode: str = "never",
) -> AnswerBank:
    """Build the bank of one group (see the module docstring).

    Args:
        answers: the submitted answer of each rollout (the verbatim text inside the answer tag), ``None`` when absent.
        correct: the verifier's verdict for each rollout.
        truncated: whether each rollout hit the token budget (those contribute nothing); default none did.
        ground_truth: a correct expression for the puzzle (required unless ``ground_truth_mode="never"``).
        ground_truth_mode: ``"never"``, ``"always"`` or ``"when_all_wrong"``.
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

    positive: dict[str, Counter] = {}
    negative: dict[str, Counter] = {}
    for answer, ok, cut in zip(answers, correct, truncated, strict=True):
        if cut or answer is None or not answer.strip():
            continue
        side = positive if ok else negative
        side.setdefault(answer_key(answer), Counter())[answer] += 1

    add_truth = ground_truth_mode == "always" or (ground_truth_mode == "when_all_wrong" and not positive)
    if add_truth and answer_key(ground_truth) not in positive:
        positive[answer_key(ground_truth)] = Counter({ground_truth.strip(): 1})
    return AnswerBank(positive=_side(positive), negative=_side(negative))
