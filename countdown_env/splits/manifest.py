"""The integrity manifest of a split folder: ``manifest.json`` records the build (spec, task, row counts, the jsonl
sha256s) and the sha256 of every file of the folder (:func:`write_manifest`, the last file
:func:`~countdown_env.splits.folders.write_splits` writes); :func:`verify_split` checks a folder or one of its jsonl
files against it (``countdown eval --split``, ``countdown train``'s ``data.train`` and
:func:`~countdown_env.splits.folders.read_split_rows` run it) and names the first missing or changed file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..helpers.atomic import write_text

MANIFEST = "manifest.json"

BUILDER = "countdown_env.splits"
"""The manifest's ``builder`` tag: the manifests :func:`verify_split` reads (every split folder written so far)."""


class SplitIntegrityError(ValueError):
    """A split folder whose files do not match the sha256 its ``manifest.json`` records."""


def file_sha256(path: Path) -> str | None:
    """The sha256 of a file (read in 1 MiB blocks), or ``None`` when there is no such file."""
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(
    folder: Path, spec_info: Mapping[str, Any], rows: Mapping[str, int], hashes: Mapping[str, str]
) -> dict[str, Any]:
    """Write ``folder/manifest.json``: :data:`BUILDER`, ``spec_info`` (``{"spec", "task"}``), the row count and jsonl
    sha256 of each split, and under ``files`` the sha256 of every file already in ``folder``. Returns the manifest."""
    manifest = {
        "builder": BUILDER,
        **spec_info,
        "rows": dict(rows),
        "sha256": dict(hashes),
        "files": {
            rel: file_sha256(folder / rel)
            for rel in sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        },
    }
    write_text(folder / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def verify_split(path: str | os.PathLike) -> dict | None:
    """Check a split against its ``manifest.json``: for a folder every file the manifest lists, for a jsonl file
    that file (when a manifest beside it lists it). Returns the manifest (``None`` when there is none: nothing to
    check). Raises :class:`SplitIntegrityError` with one line on a missing or changed file."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SplitIntegrityError(f"{manifest_path}: not valid JSON (a damaged split; rebuild it)") from None
    if not isinstance(manifest, dict) or manifest.get("builder") != BUILDER:
        return None
    files = manifest.get("files")
    if files is None:  # manifests written before the files list: the jsonl hashes only
        files = {f"{name}.jsonl": digest for name, digest in (manifest.get("sha256") or {}).items()}
    if not path.is_dir():
        files = {k: v for k, v in files.items() if k == path.name}
    for rel, expected in sorted(files.items()):
        actual = file_sha256(folder / rel)
        if actual is None:
            raise SplitIntegrityError(f"{folder}: {rel} is missing but listed in {MANIFEST} (a partial copy?)")
        if actual != expected:
            raise SplitIntegrityError(
                f"{folder}: {rel} does not match the sha256 in {MANIFEST} (changed or mixed builds); rebuild the split"
            )
    return manifest
