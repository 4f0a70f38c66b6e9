"""Puzzles -> the prompt datasets TRL's GRPOTrainer reads (``prompt`` chat messages + ``numbers``/``target``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from countdown_env import Puzzle
from countdown_env.prompts import PromptTemplate, chat_messages, get_template

# A short prompt for the embedded character-level model: one token per character makes DEFAULT's ~450-character
# instructions the dominant cost of every step. Same tags as DEFAULT, so the verifier and rewards are unchanged.
COMPACT = PromptTemplate(
    name="compact",
    system=None,
    user="Numbers: {numbers}\nTarget: {target}",
)


def resolve_template(template: str | PromptTemplate | None) -> PromptTemplate:
    """Like ``countdown_env.prompts.get_template`` but also knows ``"compact"``."""
    if template == "compact":
        return COMPACT
    return get_template(template)


TEMPLATE_FILE = "countdown_template.json"


def save_model_template(model_dir: str | Path, template: str) -> None:
    """Record in a checkpoint folder which prompt template it was trained on (read by train/eval defaults)."""
    resolve_template(template)
    (Path(model_dir) / TEMPLATE_FILE).write_text(json.dumps({"template": template}) + "\n")


def model_template(model_dir: str | Path, default: str = "default") -> str:
    """The prompt template recorded by :func:`save_model_template`, else ``default``."""
    path = Path(model_dir) / TEMPLATE_FILE
    if path.is_file():
        return json.loads(path.read_text())["template"]
    return default


def prompt_rows(
    puzzles: Iterable[Puzzle], template: str | PromptTemplate | None = None, *, use_all_numbers: bool = False
) -> list[dict[str, Any]]:
    """One row per puzzle: ``prompt`` (chat messages), ``numbers`` (list[int]), ``target`` (int)."""
    t = resolve_template(template)
    return [
        {
            "prompt": chat_messages(p, t, use_all_numbers=use_all_numbers),
            "numbers": list(p.numbers),
            "target": p.target,
        }
        for p in puzzles
    ]


def prompt_dataset(
    puzzles: Iterable[Puzzle], template: str | PromptTemplate | None = None, *, use_all_numbers: bool = False
):
    """A ``datasets.Dataset`` of :func:`prompt_rows` (what ``CountdownGRPOTrainer`` trains on)."""
    from datasets import Dataset

    rows = prompt_rows(puzzles, template, use_all_numbers=use_all_numbers)
    if not rows:
        raise ValueError("no puzzles given")
    return Dataset.from_list(rows)
