"""Gymnasium environments for Countdown (registered by ``import countdown_env``).

- ``Countdown-v0`` (:class:`CountdownEnv`): text level, one step per puzzle.
- ``CountdownTokens-v0`` (:class:`CountdownTokensEnv`): token level, one token id (or chunk) per step.
"""

from __future__ import annotations

from .countdown_text import CountdownEnv
from .countdown_tokens import CountdownTokensEnv

__all__ = ["CountdownEnv", "CountdownTokensEnv"]
