"""Gymnasium registration of ``Countdown-v0`` and ``CountdownTokens-v0`` (run by ``import countdown_env``).

Each id is registered with ``kwargs={"vector_kwargs": VECTOR_KWARGS}``: ``gym.make_vec`` hands those to
``SyncVectorEnv`` / ``AsyncVectorEnv``, so a vector env resets a finished one-step episode within the same step
(``autoreset_mode="SameStep"``) and scores every step's actions. Under Gymnasium's default next-step autoreset every
other step would be a reset step whose actions are dropped. ``gym.make`` passes the same spec kwargs to the entry
point, so the entry points here drop ``vector_kwargs`` before building the env. The env modules load on the first
``gym.make``.
"""

from __future__ import annotations

from typing import Any

VECTOR_KWARGS: dict[str, Any] = {"autoreset_mode": "SameStep"}
"""The vector-env settings every Countdown id is registered with (``gymnasium.vector.AutoresetMode.SAME_STEP``)."""

ENTRY_POINTS = {
    "Countdown-v0": "countdown_env.envs.registration:make_countdown_env",
    "CountdownTokens-v0": "countdown_env.envs.registration:make_countdown_tokens_env",
}


def register_envs() -> None:
    """Register both ids (once per process)."""
    from gymnasium.envs.registration import register, registry

    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, kwargs={"vector_kwargs": dict(VECTOR_KWARGS)})


def make_countdown_env(vector_kwargs: dict | None = None, **kwargs: Any):
    """``Countdown-v0``'s entry point: :class:`~countdown_env.envs.countdown_text.CountdownEnv` (``vector_kwargs``
    is for ``gym.make_vec``, not the env)."""
    from .countdown_text import CountdownEnv

    return CountdownEnv(**kwargs)


def make_countdown_tokens_env(vector_kwargs: dict | None = None, **kwargs: Any):
    """``CountdownTokens-v0``'s entry point: :class:`~countdown_env.envs.countdown_tokens.CountdownTokensEnv`."""
    from .countdown_tokens import CountdownTokensEnv

    return CountdownTokensEnv(**kwargs)
