"""Progress bars for long jobs: tqdm on stderr when stderr is a terminal (or when asked), else nothing.

``progress_bar(total, desc, enabled)``: ``enabled=None`` shows the bar only when stderr is a terminal (so logs and
pipes stay clean), ``True`` always, ``False`` never (``--no-progress``). Without tqdm installed (it is not a core
dependency) the bar is a no-op. The returned object has ``update(n=1)`` and ``close()`` and is a context manager.
"""

from __future__ import annotations

import sys
from typing import Any


class NoBar:
    """The do-nothing bar."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def wanted(enabled: bool | None) -> bool:
    """``enabled``, or for ``None`` whether stderr is a terminal."""
    if enabled is None:
        stream = sys.stderr
        return bool(getattr(stream, "isatty", None) and stream.isatty())
    return bool(enabled)


def progress_bar(total: int | None, desc: str, enabled: bool | None = None, unit: str = "it", **kwargs: Any):
    """A tqdm bar on stderr (see module doc), or :class:`NoBar`."""
    if not wanted(enabled):
        return NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return NoBar()
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, mininterval=0.5, **kwargs)
