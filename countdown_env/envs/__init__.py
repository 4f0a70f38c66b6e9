"""Gymnasium environments for Countdown (registered by ``import countdown_env``; see ``registration.py``).

- ``Countdown-v0`` (:class:`CountdownEnv`): text level, one step per puzzle.
- ``CountdownTokens-v0`` (:class:`CountdownTokensEnv`): token level, one token id (or chunk) per step.
- :mod:`.trl_env`: not a Gymnasium env: the per-rollout environment of TRL's ``GRPOTrainer(environment_factory=...)``
  (a puzzle per rollout, a ``check`` tool, the reward).

The env classes load on first access, so registering the ids imports neither.
"""

from __future__ import annotations

from ..helpers.lazy_exports import lazy_exports

_EXPORTS = {"CountdownEnv": "countdown_text", "CountdownTokensEnv": "countdown_tokens"}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
