"""Split rows as Hugging Face datasets: the explicit ``Features`` of a split (:func:`split_features`), a reproducible
``datasets.Dataset`` from rows (:func:`records_to_dataset`, its fingerprint a hash of the rows), a built
``DatasetDict`` (:func:`build_splits`) and the ``save_to_disk`` copy of a split folder (:func:`save_datasets`).

``datasets`` is imported inside the functions only, so that importing this module (and ``countdown_env``) stays
cheap; the rows themselves come from :mod:`countdown_env.splits` with no HF import.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from ..helpers.jsonl import jsonl_line
from . import COUNT_COLUMNS, SplitSpec, build_split_records


def split_features(counts: bool = True):
    """The HF ``Features`` of a split (explicit, so that empty and non-empty builds share one schema)."""
    from datasets import Features, List, Value

    features = Features(
        {
            "prompt": List({"role": Value("string"), "content": Value("string")}),
            "numbers": List(Value("int64")),
            "target": Value("int64"),
            "n_numbers": Value("int64"),
            "solution": Value("string"),
            "num_solutions": Value("int64"),
            "difficulty": Value("string"),
        }
    )
    if not counts:
        for name in COUNT_COLUMNS:
            del features[name]
    return features


def records_to_dataset(rows: list[dict], features=None):
    """A ``datasets.Dataset`` from rows; its fingerprint hashes the rows, so saving it is reproducible."""
    from datasets import Dataset

    fingerprint = hashlib.sha256(b"".join(jsonl_line(r) for r in rows)).hexdigest()[:16]
    if features is None:
        features = split_features(counts=not rows or "difficulty" in rows[0])
    ds = Dataset.from_list(rows, features=features)
    return Dataset(ds.data, info=ds.info, fingerprint=fingerprint)


def build_splits(spec: SplitSpec | None = None, *, progress: bool | None = None, **spec_kwargs: Any):
    """A ``datasets.DatasetDict`` ``{"test": Dataset, "train": Dataset}`` (non-empty splits only), as
    ``load_from_disk`` reads a written split back; see :func:`~countdown_env.splits.build_split_records`."""
    from datasets import DatasetDict

    records = build_split_records(spec, progress=progress, **spec_kwargs)
    return DatasetDict({name: records_to_dataset(rows) for name, rows in records.items()})


def save_datasets(rows_by_split: Mapping[str, list[dict]], folder: str | os.PathLike, progress: bool | None) -> None:
    """``DatasetDict.save_to_disk(folder)`` of the rows (``load_from_disk(folder)`` reads them back); ``progress``
    governs ``datasets``' own "Saving the dataset" bars (``None``: when stderr is a terminal)."""
    from datasets import DatasetDict
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    from ..helpers.progress import wanted

    silence = not wanted(progress) and not are_progress_bars_disabled()
    if silence:
        disable_progress_bars()
    try:
        DatasetDict({n: records_to_dataset(rows) for n, rows in rows_by_split.items()}).save_to_disk(str(folder))
    finally:
        if silence:
            enable_progress_bars()
