"""Deprecated path, kept for one release: this module moved to :mod:`learners.pipeline.evaluation.turns`."""

from countdown_env.lazy_exports import moved_module

moved_module(__name__, "learners.pipeline.evaluation.turns")
