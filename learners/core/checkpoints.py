"""Checkpoints that can be trusted: a manifest of sha256s written last, verified before any resume.

Every checkpoint the base trainer saves, and a run's ``final/`` folder, get ``checkpoint_manifest.json`` (the size and
sha256 of each of their files; a manifest that lists no model weights is not trusted),
written atomically after TRL's save and after the extra files of :attr:`CountdownGRPOTrainer.checkpoint_writers`
(the task, the run's identity, compare's counters). A checkpoint is built beside its place and renamed whole into it
(:func:`save_checkpoint_whole`): a failed save (a full disk) leaves no ``checkpoint-N`` behind. A checkpoint without a
manifest (copied by hand, or saved before that rule) is not trusted; one whose files
differ from its manifest was damaged afterwards (a truncated or zeroed ``model.safetensors``, a missing
``optimizer.pt``). Either way :func:`newest_complete_checkpoint` skips it with a warning naming it and falls back to
the newest complete one.

Rotation (``save_total_limit``) is done here, after the manifest, instead of inside TRL's save: transformers rotates
*before* ``on_save`` callbacks run, so a kill between its rotation and the manifest could leave no complete
checkpoint at all. Here an older checkpoint is removed only once a newer one is complete, and the newest complete one
is never removed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MANIFEST = "checkpoint_manifest.json"
PREFIX = "checkpoint-"
WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
           "adapter_model.safetensors", "adapter_model.bin")  # fmt: skip
"""A manifest that lists none of these vouches for no model (an edited or foreign manifest): not trusted."""


class CheckpointError(ValueError):
    """No complete checkpoint to resume from (one line for the user)."""


def checkpoint_step(folder: Path) -> int | None:
    """The step of a ``checkpoint-N`` folder, ``None`` for any other name."""
    tail = folder.name[len(PREFIX) :] if folder.name.startswith(PREFIX) else ""
    return int(tail) if tail.isdigit() else None


def checkpoints(output_dir: str | Path) -> list[Path]:
    """The ``checkpoint-N`` folders of ``output_dir``, oldest first."""
    found = [p for p in Path(output_dir).glob(f"{PREFIX}*") if p.is_dir() and checkpoint_step(p) is not None]
    return sorted(found, key=checkpoint_step)


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_checkpoint_manifest(folder: str | Path) -> Path:
    """Write ``folder``'s manifest (every file's size and sha256), atomically; returns its path."""
    from countdown_env.helpers.atomic import write_text

    folder = Path(folder)
    files = {p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)} for p in _files(folder)}
    manifest = {"step": checkpoint_step(folder), "files": files}
    return write_text(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def checkpoint_problem(folder: str | Path) -> str | None:
    """Why ``folder`` cannot be resumed from (no manifest, a file missing, resized or changed), or ``None``."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.is_file():
        return f"{MANIFEST} missing (a save that did not finish, or not written by countdown-rl)"
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
        items = [(str(name), int(entry["size"]), str(entry["sha256"])) for name, entry in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return f"{MANIFEST} unreadable"
    if not any(Path(name).name in WEIGHTS for name, _, _ in items):
        return f"{MANIFEST} lists no model weights ({len(items)} files): not a manifest of this folder's save"
    for name, size, digest in items:
        file = folder / name
        if not file.is_file():
            return f"{name} missing"
        if file.stat().st_size != size:
            return f"{name} has {file.stat().st_size} bytes, its manifest {size}"
        if _sha256(file) != digest:
            return f"{name} differs from its manifest (sha256)"
    return None


def warn(message: str) -> None:
    print(f"countdown: warning: {message}", file=sys.stderr)


def newest_complete_checkpoint(output_dir: str | Path, *, warn: Callable[[str], None] = warn) -> Path | None:
    """The newest checkpoint of ``output_dir`` whose files match its manifest; each newer one that does not is
    named through ``warn``. ``None`` when there is none."""
    for folder in reversed(checkpoints(output_dir)):
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder
        warn(f"skipping {folder}: {problem}")
    return None


def resume_checkpoint(output_dir: str | Path, path: str | Path | None = None) -> Path:
    """The checkpoint a ``--resume`` continues from: ``path`` when given (refused when damaged), else the newest
    complete one of ``output_dir``; :class:`CheckpointError` in one line when there is none."""
    if path is not None:
        folder = Path(path)
        if not folder.is_dir():
            raise CheckpointError(f"--resume {folder}: no such checkpoint folder")
        problem = checkpoint_problem(folder)
        if problem is not None:
            raise CheckpointError(f"--resume {folder}: {problem}")
        return folder
    folder = newest_complete_checkpoint(output_dir)
    if folder is None:
        found = len(checkpoints(output_dir))
        detail = f"none of its {found} checkpoint-* folders is complete" if found else "no checkpoint-* folder"
        raise CheckpointError(f"--resume: {detail} in {output_dir}")
    return folder


def rotate(output_dir: str | Path, keep: int | None) -> None:
    """Remove checkpoints older than the ``keep`` newest complete ones (and incomplete ones older than those)."""
    if not keep or keep < 1:
        return
    complete = [c for c in checkpoints(output_dir) if (c / MANIFEST).is_file()]
    if len(complete) < keep:
        return
    oldest_kept = checkpoint_step(complete[-keep])
    for folder in checkpoints(output_dir):
        if checkpoint_step(folder) < oldest_kept:
            shutil.rmtree(folder, ignore_errors=True)


def load_indexed_cpu_locations() -> None:
    """Teach ``torch.load`` that ``cpu:N`` is the CPU. transformers' Trainer resumes the optimizer of a multi-process
    run with ``map_location=args.device``, and accelerate makes that device ``cpu:LOCAL_RANK`` on a machine without
    a GPU, a location ``torch.load`` refuses ("don't know how to restore data location of
    torch.storage.UntypedStorage (tagged with cpu:1)"): without this, no multi-process CPU run could resume."""
    import re

    import torch

    global _CPU_LOCATIONS_REGISTERED
    if _CPU_LOCATIONS_REGISTERED:
        return

    def on_cpu(storage, location: str):
        return storage.cpu() if re.fullmatch(r"cpu:\d+", location) else None

    torch.serialization.register_package(5, lambda storage: None, on_cpu)  # before torch's own "cpu" (10)
    _CPU_LOCATIONS_REGISTERED = True


_CPU_LOCATIONS_REGISTERED = False


def save_checkpoint_whole(trainer, trial, save: Callable[[], Any], keep: int | None) -> Path:
    """Run TRL's checkpoint save (``save``) so that ``checkpoint-N`` appears whole or not at all; returns its path.

    The save writes into ``.checkpoint-N.tmp-PID`` beside its place (the trainer's ``_get_output_dir`` points there
    meanwhile; ``PID`` is the main process's, so every process writes its own files into the same folder); then the
    main process, once all are done, adds the trainer's ``checkpoint_writers`` files and the manifest and renames the
    folder into place (an older ``checkpoint-N`` is replaced only then), and rotates to ``keep`` complete
    checkpoints. A save that fails (a full disk, a vanished folder) removes what it wrote and raises
    :class:`CheckpointError` in one line: the run's folder holds only complete checkpoints, and the last one stays."""
    import os

    from countdown_env.helpers.atomic import move_dir_into_place, remove_stale, temporary_path

    run_dir = Path(trainer._get_output_dir(trial))
    target = run_dir / f"{PREFIX}{trainer.state.global_step}"
    main, several = trainer.is_world_process_zero(), trainer.accelerator.num_processes > 1
    pid = os.getpid()
    if several:
        from accelerate.utils import broadcast_object_list

        pid = broadcast_object_list([pid])[0]
    staging = temporary_path(target, pid)
    try:
        if main:
            remove_stale(target)
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
        if several:
            trainer.accelerator.wait_for_everyone()
        trainer._checkpoint_staging = str(staging)
        save()
        if several:
            trainer.accelerator.wait_for_everyone()  # every process's files (rng_state_RANK.pth) are in
        if main:
            built = staging / target.name
            for write_extra in trainer.checkpoint_writers:
                write_extra(built)
            write_checkpoint_manifest(built)
            move_dir_into_place(built, target)
            staging.rmdir()
            rotate(run_dir, keep)
    except BaseException as exc:
        if main:
            shutil.rmtree(staging, ignore_errors=True)
        if not isinstance(exc, Exception):  # an interrupt: nothing of the save is left, the interrupt goes on
            raise
        # an I/O failure arrives as OSError, torch's RuntimeError or safetensors' own SafetensorError
        kept = newest_complete_checkpoint(run_dir, warn=lambda _: None)
        detail = f"{kept.name} is the newest complete one" if kept is not None else "no checkpoint was kept"
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise CheckpointError(f"could not save {target} ({reason}); nothing of it was left, {detail}") from exc
    finally:
        trainer._checkpoint_staging = None
    return target
