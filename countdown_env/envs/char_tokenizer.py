"""A minimal offline character tokenizer for env tests and benchmarks (no transformers, no downloads).

One id per ``string.printable`` character after three specials: ``<pad>`` = 0, ``<eos>`` = 1, ``<stop>`` = 2
(a second terminator for ``stop_ids``). It has no chat template, so the token env feeds it the plain prompt text.
"""

from __future__ import annotations

import string
from collections.abc import Iterable


class CharTokenizer:
    """``encode``/``decode``/``eos_token_id`` over printable ASCII; ``len()`` is the vocabulary size."""

    SPECIALS = ("<pad>", "<eos>", "<stop>")

    def __init__(self) -> None:
        self.tokens = [*self.SPECIALS, *string.printable]
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.pad_token_id, self.eos_token_id, self.stop_token_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """One id per character; ``KeyError`` for a character outside ``string.printable``."""
        return [self.ids[c] for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        """The characters (and special-token names) of ``ids``."""
        return "".join(self.tokens[int(i)] for i in ids)
