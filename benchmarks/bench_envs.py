"""Speed of the Countdown Gymnasium envs and of batched trajectory scoring.

Prints:
- ``Countdown-v0`` episodes/s (reset + one step), puzzles from a fixed list and from the seeded generator, with
  the bare ``score_completion`` rate measured in the same run as the baseline;
- ``CountdownTokens-v0`` cost per appended token, one id per step vs chunks of 16/64/256 ids, for 1k- and 8k-token
  completions, with a plain numpy slice write into a preallocated buffer as the floor (target: <= 5 us per token
  chunked);
- the end-of-episode cost and ``score_trajectories`` rows/s.

Run: ``python benchmarks/bench_envs.py`` (``--quick`` for a smoke run). Not a test; figures depend on the host.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import countdown_env  # noqa: F401  (registers the envs)
from countdown_env.envs.char_tokenizer import CharTokenizer
from countdown_env.prompts import format_completion
from countdown_env.puzzle import Puzzle
from countdown_env.rewards import score_completion
from countdown_env.trajectory import score_trajectories

PUZZLES = [Puzzle([3, 7, 11], 21), Puzzle([2, 5, 9], 19), Puzzle([4, 6, 8], 40), Puzzle([10, 2, 3], 60)]
ANSWER = format_completion("3 times 7 is 21", "3 * 7")


def best_rate(fn, n: int, repeats: int = 3) -> float:
    """Best of ``repeats`` timings of ``fn()`` (which does ``n`` units of work), in units per second."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def bench_text(episodes: int) -> None:
    def episodes_of(env, n: int = episodes):
        def run():
            for _ in range(n):
                env.reset()
                env.step(ANSWER)

        return run

    fixed = gym.make("Countdown-v0", puzzles=PUZZLES)
    fixed.reset(seed=0)
    generated = gym.make("Countdown-v0", n_numbers=4, seed=0)
    generated.reset(seed=0)

    def scoring():
        for i in range(episodes):
            score_completion(ANSWER, PUZZLES[i % len(PUZZLES)])

    base = best_rate(scoring, episodes)
    rate_fixed = best_rate(episodes_of(fixed), episodes)
    rate_raw = best_rate(episodes_of(fixed.unwrapped), episodes)
    n_gen = max(episodes // 10, 10)  # puzzle generation (with a solvability check) dominates: fewer episodes
    rate_gen = best_rate(episodes_of(generated, n_gen), n_gen, repeats=1)
    print("Countdown-v0 (reset + one step, correct answer)")
    print(f"  baseline: score_completion alone      {base:9.0f} /s")
    print(f"  fixed puzzles, gym.make wrappers      {rate_fixed:9.0f} episodes/s ({rate_fixed / base:.2f} x baseline)")
    print(f"  fixed puzzles, unwrapped              {rate_raw:9.0f} episodes/s ({rate_raw / base:.2f} x baseline)")
    print(f"  PuzzleGenerator(n_numbers=4)          {rate_gen:9.0f} episodes/s (a new puzzle each reset)")


def bench_tokens(n_tokens: int) -> None:
    tok = CharTokenizer()
    budget = n_tokens + 1
    ids = np.random.default_rng(0).integers(len(tok.SPECIALS), len(tok), size=n_tokens)  # no EOS: never ends early

    def floor():
        buf = np.empty(budget, dtype=np.int64)
        for i in range(n_tokens):
            buf[i : i + 1] = ids[i : i + 1]

    def single(env):
        def run():
            env.reset(options={"index": 0})
            for i in ids.tolist():
                env.step(i)

        return run

    def chunked(env, size):
        chunks = [ids[i : i + size] for i in range(0, n_tokens, size)]

        def run():
            env.reset(options={"index": 0})
            for chunk in chunks:
                env.step(chunk)

        return run

    def us(rate):
        return 1e6 / rate

    make = dict(tokenizer=tok, puzzles=PUZZLES, max_new_tokens=budget)
    wrapped = gym.make("CountdownTokens-v0", **make)
    raw = gym.make("CountdownTokens-v0", **make).unwrapped
    view = gym.make("CountdownTokens-v0", copy_observations=False, **make).unwrapped
    print(f"CountdownTokens-v0 cost per appended token ({n_tokens} tokens per episode, scoring excluded)")
    base = best_rate(floor, n_tokens)
    print(f"  floor: numpy slice write per token     {us(base):7.3f} us/token")
    for name, env in (("gym.make wrappers", wrapped), ("unwrapped", raw), ("unwrapped, zero-copy obs", view)):
        rate = best_rate(single(env), n_tokens)
        print(f"  single id per step, {name:24s} {us(rate):7.3f} us/token  ({base / rate:.1f} x floor)")
    for size in (16, 64, 256):
        for name, env in (("gym.make wrappers", wrapped), ("unwrapped", raw)):
            rate = best_rate(chunked(env, size), n_tokens)
            print(f"  chunks of {size:3d},       {name:24s} {us(rate):7.3f} us/token")

    if n_tokens > 1024:
        return
    answer = np.array([*tok.encode(ANSWER), tok.eos_token_id])
    ends = gym.make("CountdownTokens-v0", tokenizer=tok, puzzles=PUZZLES).unwrapped

    def episodes():
        for _ in range(200):
            ends.reset(options={"index": 0})
            ends.step(answer)

    rate = best_rate(episodes, 200)
    print(f"  whole episode, {len(answer)}-token answer as one chunk (incl. scoring) {1e6 / rate:7.1f} us/episode")


def bench_scoring(rows: int) -> None:
    tok = CharTokenizer()
    completion = [*tok.encode(ANSWER), tok.eos_token_id, 0, 0]
    batch = [completion] * rows
    puzzles = [PUZZLES[0]] * rows
    rate = best_rate(lambda: score_trajectories(puzzles, batch, tok, max_new_tokens=256), rows)
    base = best_rate(lambda: [score_completion(ANSWER, PUZZLES[0]) for _ in range(rows)], rows)
    print(f"score_trajectories, batch of {rows}: {rate:8.0f} rows/s  (score_completion alone {base:8.0f} /s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    bench_text(200 if args.quick else 2000)
    for n_tokens in (256,) if args.quick else (1024, 8192):  # observations are copies: O(length) per step
        bench_tokens(n_tokens)
    bench_scoring(64 if args.quick else 512)


if __name__ == "__main__":
    main()
