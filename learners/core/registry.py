"""The learner registry: name -> how to build its config and trainer, collected from the algorithm packages.

Each algorithm package declares its learners in its own ``spec.py`` (:class:`~learners.core.spec.AlgorithmSpec`) and
registers it through the ``countdown.learners`` entry-point group, so this module names no algorithm: a learner of
another installed distribution registers the same way. Specs name modules and classes as strings, so listing
learners imports neither torch nor trl.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .spec import AlgorithmSpec, LearnerSpec, Mechanism

__all__ = ["ALGORITHMS", "ENTRY_POINT_GROUP", "LEARNERS", "LearnerSpec", "Mechanism", "collect", "get_learner"]

ENTRY_POINT_GROUP = "countdown.learners"
"""Algorithm packages: ``name = "package.spec:SPEC"``, ``SPEC`` an :class:`~learners.core.spec.AlgorithmSpec`."""


def collect() -> tuple[dict[str, AlgorithmSpec], dict[str, LearnerSpec]]:
    """The registered algorithm specs (by entry-point name) and their learners, in entry-point name order, each
    package's learners in its own order. A spec that is not an ``AlgorithmSpec``, or a learner name registered twice,
    raises a ``RuntimeError`` naming the entry points."""
    algorithms: dict[str, AlgorithmSpec] = {}
    learners: dict[str, LearnerSpec] = {}
    owner: dict[str, str] = {}
    values: dict[str, str] = {}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if entry.name in values:
            if entry.value == values[entry.name]:
                continue  # one distribution seen twice on sys.path
            raise RuntimeError(f"{ENTRY_POINT_GROUP} entry point {entry.name!r} is registered twice: "
                               f"{values[entry.name]!r} and {entry.value!r}")  # fmt: skip
        values[entry.name] = entry.value
        spec = entry.load()
        if not isinstance(spec, AlgorithmSpec):
            raise RuntimeError(
                f"{ENTRY_POINT_GROUP} entry point {entry.name} = {entry.value!r} is not an AlgorithmSpec"
            )
        algorithms[entry.name] = spec
        for name, learner in spec.learners.items():
            if name in learners:
                raise RuntimeError(f"learner {name!r} is registered by both {owner[name]!r} and {entry.name!r}")
            learners[name] = learner
            owner[name] = entry.name
    return algorithms, learners


ALGORITHMS, LEARNERS = collect()


def get_learner(name: str) -> LearnerSpec:
    """The registered learner ``name``; a clear ``ValueError`` lists the choices otherwise."""
    try:
        return LEARNERS[name]
    except KeyError:
        if not LEARNERS:
            raise ValueError(
                f"unknown learner {name!r}: no learner is registered ({ENTRY_POINT_GROUP} entry points); "
                "install the project (pip install -e .) so its entry points are visible"
            ) from None
        raise ValueError(f"unknown learner {name!r}; choose one of {sorted(LEARNERS)}") from None
