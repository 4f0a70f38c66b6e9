"""A run's record (``resolved_config.json``) and what ``--resume`` may change in it.

Every run folder records the learner and the config it trained with (preset, YAML and ``--set`` applied, the model as
named, the task as resolved). A ``--resume`` with another learner, task or setting would continue the run as another
one and then describe the whole run as the new one; so it is refused in one line naming what changed
(:func:`check_resume`), as ``countdown compare --resume`` refuses changed settings. A deliberate change (e.g. more
steps: ``--max-steps 400 --resume``) passes with ``--allow-changes``; the record then keeps the first run's config
under ``changes`` with the step at which each change took effect, so the folder still says how its model was made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config import RESOLVED_CONFIG

DISPLAY_KEYS = ("trainer.disable_tqdm", "trainer.report_to")
"""Settings that change what a run shows, not what it trains: free to change on resume."""


def run_record(run) -> dict[str, Any]:
    """The record of ``run`` (a :class:`~learners.pipeline.runs.run_config.RunConfig`): the learner, its sections
    with every default written out, the model as named and the task as the run resolves it (the config's ``task``,
    else the model's recorded task, else the default), as JSON values."""
    from countdown_env.task import CountdownTask

    from ..data import model_task
    from ..models import resolve_model

    task = run.task if run.task is not None else (model_task(resolve_model(run.model)) or CountdownTask())
    record = {"learner": run.learner, **run.to_mapping(), "task": task.to_dict()}
    return json.loads(json.dumps(record, default=str))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def config_changes(old: dict[str, Any], new: dict[str, Any], ignore=()) -> dict[str, tuple[Any, Any]]:
    """``{dotted.key: (old, new)}`` for every setting that differs between two configs (nested sections flattened;
    a key missing on one side counts as ``None``), except the keys in ``ignore``."""
    before, after = _flat(old), _flat(new)
    return {
        key: (before.get(key), after.get(key))
        for key in sorted(set(before) | set(after))
        if key not in ignore and before.get(key) != after.get(key) and key != "changes"
    }


def read_record(out: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((out / RESOLVED_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def check_resume(out: Path, record: dict[str, Any], *, allow_changes: bool) -> dict[str, tuple[Any, Any]]:
    """The changes of ``record`` against the run recorded in ``out`` (``{}`` without a record); refused in one line
    unless ``allow_changes``."""
    old = read_record(out)
    if old is None:
        return {}
    changes = config_changes(old, record, ignore=DISPLAY_KEYS)
    if changes and not allow_changes:
        shown = "; ".join(f"{key}: {before!r} -> {after!r}" for key, (before, after) in list(changes.items())[:4])
        more = f" and {len(changes) - 4} more" if len(changes) > 4 else ""
        raise ValueError(
            f"--resume: {out} was trained with other settings ({shown}{more}); resume with the run's own settings, "
            "start a new --output-dir, or pass --allow-changes to continue it with these (recorded in "
            f"{RESOLVED_CONFIG})"
        )
    return changes


def merged_record(out: Path, record: dict[str, Any], changes: dict[str, tuple[Any, Any]], step: int) -> dict:
    """``record`` plus the run's earlier changes and these (``changes``, in effect from ``step``)."""
    old = read_record(out) or {}
    history = list(old.get("changes") or [])
    if changes:
        history.append({"from_step": step, "settings": {key: list(pair) for key, pair in changes.items()}})
    return {**record, "changes": history} if history else record
