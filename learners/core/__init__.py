"""The learners' shared core: the base trainer with its two seams, the base config, prefix batches, the registry.

Importing this package imports neither torch nor trl; the names below load on first use.
"""

from countdown_env.helpers.lazy_exports import lazy_exports

__all__ = [
    "AlgorithmSpec",
    "CountdownConfig",
    "CountdownGRPOTrainer",
    "LEARNERS",
    "LearnerSpec",
    "Mechanism",
    "Rollout",
    "get_learner",
]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CountdownGRPOTrainer": "trainer",
        "Rollout": "trainer",
        "CountdownConfig": "config",
        "LEARNERS": "registry",
        "AlgorithmSpec": "spec",
        "LearnerSpec": "spec",
        "Mechanism": "spec",
        "get_learner": "registry",
    },
    globals(),
)
