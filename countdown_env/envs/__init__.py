"""Gymnasium environments for Countdown (registered by ``import countdown_env``; see ``registration.py``).

- ``Countdown-v0`` (:class:`CountdownEnv`): text level, one step per puzzle.
- ``CountdownTokens-v0`` (:class:`CountdownTokensEnv`): token level, one token id (or chunk) per step.

The env classes load on first access, so registering the ids imports neither.
"""

from __future__ import annotations

import importlib

_EXPORTS = {"CountdownEnv": "countdown_text", "CountdownTokensEnv": "countdown_tokens"}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
