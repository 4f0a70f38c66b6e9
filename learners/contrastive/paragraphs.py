"""Paragraphs of a completion, with boundaries in token space (the shaping post).

A completion in the task format reads ``<reasoning>\\n s_1 s_2 … s_|S| </reasoning>\\n<solution>a</solution>``.
The reasoning body is split into paragraphs s_1 … s_|S| at every blank line (a run of two or more newlines) and,
in addition, every ``max_paragraph_len`` tokens since the previous boundary — the shaping post's fix for the reward hack
where the policy stopped ending paragraphs so that a wrong attempt and the later right one shared one signal.

Everything is expressed as token indices into the completion, so a scoring point "after paragraph n" is the
prefix ``completion_ids[:ends[n-1]]`` and the shaping term of paragraph n lands on whole tokens:

- ``reasoning_start``: the end of the empty prefix s_1:0 — just after the opening tag (and its newline), rounded
  up to a token boundary; 0 when the completion does not open with the tag.
- ``ends``: the prefix lengths after each paragraph; the last one is ``reasoning_end``, the start of the closing
  reasoning tag (or of the answer tag, or the end of the text, whichever is found first), rounded down to a token
  boundary so that no scored prefix contains a piece of the closing tag.
- A blank line ends its paragraph: the boundary falls after the token that completes the newline run, so a
  token such as ``".\\n\\n"`` stays whole in the paragraph it closes.

Token ownership: paragraph 1 also owns the opening tokens before ``reasoning_start``; the last paragraph also owns
the tail after ``reasoning_end`` (closing tag, answer, end-of-turn), as in the seed's printed examples. A
completion with an empty reasoning body has no paragraph (``ends == ()``) and gets no shaping.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_PARAGRAPH_LEN = 128
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n(?:[ \t\r]*\n)*")


@dataclass(frozen=True)
class Paragraphs:
    """Paragraph boundaries of one completion of ``length`` tokens (see the module docstring)."""

    length: int
    reasoning_start: int
    ends: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.ends)

    @property
    def scoring_points(self) -> tuple[int, ...]:
        """Completion prefix lengths at which the potential is measured: Φ_0 first, then Φ_1 … Φ_|S|."""
        return (self.reasoning_start, *self.ends) if self.ends else ()

    def paragraph_of_token(self) -> np.ndarray:
        """Index (0-based) of the paragraph that owns each completion token; −1 everywhere if there is none."""
        out = np.full(self.length, -1, dtype=np.int64)
        if not self.ends:
            return out
        start = 0
        for n, end in enumerate(self.ends):
            stop = self.length if n == len(self.ends) - 1 else end
            out[start:stop] = n
            start = end
        return out


def split_paragraphs(
    token_texts: Sequence[str],
    *,
    max_paragraph_len: int | None = DEFAULT_MAX_PARAGRAPH_LEN,
    reasoning_tag: str = "reasoning",
    answer_tag: str = "solution",
) -> Paragraphs:
    """Split a completion, given as the decoded text of each of its tokens, into paragraphs.

    Args:
        token_texts: ``token_texts[t]`` is the text of completion token t (concatenated they give the completion;
            special tokens such as end-of-turn may decode to ``""``).
        max_paragraph_len: cap on a paragraph's reasoning tokens; ``None`` disables the cap (not recommended:
            it re-opens the reward hack the seed describes).
        reasoning_tag, answer_tag: tag names of the completion format.
    """
    if max_paragraph_len is not None and (not isinstance(max_paragraph_len, int) or max_paragraph_len < 1):
        raise ValueError(f"max_paragraph_len must be a positive int or None, got {max_paragraph_len!r}")
    if isinstance(token_texts, str):
        raise TypeError("token_texts must be a sequence of per-token strings, not one string")
    offsets = [0]
    for piece in token_texts:
        if not isinstance(piece, str):
            raise TypeError(f"token texts must be str, got {type(piece).__name__}")
        offsets.append(offsets[-1] + len(piece))
    text = "".join(token_texts)
    length = len(token_texts)

    def token_at_or_after(char: int) -> int:  # smallest k with offsets[k] >= char
        return bisect.bisect_left(offsets, char)

    def token_at_or_before(char: int) -> int:  # largest k with offsets[k] <= char
        return bisect.bisect_right(offsets, char) - 1

    open_tag, close_tag, answer_open = f"<{reasoning_tag}>", f"</{reasoning_tag}>", f"<{answer_tag}>"
    body_start = 0
    lead = len(text) - len(text.lstrip())
    if text.startswith(open_tag, lead):
        body_start = lead + len(open_tag)
        if text.startswith("\n", body_start):
            body_start += 1
    body_end = len(text)
    for marker in (close_tag, answer_open):
        found = text.find(marker, body_start)
        if found >= 0:
            body_end = found
            break

    start_tok = min(token_at_or_after(body_start), length)
    end_tok = token_at_or_before(body_end)
    if end_tok <= start_tok:
        return Paragraphs(length=length, reasoning_start=start_tok, ends=())

    breaks = {token_at_or_after(m.end()) for m in _BLANK_LINE.finditer(text, body_start, body_end)}
    bounds = sorted(b for b in breaks if start_tok < b < end_tok) + [end_tok]
    ends: list[int] = []
    previous = start_tok
    for bound in bounds:
        if max_paragraph_len is not None:
            while bound - previous > max_paragraph_len:
                previous += max_paragraph_len
                ends.append(previous)
        ends.append(bound)
        previous = bound
    return Paragraphs(length=length, reasoning_start=start_tok, ends=tuple(ends))


def token_texts(tokenizer, token_ids: Sequence[int]) -> list[str]:
    """Decode each token on its own (special tokens decode to ``""``), for :func:`split_paragraphs`.

    For byte-level BPE a multi-byte character split across tokens decodes to replacement characters here; only
    newline runs and the ASCII tags are searched for, so this only shifts a boundary inside such a character.
    """
    ids = [[int(t)] for t in token_ids]
    return tokenizer.batch_decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False) if ids else []
