"""A run's record (``resolved_config.json``) and what ``--resume`` may change in it.

Every run folder records the learner and the config it trained with (preset, YAML and ``--set`` applied, the model as
named, the task as resolved). A ``--resume`` with another learner, task or setting would continue the run as another
one and then describe the whole run as the new one; so it is refused in one line naming what changed
(:func:`check_resume`), as ``countdown compare --resume`` refuses changed settings. A deliberate change (e.g. more
steps: ``--max-steps 400 --resume``) passes with ``--allow-changes``; the record then keeps the first run's config
under ``changes`` with the step at which each change took effect, so the folder still says how its model was made.

Every checkpoint carries the record it was trained under (``run_identity.json``, :func:`identity_writer`), so a
``--resume PATH`` naming another run's checkpoint is held against that run's settings, not against the new folder's
(which has none yet): continuing run B's weights under run A's name is refused before any model loads, and with
``--allow-changes`` the record says where the weights came from (``resumed_from``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config import RESOLVED_CONFIG

RUN_IDENTITY = "run_identity.json"
"""The run record a checkpoint was saved under, inside every ``checkpoint-N``."""

DISPLAY_KEYS = ("trainer.disable_tqdm", "trainer.report_to", "precision_setting", "cpu.model", "cpu.flags")
"""What may differ on resume: settings that change what a run shows, not what it trains, and the machine's facts
(the resolved ``precision`` is compared: an ``auto`` run moved to a CPU without bfloat16 would change it)."""

RECORD_DEFAULTS = {"precision": "fp32"}
"""Entries of records written before they existed, as those runs had them (every CPU run was float32)."""


def run_record(run) -> dict[str, Any]:
    """The record of ``run`` (a :class:`~learners.pipeline.runs.run_config.RunConfig`): the learner, its sections
    with every default written out, the model as named and the task as the run resolves it (the config's ``task``,
    else the model's recorded task, else the default), as JSON values."""
    from countdown_env.task import CountdownTask

    from ..data import model_task
    from ..models import resolve_model
    from ..precision import precision_record

    task = run.task if run.task is not None else (model_task(resolve_model(run.model)) or CountdownTask())
    precision = precision_record(run.precision, run.resolved_precision)
    record = {"learner": run.learner, **run.to_mapping(), **precision, "task": task.to_dict()}
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


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def read_record(out: Path) -> dict[str, Any] | None:
    return _read_json(out / RESOLVED_CONFIG)


def identity_writer(record: dict[str, Any]):
    """A ``checkpoint_writers`` entry that writes ``record`` into a checkpoint as its :data:`RUN_IDENTITY`."""

    def write_identity(folder: Path) -> Path:
        from countdown_env.helpers.atomic import write_text

        return write_text(Path(folder) / RUN_IDENTITY, json.dumps(record, indent=2, default=str) + "\n")

    return write_identity


def _foreign(checkpoint: Path | None, out: Path) -> bool:
    return checkpoint is not None and checkpoint.resolve().parent != out.resolve()


def recorded_run(out: Path, checkpoint: Path | None = None) -> dict[str, Any] | None:
    """The record the run continued from was trained under: the checkpoint's :data:`RUN_IDENTITY`, else the record of
    the folder the checkpoint lies in (checkpoints saved before identities were written), else ``out``'s."""
    if checkpoint is not None:
        found = _read_json(checkpoint / RUN_IDENTITY) or read_record(checkpoint.parent)
        if found is not None or _foreign(checkpoint, out):
            return found
    return read_record(out)


def check_resume(
    out: Path, record: dict[str, Any], *, allow_changes: bool, checkpoint: Path | None = None
) -> dict[str, tuple[Any, Any]]:
    """The changes of ``record`` against the run it continues (:func:`recorded_run`: ``checkpoint``'s, else ``out``'s;
    ``{}`` without one); refused in one line unless ``allow_changes``. A checkpoint of another folder that says
    nothing of its run is refused too: nothing would show what is being continued."""
    old = recorded_run(out, checkpoint)
    where = f"{checkpoint}" if _foreign(checkpoint, out) else f"{out}"
    if old is None:
        if _foreign(checkpoint, out) and not allow_changes:
            raise ValueError(
                f"--resume {checkpoint}: it has no {RUN_IDENTITY} and its folder no {RESOLVED_CONFIG}, so nothing "
                "says which run it continues; pass --allow-changes to continue from it anyway"
            )
        return {}
    changes = config_changes({**RECORD_DEFAULTS, **old}, record, ignore=DISPLAY_KEYS)
    if changes and not allow_changes:
        shown = "; ".join(f"{key}: {before!r} -> {after!r}" for key, (before, after) in list(changes.items())[:4])
        more = f" and {len(changes) - 4} more" if len(changes) > 4 else ""
        raise ValueError(
            f"--resume: {where} was trained with other settings ({shown}{more}); resume with the run's own settings, "
            "start a new --output-dir, or pass --allow-changes to continue it with these (recorded in "
            f"{RESOLVED_CONFIG})"
        )
    return changes


def merged_record(
    out: Path, record: dict[str, Any], changes: dict[str, tuple[Any, Any]], step: int, checkpoint: Path | None = None
) -> dict:
    """``record`` plus the earlier changes of the run it continues and these (``changes``, in effect from ``step``);
    a checkpoint of another folder is named in that entry (``resumed_from``)."""
    old = recorded_run(out, checkpoint) or {}
    history = list(old.get("changes") or [])
    if changes or _foreign(checkpoint, out):
        entry: dict[str, Any] = {"from_step": step, "settings": {key: list(pair) for key, pair in changes.items()}}
        if _foreign(checkpoint, out):
            entry["resumed_from"] = str(checkpoint)
        history.append(entry)
    return {**record, "changes": history} if history else record
