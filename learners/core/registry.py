"""The learner registry: name -> how to build its config and trainer, collected from the algorithm packages.

Each algorithm package declares its learners in its own ``spec.py`` (:class:`~learners.core.spec.AlgorithmSpec`).
The project's own are every sub-folder of ``learners`` that holds a ``spec.py``, found by listing the folder (a
new learner is a new folder, with no other edit and no reinstall); a learner of another installed distribution
registers through the ``countdown.learners`` entry-point group. This module names no algorithm. Specs name modules
and classes as strings, so listing learners imports neither torch nor trl.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path

from .spec import AlgorithmSpec, LearnerSpec, Mechanism

__all__ = ["ALGORITHMS", "ENTRY_POINT_GROUP", "LEARNERS", "LearnerSpec", "Mechanism", "collect", "get_learner"]

ENTRY_POINT_GROUP = "countdown.learners"
"""Algorithm packages: ``name = "package.spec:SPEC"``, ``SPEC`` an :class:`~learners.core.spec.AlgorithmSpec`."""


def project_algorithms(folder: Path | None = None) -> list[tuple[str, str]]:
    """``(name, "learners.NAME.spec:SPEC")`` for every sub-folder of ``learners`` (or ``folder``) holding a
    ``spec.py`` (but this one, whose ``spec.py`` defines the spec classes), by name. A folder with a ``spec.py`` but
    no ``__init__.py`` is not importable as a package: a ``RuntimeError`` names it (it used to be skipped without a
    word, and its learners were missing from every command)."""
    folder = folder or Path(__file__).resolve().parents[1]  # the learners package (not imported: the layer above)
    found = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and p.name.isidentifier()):
        if f"learners.{sub.name}" == __package__ or not (sub / "spec.py").is_file():
            continue
        if not (sub / "__init__.py").is_file():
            raise RuntimeError(
                f"{sub} has a spec.py but no __init__.py: add one (it may be empty) so that its learners register"
            )
        found.append((sub.name, f"learners.{sub.name}.spec:SPEC"))
    return found


def collect() -> tuple[dict[str, AlgorithmSpec], dict[str, LearnerSpec]]:
    """The algorithm specs (by folder or entry-point name) and their learners: the project's folders in name order,
    then other distributions' entry points in name order, each package's learners in its own order. A spec that is
    not an ``AlgorithmSpec``, or a name registered twice, raises a ``RuntimeError`` naming both."""
    algorithms: dict[str, AlgorithmSpec] = {}
    learners: dict[str, LearnerSpec] = {}
    owner: dict[str, str] = {}
    values: dict[str, str] = {}
    outside = [(e.name, e.value) for e in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
               if not e.value.startswith("learners.")]  # fmt: skip (the project's own are found by folder)
    for name, value in [*project_algorithms(), *outside]:
        if name in values:
            if value == values[name]:
                continue  # one distribution seen twice on sys.path
            raise RuntimeError(f"algorithm {name!r} is registered twice: {values[name]!r} and {value!r}")
        values[name] = value
        module, _, attribute = value.partition(":")
        spec = getattr(importlib.import_module(module), attribute)
        if not isinstance(spec, AlgorithmSpec):
            raise RuntimeError(f"{name} = {value!r} is not an AlgorithmSpec")
        algorithms[name] = spec
        for learner_name, learner in spec.learners.items():
            if learner_name in learners:
                raise RuntimeError(
                    f"learner {learner_name!r} is registered by both {owner[learner_name]!r} and {name!r}"
                )
            learners[learner_name] = learner
            owner[learner_name] = name
    return algorithms, learners


ALGORITHMS, LEARNERS = collect()


def get_learner(name: str) -> LearnerSpec:
    """The registered learner ``name``; a clear ``ValueError`` lists the choices otherwise."""
    try:
        return LEARNERS[name]
    except KeyError:
        if not LEARNERS:
            raise ValueError(
                f"unknown learner {name!r}: no learner is registered (no learners/*/spec.py, no "
                f"{ENTRY_POINT_GROUP} entry points)"
            ) from None
        raise ValueError(f"unknown learner {name!r}; choose one of {sorted(LEARNERS)}") from None
