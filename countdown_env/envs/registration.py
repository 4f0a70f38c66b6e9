"""Gymnasium registration of ``Countdown-v0`` and ``CountdownTokens-v0`` (run by ``import countdown_env``).

Each id is registered with ``kwargs={"vector_kwargs": VECTOR_KWARGS}``: ``gym.make_vec`` hands those to
``SyncVectorEnv`` / ``AsyncVectorEnv``, so a vector env resets a finished one-step episode within the same step
(``autoreset_mode="SameStep"``) and scores every step's actions. Under Gymnasium's default next-step autoreset every
other step would be a reset step whose actions are dropped.

The caller's own ``gym.make_vec(..., vector_kwargs={...})`` is honoured: its keys replace the registered ones, so
``vector_kwargs={"autoreset_mode": "NextStep"}`` (or ``"Disabled"``) gives that mode and other keys (``copy``,
``shared_memory`` ...) reach the vector env with ``SameStep`` kept. (Gymnasium 1.x lets registered spec kwargs win
over the caller's ``vector_kwargs``; the registered kwargs are a :class:`SpecKwargs`, whose ``pop("vector_kwargs",
caller's)``, the one call ``make_vec`` makes, merges the two.) An autoreset mode that is not one of
``gymnasium.vector.AutoresetMode`` is refused in one line.

``gym.make`` passes the same spec kwargs to the entry point, so the entry points here drop the registered
``vector_kwargs`` before building the env; ``gym.make(id, vector_kwargs=...)`` with other settings is refused (one
env has no vector settings: pass them to ``gym.make_vec``). The env modules load on the first ``gym.make``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VECTOR_KWARGS: dict[str, Any] = {"autoreset_mode": "SameStep"}
"""The vector-env settings every Countdown id is registered with (``gymnasium.vector.AutoresetMode.SAME_STEP``)."""

ENTRY_POINTS = {
    "Countdown-v0": "countdown_env.envs.registration:make_countdown_env",
    "CountdownTokens-v0": "countdown_env.envs.registration:make_countdown_tokens_env",
}

_MISSING = object()


def vector_kwargs_for(given: Mapping[str, Any] | None, registered: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The vector-env keywords ``gym.make_vec`` uses: ``registered`` (default :data:`VECTOR_KWARGS`) updated with the
    caller's ``given`` ones. Raises a one-line ``ValueError`` for a ``given`` that is not a mapping or an autoreset
    mode that is not one of ``gymnasium.vector.AutoresetMode`` (an enum member or its value, kept as given)."""
    if given is not None and not isinstance(given, Mapping):
        raise ValueError(f"vector_kwargs must be a dict of vector-env keywords, got {type(given).__name__}")
    merged = {**(VECTOR_KWARGS if registered is None else registered), **(given or {})}
    if "autoreset_mode" in merged:
        autoreset_mode(merged["autoreset_mode"])
    return merged


def autoreset_mode(mode: Any):
    """``mode`` (an ``AutoresetMode`` or its value, e.g. ``"NextStep"``) as ``gymnasium.vector.AutoresetMode``;
    anything else is a one-line ``ValueError`` naming the modes."""
    from gymnasium.vector import AutoresetMode

    try:
        return mode if isinstance(mode, AutoresetMode) else AutoresetMode(mode)
    except (TypeError, ValueError):
        modes = [m.value for m in AutoresetMode]
        raise ValueError(f"vector_kwargs autoreset_mode must be one of {modes}, got {mode!r}") from None


class SpecKwargs(dict):
    """The registered spec kwargs (a plain ``dict`` otherwise). ``gym.make_vec`` takes the vector settings with
    ``spec_kwargs.pop("vector_kwargs", caller's vector_kwargs)``, which in a plain dict returns the registered value
    and silently drops the caller's; here it returns :func:`vector_kwargs_for` (caller's keys over the registered
    ones)."""

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        if key != "vector_kwargs" or key not in self:
            return super().pop(key) if default is _MISSING else super().pop(key, default)
        registered = super().pop(key)
        return vector_kwargs_for(None if default is _MISSING else default, registered)


def register_envs() -> None:
    """Register both ids (once per process)."""
    from gymnasium.envs.registration import register, registry

    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, kwargs=SpecKwargs(vector_kwargs=dict(VECTOR_KWARGS)))


def _single_env_kwargs(env_id: str, vector_kwargs: Any) -> None:
    """Refuse vector settings given to ``gym.make`` (the registered ones arrive here too and are dropped)."""

    def settings(kwargs: Mapping[str, Any]) -> dict[str, Any]:
        return {**kwargs, "autoreset_mode": autoreset_mode(kwargs["autoreset_mode"])}

    if vector_kwargs is not None and settings(vector_kwargs_for(vector_kwargs)) != settings(VECTOR_KWARGS):
        raise ValueError(
            f"{env_id}: vector_kwargs={dict(vector_kwargs)!r} configures a vector env: pass it to "
            f"gym.make_vec({env_id!r}, num_envs=..., vector_kwargs=...), not gym.make"
        )


def make_countdown_env(vector_kwargs: dict | None = None, **kwargs: Any):
    """``Countdown-v0``'s entry point: :class:`~countdown_env.envs.countdown_text.CountdownEnv` (``vector_kwargs``
    is for ``gym.make_vec``, not the env)."""
    from .countdown_text import CountdownEnv

    _single_env_kwargs("Countdown-v0", vector_kwargs)
    return CountdownEnv(**kwargs)


def make_countdown_tokens_env(vector_kwargs: dict | None = None, **kwargs: Any):
    """``CountdownTokens-v0``'s entry point: :class:`~countdown_env.envs.countdown_tokens.CountdownTokensEnv`."""
    from .countdown_tokens import CountdownTokensEnv

    _single_env_kwargs("CountdownTokens-v0", vector_kwargs)
    return CountdownTokensEnv(**kwargs)
