"""Step oracle speed: states per CPU second on one core, against the plain solver called once per state.

States are those a solver-agnostic random walk visits: from each puzzle of a committed eval set, ``--walks`` seeded
walks that replace two values by a random positive whole combination until one value is left (every state a
positive-integer multiset, so the solver can be asked about it as a puzzle). Four ways to ask "is the target still
reachable?" of the same states, all in one run, with the answers checked equal:

- ``solver``: ``solve(Puzzle(state, target))`` per state (the vectorised exact search, no memory between calls);
- ``oracle cold``: a fresh ``StepOracle`` per state (no memo at all);
- ``oracle per puzzle``: one oracle per puzzle, its states asked in walk order (the memo of the earlier states
  serves the later ones: how step labelling uses it);
- ``oracle warm``: the same states asked again of those oracles (every answer a memo look-up).

    OMP_NUM_THREADS=1 python benchmarks/bench_oracle.py [--set countdown_n4] [--puzzles 64] [--walks 4]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from countdown_env.puzzle import Puzzle
from countdown_env.solving.oracle import StepOracle
from countdown_env.solving.solver import solve

ROOT = Path(__file__).resolve().parent.parent


def walk(numbers: list[int], rng: random.Random) -> list[tuple[int, ...]]:
    """The states of one random walk (first state the numbers themselves), positive whole values only."""
    state = list(numbers)
    states = [tuple(state)]
    while len(state) > 1:
        i, j = rng.sample(range(len(state)), 2)
        a, b = state[i], state[j]
        options = [a + b, a * b] + ([a - b] if a > b else []) + ([a // b] if a % b == 0 else [])
        state = [v for k, v in enumerate(state) if k not in (i, j)] + [rng.choice(options)]
        states.append(tuple(state))
    return states


def timed(fn) -> tuple[float, list[bool]]:
    start = time.process_time()
    answers = fn()
    return time.process_time() - start, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="countdown_n4", help="a committed eval set under datasets/")
    parser.add_argument("--puzzles", type=int, default=64)
    parser.add_argument("--walks", type=int, default=4, help="random walks per puzzle")
    parser.add_argument("--use-all-numbers", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lines = (ROOT / "datasets" / f"{args.set}.jsonl").read_text().splitlines()[: args.puzzles]
    rng = random.Random(args.seed)
    work = []  # (target, states of its walks)
    for line in lines:
        row = json.loads(line)
        states = [s for _ in range(args.walks) for s in walk(row["numbers"], rng)]
        work.append((row["target"], states))
    n_states = sum(len(states) for _, states in work)
    rules = dict(use_all_numbers=args.use_all_numbers)

    solver_s, solver_answers = timed(
        lambda: [solve(Puzzle(s, t), **rules) is not None for t, states in work for s in states]
    )
    cold_s, cold_answers = timed(lambda: [StepOracle(t, **rules).reachable(s) for t, states in work for s in states])
    oracles = [StepOracle(t, **rules) for t, _ in work]
    puzzle_s, puzzle_answers = timed(
        lambda: [o.reachable(s) for o, (_, states) in zip(oracles, work, strict=True) for s in states]
    )
    warm_s, warm_answers = timed(
        lambda: [o.reachable(s) for o, (_, states) in zip(oracles, work, strict=True) for s in states]
    )
    if not solver_answers == cold_answers == puzzle_answers == warm_answers:
        raise SystemExit("the oracle and the solver disagree: a bug")
    print(
        f"{args.set}: {len(work)} puzzles, {n_states} states ({sum(solver_answers)} reachable), "
        f"use_all_numbers={args.use_all_numbers}, one core, CPU time"
    )
    print(f"{'method':<20}{'states/s':>12}{'x solver':>10}")
    for name, seconds in (
        ("solver per state", solver_s), ("oracle cold", cold_s), ("oracle per puzzle", puzzle_s),
        ("oracle warm", warm_s),
    ):  # fmt: skip
        rate = n_states / max(seconds, 1e-9)
        print(f"{name:<20}{rate:>12.0f}{solver_s / max(seconds, 1e-9):>10.2f}")


if __name__ == "__main__":
    main()
