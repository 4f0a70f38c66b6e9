"""Progress on stderr while the comparison runs."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class Progress:
    """One line per eval and per finished run on stderr, and per run a progress display over its steps
    (:func:`countdown_env.helpers.progress.progress_bar`: ``bars=None`` gives a tqdm bar when stderr is a terminal
    and plain lines with rate and ETA otherwise; ``False``, ``--no-progress``: neither); nothing at all when ``quiet``
    (the
    other processes of a multi-process launch: the main one reports)."""

    def __init__(self, total_runs: int, bars: bool | None = None, *, quiet: bool = False):
        from countdown_env.helpers.progress import wanted

        self.total = total_runs
        self.index = 0
        self.quiet = quiet
        self.bars = bars
        self.tty = wanted(bars) and not quiet
        self.bar = None

    def start(self, learner: str, seed: int, steps: int, first_step: int = 0) -> None:
        from countdown_env.helpers.progress import progress_bar

        self.index += 1
        self.label = f"[{self.index}/{self.total}] {learner} seed {seed}"
        self.steps = steps
        display = progress_bar(steps, self.label, self.bars, unit="step", initial=first_step, leave=True)
        self.bar = display if self.tty else None
        self.lines = None if self.tty else display

    def step(self) -> None:
        for display in (self.bar, getattr(self, "lines", None)):
            if display is not None:
                display.update(1)

    def eval(self, row: Mapping[str, Any]) -> None:
        k = next((key for key in row if key.startswith("pass@") and key != "pass@1"), None)
        text = (
            f"step {row['step']}/{self.steps} pass@1 {row['pass@1']:.3f} "
            + (f"{k} {row[k]:.3f} " if k else "")
            + f"reward {row['train_reward']:.3f} train {row['wall_seconds']:.1f}s"
        )
        if self.bar is not None:
            self.bar.set_postfix_str(text.split(" ", 2)[2])
        else:
            self.line(text)

    def note(self, text: str) -> None:
        """A line of its own (no run's label)."""
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def line(self, text: str) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.write(f"{self.label}: {text}", file=sys.stderr)
        else:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)

    def finish(self, text: str) -> None:
        for display in (self.bar, getattr(self, "lines", None)):
            if display is not None:
                display.close()
        self.bar = self.lines = None
        if not self.quiet:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)
