"""Verifications per second on one core, on a realistic mix of model answers.

The mix (fixed seed) imitates what a policy emits during RL on this project's puzzles (mostly 3-4 numbers, as
in the shaping post's countdown_tasks_3to4 data and the tiny model's 3-number curriculum; 5-6 numbers 10 % each):
correct answers, wrong values, subsets of the numbers, reused and invented numbers, stated results
(``= 154``), Unicode/LaTeX operators, parse errors and forbidden tokens. Every answer is built from the
puzzle's own numbers by random expression trees (no solver needed); in 90 % of them "/" is only drawn where it
divides exactly, the rest may have fractional intermediates. ``verify`` caches no parse results (only the
Fraction objects of small integers), so the figure is the cost of fresh verifications.

Figures printed: verifications/s for ``verify`` (answer text) and ``verify_completion`` (full completion with
tags), per category, and the ratio against a baseline measured in the same run: the straightforward tree
path (``parse_expression`` -> ``evaluate`` -> ``leaves`` -> ``Counter``) that ``verify`` avoids.
A calibration line (``sum(range(100))``) shows how loaded the core was.

    python benchmarks/bench_verifier.py [--n 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from countdown_env.expressions.answers import normalize_expression
from countdown_env.expressions.expression import (
    BinOp,
    ExpressionError,
    Num,
    evaluate,
    leaves,
    parse_expression,
    to_infix,
)
from countdown_env.expressions.verifier import verify, verify_completion
from countdown_env.puzzle import Puzzle


def random_tree(rng: random.Random, numbers: list[int], exact_division: bool):
    """A random binary tree over ``numbers`` in order. With ``exact_division`` an operator is redrawn while it
    would divide without an integer result (policies mostly write integer steps, as in the shaping post's data)."""
    items = [Num(n) for n in numbers]
    while len(items) > 1:
        i = rng.randrange(len(items) - 1)
        op = rng.choice("+-*/")
        if exact_division and op == "/":
            a, b = exact_value(items[i]), exact_value(items[i + 1])
            if a is None or not b or (a / b).denominator != 1:
                op = rng.choice("+-*")
        items[i : i + 2] = [BinOp(op, items[i], items[i + 1])]
    return items[0]


def exact_value(tree):
    try:
        return evaluate(tree)
    except ExpressionError:
        return None


def make_case(rng: random.Random) -> tuple[str, Puzzle, str]:
    """One (answer, puzzle, category)."""
    n = rng.choices([3, 4, 5, 6], weights=[40, 40, 10, 10])[0]
    numbers = [rng.randint(1, 100) for _ in range(n)]
    used = rng.sample(numbers, rng.randint(2, n))
    tree = random_tree(rng, used, exact_division=rng.random() < 0.9)
    value = exact_value(tree)
    target = int(value) if value is not None and value.denominator == 1 and 1 <= value <= 10**6 else 100
    text = to_infix(tree)
    kind = rng.choices(
        ["correct", "wrong", "stated", "unicode", "reused", "unknown", "parse", "forbidden"],
        weights=[25, 30, 10, 5, 10, 10, 5, 5],
    )[0]
    if kind == "wrong":
        target = target + rng.randint(1, 50)
    elif kind == "stated":
        text = f"{text} = {target}"
    elif kind == "unicode":
        text = "$" + text.replace("*", "\\times").replace("-", "−") + "$"
    elif kind == "reused":
        text = f"{text} + {used[0]}"
    elif kind == "unknown":
        text = f"{text} * {rng.randint(101, 999)}"
    elif kind == "parse":
        text = text + rng.choice([" +", ")", " 5", "(("])
    elif kind == "forbidden":
        text = text + rng.choice([" ** 2", " % 3", ".5", " = 3 = 3", " ^ 2"])
    return text, Puzzle(numbers, target), kind


def baseline_verify(answer: str, puzzle: Puzzle) -> bool:
    """The obvious implementation on the same parser: build the tree, evaluate it, count with Counters."""
    try:
        tree = parse_expression(normalize_expression(answer))
        used = Counter(leaves(tree))
        given = Counter(puzzle.numbers)
        if any(k > given[n] for n, k in used.items()):
            return False
        return evaluate(tree) == puzzle.target
    except ExpressionError:
        return False


def rate(fn, cases, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` calls per second of ``fn(answer, puzzle)`` over ``cases``: (CPU time, wall time).

    CPU time (``time.process_time``) counts only the time this process ran, so it stays meaningful when the
    core is shared with other jobs; the wall-clock figure is printed beside it.
    """
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        for answer, puzzle in cases:
            fn(answer, puzzle)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return len(cases) / best_cpu, len(cases) / best_wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    triples = [make_case(rng) for _ in range(args.n)]
    cases = [(a, p) for a, p, _ in triples]
    completions = [(f"<reasoning>\nsteps\n</reasoning>\n<solution>{a}</solution>", p) for a, p in cases]

    cpu = time.process_time()
    for _ in range(100_000):
        sum(range(100))
    calibration = (time.process_time() - cpu) / 100_000 * 1e6

    reasons = Counter(verify(a, p).reason for a, p in cases)
    fast, fast_wall = rate(verify, cases, args.repeats)
    full, full_wall = rate(verify_completion, completions, args.repeats)
    base, base_wall = rate(baseline_verify, cases, args.repeats)

    print(f"calibration: sum(range(100)) takes {calibration:.2f} us of CPU (~0.7 us on an idle modern core)")
    print(f"mix of {len(cases)} answers; reasons: " + ", ".join(f"{r}={k}" for r, k in reasons.most_common()))
    print("rates per second of CPU time on one core (wall-clock rate in brackets)")
    print(f"verify             : {fast:>10,.0f}/s  ({1e6 / fast:.2f} us each)  [{fast_wall:,.0f}/s wall]")
    print(f"verify_completion  : {full:>10,.0f}/s  ({1e6 / full:.2f} us each)  [{full_wall:,.0f}/s wall]")
    print(f"baseline (tree)    : {base:>10,.0f}/s  -> verify is {fast / base:.2f}x baseline  [{base_wall:,.0f}/s wall]")
    by_kind: dict[str, list] = {}
    for answer, puzzle, kind in triples:
        by_kind.setdefault(kind, []).append((answer, puzzle))
    for kind, group in sorted(by_kind.items()):
        print(f"  {kind:<10} {rate(verify, group, args.repeats)[0]:>10,.0f}/s")
    print(f"target >= 100,000/s on one core: {'met' if fast >= 100_000 else 'NOT met'} ({fast / 1e5:.2f}x)")


if __name__ == "__main__":
    main()
