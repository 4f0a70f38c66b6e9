"""Clean external Countdown SFT/preference data the way the contrastive shaping post did
(see docs/references.md: contrastive potential advantage shaping on Countdown), and say why each dropped row went.

The post (its ``scripts/prepare_countdown_sft.py``, run on the preferred responses of a Countdown DPO set)
keeps a row only if its answer survives these steps, then rewrites it as ``<reasoning>…</reasoning>`` followed
by ``<solution>…</solution>`` with nothing outside the tags:

1. normalise Unicode operators (``×``, ``÷``, ``−`` and friends) to ASCII;
2. strip a trailing ``= N`` (``25 * 3 + 7 = 82`` becomes ``25 * 3 + 7``) by the verifier's own rule
   (:func:`countdown_env.expressions.answers.normalize_answer`): the stated ``N`` must be the expression's value, as
   ``countdown verify`` demands (``25*3+7 = 83`` drops the row as ``wrong_stated_value``), and any other ``=`` (``=
   banana``) stays in the answer, so step 3 drops it (the post cut everything from the first ``=``, keeping both);
3. allow only arithmetic characters (digits, ``+ - * /``, parentheses, spaces): after removing math delimiters
   (``$``, backticks) and a final full stop, anything else drops the row rather than being deleted, since
   deleting a letter can fuse two numbers into one;
4. require every source number to be used exactly once;
5. require the value to equal the target.

Input rows are JSON objects in the common shape: the numbers (``numbers`` or ``nums``), the ``target`` and a
response (``response``, ``response_ws``, ``chosen``, ``completion``, ``output`` or ``answer``; a string or a
list of chat messages, whose last assistant message is used). The answer is the text of the last
``<answer>``/``<solution>`` block; the reasoning is the ``<think>``/``<reasoning>`` block, or else the text
before the answer block. Steps 4 and 5 use the verifier, so the reported reasons are the verifier's.

Two additions to the post's filters: a row whose normalisation would create, join or split digits (``5² + 3``
-> ``52 + 3`` by NFKC, ``1$2 + 3`` -> ``12 + 3`` by deleting ``$``, ``①②``) is dropped as ``changed_digits`` (its
kept answer would verify but contradict its reasoning); and every step runs in linear time (blocks are found by
scanning for their tags, not by a backtracking regular expression), so a 1 MB row takes milliseconds.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..expressions.answers import normalize_answer
from ..messages import completion_text
from ..prompts import chat_messages, format_completion, get_template
from ..puzzle import Puzzle, PuzzleError

NUMBERS_FIELDS = ("numbers", "nums")
RESPONSE_FIELDS = ("response", "response_ws", "chosen", "completion", "output", "answer")

# Reasons for dropping a row that come before the verifier (its own reasons follow, e.g. "unused_number").
BAD_ROW = "bad_row"  # not an object, or numbers/target missing or invalid
NO_RESPONSE = "no_response"
NO_ANSWER = "no_answer"
EMPTY_REASONING = "empty_reasoning"
FORBIDDEN_CHARACTERS = "forbidden_characters"
CHANGED_DIGITS = "changed_digits"  # normalisation would create, join or split digits (5² -> 52, 1$2 -> 12)
TOO_LONG = "too_long"  # a response over MAX_RESPONSE_CHARS: refused before any scan of it

MAX_RESPONSE_CHARS = 2_000_000
"""Longest response the cleaner reads (2 MB; a 10 MB response cost 0.5 s in its scans, 1 MB stays linear and fast)."""

UNICODE_OPERATORS = {
    "×": "*", "✕": "*", "✖": "*", "⨉": "*", "∗": "*", "⋅": "*", "·": "*", "•": "*",
    "÷": "/", "∕": "/", "⁄": "/", "∶": "/",
    "−": "-", "–": "-", "—": "-", "‒": "-", "﹣": "-", "－": "-", "➖": "-",
    "＋": "+", "➕": "+", "（": "(", "）": ")",
}  # fmt: skip
"""Operator look-alikes and their ASCII forms (NFKC folds full-width digits; these it does not)."""

_ARITHMETIC = re.compile(r"[0-9+\-*/() ]*")
_ANY_TAG = re.compile(r"</?(think|reasoning|answer|solution)>", re.IGNORECASE)


LATEX_OPERATORS = {r"\times": "*", r"\cdot": "*", r"\div": "/", r"\left(": "(", r"\right)": ")"}

_WRAPPING = "$`"  # math/code delimiters around an otherwise clean answer
_REPLACEMENTS = (*UNICODE_OPERATORS.items(), *((ch, "") for ch in _WRAPPING))
_NON_DIGITS = re.compile(r"\D+")  # str patterns: \d is any Unicode decimal digit
_DELETED_BETWEEN_DIGITS = re.compile(r"\d[$`]+\d")


def normalize_operators(text: str) -> str:
    """Step 1: Unicode (and LaTeX) operators to ASCII, NFKC (full-width digits), math delimiters and a final
    full stop removed, runs of whitespace to one space."""
    for latex, ascii_op in LATEX_OPERATORS.items():
        text = text.replace(latex, ascii_op)
    for odd, ascii_op in _REPLACEMENTS:  # str.replace per symbol present: C speed on long rows
        if odd in text:
            text = text.replace(odd, ascii_op)
    text = text.strip().removesuffix(".")
    text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split())


def digit_runs(text: str) -> str:
    """The maximal runs of decimal digits (any script, as ASCII digits), space-separated: what a normalisation
    must keep (``"5² + 3"`` -> ``"5 3"``, its NFKC form ``"52 + 3"`` -> ``"52 3"``)."""
    runs = _NON_DIGITS.sub(" ", text).strip()
    if not runs.isascii():
        runs = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in runs)
    return runs


def changes_digits(raw: str) -> bool:
    """Whether :func:`normalize_operators` would create, join or split digits in ``raw``: a deleted ``$``/backtick
    between two digits (``1$2`` -> ``12``), or a character that is not a decimal digit but that NFKC turns into
    digits (``²``, ``①``, ``½``: ``5² + 3`` -> ``52 + 3``). Linear time; equivalent to comparing the
    :func:`digit_runs` of ``raw`` and of its normalisation, except that it also refuses an isolated ``①``."""
    if _DELETED_BETWEEN_DIGITS.search(raw):
        return True
    if raw.isascii():
        return False
    return any(
        not ch.isdecimal() and any(c.isdecimal() for c in unicodedata.normalize("NFKC", ch))
        for ch in set(raw)
        if not ch.isascii()
    )


def split_stated_result(text: str) -> tuple[str, str | None]:
    """Step 2: ``"expr = 82"`` -> ``("expr", "82")``; ``(text, None)`` when it states no number (the verifier's rule,
    :func:`countdown_env.expressions.answers.normalize_answer`: one trailing ``= <number>``)."""
    expression, stated = normalize_answer(text)
    return expression.strip(), stated


def is_arithmetic(text: str) -> bool:
    """Step 3: only digits, ``+ - * /``, parentheses and spaces."""
    return _ARITHMETIC.fullmatch(text) is not None


def response_text(response: Any) -> str | None:
    """A response as text (:func:`countdown_env.messages.completion_text`: a string, or the last assistant
    message of a chat list); ``None`` for anything else (the row is then a ``bad_row``)."""
    if response is None:
        return None
    try:
        return completion_text(response)
    except TypeError:
        return None


def _last_block(text: str, lower: str, names: tuple[str, ...], end: int) -> tuple[int, int, int] | None:
    """``(block start, content start, content end)`` of the last ``<name>…</name>`` block (any of ``names``,
    case-insensitive) closing at or before ``end``: the last closing tag, then the last opening tag of the same name
    before it. Linear time (``str.rfind``); ``lower`` is ``text.lower()``."""
    best = None
    for name in names:
        close = lower.rfind(f"</{name}>", 0, end)
        if close < 0:
            continue
        open_ = lower.rfind(f"<{name}>", 0, close)
        if open_ < 0:
            continue
        found = (open_, open_ + len(name) + 2, close)
        if best is None or close > best[2]:
            best = found
    return best


def split_response(text: str) -> tuple[str, str] | None:
    """``(reasoning, raw answer)`` of a response, or ``None`` when it has no answer block: the answer is the last
    ``<answer>``/``<solution>`` block, the reasoning the last ``<think>``/``<reasoning>`` block before it (else the
    text before it, tags removed). Linear time."""
    lower = text.lower()
    if len(lower) != len(text):  # a case mapping that changes lengths (rare scripts): search the text itself
        lower = text
    answer = _last_block(text, lower, ("answer", "solution"), len(text))
    if answer is None:
        return None
    start, content_start, content_end = answer
    thought = _last_block(text, lower, ("think", "reasoning"), start)
    reasoning = text[thought[1] : thought[2]] if thought else text[:start]
    reasoning = _ANY_TAG.sub("", reasoning).strip()
    return reasoning, text[content_start:content_end]


@dataclass
class CleaningReport:
    """Rows read, kept, and dropped per reason (a verifier reason or one of this module's)."""

    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        lines = [f"read {self.read}, kept {self.kept}, dropped {self.read - self.kept}"]
        lines += [
            f"  {reason}: {count}" for reason, count in sorted(self.dropped.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "kept": self.kept, "dropped": dict(sorted(self.dropped.items()))}


def _first(row: dict, names: Iterable[str]) -> Any:
    for name in names:
        if name in row:
            return row[name]
    return None


def clean_row(
    row: Any, *, response_field: str | None = None, template: str = "default", require_reasoning: bool = True
) -> tuple[dict | None, str]:
    """Clean one row: ``(cleaned row, "ok")`` or ``(None, reason)``.

    The cleaned row has ``prompt`` (chat messages), ``completion`` (one assistant message), ``numbers``,
    ``target``, ``n_numbers`` and ``solution``: the same columns as :func:`countdown_env.sft.build_sft_records`.
    """
    from ..expressions.verifier import verify

    if not isinstance(row, dict):
        return None, BAD_ROW
    try:
        puzzle = Puzzle(_first(row, NUMBERS_FIELDS), row.get("target"))
    except PuzzleError:
        return None, BAD_ROW
    text = response_text(row.get(response_field) if response_field else _first(row, RESPONSE_FIELDS))
    if text is not None and len(text) > MAX_RESPONSE_CHARS:
        return None, TOO_LONG
    if text is None or not text.strip():
        return None, NO_RESPONSE
    parts = split_response(text)
    if parts is None:
        return None, NO_ANSWER
    reasoning, raw = parts
    if changes_digits(raw):
        return None, CHANGED_DIGITS
    answer, stated = split_stated_result(normalize_operators(raw))
    if not answer:
        return None, NO_ANSWER
    if not is_arithmetic(answer):
        return None, FORBIDDEN_CHARACTERS
    if require_reasoning and not reasoning:
        return None, EMPTY_REASONING
    check = verify(answer if stated is None else f"{answer} = {stated}", puzzle, use_all_numbers=True)
    if not check.correct:
        return None, check.reason
    solution = " ".join(answer.split())
    return {
        "prompt": chat_messages(puzzle, template, use_all_numbers=True),
        "completion": [{"role": "assistant", "content": format_completion(reasoning, solution, template)}],
        "numbers": list(puzzle.numbers),
        "target": puzzle.target,
        "n_numbers": puzzle.n_numbers,
        "solution": solution,
    }, "ok"


def clean_rows(rows: Iterable[Any], report: CleaningReport | None = None, **kwargs: Any) -> Iterator[dict]:
    """Cleaned rows of ``rows`` (see :func:`clean_row` for ``kwargs``), counting drops into ``report``."""
    report = report if report is not None else CleaningReport()
    get_template(kwargs.get("template", "default"))
    field, seen, first_keys = kwargs.get("response_field"), 0, None
    for row in rows:
        report.read += 1
        if isinstance(row, dict):
            seen += field in row if field else 0
            first_keys = list(row)[:12] if first_keys is None else first_keys
        cleaned, reason = clean_row(row, **kwargs)
        if cleaned is None:
            report.dropped[reason] += 1
        else:
            report.kept += 1
            yield cleaned
    if field and report.read and not seen:  # a typo would drop every row and "succeed"
        raise ValueError(f"response field {field!r} is in no row (the first row's fields: {first_keys})")


CLEAN_FOLDER_FILES = ("train.jsonl", "train", "dataset_dict.json", "README.md", "report.json")
"""Every entry :func:`clean_file` writes into a folder: ``--overwrite`` replaces a folder holding nothing else."""


def clean_file(
    in_path: str | os.PathLike, out_path: str | os.PathLike, *, overwrite: bool = False, **kwargs: Any
) -> CleaningReport:
    """Clean a jsonl file into ``out_path``: a ``.jsonl`` file, or a folder in ``build-sft``'s layout
    (:func:`countdown_env.sft.write_sft_folder`: ``train.jsonl``, the HF ``DatasetDict`` copy, a card) plus
    ``report.json``. Returns the report (also written to the folder).

    The input is checked first (a file; not the output, nor inside it); an existing non-empty output is refused
    unless ``overwrite``. The output is written beside its target and renamed into place at the end, so an error
    (a binary input, ...) or a kill leaves the old output untouched.
    """
    import json

    from ..helpers.atomic import check_output, output_claim
    from ..helpers.jsonl import iter_jsonl, write_jsonl

    in_path, out_path = Path(in_path), Path(out_path)
    if not in_path.exists():
        raise FileNotFoundError(f"no such input file: {in_path}")
    if not in_path.is_file():
        raise ValueError(f"the input {in_path} is not a file")
    folder = out_path.suffix != ".jsonl"
    with output_claim(out_path):  # from the check to the rename: a second writer is refused, not overwritten
        check_output(out_path, [in_path], overwrite=overwrite, owned=CLEAN_FOLDER_FILES if folder else None)
        report = CleaningReport()
        rows = clean_rows(iter_jsonl(in_path, bad_json="none"), report, **kwargs)  # bad JSON or bytes: a bad row
        if not folder:
            write_jsonl(rows, out_path)
        else:
            from . import write_sft_folder

            kept = list(rows)
            settings = {"input": in_path.name, **{k: v for k, v in kwargs.items() if v is not None}}
            report_text = json.dumps(report.to_dict(), indent=2) + "\n"
            write_sft_folder(kept, out_path, settings, overwrite=overwrite, extra_files={"report.json": report_text})
    return report
