"""``countdown label-steps``'s work: label the completions of a jsonl file, and optionally write them as a
process-reward dataset in the stepwise-supervision layout.

Input rows hold ``numbers`` (or ``nums``), ``target`` and ``completion`` (a string); every other field is kept.
Output rows are the input rows with ``steps`` (each ``{"text", "valid", "solvable_after"}``), ``first_mistake``,
``solvable_before`` and ``unparsed`` added (see :mod:`countdown_env.steps.labels`), and with ``answer_offsets`` (a
tokenizer's character offsets) ``answer_tokens``: the exact value after each token of the answer
(:mod:`countdown_env.steps.answer_tokens`; ``None`` for a row without an answer block). The process-reward file has one
row per completion read to its end with at least one step: ``prompt`` (the row's own string ``prompt``, else the
task's prompt text for the puzzle), ``completions`` (one text per step: the reasoning from the end of the previous
step to the end of this one, so the control words ``Try``/``Back up.``/``Dead end.`` stay with the step they lead
to) and ``labels`` (``valid and solvable_after`` per step): the layout of the PRM datasets on the Hub and of TRL's
PRM trainer. A row that cannot be read (not JSON, a field missing or of the wrong type, an invalid puzzle, a puzzle
the oracle refuses) stops the command with one line naming it; nothing is written then.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..helpers.atomic import check_output
from ..helpers.jsonl import iter_jsonl, write_jsonl
from ..prompts import prompt_text
from ..puzzle import Puzzle, PuzzleError
from ..solving.answer_prefix import AnswerPrefixOracle
from ..solving.oracle import OracleLimitError, StepOracle
from .answer_tokens import Offsets, label_answer_tokens
from .labels import CompletionLabels, label_completion

__all__ = ["LabelReport", "label_file", "prm_row"]


@dataclass(frozen=True)
class LabelReport:
    rows: int
    steps: int
    valid_steps: int
    with_mistake: int
    unparsed_rows: int
    prm_rows: int
    answers: int | None = None
    answers_lost: int = 0

    def summary(self) -> str:
        return (
            f"labelled {self.rows} completions: {self.steps} steps ({self.valid_steps} valid), "
            f"{self.with_mistake} with a first mistake, {self.unparsed_rows} not read to the end"
            + (f"; {self.prm_rows} process-reward rows" if self.prm_rows else "")
            + (
                f"; {self.answers} answers valued token by token, {self.answers_lost} of them lost at a token"
                if self.answers is not None
                else ""
            )
        )


def prm_row(prompt: str, completion: str, labels: CompletionLabels) -> dict | None:
    """The stepwise-supervision row of one labelled completion; ``None`` when it has no step or was not read to its
    end (its labels would stop short of what the model wrote). Step ``i``'s text runs from the end of step ``i - 1``'s
    text to its own ``segment_end`` (the verdict of a probe and the final ``.`` stay with the step; ``Dead end.``,
    ``Back up.`` and ``Try`` go with the step they lead to), without the separators at its edges."""
    if not labels.parsed or not labels.steps:
        return None
    texts, previous = [], labels.reasoning_span[0]
    for labelled in labels.steps:
        texts.append(completion[previous : labelled.segment_end].strip().lstrip(", "))
        previous = labelled.segment_end
    return {
        "prompt": prompt,
        "completions": texts,
        "labels": [s.valid and s.solvable_after for s in labels.steps],
    }


def label_file(
    source: str | os.PathLike,
    out: str | os.PathLike,
    *,
    prm_out: str | os.PathLike | None = None,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    template: str = "default",
    overwrite: bool = False,
    answer_offsets: Offsets | None = None,
) -> LabelReport:
    """Label ``source`` into ``out`` (and ``prm_out``); see the module docstring."""
    for target in (out, prm_out):
        if target is not None:
            check_output(target, [source, *([out] if target == prm_out else [])], overwrite=overwrite)
    rules = dict(use_all_numbers=use_all_numbers, integer_intermediates=integer_intermediates)
    oracles: dict[int, StepOracle] = {}
    prefix_oracles: dict[Puzzle, AnswerPrefixOracle] = {}
    rows, prm_rows = [], []
    steps = valid = mistakes = unparsed = answers = lost = 0
    for lineno, row in enumerate(iter_jsonl(source), 1):
        where = f"{source}: row {lineno}"
        puzzle, completion = _read_row(row, where)
        oracle = oracles.setdefault(puzzle.target, StepOracle(puzzle.target, **rules))
        try:
            labels = label_completion(completion, puzzle, oracle)
            extra = {}
            if answer_offsets is not None:
                if puzzle not in prefix_oracles:
                    prefix_oracles[puzzle] = AnswerPrefixOracle(puzzle, **rules)
                found = label_answer_tokens(completion, answer_offsets, prefix_oracles[puzzle])
                extra["answer_tokens"] = found
                answers += found is not None and "tokens" in found
                lost += found is not None and found.get("first_unsolvable") is not None
        except OracleLimitError as exc:
            raise ValueError(f"{where}: {exc}") from None
        rows.append({**row, **labels.to_dict(), **extra})
        steps += len(labels.steps)
        valid += sum(s.valid for s in labels.steps)
        mistakes += labels.first_mistake is not None
        unparsed += not labels.parsed
        if prm_out is not None:
            prompt = row.get("prompt")
            if not isinstance(prompt, str):
                prompt = prompt_text(puzzle, template, use_all_numbers=use_all_numbers)
            prm = prm_row(prompt, completion, labels)
            if prm is not None:
                prm_rows.append(prm)
    write_jsonl(rows, out)
    if prm_out is not None:
        write_jsonl(prm_rows, prm_out)
    return LabelReport(
        len(rows),
        steps,
        valid,
        mistakes,
        unparsed,
        len(prm_rows),
        answers if answer_offsets is not None else None,
        lost,
    )


def _read_row(row, where: str) -> tuple[Puzzle, str]:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if not isinstance(row.get("completion"), str):
        raise ValueError(f"{where}: 'completion' must be a string, got {type(row.get('completion')).__name__}")
    if "target" not in row or ("numbers" not in row and "nums" not in row):
        raise ValueError(f"{where}: a row needs 'numbers' (or 'nums'), 'target' and 'completion'")
    try:
        return Puzzle.from_dict(row), row["completion"]
    except PuzzleError as exc:
        raise ValueError(f"{where}: {exc}") from None
