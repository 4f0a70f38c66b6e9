"""A split build spread over machines: ``build_shard(spec, k, n)`` computes the rows at plan positions
``k, k + n, ...`` (round robin, so every shard gets the same mix of number counts), :func:`write_shard` writes them
into a shard folder (``rows.jsonl`` and ``shard.json``: settings, plan, the rows' sha256), and
:func:`merge_shards` checks a complete set of shard folders and puts the rows back in the order of a one-process
build (``countdown build-splits --shard K/N`` and ``countdown merge-splits``). The merged rows are those of
:func:`~countdown_env.splits.build_split_records`, byte for byte once written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from ..helpers.atomic import atomic_dir, write_text
from ..helpers.jsonl import read_jsonl, write_jsonl
from . import (
    Plan,
    SplitError,
    SplitSpec,
    assemble_splits,
    build_plan,
    check_num_proc,
    compute_rows,
    plan_items,
    puzzle_progress_bar,
)
from .manifest import SplitIntegrityError, file_sha256

SHARD_FILE = "shard.json"
SHARD_FOLDER_FILES = ("rows.jsonl", SHARD_FILE)
"""Every entry :func:`write_shard` writes: ``--overwrite`` replaces a shard folder holding nothing else."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``."""
    k, sep, n = str(text).partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit() or not 0 <= int(k) < int(n):
        raise SplitError(f"--shard must be K/N with 0 <= K < N (e.g. 0/4 ... 3/4), got {text!r}")
    return int(k), int(n)


def _plan_digest(plan: Plan) -> str:
    return hashlib.sha256(json.dumps(plan, separators=(",", ":")).encode()).hexdigest()


def build_shard(spec: SplitSpec, shard: int, num_shards: int, *, num_proc: int = 1, progress: bool | None = None):
    """Shard ``shard`` of ``num_shards``: the rows at plan positions ``shard, shard + num_shards, ...`` (round robin,
    so every shard gets the same mix of number counts). Returns the shard record :func:`write_shard` writes."""
    if not (isinstance(shard, int) and isinstance(num_shards, int) and 0 <= shard < num_shards):
        raise SplitError(f"shard must satisfy 0 <= shard < num_shards, got {shard}/{num_shards}")
    plan = build_plan(spec)
    items = plan_items(plan)[shard::num_shards]
    bar = puzzle_progress_bar(len(items), progress)
    tick = bar.update if bar is not None else (lambda *_: None)
    try:
        rows = compute_rows(spec, items, check_num_proc(num_proc), tick)
    finally:
        if bar is not None:
            bar.close()
    info = {
        "builder": "countdown_env.splits.shard",
        "shard": [shard, num_shards],
        "spec": spec.to_dict(),
        "task": spec.task.to_dict(),
        "plan": [[split, n, len(indices)] for split, n, indices in plan],
        "plan_sha256": _plan_digest(plan),
        "rows": len(rows),
    }
    return info, rows


def write_shard(info: dict, rows: list[dict], out_dir: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """A shard folder: ``rows.jsonl`` and ``shard.json`` (its settings, the plan, the rows' sha256); atomic."""
    out = Path(out_dir)
    with atomic_dir(out, overwrite=overwrite, owned=SHARD_FOLDER_FILES) as tmp:
        digest = write_jsonl(rows, tmp / "rows.jsonl")
        write_text(tmp / SHARD_FILE, json.dumps({**info, "sha256": digest}, indent=2, sort_keys=True) + "\n")
    return out


def merge_shards(shard_dirs: Iterable[str | os.PathLike]) -> tuple[dict[str, list[dict]], dict]:
    """``(rows by split, {"spec", "task"})`` of a complete set of shard folders (any order); refuses a missing,
    repeated, damaged or foreign shard with one line."""
    shards: dict[int, tuple[dict, list[dict]]] = {}
    reference = None
    for folder in shard_dirs:
        folder = Path(folder)
        path = folder / SHARD_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{folder} is not a shard folder (no {SHARD_FILE}; build it with --shard K/N)")
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SplitIntegrityError(f"{path}: not valid JSON (a damaged shard; rebuild it)") from None
        if file_sha256(folder / "rows.jsonl") != info.get("sha256"):
            raise SplitIntegrityError(f"{folder}/rows.jsonl does not match the sha256 in {SHARD_FILE}; rebuild it")
        k, n = info["shard"]
        key = (info["spec"], info["plan_sha256"], n)
        if reference is None:
            reference = key
        elif key != reference:
            raise SplitError(f"{folder} is a shard of another build (different settings, plan or shard count)")
        if k in shards:
            raise SplitError(f"shard {k}/{n} given twice ({folder})")
        shards[k] = (info, read_jsonl(folder / "rows.jsonl"))
    if reference is None:
        raise SplitError("no shard folders given")
    n = reference[2]
    missing = sorted(set(range(n)) - set(shards))
    if missing:
        raise SplitError(f"missing shards {', '.join(f'{k}/{n}' for k in missing)}")
    info = shards[0][0]
    plan = [(split, count, [0] * size) for split, count, size in info["plan"]]
    total = sum(size for _, _, size in info["plan"])
    rows = [shards[p % n][1][p // n] for p in range(total)]
    return assemble_splits(plan, rows), {"spec": info["spec"], "task": info["task"]}
