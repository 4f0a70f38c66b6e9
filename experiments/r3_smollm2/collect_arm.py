"""Commit a finished R3 arm: copy what recomputes its figures from the comparison folder it ran in into the committed
layout (PROTOCOL.md, "Command")::

    python experiments/r3_smollm2/collect_arm.py "$COUNTDOWN_CACHE/r3/seed-3-grpo"

For every arm of the folder's one seed N with a ``DONE`` marker that is not committed yet, it writes
``experiments/r3_smollm2/seed-N/runs/ARM-sN/`` as one folder that appears whole: ``DONE``, ``log_history.json``,
``rows.csv``, ``resolved_config.json`` and the per-puzzle evals (``final_eval.jsonl``, ``evals/step-*.jsonl``),
compressed to ``.jsonl.gz`` as every committed record is. Beside the runs, once per seed: ``compare.json`` (the
comparison's settings; since amendment 4 each arm runs in its own folder, so its ``learners`` become the seed's arms
collected so far, in the registered order) and ``data_digests.json`` (the sha256 of the training split, which is not
committed: ``tests/experiments/test_committed_results.py`` regenerates it).

The run records name their folder by its absolute path (``output_dir``); the copies name the cache folder
``$COUNTDOWN_CACHE`` instead, as every committed record does. It refuses, in one line and exit status 2: a folder
whose settings name other than one seed, or no finished arm; an arm already committed (nothing is written over);
settings or a training split that differ from those already committed for the seed in anything but the settings
``--resume`` may change; a file that still names this machine's home folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent
ARMS = ("grpo", "t_spmo", "s_grpo", "contrastive")
RUN_FILES = ("DONE", "log_history.json", "rows.csv", "resolved_config.json")
DIGESTS_ABOUT = ("sha256 of each training split this comparison wrote into data/; the split is regenerated from "
                 "compare.json (tests/experiments/test_committed_results.py)")  # fmt: skip


def finished_arms(folder: Path, seed: int) -> list[str]:
    """The arms of ``folder`` that finished seed ``seed`` (``runs/ARM-sSEED/DONE``), in the registered order."""
    return [arm for arm in ARMS if (folder / "runs" / f"{arm}-s{seed}" / "DONE").is_file()]


def merged_settings(committed: dict[str, Any] | None, new: dict[str, Any], arm: str) -> dict[str, Any]:
    """The seed's settings once ``arm`` (run with settings ``new``) is added to those ``committed`` (None: the first
    arm): equal in everything ``--resume`` may not change, ``learners`` the union in the registered order."""
    from learners.pipeline.compare.settings import CompareSettings

    if committed is None:
        return {**new, "learners": [arm]}
    free = set(CompareSettings.RESUMABLE)
    changed = sorted(k for k in set(committed) | set(new) if k not in free and committed.get(k) != new.get(k))
    if changed:
        raise ValueError(f"{arm}: settings differ from the seed's committed compare.json: {', '.join(changed)}")
    return {**committed, "learners": [a for a in ARMS if a in committed["learners"] or a == arm]}


def portable(path: Path, cache: str, forbidden: list[str]) -> bytes:
    """``path``'s bytes with the absolute ``cache`` folder written ``$COUNTDOWN_CACHE``; refused when they still name
    one of the ``forbidden`` folders (this machine's home)."""
    data = path.read_bytes().replace(cache.encode(), b"$COUNTDOWN_CACHE")
    for folder in forbidden:
        if folder.encode() in data:
            raise ValueError(f"{path} names {folder}: committed files must not carry this machine's paths")
    return data


def collect(folder: Path, dest_root: Path = FOLDER, cache: str | None = None, forbidden: list[str] | None = None
            ) -> list[Path]:  # fmt: skip
    """Copy every finished, uncommitted arm of ``folder`` under ``dest_root/seed-N/runs`` (refusals as in the module
    docstring; ``cache``: the folder written ``$COUNTDOWN_CACHE``, this machine's cache when not given;
    ``forbidden``: the folders no committed file may name, this machine's home when not given); returns the committed
    run folders."""
    from countdown_env.helpers.atomic import atomic_dir, write_text
    from countdown_env.helpers.cache import cache_root
    from countdown_env.helpers.jsonl import parse_jsonl, write_jsonl

    settings = json.loads((folder / "compare.json").read_text())
    if len(settings.get("seeds") or []) != 1:
        raise ValueError(f"{folder}: its settings name seeds {settings.get('seeds')}, not one seed")
    seed = settings["seeds"][0]
    arms = finished_arms(folder, seed)
    if not arms:
        raise ValueError(f"{folder}: no finished arm (no runs/ARM-s{seed}/DONE)")
    cache = str(cache_root().resolve()) if cache is None else cache
    forbidden = [str(Path.home())] if forbidden is None else forbidden
    seed_dir = dest_root / f"seed-{seed}"
    split = folder / "data" / f"train-s{seed}.jsonl"
    digests = {f"train-s{seed}.jsonl": hashlib.sha256(split.read_bytes()).hexdigest()}
    digests_path, settings_path = seed_dir / "data_digests.json", seed_dir / "compare.json"
    if digests_path.is_file() and json.loads(digests_path.read_text())["files"] != digests:
        raise ValueError(f"{folder}: its training split differs from the one committed for seed {seed}")
    committed_settings = json.loads(settings_path.read_text()) if settings_path.is_file() else None

    written = []
    for arm in arms:
        run, dest = folder / "runs" / f"{arm}-s{seed}", seed_dir / "runs" / f"{arm}-s{seed}"
        committed_settings = merged_settings(committed_settings, settings, arm)
        if dest.exists():  # its seed files are still brought up to date, in case a stop came between the two
            print(f"{dest.relative_to(dest_root.parent)}: already committed, left as it is")
            continue
        copies = {name: portable(run / name, cache, forbidden) for name in RUN_FILES}
        records = {  # read once: the bytes checked for this machine's paths are the bytes committed
            record.relative_to(run).with_name(record.name + ".gz"): portable(record, cache, forbidden)
            for record in [run / "final_eval.jsonl", *sorted((run / "evals").glob("step-*.jsonl"))]
        }
        with atomic_dir(dest) as tmp:
            for name, data in copies.items():
                (tmp / name).write_bytes(data)
            for target, data in records.items():
                (tmp / target).parent.mkdir(parents=True, exist_ok=True)
                write_jsonl(parse_jsonl(data, str(run / target.with_suffix(""))), tmp / target)
        written.append(dest)
    seed_files = {settings_path: json.dumps(committed_settings, indent=2) + "\n",
                  digests_path: json.dumps({"about": DIGESTS_ABOUT, "files": digests}, indent=1) + "\n"}  # fmt: skip
    for path, text in seed_files.items():
        if not path.is_file() or path.read_text() != text:
            write_text(path, text)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the comparison folder the arm ran in ($COUNTDOWN_CACHE/r3/...)")
    args = parser.parse_args(argv)
    try:
        written = collect(args.folder)
    except (ValueError, OSError) as exc:
        print(f"collect_arm: {exc}", file=sys.stderr)
        return 2
    for dest in written:
        print(f"committed layout written: {dest.relative_to(FOLDER.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
