"""The little the token environment needs from a tokenizer, for any object with encode/decode.

Works with a Hugging Face ``PreTrainedTokenizer(Fast)``, a raw ``tokenizers.Tokenizer`` (``encode`` returns an
``Encoding``) or a hand-written class with ``encode``/``decode``/``eos_token_id``. Imports nothing heavy.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..trajectory import token_ids


def vocab_size_of(tokenizer: Any, vocab_size: int | None = None) -> int:
    """Number of token ids: ``vocab_size`` when given, else ``len(tokenizer)`` (counts added tokens in Hugging
    Face tokenizers), else ``tokenizer.vocab_size``, else ``tokenizer.get_vocab_size()``."""
    if vocab_size is None:
        if hasattr(tokenizer, "__len__"):
            vocab_size = len(tokenizer)
        elif hasattr(tokenizer, "vocab_size"):
            vocab_size = tokenizer.vocab_size
        elif callable(getattr(tokenizer, "get_vocab_size", None)):
            vocab_size = tokenizer.get_vocab_size()
        else:
            raise TypeError("cannot tell the tokenizer's vocabulary size: pass vocab_size=")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    return int(vocab_size)


def _accepts(fn: Any, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def encode_text(tokenizer: Any, text: str) -> np.ndarray:
    """``text`` as int64 ids, without special tokens added (a chat template already holds its markers)."""
    encode = getattr(tokenizer, "encode", None)
    if not callable(encode):
        raise TypeError(f"tokenizer {type(tokenizer).__name__} has no encode()")
    result = encode(text, add_special_tokens=False) if _accepts(encode, "add_special_tokens") else encode(text)
    if hasattr(result, "ids"):  # tokenizers.Encoding
        result = result.ids
    elif isinstance(result, Mapping) and "input_ids" in result:  # BatchEncoding
        result = result["input_ids"]
    return token_ids(result, "encoded prompt")


def uses_chat_template(tokenizer: Any, use_chat_template: bool | None) -> bool:
    """Whether to render prompts with ``apply_chat_template``: as asked, or (None) when the tokenizer has the
    method and, for Hugging Face tokenizers, a template set."""
    has_method = callable(getattr(tokenizer, "apply_chat_template", None))
    if use_chat_template is None:
        return has_method and getattr(tokenizer, "chat_template", "") is not None
    if use_chat_template and not has_method:
        raise TypeError(f"use_chat_template=True but {type(tokenizer).__name__} has no apply_chat_template()")
    return bool(use_chat_template)


def render_chat(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """The chat prompt as text, ending with the assistant turn's opening (``add_generation_prompt=True``)."""
    rendered = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if not isinstance(rendered, str):
        raise TypeError(f"apply_chat_template(tokenize=False) must return str, got {type(rendered).__name__}")
    return rendered


def feedback_suffix_text(tokenizer: Any, feedback: str, use_chat_template: bool) -> str:
    """The text the env inserts after an assistant turn's end-of-turn id to ask again with ``feedback``.

    With a chat template: what the template renders between the end of an assistant turn (its last end-of-turn
    marker, the tokenizer's ``eos_token``) and the next assistant turn's opening, with ``feedback`` as the user
    turn in between (as TRL computes a tool response's suffix). Without one: the feedback between blank lines.
    """
    if not use_chat_template:
        return f"\n\n{feedback}\n\n"
    turn = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    prefix = tokenizer.apply_chat_template(turn, tokenize=False)
    full = tokenizer.apply_chat_template(
        [*turn, {"role": "user", "content": feedback}], tokenize=False, add_generation_prompt=True
    )
    eos = getattr(tokenizer, "eos_token", None)
    if isinstance(eos, str) and eos and eos in prefix:
        prefix = prefix[: prefix.rindex(eos) + len(eos)]
    if not (isinstance(prefix, str) and isinstance(full, str) and full.startswith(prefix)):
        raise ValueError("the chat template does not render an earlier assistant turn as a prefix of the next turn")
    return full[len(prefix) :]
