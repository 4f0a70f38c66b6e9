"""Progress on stderr while the comparison runs."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any


class Progress:
    """One line per eval and per finished run on stderr; a tqdm bar per run when ``bars`` (``None``: when stderr
    is a terminal, as :func:`countdown_env.progress.wanted` decides); nothing at all when ``quiet`` (the other
    processes of a multi-process launch: the main one reports)."""

    def __init__(self, total_runs: int, bars: bool | None = None, *, quiet: bool = False):
        from countdown_env.progress import wanted

        self.total = total_runs
        self.index = 0
        self.quiet = quiet
        self.tty = wanted(bars) and not quiet
        self.bar = None

    def start(self, learner: str, seed: int, steps: int, first_step: int = 0) -> None:
        self.index += 1
        self.label = f"[{self.index}/{self.total}] {learner} seed {seed}"
        self.steps = steps
        if self.tty:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=steps, initial=first_step, desc=self.label, file=sys.stderr, leave=True)

    def step(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def eval(self, row: Mapping[str, Any]) -> None:
        text = (
            f"step {row['step']}/{self.steps} pass@1 {row['pass@1']:.3f} pass@4 {row['pass@4']:.3f} "
            f"reward {row['train_reward']:.3f} train {row['wall_seconds']:.1f}s"
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
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if not self.quiet:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)
