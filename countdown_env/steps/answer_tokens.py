"""Token-level exact values of a completion's answer: after each token of the answer block, can the answer still be
completed into one the verifier accepts (:func:`~countdown_env.solving.answer_prefix.prefix_solvable`)?

The answer is the content of the completion's last complete ``<solution>…</solution>`` block (or ``<answer>``, the
other template's tag, when there is none). The tokens are the model tokenizer's, from its character offsets on the
completion (the text a model wrote, tokenised alone); a token belongs to the answer when it overlaps the block's
content, and its prefix is the content up to the token's end. A row's labels are

- ``tokens``: per answer token, ``{"end", "text", "solvable"}`` (``end``: the offset in the completion where the
  prefix stops; ``text``: the token's characters inside the answer);
- ``first_unsolvable``: the index in ``tokens`` of the first token after which no completion is accepted, ``None``
  when every prefix can still be completed (a correct answer, or an unfinished one that could be);
- ``error``: instead of tokens, why the answer could not be valued (LaTeX notation, which
  :func:`prefix_solvable` does not follow).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..solving.answer_prefix import AnswerPrefixOracle
from ..solving.oracle import OracleLimitError

__all__ = ["ANSWER_TAGS", "Offsets", "answer_span", "label_answer_tokens"]

ANSWER_TAGS = ("solution", "answer")
Offsets = Callable[[str], Sequence[tuple[int, int]]]
"""A tokenizer seen as ``text -> [(start, end), ...]``: each token's character span in ``text``."""


def answer_span(completion: str, tags: Sequence[str] = ANSWER_TAGS) -> tuple[int, int] | None:
    """``(start, end)`` of the content of the last complete block of the first tag in ``tags`` that has one."""
    for tag in tags:
        end = completion.rfind(f"</{tag}>")
        start = completion.rfind(f"<{tag}>", 0, end) if end >= 0 else -1
        if start >= 0:
            return start + len(tag) + 2, end
    return None


def label_answer_tokens(completion: str, offsets: Offsets, oracle: AnswerPrefixOracle) -> dict | None:
    """The answer-token labels of one completion (see the module docstring); ``None`` when it has no answer block."""
    span = answer_span(completion)
    if span is None:
        return None
    start, end = span
    tokens = []
    first = None
    for token_start, token_end in offsets(completion):
        if token_end <= start or token_start >= end:
            continue
        stop = min(token_end, end)
        try:
            solvable = oracle.solvable(completion[start:stop])
        except OracleLimitError:
            raise
        except ValueError as exc:  # notation the prefix rule does not follow
            return {"error": str(exc)}
        if not solvable and first is None:
            first = len(tokens)
        tokens.append({"end": stop, "text": completion[max(token_start, start) : stop], "solvable": solvable})
    return {"tokens": tokens, "first_unsolvable": first}
