"""The rules of a training run's folder (``countdown train --output-dir``).

- A non-empty folder is another run's: refused unless ``--resume`` (continue it) or ``--overwrite`` (start again;
  only a folder that holds a countdown run and nothing else is emptied: :data:`RUN_OUTPUTS`).
- ``--resume`` continues from the newest *complete* checkpoint (:mod:`learners.core.checkpoints`: its files match the
  manifest written last); newer incomplete or damaged ones are skipped with a warning naming them. ``--resume PATH``
  takes that checkpoint, refused when damaged.
- ``--resume`` of a run whose ``summary.json`` already reached ``max_steps`` is a no-op that says so (asking for more
  steps than it ran continues it), once ``final/`` matches its manifest; a damaged ``final/`` (a truncated
  ``model.safetensors``) is finished again from the newest complete checkpoint.
The caller holds :func:`countdown_env.helpers.atomic.output_claim` on the folder for the whole run, so two runs
never write one folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from countdown_env.helpers.atomic import foreign_entries, remove_owned

from ...core.checkpoints import checkpoint_problem, checkpoints, resume_checkpoint, warn

RUN_MARKERS = ("resolved_config.json", "summary.json", "final", "log_history.json")
"""Entries that show a folder holds a countdown run (with ``checkpoint-*`` folders)."""

RUN_OUTPUTS = (*RUN_MARKERS, "checkpoint-*", "training.png", "README.md", "init-model", "data", "runs")
"""Every entry a run writes into its folder (``README.md``: TRL's model card; ``runs``: TensorBoard's logs):
``--overwrite`` removes these and refuses a folder that holds anything else."""


@dataclass(frozen=True)
class RunStart:
    """How a run starts: from ``checkpoint`` (``None``: from scratch), or not at all when ``finished`` holds the
    finished run's summary."""

    checkpoint: Path | None = None
    finished: dict[str, Any] | None = None


def _is_run_folder(out: Path) -> bool:
    return any((out / name).exists() for name in RUN_MARKERS) or bool(checkpoints(out))


def _summary(out: Path) -> dict[str, Any] | None:
    try:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) and isinstance(summary.get("steps"), int) else None


def prepare_run_folder(out: Path, *, resume: str | bool | None, overwrite: bool, max_steps: int) -> RunStart:
    """Apply the module's rules to ``out`` before any training; returns where the run starts."""
    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output-dir {out} is a file")
    # any entry counts (a home folder holds only dotfiles), but for this project's own locks and temporaries
    non_empty = bool(foreign_entries(out, ()))
    if resume:
        summary = _summary(out)
        if summary is not None and resume is True and (max_steps <= 0 or summary["steps"] >= max_steps):
            problem = checkpoint_problem(out / "final")
            if problem is None:
                return RunStart(finished=summary)
            warn(f"{out / 'final'}: {problem}; finishing the run again from its newest complete checkpoint")
        return RunStart(checkpoint=resume_checkpoint(out, None if resume is True else resume))
    if non_empty and not overwrite:
        raise ValueError(
            f"--output-dir {out} is not empty (an earlier run?): pass --resume to continue it, --overwrite to start "
            "again, or give a new folder"
        )
    if non_empty:
        if not _is_run_folder(out):
            raise ValueError(f"--overwrite: {out} holds no countdown run; refusing to empty a folder it did not fill")
        remove_owned(out, RUN_OUTPUTS)  # refuses a run folder that also holds the user's own files
    return RunStart()
