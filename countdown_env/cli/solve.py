"""``countdown solve 25 3 7 --target 82``: one solution (exit 0), or a proof that there is none (exit 1);
``--all`` lists every distinct solution, ``--count`` prints how many there are."""

from __future__ import annotations

import argparse
import contextlib
import signal

from .options import add_rule_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("numbers", type=int, nargs="+", help="the given numbers")
    parser.add_argument("--target", type=int, required=True, help="the number to reach")
    parser.add_argument("--all", action="store_true", help="every distinct solution, one per line (up to 6 numbers)")
    parser.add_argument("--count", action="store_true", help="print the number of distinct solutions (up to 6)")
    parser.add_argument("--limit", type=int, default=None, help="with --all: print at most this many")
    parser.add_argument("--operators", default="+-*/", help="allowed operators (a subset of +-*/)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="give up after this long with a one-line error (0: no limit); 7-8 numbers of many digits can take minutes",
    )
    add_rule_arguments(parser)


class SearchTimeout(RuntimeError):
    """The search ran out of ``--max-seconds`` (one line for the user: an unfinished search proves nothing)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`SearchTimeout` in the main thread after ``seconds`` (``SIGALRM``; no limit where it is missing
    or for ``seconds <= 0``)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise SearchTimeout(
            f"no answer within --max-seconds {seconds:g}: the search did not finish, so this is no proof that there "
            "is no solution (raise --max-seconds, or use fewer or smaller numbers)"
        )

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(args: argparse.Namespace) -> int:
    if not args.max_seconds >= 0:
        raise ValueError(f"--max-seconds must be >= 0 (0: no limit), got {args.max_seconds}")
    with time_limit(args.max_seconds):
        return _solve(args)


def _solve(args: argparse.Namespace) -> int:
    from ..puzzle import Puzzle
    from ..solving.distinct_solutions import count_solutions, solutions
    from ..solving.solver import solve

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
