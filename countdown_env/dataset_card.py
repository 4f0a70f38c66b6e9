"""Hugging Face dataset cards (``README.md`` with a YAML header) for the folders the builders write.

A card's ``configs:`` header tells ``datasets.load_dataset(FOLDER)`` which jsonl file is which split, so a folder
loads the same way from ``load_dataset`` (the jsonl files, through the card) and from ``load_from_disk`` (the
``DatasetDict`` saved at the folder root). :func:`write_card` writes one into a split folder (``build-splits``)
or an SFT folder (``build-sft``); :func:`card_text` is the text. No ``datasets`` import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CARD_FILE = "README.md"

SPLIT_COLUMN_DOCS = {
    "prompt": "chat messages (system turn when the template has one, then the user turn) asking the puzzle",
    "numbers": "the given numbers, as drawn (alias accepted by every loader and the reward: `nums`)",
    "target": "the number to reach",
    "n_numbers": "how many numbers",
    "solution": "one reference expression, checked with `countdown_env.expressions.verifier.verify`",
    "num_solutions": "distinct solutions (`countdown_env.solving.distinct_solutions.count_solutions`)",
    "difficulty": "`hard`/`medium`/`easy` from that count (`countdown_env.solving.generator.DIFFICULTY_THRESHOLDS`)",
    "completion": "one assistant message: the solver-derived trace in the template's tags",
    "style": "the trace style of the row (`direct`, `short`, `search`, `long`)",
}

KIND_TITLES = {"split": "Countdown train/test split", "sft": "Countdown SFT warm-start traces"}


def _spec_info(spec: Any) -> tuple[dict | None, dict | None]:
    """``(spec dict, task dict)`` of a :class:`~countdown_env.splits.SplitSpec`, of ``{"spec", "task"}`` as a
    manifest records, or of a plain settings mapping (``None`` for unknown parts)."""
    if spec is None:
        return None, None
    if hasattr(spec, "to_dict") and hasattr(spec, "task"):
        return spec.to_dict(), spec.task.to_dict()
    if isinstance(spec, Mapping):
        if "spec" in spec or "task" in spec:
            return spec.get("spec"), spec.get("task")
        return dict(spec), None
    raise TypeError(f"spec must be a SplitSpec, a mapping or None, got {type(spec).__name__}")


def card_text(
    files: Mapping[str, str],
    spec: Any = None,
    rows: Mapping[str, int] | None = None,
    *,
    kind: str = "split",
    columns: list[str] | None = None,
) -> str:
    """The card of a folder whose split ``name`` is the jsonl file ``files[name]`` (relative to the folder)."""
    if kind not in KIND_TITLES:
        raise ValueError(f"kind must be one of {sorted(KIND_TITLES)}, got {kind!r}")
    spec_dict, task_dict = _spec_info(spec)
    header = ["---", "configs:", "- config_name: default", "  data_files:"]
    for name, path in files.items():
        header += [f"  - split: {name}", f"    path: {path}"]
    header += ["tags:", "- countdown", "- arithmetic", "- reinforcement-learning", "task_categories:",
               "- text-generation", "---", ""]  # fmt: skip
    lines = [f"# {KIND_TITLES[kind]}", ""]
    lines += ["Written by the countdown-rl project's `countdown_env`. Load it with either:", ""]
    lines += [
        "```python",
        "from datasets import load_dataset, load_from_disk",
        'ds = load_from_disk("THIS_FOLDER")     # the DatasetDict saved at the folder root (arrow, exact features)',
        'ds = load_dataset("THIS_FOLDER")       # the jsonl files through this card',
        "```",
        "",
        "| split | file | rows |",
        "| --- | --- | --- |",
    ]
    for name, path in files.items():
        count = "" if rows is None or name not in rows else str(rows[name])
        lines.append(f"| `{name}` | `{path}` | {count} |")
    lines.append("")
    if columns:
        lines += ["## Columns", ""]
        lines += [f"- `{c}`: {SPLIT_COLUMN_DOCS.get(c, '')}".rstrip(": ") for c in columns]
        lines.append("")
    if task_dict or spec_dict:
        lines += ["## How it was built", ""]
        if task_dict:
            lines += ["The `CountdownTask` (`countdown_env.task.CountdownTask.from_dict`) the rows were drawn, asked "
                      "and are graded under:", "", "```json", json.dumps(task_dict, indent=2, sort_keys=True), "```",
                      ""]  # fmt: skip
        if spec_dict:
            lines += ["Build settings:", "", "```json", json.dumps(spec_dict, indent=2, sort_keys=True), "```", ""]
    if kind == "split":
        lines += [
            "Train never holds a puzzle of test (canonical key: sorted numbers, target); every row's solution was "
            "checked by the verifier. `manifest.json` records the sha256 of every file; `countdown eval --split` and "
            "`countdown train` check it.",
            "",
        ]
    return "\n".join(header + lines)


def write_card(
    folder: str | os.PathLike,
    spec: Any = None,
    rows: Mapping[str, int] | None = None,
    *,
    kind: str = "split",
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write ``folder/README.md`` for the jsonl splits in ``folder`` (``files``: split -> file; default every
    ``{split}.jsonl`` there, test first) and return its path. Columns are read from the first row of the first
    file. Plain write: callers build the folder atomically around it."""
    folder = Path(folder)
    if files is None:
        names = sorted((p.stem for p in folder.glob("*.jsonl")), key=lambda n: (n != "test", n != "train", n))
        files = {name: f"{name}.jsonl" for name in names}
    if not files:
        raise ValueError(f"{folder}: no jsonl split to describe")
    columns = None
    first = folder / next(iter(files.values()))
    if first.is_file():
        with open(first, encoding="utf-8") as fh:
            line = fh.readline()
        if line.strip():
            columns = list(json.loads(line))
    path = folder / CARD_FILE
    path.write_text(card_text(files, spec, rows, kind=kind, columns=columns), encoding="utf-8")
    return path
