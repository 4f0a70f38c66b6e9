"""``countdown solve 25 3 7 --target 82``: one solution (exit 0), or a proof that there is none (exit 1);
``--all`` lists every distinct solution, ``--count`` prints how many there are."""

from __future__ import annotations

import argparse

from .options import add_rule_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("numbers", type=int, nargs="+", help="the given numbers")
    parser.add_argument("--target", type=int, required=True, help="the number to reach")
    parser.add_argument("--all", action="store_true", help="every distinct solution, one per line (up to 6 numbers)")
    parser.add_argument("--count", action="store_true", help="print the number of distinct solutions (up to 6)")
    parser.add_argument("--limit", type=int, default=None, help="with --all: print at most this many")
    parser.add_argument("--operators", default="+-*/", help="allowed operators (a subset of +-*/)")
    add_rule_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..puzzle import Puzzle
    from ..solver import count_solutions, solutions, solve

    puzzle = Puzzle(args.numbers, args.target)
    options = dict(
        operators=args.operators, use_all_numbers=args.use_all_numbers, integer_intermediates=args.integer_intermediates
    )
    found = False
    if args.count:
        total = count_solutions(puzzle, **options)
        print(total)
        found = total > 0
    if args.all:
        listed = solutions(puzzle, args.limit, **options)
        for expression in listed:
            print(expression)
        found = found or bool(listed)
    if not (args.count or args.all):
        expression = solve(puzzle, **options)
        print(expression if expression is not None else f"no solution: {puzzle} (exhaustive search)")
        found = expression is not None
    return 0 if found else 1
