"""Answer-prefix values: prefixes per CPU second on one core, against the verifier judging the same prefixes.

For each puzzle of a committed eval set, ``--answers`` answers in the form models write them (spaced infix): one
solution from the solver and the rest random expressions over random subsets of the numbers (mostly wrong, so most
prefixes lose the target somewhere). Every character prefix of every answer is asked, as ``label-steps
--answer-tokens`` asks every token's prefix (a character is the finest tokenisation; SmolLM2 writes each digit as a
token). Three timings of the same prefixes in one run:

- ``verify``: :func:`countdown_env.verify` on each prefix as a whole answer (the baseline: what judging costs);
- ``per puzzle``: one :class:`AnswerPrefixOracle` per puzzle, its answers' prefixes in order (how labelling uses it);
- ``warm``: the same prefixes asked again (memo look-ups).

Every accepted answer's prefixes must all be solvable, and a full answer the verifier accepts must be solvable (else
the run stops: a bug).

    OMP_NUM_THREADS=1 python benchmarks/bench_answer_prefix.py [--set countdown_n4] [--puzzles 64] [--answers 8]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from countdown_env import Puzzle, solve, verify
from countdown_env.solving.answer_prefix import AnswerPrefixOracle

ROOT = Path(__file__).resolve().parent.parent


def random_expression(numbers: list[int], rng: random.Random) -> str:
    """A random fully written infix expression over a random non-empty subset of ``numbers``."""
    pool = [str(n) for n in rng.sample(numbers, rng.randint(1, len(numbers)))]
    while len(pool) > 1:
        a, b = pool.pop(rng.randrange(len(pool))), pool.pop(rng.randrange(len(pool)))
        op = rng.choice("+-*/")
        pool.append(f"({a} {op} {b})" if rng.random() < 0.5 else f"{a} {op} {b}")
    return pool[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="countdown_n4", help="a committed eval set under datasets/")
    parser.add_argument("--puzzles", type=int, default=64)
    parser.add_argument("--answers", type=int, default=8, help="answers per puzzle (one solution, the rest random)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = []  # (puzzle, answers)
    for line in (ROOT / "datasets" / f"{args.set}.jsonl").read_text().splitlines()[: args.puzzles]:
        row = json.loads(line)
        puzzle = Puzzle(row["numbers"], row["target"])
        solution = solve(puzzle)
        answers = [str(solution)] if solution is not None else []
        answers += [random_expression(list(puzzle.numbers), rng) for _ in range(args.answers - len(answers))]
        work.append((puzzle, answers))
    prefixes = [(p, a[:i]) for p, answers in work for a in answers for i in range(1, len(a) + 1)]

    start = time.process_time()
    verdicts = [verify(text, puzzle).correct for puzzle, text in prefixes]
    verify_s = time.process_time() - start
    oracles = {puzzle: AnswerPrefixOracle(puzzle) for puzzle, _ in work}
    start = time.process_time()
    values = [oracles[puzzle].solvable(text) for puzzle, text in prefixes]
    cold_s = time.process_time() - start
    start = time.process_time()
    again = [oracles[puzzle].solvable(text) for puzzle, text in prefixes]
    warm_s = time.process_time() - start
    if again != values or any(ok and not value for ok, value in zip(verdicts, values, strict=True)):
        raise SystemExit("an accepted answer was valued unsolvable, or a second asking differs: a bug")
    for puzzle, answers in work:
        for answer in answers:
            if verify(answer, puzzle).correct and not all(
                oracles[puzzle].solvable(answer[:i]) for i in range(len(answer))
            ):
                raise SystemExit(f"a prefix of the accepted {answer!r} was valued unsolvable: a bug")
    n = len(prefixes)
    print(
        f"{args.set}: {len(work)} puzzles, {sum(len(a) for _, a in work)} answers, {n} prefixes "
        f"({sum(values)} solvable), one core, CPU time"
    )
    print(f"{'method':<14}{'prefixes/s':>12}{'x verify':>10}")
    figures = {}
    for name, seconds in (("verify", verify_s), ("per puzzle", cold_s), ("warm", warm_s)):
        rate = n / max(seconds, 1e-9)
        figures[name] = {"prefixes_per_second": round(rate), "seconds": round(seconds, 3)}
        print(f"{name:<14}{rate:>12.0f}{verify_s / max(seconds, 1e-9):>10.3f}")
    if args.out:
        record = {"set": args.set, "puzzles": len(work), "prefixes": n, "solvable": sum(values), "figures": figures}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
