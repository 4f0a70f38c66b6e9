"""Progress of long jobs on stderr: a tqdm bar when stderr is a terminal, plain lines with rate and ETA when it is not
(a log file, a pipe, ``make demo > log``), nothing when switched off.

``progress_bar(total, desc, enabled)``: ``enabled=None`` (the default everywhere) gives a tqdm bar when stderr is a
terminal and a :class:`LineProgress` otherwise; ``True`` a tqdm bar always; ``False`` nothing (``--no-progress``).
Without tqdm installed (it is not a core dependency) a terminal gets lines too. Every returned object has
``update(n=1)``, ``close()``, ``write(text)`` and ``set_postfix_str(text)`` and is a context manager.

:class:`LineProgress` prints ``DESC: 120/512 unit (23%), 4.1 unit/s, ETA 1m 35s`` at most every :data:`INTERVAL`
seconds (``COUNTDOWN_PROGRESS_SECONDS`` overrides), and a last ``DESC: done, 512 unit in 2m 04s (4.1 unit/s)`` line
when it printed any: jobs shorter than the interval stay silent, a 19-minute eval says where it is every half
minute.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

INTERVAL = 30.0
"""Seconds between two progress lines (``COUNTDOWN_PROGRESS_SECONDS`` overrides)."""


class NoBar:
    """The do-nothing bar."""

    def update(self, n: int = 1) -> None:
        pass

    def write(self, text: str, **kwargs: Any) -> None:
        print(text, file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str, **kwargs: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def duration(seconds: float) -> str:
    """``42s``, ``3m 05s``, ``2h 07m``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


class LineProgress:
    """Plain progress lines (see the module docstring); ``clock`` and ``stream`` are for tests."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str = "it",
        *,
        initial: int = 0,
        interval: float | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval is None:
            interval = float(os.environ.get("COUNTDOWN_PROGRESS_SECONDS", INTERVAL))
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.n = self.start_n = initial
        self.stream, self.clock = stream, clock
        self.start = self.last = clock()
        self.postfix = ""
        self.printed = False
        self.closed = False

    def _print(self, text: str) -> None:
        print(text, file=self.stream or sys.stderr, flush=True)
        self.printed = True

    def rate(self, now: float) -> float:
        elapsed = now - self.start
        return (self.n - self.start_n) / elapsed if elapsed > 0 else 0.0

    def line(self, now: float) -> str:
        rate = self.rate(now)
        done = f"{self.n}/{self.total} {self.unit}" if self.total else f"{self.n} {self.unit}"
        if self.total:
            done += f" ({100 * self.n / self.total:.0f}%)"
        text = f"{self.desc}: {done}, {rate:.3g} {self.unit}/s"
        if self.total and rate > 0 and self.n < self.total:
            text += f", ETA {duration((self.total - self.n) / rate)}"
        return text + (f" [{self.postfix}]" if self.postfix else "")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            self._print(self.line(now))

    def write(self, text: str, **kwargs: Any) -> None:
        self._print(text)

    def set_postfix_str(self, text: str, **kwargs: Any) -> None:
        self.postfix = text

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.printed:
            now = self.clock()
            self._print(
                f"{self.desc}: done, {self.n} {self.unit} in {duration(now - self.start)} "
                f"({self.rate(now):.3g} {self.unit}/s)"
            )


def terminal() -> bool:
    """Whether stderr is a terminal."""
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def wanted(enabled: bool | None) -> bool:
    """Whether a tqdm bar is wanted: ``enabled``, or for ``None`` whether stderr is a terminal."""
    if enabled is None:
        return terminal()
    return bool(enabled)


def progress_bar(total: int | None, desc: str, enabled: bool | None = None, unit: str = "it", **kwargs: Any):
    """A tqdm bar, a :class:`LineProgress` or a :class:`NoBar` (see the module docstring); ``kwargs`` go to tqdm
    (``initial`` to both)."""
    if enabled is False:
        return NoBar()
    if wanted(enabled):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return LineProgress(total, desc, unit, initial=kwargs.get("initial", 0))
        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, mininterval=0.5, **kwargs)
    return LineProgress(total, desc, unit, initial=kwargs.get("initial", 0))
