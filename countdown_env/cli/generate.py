"""``countdown generate``: puzzles of a task as JSON lines (``index``, ``numbers``, ``target``, ``n_numbers``,
``solution``), the same on any machine for the same settings and seed.

``index`` is the task's puzzle index (``task.puzzle(index)``, drawn from its own seeded stream): no line is a trivial
puzzle (the target one of the numbers) unless ``--allow-trivial`` or the ``--task`` allows them; an index whose
first draw is trivial names the next non-trivial draw of the same index's stream (no other index changes)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from .options import add_range_arguments, add_rule_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-numbers", type=int, default=None, help="numbers per puzzle (default: the task's, 4)")
    parser.add_argument("--count", type=int, default=5, help="how many puzzles")
    parser.add_argument("--start", type=int, default=0, help="first puzzle index of the task's stream")
    parser.add_argument("--seed", type=int, default=None, help="the task's seed (default: the task's, 0)")
    parser.add_argument(
        "--task",
        metavar="FILE",
        default=None,
        help="a CountdownTask JSON (countdown_task.json, or a folder holding one: a checkpoint, a split's manifest)",
    )
    add_range_arguments(parser, value_range=None, target_range=None)
    add_rule_arguments(parser)
    parser.add_argument(
        "--allow-trivial",
        action="store_true",
        help="also print trivial puzzles (the target is one of the numbers); by default each index redraws them",
    )


def load_task(path: str | None):
    """The task of ``--task``: a task JSON file, a folder with ``countdown_task.json``, or a split folder's (or
    ``manifest.json``'s) recorded task; ``CountdownTask()`` without one."""
    from ..task import TASK_FILE, CountdownTask

    if path is None:
        return CountdownTask()
    target = Path(path)
    if target.is_dir():
        target = target / TASK_FILE if (target / TASK_FILE).is_file() else target / "manifest.json"
    if not target.is_file():
        raise FileNotFoundError(f"--task {path}: no task JSON there")
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{target}: not valid JSON ({exc.msg})") from None
    if isinstance(data, dict) and isinstance(data.get("task"), dict):  # a split manifest
        where = target.parent
        print(
            f"countdown generate: note: --task {path} is a split: printing its task's puzzle stream; the split's "
            f"own rows are {where}/<split>.jsonl (e.g. countdown eval --split {where}/test.jsonl)",
            file=sys.stderr,
        )
        data = data["task"]
    return CountdownTask.from_dict(data)


def run(args: argparse.Namespace) -> int:
    from ..procedural import reference_solution

    if args.count < 0 or args.start < 0:
        raise ValueError("--count and --start must be >= 0")
    task = load_task(args.task)
    changes = {
        "n_numbers": args.n_numbers,
        "seed": args.seed,
        "value_range": tuple(args.value_range) if args.value_range else None,
        "target_range": tuple(args.target_range) if args.target_range else None,
        "use_all_numbers": True if args.use_all_numbers else None,
        "integer_intermediates": True if args.integer_intermediates else None,
        "allow_trivial": True if args.allow_trivial else None,
    }
    task = replace(task, **{k: v for k, v in changes.items() if v is not None})
    for index in range(args.start, args.start + args.count):
        puzzle = task.puzzle(index)
        row = {"index": index, "numbers": list(puzzle.numbers), "target": puzzle.target,
               "n_numbers": puzzle.n_numbers, "solution": reference_solution(task, index) or None}  # fmt: skip
        sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    return 0
