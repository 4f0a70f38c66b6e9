"""Deprecated path, kept for one release: this module moved to :mod:`learners.pipeline.runs.sft_training`."""

from countdown_env.lazy_exports import moved_module

moved_module(__name__, "learners.pipeline.runs.sft_training")
