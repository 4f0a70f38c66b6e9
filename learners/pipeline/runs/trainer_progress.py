"""Progress lines of a ``transformers`` training run (SFT, RL) where stderr is not a terminal: a callback that drives
:class:`countdown_env.helpers.progress.LineProgress` over the optimiser steps, in place of the trainer's own tqdm bar
(which writes carriage returns into a log)."""

from __future__ import annotations

from typing import Any


def line_progress(trainer_args: dict[str, Any], desc: str) -> list[Any]:
    """On a terminal, or when the caller switched progress off (``disable_tqdm`` true), nothing: ``[]``. Otherwise
    set ``disable_tqdm`` in ``trainer_args`` and return ``[callback]`` printing ``DESC: step/max_steps, rate, ETA``
    lines (at most every ``COUNTDOWN_PROGRESS_SECONDS``, 30 s by default)."""
    from countdown_env.helpers.progress import LineProgress, terminal

    if terminal() or trainer_args.get("disable_tqdm"):
        return []
    trainer_args["disable_tqdm"] = True
    from transformers import TrainerCallback

    class LineProgressCallback(TrainerCallback):
        display: LineProgress | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.display = LineProgress(state.max_steps, desc, "step", initial=state.global_step)

        def on_step_end(self, args, state, control, **kwargs):
            if self.display is not None:
                self.display.update(1)

        def on_train_end(self, args, state, control, **kwargs):
            if self.display is not None:
                self.display.close()

    return [LineProgressCallback()]
