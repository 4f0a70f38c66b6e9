"""Deprecated path, kept for one release: this module moved to :mod:`countdown_env.envs.trl_env`."""

from countdown_env.lazy_exports import moved_module

moved_module(__name__, "countdown_env.envs.trl_env")
