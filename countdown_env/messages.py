"""The one rule that reads "the completion's text" from what a trainer, an env or a dataset hands over.

A completion is a ``str`` (used as is) or chat messages: a list of dicts, or of objects with ``role``/``content``
attributes (the ``verifiers`` library's pydantic messages), or a single message. Its text is the content of the
**last assistant message** — the final answer of a multi-turn or tool-calling exchange, where earlier assistant
turns were attempts or tool calls. Messages without any ``role`` (role-less dicts) count as the model's own: then
the last message is used. Contents may be strings or lists of parts (strings, or ``{"type": "text", "text": ...}``
dicts/objects); the text parts are joined. A list with roles but no assistant message has the text ``""``.

Used by :func:`countdown_env.rewards.completion_text` (TRL reward functions), ``Countdown-v0``'s actions, the SFT
cleaner and ``verifiers_ext`` (so the reward, the env and the rubric judge the same text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def _is_message(item: Any) -> bool:
    return isinstance(item, Mapping) or (hasattr(item, "content") and not isinstance(item, (str, bytes)))


def content_text(content: Any) -> str:
    """A message content as text: a string, or its text parts joined (``None`` is ``""``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            text = part if isinstance(part, str) else _field(part, "text")
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    raise TypeError(f"message content must be a str or a list of parts, got {type(content).__name__}")


def completion_text(completion: Any) -> str:
    """The completion's text by the module's rule; ``TypeError`` for anything that is neither text nor messages."""
    if isinstance(completion, str):
        return completion
    if _is_message(completion):
        completion = [completion]
    if not isinstance(completion, Sequence) or isinstance(completion, (bytes, bytearray)):
        raise TypeError(f"a completion must be a str or chat messages, got {type(completion).__name__}")
    for message in completion:
        if not _is_message(message):
            raise TypeError(f"a chat message must be a dict with 'content', got {type(message).__name__}")
    if not completion:
        return ""
    roles = [_field(m, "role") for m in completion]
    if all(role is None for role in roles):
        return content_text(_field(completion[-1], "content"))
    for message, role in zip(reversed(completion), reversed(roles), strict=True):
        if role == "assistant":
            return content_text(_field(message, "content"))
    return ""
