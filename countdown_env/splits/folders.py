"""A split folder on disk: :func:`write_splits` writes ``{split}.jsonl`` per split, the ``DatasetDict.save_to_disk``
copy, a dataset card (``README.md``) and, last, ``manifest.json`` (:mod:`countdown_env.splits.manifest`), all
atomically; :func:`read_split_rows` reads a split's rows back after checking them against the manifest.

The bytes follow from the rows alone (:func:`countdown_env.helpers.jsonl.write_jsonl`; the HF copy's fingerprint
hashes the
rows), so the same :class:`~countdown_env.splits.SplitSpec` gives the same folder on any machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..dataset_card import write_card
from ..helpers.atomic import atomic_dir
from ..helpers.jsonl import read_jsonl, write_jsonl
from . import HELD_OUT, LEGACY_SPLIT_NAMES, SPLIT_NAMES, SplitSpec
from .hf_datasets import save_datasets
from .manifest import verify_split, write_manifest

SPLIT_FOLDER_FILES = (
    *(f"{name}.jsonl" for name in (*SPLIT_NAMES, *LEGACY_SPLIT_NAMES.values())),
    *SPLIT_NAMES,  # the save_to_disk copy's split folders
    *LEGACY_SPLIT_NAMES.values(),  # an earlier build's names: its folder is this writer's too
    "dataset_dict.json",
    "README.md",
    "manifest.json",
)
"""Every entry :func:`write_splits` may write: ``--overwrite`` replaces a folder holding nothing else."""


def write_splits(
    splits: dict[str, list[dict]] | dict[str, Any],
    out_dir: str | os.PathLike,
    *,
    spec: SplitSpec | dict | None = None,
    save_to_disk: bool = True,
    overwrite: bool = False,
    progress: bool | None = None,
) -> dict[str, str]:
    """Write ``{split}.jsonl`` for each split, a ``DatasetDict.save_to_disk`` copy (``load_from_disk(out_dir)``
    reads it back) and ``manifest.json`` (spec, its task's dict under ``task``, row counts, jsonl sha256, and under
    ``files`` the sha256 of every file of the folder). Returns ``{split: jsonl sha256}``.

    The folder is built beside ``out_dir`` and renamed into place (atomic); an existing non-empty ``out_dir`` is
    refused unless ``overwrite`` (then replaced whole, when it holds nothing but :data:`SPLIT_FOLDER_FILES`).
    ``splits`` maps names to row lists (from
    :func:`~countdown_env.splits.build_split_records`) or to ``datasets.Dataset``; ``spec`` is the
    :class:`~countdown_env.splits.SplitSpec` or, for a merge, ``{"spec": ..., "task": ...}`` as recorded.
    ``progress`` governs ``datasets``' own "Saving the dataset" bars too (``None``: when stderr is a terminal).
    """
    rows_by_split = {name: (rows if isinstance(rows, list) else rows.to_list()) for name, rows in splits.items()}
    if isinstance(spec, SplitSpec):
        spec_info: dict[str, Any] = {"spec": spec.to_dict(), "task": spec.task.to_dict()}
    else:
        spec_info = {"spec": (spec or {}).get("spec"), "task": (spec or {}).get("task")}
    with atomic_dir(out_dir, overwrite=overwrite, owned=SPLIT_FOLDER_FILES) as tmp:
        hashes = {name: write_jsonl(rows, tmp / f"{name}.jsonl") for name, rows in rows_by_split.items()}
        if save_to_disk:
            save_datasets(rows_by_split, tmp, progress)
        counts = {name: len(rows) for name, rows in rows_by_split.items()}
        write_card(tmp, spec_info, counts)  # README.md
        write_manifest(tmp, spec_info, counts, hashes)
    return hashes


def read_split_rows(path: str | os.PathLike, split: str = HELD_OUT) -> list[dict]:
    """Rows of a split after :func:`~countdown_env.splits.manifest.verify_split`: a jsonl file, or a split folder's
    ``{split}.jsonl`` (``test`` by default)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no split at {path}")
    verify_split(path)
    if path.is_dir():
        return read_jsonl(split_file(path, split))
    return read_jsonl(path)


def split_file(folder: str | os.PathLike, split: str) -> Path:
    """``folder/{split}.jsonl``; a one-line :class:`FileNotFoundError` naming the splits the folder has otherwise."""
    folder = Path(folder)
    target = folder / f"{split}.jsonl"
    if target.is_file():
        return target
    have = sorted(p.stem for p in folder.glob("*.jsonl"))
    raise FileNotFoundError(f"{folder} has no {split}.jsonl (its splits: {', '.join(have) or 'none'})")
