"""``countdown demo``: generate puzzles, solve them exactly, verify the answers (and deliberately wrong ones).

Prints a compact summary: the share of puzzles with a solution (the rest are proven unsolvable), solve times,
how many solver answers the verifier accepts, how many wrong answers it refuses, verifier speed and the
histogram of verifier reasons. Exit status 0 when every solver answer verifies and every wrong answer is
refused, 1 otherwise.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import replace

from ..expressions.verifier import verify
from ..puzzle import Puzzle
from ..solving.solver import solve
from ..task import CountdownTask
from .options import add_range_arguments, add_rule_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--count", type=int, default=200, help="number of puzzles")
    parser.add_argument("--n-numbers", type=int, default=4, help="numbers per puzzle")
    add_range_arguments(parser, value_range=(1, 100), target_range=(10, 1000))
    parser.add_argument("--operators", default="+-*/", help="allowed operators")
    add_rule_arguments(parser)
    parser.add_argument(
        "--solvable-share",
        type=float,
        default=0.5,
        help="share of puzzles generated solvable (with a witness); the rest get uniform targets, and the solver "
        "proves most of those unsolvable",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")


def wrong_answers(puzzle: Puzzle, solution: str, use_all_numbers: bool = False) -> list[tuple[str, str]]:
    """(answer, the reason the verifier should give) for a few answers that must be refused."""
    numbers = puzzle.numbers
    first = numbers[0]
    unknown = max(numbers) + 1
    while unknown in numbers:
        unknown += 1
    out = [
        ("", "empty"),
        (f"{solution} )", "parse_error"),
        (" + ".join([str(first)] * (numbers.count(first) + 1)), "reused_number"),
        (f"{solution} + {unknown}", "unknown_number"),
        (f"{first} ** 2", "forbidden_token"),
    ]
    if use_all_numbers and len(numbers) > 1:
        out.append((str(first), "unused_number"))
    elif first != puzzle.target:
        out.append((str(first), "wrong_value"))
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def run(args: argparse.Namespace) -> int:
    if args.count < 1:
        raise ValueError("--count must be >= 1")
    options = {"use_all_numbers": args.use_all_numbers, "integer_intermediates": args.integer_intermediates}
    if not 0.0 <= args.solvable_share <= 1.0:
        raise ValueError("--solvable-share must be in [0, 1]")
    n_solvable = round(args.count * args.solvable_share)
    task = CountdownTask(
        n_numbers=args.n_numbers,
        value_range=tuple(args.value_range),
        target_range=tuple(args.target_range),
        operators=args.operators,
        seed=args.seed,
        **options,
    )
    free = replace(task, require_solvable=False, seed=args.seed + 1)
    puzzles = task.generator().generate(n_solvable) + free.generator().generate(args.count - n_solvable)
    from ..helpers.progress import progress_bar

    # one rule for bars (countdown_env.helpers.progress): shown when stderr is a terminal, never into a redirected file
    progress = progress_bar(len(puzzles), "solving", False if args.no_progress else None, unit="puzzle", leave=False)
    solve_times, answers = [], []
    for puzzle in puzzles:
        start = time.perf_counter()
        answers.append(solve(puzzle, operators=args.operators, **options))
        solve_times.append(time.perf_counter() - start)
        progress.update(1)
    progress.close()

    reasons: Counter[str] = Counter()
    accepted = refused = expected_reason = wrong_total = 0
    verify_time = 0.0
    solved = [(p, a) for p, a in zip(puzzles, answers, strict=True) if a is not None]
    for puzzle, answer in solved:
        # the solver's answer first (expected "ok"), then the answers that must be refused
        for text, reason in [(answer, "ok"), *wrong_answers(puzzle, answer, args.use_all_numbers)]:
            start = time.perf_counter()
            verdict = verify(text, puzzle, **options)
            verify_time += time.perf_counter() - start
            reasons[verdict.reason] += 1
            if reason == "ok":
                accepted += verdict.correct
            else:
                wrong_total += 1
                refused += not verdict.correct
                expected_reason += verdict.reason == reason
    n_verify = sum(reasons.values())

    times = sorted(solve_times)
    median = times[len(times) // 2]
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    n = len(puzzles)
    print(
        f"countdown demo: {n} puzzles ({n_solvable} generated solvable, {n - n_solvable} with uniform targets), "
        f"{args.n_numbers} numbers in {args.value_range[0]}..{args.value_range[1]}, "
        f"targets {args.target_range[0]}..{args.target_range[1]}, operators {args.operators}, seed {args.seed}"
    )
    print(f"  solvable         {len(solved)}/{n} ({100 * len(solved) / n:.1f} %); proven unsolvable {n - len(solved)}")
    print(f"  solve time       median {_ms(median)}, p90 {_ms(p90)}, max {_ms(times[-1])} (find or prove none)")
    print(f"  solver answers   {accepted}/{len(solved)} verified correct")
    if wrong_total:
        print(f"  wrong answers    {refused}/{wrong_total} refused ({expected_reason} with the expected reason)")
    if n_verify:
        print(f"  verifier         {n_verify} calls, {n_verify / verify_time:,.0f} verifications/s")
    print("  reasons          " + ", ".join(f"{reason} {count}" for reason, count in sorted(reasons.items())))
    ok = accepted == len(solved) and refused == wrong_total
    return 0 if ok else 1
