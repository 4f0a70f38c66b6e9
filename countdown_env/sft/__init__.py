"""Supervised warm-start data: seeded puzzles with solver-derived reasoning traces, ready for TRL's SFTTrainer.

Rows are conversational prompt/completion pairs (``prompt``: the system and user messages of
:func:`~countdown_env.prompts.chat_messages`; ``completion``: one assistant message holding the trace in the
template's tags), which TRL's ``SFTTrainer`` trains on with the loss on the completion only. Every completion is
checked with the verifier before it is kept. The defaults match the embedded tiny model's calibration (three
numbers in 1..20, targets up to 200, short traces of about 150-400 characters; see docs/training.md).

Beside the builder: :mod:`countdown_env.sft.traces` (the solver-derived reasoning traces, one per style) and
:mod:`countdown_env.sft.cleaning` (external SFT/preference data cleaned the way the contrastive shaping post did).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from ..puzzle import Puzzle
from ..splits import PuzzleKey, SplitSpec, distinct_draws, interleave, puzzle_key, puzzle_progress_bar
from .traces import MIXED, STYLES, TraceStyle, make_trace, resolve_style

TINY_VALUE_RANGE = (1, 20)
TINY_TARGET_RANGE = (10, 200)

SFT_COLUMNS = ("prompt", "completion", "numbers", "target", "n_numbers", "solution", "style")


def build_sft_records(
    n_numbers: int | Iterable[int] = (3,),
    size: int = 2000,
    *,
    seed: int = 0,
    style: str | TraceStyle = "short",
    value_range: tuple[int, int] = TINY_VALUE_RANGE,
    target_range: tuple[int, int] = TINY_TARGET_RANGE,
    template: str = "default",
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    exclude: Iterable[Puzzle | PuzzleKey] = (),
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """``size`` distinct puzzles (shared evenly over ``n_numbers``, interleaved) with verified traces.

    ``style`` is a preset name (``"direct"``, ``"short"``, ``"search"``, ``"long"``), ``"mixed"`` (a preset
    drawn per row) or a :class:`~countdown_env.sft.traces.TraceStyle`. ``exclude`` keeps puzzles out by canonical
    key (pass the eval puzzles). Deterministic in all arguments. No HF import.
    """
    from ..expressions.verifier import verify_completion

    spec = SplitSpec(
        n_numbers=(n_numbers,) if isinstance(n_numbers, int) else tuple(n_numbers),
        train_size=size,
        eval_size=0,
        seed=seed,
        value_range=value_range,
        target_range=target_range,
        use_all_numbers=use_all_numbers,
        integer_intermediates=integer_intermediates,
        template=template,
        exclude=frozenset(puzzle_key(e) for e in exclude),
    )
    if not isinstance(style, TraceStyle) and style != MIXED:
        resolve_style(style)  # raises ValueError for an unknown name before any work
    task = spec.task
    bar = puzzle_progress_bar(size, progress)
    groups: list[list[dict]] = []
    try:
        for n, count in spec.sizes("train").items():
            gen = spec.stream_task(n, "sft").generator()
            rows = []
            what = f"SFT puzzles with {n} numbers"
            for index, puzzle in distinct_draws(gen.__getitem__, count, set(spec.exclude), spec, what):
                row_style = resolve_style(style, random.Random(f"sft-style:{seed}:{n}:{index}"))
                trace = make_trace(
                    puzzle,
                    style=row_style,
                    seed=seed,
                    use_all_numbers=use_all_numbers,
                    integer_intermediates=integer_intermediates,
                )
                completion = trace.completion(template)
                check = verify_completion(
                    completion,
                    puzzle,
                    tag=task.prompt_template.answer_tag,
                    use_all_numbers=use_all_numbers,
                    integer_intermediates=integer_intermediates,
                )
                if not check.correct:  # make_trace builds exact solutions; a failure here is a bug
                    raise RuntimeError(f"trace solution {trace.solution!r} for {puzzle} fails: {check.reason}")
                rows.append(
                    {
                        "prompt": task.messages(puzzle),
                        "completion": [{"role": "assistant", "content": completion}],
                        "numbers": list(puzzle.numbers),
                        "target": puzzle.target,
                        "n_numbers": puzzle.n_numbers,
                        "solution": trace.solution,
                        "style": trace.style,
                    }
                )
                if bar is not None:
                    bar.update()
            groups.append(rows)
    finally:
        if bar is not None:
            bar.close()
    return list(interleave(groups))


def sft_features(columns: Iterable[str] = SFT_COLUMNS):
    """The HF ``Features`` of an SFT dataset with these ``columns`` (cleaned external rows have no ``style``)."""
    from datasets import Features, List, Value

    message = {"role": Value("string"), "content": Value("string")}
    every = {
        "prompt": List(message),
        "completion": List(message),
        "numbers": List(Value("int64")),
        "target": Value("int64"),
        "n_numbers": Value("int64"),
        "solution": Value("string"),
        "style": Value("string"),
    }
    return Features({name: every[name] for name in columns})


def build_sft_dataset(n_numbers: int | Iterable[int] = (3,), size: int = 2000, **kwargs: Any):
    """A ``datasets.Dataset`` of :func:`build_sft_records` rows (same arguments), for ``trl.SFTTrainer``."""
    from datasets import Dataset

    return Dataset.from_list(build_sft_records(n_numbers, size, **kwargs), features=sft_features())


SFT_SPLIT = "train"
"""An SFT folder holds one split, ``train`` (``train.jsonl``, the ``DatasetDict``'s one key)."""

SFT_FOLDER_FILES = (f"{SFT_SPLIT}.jsonl", SFT_SPLIT, "dataset_dict.json", "README.md")
"""Every entry :func:`write_sft_folder` writes (beside its ``extra_files``): ``--overwrite`` replaces a folder holding
nothing else."""


def write_sft_folder(
    records: list[dict[str, Any]],
    out_dir,
    settings: dict[str, Any] | None = None,
    *,
    overwrite: bool = False,
    extra_files: dict[str, str] | None = None,
) -> str:
    """The SFT folder layout of ``build-sft`` and ``clean-sft``, the same as a split folder's: ``train.jsonl``, a
    ``DatasetDict`` ``{"train": ...}`` saved at the folder root (``datasets.load_from_disk(DIR)["train"]``) and a
    dataset card (``README.md``, so that ``datasets.load_dataset(DIR)["train"]`` reads the jsonl); ``settings`` (the
    build arguments) go into the card, ``extra_files`` (name -> text, e.g. clean-sft's ``report.json``) beside. Returns
    the jsonl's sha256. Written atomically (built beside ``out_dir``, then renamed); an existing non-empty folder is
    refused unless ``overwrite`` (then replaced whole, when it holds nothing but :data:`SFT_FOLDER_FILES` and the
    ``extra_files``)."""
    from pathlib import Path

    from datasets import DatasetDict

    from ..dataset_card import write_card
    from ..helpers.atomic import atomic_dir
    from ..helpers.jsonl import write_jsonl
    from ..splits.hf_datasets import records_to_dataset

    columns = list(records[0]) if records else list(SFT_COLUMNS)
    owned = (*SFT_FOLDER_FILES, *(extra_files or {}))
    with atomic_dir(Path(out_dir), overwrite=overwrite, owned=owned) as out:
        DatasetDict({SFT_SPLIT: records_to_dataset(records, sft_features(columns))}).save_to_disk(str(out))
        digest = write_jsonl(records, out / f"{SFT_SPLIT}.jsonl")
        for name, text in (extra_files or {}).items():
            (out / name).write_text(text, encoding="utf-8")
        write_card(out, settings, {SFT_SPLIT: len(records)}, kind="sft")
    return digest


__all__ = [
    "SFT_COLUMNS",
    "STYLES",
    "TINY_TARGET_RANGE",
    "TINY_VALUE_RANGE",
    "build_sft_dataset",
    "build_sft_records",
    "sft_features",
    "write_sft_folder",
]
