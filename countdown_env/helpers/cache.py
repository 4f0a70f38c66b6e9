"""The project's cache folder: installed models, merged warm starts, the learners' option lists."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "COUNTDOWN_CACHE"


def cache_root() -> Path:
    """``$COUNTDOWN_CACHE``, else ``$XDG_CACHE_HOME/countdown-rl``, else ``~/.cache/countdown-rl``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "countdown-rl"
