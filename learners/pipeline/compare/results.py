"""The format of ``results.csv`` and of each run's ``rows.csv``: one row per (learner, seed, eval step). The pass@k
column is named for the comparison's eval samples (``pass@4`` by default, ``pass@16`` with ``--eval-samples 16``)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CSV_COLUMNS: tuple[str, ...] = (
    "learner",
    "seed",
    "step",
    "pass@1",
    "pass@4",
    "format_rate",
    "mean_completion_tokens",
    "train_reward",
    "wall_seconds",
    "generated_tokens",
    "loss_tokens",
    "forward_tokens",
)
CUMULATIVE_COLUMNS: tuple[str, ...] = ("wall_seconds", "generated_tokens", "loss_tokens", "forward_tokens")


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if not value.is_integer() or abs(value) < 1e15 else str(int(value))
    return str(value)


def csv_columns(samples: int = 4) -> tuple[str, ...]:
    """:data:`CSV_COLUMNS` with the pass@k column of ``samples`` eval samples per puzzle."""
    return tuple(f"pass@{samples}" if column == "pass@4" else column for column in CSV_COLUMNS)


def rows_to_csv(rows: Iterable[Mapping[str, Any]], samples: int = 4) -> str:
    columns = csv_columns(samples)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_fmt(row.get(c)) for c in columns])
    return buffer.getvalue()


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``results.csv``/``rows.csv``: numbers as ``int``/``float`` (empty cells as NaN)."""
    out = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for raw in reader:
            row: dict[str, Any] = {"learner": raw["learner"], "seed": int(raw["seed"]), "step": int(raw["step"])}
            for column in (reader.fieldnames or CSV_COLUMNS)[3:]:
                row[column] = float(raw[column]) if raw[column] != "" else math.nan
            out.append(row)
    return out
