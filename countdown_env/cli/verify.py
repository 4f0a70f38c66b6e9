"""``countdown verify "25*3+7" --numbers 25 3 7 --target 82``: the verifier's verdict and reason; exit status 0 when
the answer is correct, 1 when it is not. A text holding answer tags (``<solution>…</solution>``) is judged by its
last answer block."""

from __future__ import annotations

import argparse

from .options import add_rule_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("answer", help="an expression, or a completion with answer tags (see --tag)")
    parser.add_argument("--numbers", type=int, nargs="+", required=True, help="the given numbers")
    parser.add_argument("--target", type=int, required=True, help="the number to reach")
    parser.add_argument("--tag", default="solution", help="answer tag looked for when the text holds tags")
    add_rule_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..expressions.verifier import verify, verify_completion
    from ..puzzle import Puzzle

    puzzle = Puzzle(args.numbers, args.target)
    options = dict(use_all_numbers=args.use_all_numbers, integer_intermediates=args.integer_intermediates)
    if f"<{args.tag}>" in args.answer:
        verdict = verify_completion(args.answer, puzzle, tag=args.tag, **options)
    else:
        verdict = verify(args.answer, puzzle, **options)
    value = "" if verdict.value is None else f", value {verdict.value}"
    message = f" ({verdict.message})" if verdict.message and not verdict.correct else ""
    print(f"{'correct' if verdict.correct else 'wrong'}: {verdict.reason}{value}{message}")
    return 0 if verdict.correct else 1
