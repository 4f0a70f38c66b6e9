"""TRL-based learners for Countdown.

Every learner subclasses :class:`learners.base.CountdownGRPOTrainer` (a ``trl.GRPOTrainer`` with two seams) and
is listed in :data:`learners.registry.LEARNERS`. Submodules import torch/trl; importing this package does not.
"""
