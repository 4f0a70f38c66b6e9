"""Command-line options that the puzzle-building subcommands share (``demo``, ``build-splits``, ``build-sft``), and
:func:`claiming_out` for the subcommands that write ``--out``."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Iterable, Sequence


def add_range_arguments(
    parser: argparse.ArgumentParser, value_range: Sequence[int], target_range: Sequence[int]
) -> None:
    """``--value-range LOW HIGH`` (the numbers) and ``--target-range LOW HIGH`` with the given defaults."""
    parser.add_argument(
        "--value-range", type=int, nargs=2, default=value_range, metavar=("LOW", "HIGH"), help="the numbers' range"
    )
    parser.add_argument(
        "--target-range", type=int, nargs=2, default=target_range, metavar=("LOW", "HIGH"), help="the targets' range"
    )


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """``--use-all-numbers`` and ``--integer-intermediates``: the task's two optional rules."""
    parser.add_argument("--use-all-numbers", action="store_true", help="every number exactly once")
    parser.add_argument("--integer-intermediates", action="store_true", help="every intermediate a positive integer")


def add_template_argument(parser: argparse.ArgumentParser, default: str = "default") -> None:
    """``--template NAME`` with the known templates as choices."""
    from ..prompts import TEMPLATES

    parser.add_argument(
        "--template",
        default=default,
        choices=sorted(TEMPLATES),
        help="prompt template: the prompt wording and the answer/reasoning tags",
    )


def add_exclude_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``--exclude JSONL`` (repeatable): files whose puzzles (``numbers``, ``target``) are kept out; see
    :func:`excluded_keys`."""
    parser.add_argument("--exclude", action="append", default=[], metavar="JSONL", help=help)


def excluded_keys(paths: Iterable[str]) -> list[tuple]:
    """The :attr:`~countdown_env.puzzle.Puzzle.key` of every row of the ``--exclude`` jsonl files."""
    from ..helpers.jsonl import read_jsonl
    from ..puzzle import Puzzle

    return [Puzzle.from_dict(row).key for path in paths for row in read_jsonl(path)]


def claiming_out(build: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A subcommand's ``run`` that holds the exclusive claim on ``args.out``
    (:func:`countdown_env.helpers.atomic.output_claim`)
    from its first check to its last rename: a second writer into the same output is refused at once."""

    @functools.wraps(build)
    def run(args: argparse.Namespace) -> int:
        from ..helpers.atomic import output_claim

        with output_claim(args.out):
            return build(args)

    return run
