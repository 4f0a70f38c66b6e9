"""Loading a model folder's tokenizer (any model's; the tiny model's character tokenizer is checked by round trip)."""

from __future__ import annotations

from pathlib import Path

from .tiny import IM_START, check_round_trip, vocabulary


def load_tokenizer(model_dir: str | Path):
    """Load a tokenizer folder; for tiny-model folders this is the character tokenizer, checked by round trip."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if IM_START in tokenizer.get_vocab() and len(tokenizer) == len(vocabulary()):
        check_round_trip(tokenizer)
    return tokenizer
