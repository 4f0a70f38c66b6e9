"""What an algorithm package declares about itself, readable without torch or trl.

Each algorithm folder holds a ``spec.py`` with one :class:`AlgorithmSpec`: its learners (:class:`LearnerSpec`: the
config and trainer classes by name, the preset defaults, the quantities that show its mechanism acting) and the
files its config classes are defined in. :mod:`learners.core.registry` finds the project's algorithms by listing the
folders of ``learners`` that hold a ``spec.py`` (another distribution registers through the ``countdown.learners``
entry-point group, ``name = "package.spec:SPEC"``), so adding a learner touches only its own folder. A spec module
imports only this module (and torch-free modules of its own package): the registry imports every spec to list the
learners.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Mechanism:
    """One logged quantity: ``metric`` (a train-mode log key), what it says (``label``), whether it is a share of
    tokens/rows the mechanism changed (``changes``: 0 means it never acted) and whether to report ``1 - value``
    (``complement``: a kept share read as the changed share)."""

    metric: str
    label: str
    changes: bool = True
    complement: bool = False


@dataclass(frozen=True)
class LearnerSpec:
    """A learner: ``module`` holds ``config_class`` (a ``GRPOConfig`` subclass) and ``trainer_class``
    (a ``CountdownGRPOTrainer`` subclass); ``defaults`` are config values applied before the user's; ``mechanisms``
    the logged quantities that show its own mechanism acting (``countdown compare``'s engagement table);
    ``compare_default``: whether ``countdown compare`` runs it when ``--learners`` is not given; ``async_refusal``:
    see the field. The classes are named ``<X>Config`` and ``<X>Trainer``."""

    module: str
    config_class: str
    trainer_class: str
    description: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    mechanisms: tuple[Mechanism, ...] = ()
    compare_default: bool = False
    async_refusal: Callable[[Any], str | None] | None = None
    """Why the learner, with the given options (an object with the config's fields as attributes), cannot train on
    asynchronous rollouts, or ``None``; torch-free, so ``countdown train --async`` refuses before it claims anything
    (the trainer's ``async_refusal`` asks the same function)."""

    def __post_init__(self) -> None:
        if not (self.config_class.endswith("Config") and self.trainer_class.endswith("Trainer")
                and self.config_class[: -len("Config")] == self.trainer_class[: -len("Trainer")]):  # fmt: skip
            raise ValueError(f"learner classes are named <X>Config and <X>Trainer, got {self.config_class!r} and "
                             f"{self.trainer_class!r}")  # fmt: skip

    def load(self) -> tuple[type, type]:
        """Import the module and return ``(config_class, trainer_class)``."""
        module = importlib.import_module(self.module)
        return getattr(module, self.config_class), getattr(module, self.trainer_class)

    def make_config(self, **kwargs: Any):
        """The learner's config from ``defaults`` then ``kwargs``; unknown keys raise a clear ``TypeError``."""
        config_class, _ = self.load()
        known = set(getattr(config_class, "__dataclass_fields__", {}))
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"{self.config_class} has no option(s) {unknown}")
        return config_class(**{**dict(self.defaults), **kwargs})


@dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm package's registration: ``learners`` (name -> :class:`LearnerSpec`, in the order ``countdown``
    lists them) and ``config_sources``, the files that define its config classes (their bytes enter the digest of
    :mod:`learners.core.trainer_fields`, so a changed config never reads a stale option table)."""

    learners: Mapping[str, LearnerSpec]
    config_sources: tuple[Path, ...] = ()
