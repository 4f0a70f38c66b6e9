"""Puzzles -> the prompt datasets TRL's GRPOTrainer reads, and the task recorded with a checkpoint.

Every dataset row carries ``prompt`` (the task's chat messages), ``numbers`` and ``target``. The task
(:class:`countdown_env.task.CountdownTask`) decides the prompt wording, the answer tags and the rules, so the
prompt a model is trained on and the reward that scores its answers cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from countdown_env import Puzzle
from countdown_env.task import CountdownTask

LEGACY_TEMPLATE_FILE = "countdown_template.json"
"""What checkpoints written before the task existed recorded: ``{"template": NAME}``."""


def as_task(task: CountdownTask | str | None) -> CountdownTask:
    """A task as given; a template name -> ``CountdownTask(template=name)``; ``None`` -> ``CountdownTask()``."""
    if isinstance(task, CountdownTask):
        return task
    if task is None:
        return CountdownTask()
    if isinstance(task, str):
        return CountdownTask(template=task)
    raise TypeError(f"expected a CountdownTask or a template name, got {type(task).__name__}")


def tiny_task() -> CountdownTask:
    """The tiny warm start's task: tiny_n3's puzzles (3 numbers on 1..20, targets 10..200) in the compact prompt."""
    return CountdownTask(n_numbers=3, value_range=(1, 20), target_range=(10, 200), template="compact", seed=0)


def model_task(model_dir: str | Path) -> CountdownTask | None:
    """The task a checkpoint folder records (``countdown_task.json``; for older folders, a task with the template
    their ``countdown_template.json`` names), or ``None`` when it records none (e.g. a Hub id)."""
    folder = Path(str(model_dir))
    if not folder.is_dir():
        return None
    task = CountdownTask.load(folder)
    if task is None and (folder / LEGACY_TEMPLATE_FILE).is_file():
        task = CountdownTask(template=json.loads((folder / LEGACY_TEMPLATE_FILE).read_text())["template"])
    return task


def prompt_rows(puzzles: Iterable[Puzzle], task: CountdownTask | str | None = None) -> list[dict[str, Any]]:
    """One row per puzzle: ``prompt`` (the task's chat messages), ``numbers`` (list[int]), ``target`` (int)."""
    task = as_task(task)
    return [{"prompt": task.messages(p), "numbers": list(p.numbers), "target": p.target} for p in puzzles]


def prompt_dataset(puzzles: Iterable[Puzzle], task: CountdownTask | str | None = None):
    """A ``datasets.Dataset`` of :func:`prompt_rows` (what ``CountdownGRPOTrainer`` trains on)."""
    from datasets import Dataset

    rows = prompt_rows(puzzles, task)
    if not rows:
        raise ValueError("no puzzles given")
    return Dataset.from_list(rows)
