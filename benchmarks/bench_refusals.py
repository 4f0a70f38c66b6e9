"""How fast bad input is refused: the timing targets that used to be asserted in tests (issue 35 item 13: a timed
test failed CI under load), and the refusal time of each bad value of issue 35, measured here instead.

Two parts, each a table of case, seconds, target and ratio (seconds / target):

- in process (best of ``--repeats``): the generator's probe refusing unreachable settings (target 2 s), the cleaner on
  megabyte rows (50 ms), the verifier and the answer normaliser on adversarial text (2 s for the set: linear scans),
  the expression parser's limits (2 s) and canonical forms of deep and wide expressions (0.5 s);
- command line (one run each, interpreter start-up included): every refusal of a bad value by ``countdown``, with
  its exit status and its one line. Targets: 2 s for a value refused before any work (no TRL import), 10 s for a
  refusal that needs a model file or TRL.

A calibration line (``sum(range(10**6))``) shows how loaded the core was; figures from a loaded machine are not
quiet-machine figures.

    python benchmarks/bench_refusals.py [--repeats 3] [--skip-cli]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the package and tests/ (the expressions of the canonical-form target)
SHIPPED = ROOT / "learners" / "pipeline" / "tiny_warm_start"


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def raises(fn: Callable[[], object], error: type[BaseException]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except error:
            return
        raise AssertionError(f"{fn} did not raise {error.__name__}")

    return run


def in_process_cases() -> list[tuple[str, Callable[[], object], float]]:
    from tests.test_expression import nested_alternating  # the expressions of the test this target came from

    from countdown_env.expressions.answers import normalize_expression
    from countdown_env.expressions.expression import ExpressionError, canonical_form, parse_expression
    from countdown_env.expressions.verifier import verify, verify_completion
    from countdown_env.puzzle import Puzzle
    from countdown_env.sft.cleaning import clean_row
    from countdown_env.solving.generator import UnsatisfiableSettings
    from countdown_env.task import PuzzleGenerator

    def probe(**settings) -> Callable[[], None]:
        return raises(lambda: PuzzleGenerator(seed=0, **settings)[0], UnsatisfiableSettings)

    megabyte = {
        "numbers": [3, 4],
        "target": 7,
        "response": "<think>" + "why " * 215_000 + "<answer>" * 20_000 + "</think>\n<answer>3 + 4</answer>",
    }
    opens = {"numbers": [3, 4], "target": 7, "response": "<answer>" * 130_000}
    puzzle = Puzzle([25, 3, 7, 4], 82)
    adversarial = ["(" * 50_000 + "1" + ")" * 50_000, "$" * 99_999, " " * 99_990 + "=1x", "\\frac{" * 16_000,
                   "\\frac{1}{" * 10_000 + "2" + "}" * 10_000, "`" * 50_000 + "1" + "`" * 49_999, "9" * 99_999,
                   "<solution>" * 9_000]  # fmt: skip

    def verify_all() -> None:
        for text in adversarial:
            verify(text, puzzle)
            verify_completion(text + "</solution>", puzzle)

    def normalize_all() -> None:
        for text in ["$" * 99_999, " " * 99_990 + "=1x", "\\frac{" * 16_000, "`" * 50_000 + "1" + "`" * 49_999]:
            normalize_expression(text)

    def limits() -> None:
        for text in ["(" * 10_000 + "1" + ")" * 10_000, "(" * 10_000, "1" * 1_000_000, "1+" * 500_000 + "1"]:
            try:
                parse_expression(text)
            except ExpressionError:
                pass

    def canonical() -> None:
        for depth in range(8, 101):
            canonical_form(nested_alternating(depth))

    return [
        (
            "probe: uniform targets out of reach, 3 numbers",
            probe(n_numbers=3, value_range=(1, 2), target_range=(9, 9), target_mode="uniform"),
            2.0,
        ),  # fmt: skip
        (
            "probe: uniform targets out of reach, 6 numbers",
            probe(n_numbers=6, value_range=(1, 2), target_range=(67, 67), target_mode="uniform"),
            2.0,
        ),
        ("probe: min_solutions=1e6, 6 numbers", probe(n_numbers=6, min_solutions=1_000_000), 2.5),
        ("clean-sft: 1 MB row", lambda: clean_row(megabyte), 0.05),
        ("clean-sft: 1 MB of unclosed tags", lambda: clean_row(opens), 0.05),
        ("verifier: 8 adversarial 100 kB answers", verify_all, 2.0),
        ("normaliser: 4 adversarial 100 kB answers", normalize_all, 2.0),
        ("parser: depth and length limits", limits, 2.0),
        ("canonical form: depths 8..100", canonical, 0.5),
    ]


def cli_cases(work: Path) -> list[tuple[str, list[str], float]]:
    """``(name, countdown arguments, target seconds)`` of every refusal of a bad value (issue 35)."""
    split = work / "myeval.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n')
    model = work / "finalcopy"
    if not model.exists():
        import shutil

        shutil.copytree(SHIPPED, model)
    sb = work / "sb"
    (sb / "final").mkdir(parents=True, exist_ok=True)
    (sb / "thesis").mkdir(exist_ok=True)
    (sb / "thesis" / "chapter1.tex").write_text("x")
    run = ["train", "--output-dir", str(work / "run")]
    evaluate = ["eval", "--model", str(model), "--split", str(split)]
    cases: list[tuple[str, list[str], float]] = [
        ("eval --out the split", [*evaluate, "--out", str(split)], 2.0),
        ("eval --out a report another eval is writing", [*evaluate, "--out", str(work / "claimed.json")], 2.0),
        ("eval --out the model's weights", [*evaluate, "--out", str(model / "model.safetensors")], 2.0),
        ("eval --limit 0", [*evaluate, "--limit", "0"], 2.0),
        ("eval --examples -1", [*evaluate, "--examples", "-1"], 2.0),
        ("eval --seed -1", [*evaluate, "--seed", "-1"], 2.0),
        ("eval --temperature inf", [*evaluate, "--temperature", "inf"], 2.0),
        ("eval --backend vllm, a 1000 GiB KV cache", [*evaluate, "--backend", "vllm"], 2.0),
        ("train --overwrite a folder with the user's thesis/", ["train", "--output-dir", str(sb), "--overwrite"], 2.0),
        ("train --output-dir /", ["train", "--output-dir", "/"], 2.0),
    ]
    bad_values = ("trainer.learning_rate=.inf", "trainer.learning_rate=1e300", "trainer.beta=.nan",
                  "trainer.weight_decay=.inf", "trainer.report_to=[[1]]", "eval.every=[1]", "eval.limit=x",
                  "tiny.hidden_size=abc", "trainer.per_device_train_batch_size=8.0",
                  "trainer.max_steps=1e100")  # fmt: skip
    for override in bad_values:
        cases.append((f"train --set {override}", [*run, "--set", override], 2.0))
    cases.append(("train num_train_epochs=1e9", [*run, "--set", "trainer.max_steps=-1", "--set",
                                                 "trainer.num_train_epochs=1e9"], 2.0))  # fmt: skip
    bomb = work / "bomb.yaml"
    levels = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    bomb.write_text("model: tiny\nrollouts: [" + ", ".join(levels) + "]\n")
    deep = work / "deep.yaml"
    deep.write_text("model: tiny\ntrainer: {report_to: " + "[" * 5000 + "]" * 5000 + "}\n")
    cases += [
        (
            "train --config a YAML alias bomb (9**9 values)",
            ["train", "--config", str(bomb), "--output-dir", str(work / "run")],
            2.0,
        ),  # fmt: skip
        ("train --config 5000 nested lists", ["train", "--config", str(deep), "--output-dir", str(work / "run")], 2.0),
        (
            "train --resume with another learner",
            ["train", "--learner", "dapo", "--output-dir", str(_finished_run(work)), "--resume"],
            10.0,
        ),  # fmt: skip
        (
            "solve 8 twelve-digit numbers --max-seconds 1",
            [
                "solve",
                *[str(123456789012 + 111111111111 * k) for k in range(8)],
                "--target",
                "999999999999",
                "--max-seconds",
                "1",
            ],
            2.0,
        ),  # fmt: skip
    ]
    return cases


def _finished_run(work: Path) -> Path:
    """A grpo run folder of the cpu-tiny preset (its record and one complete checkpoint; no weights trained)."""
    from learners.core.checkpoints import write_checkpoint_manifest
    from learners.pipeline.runs.config import RESOLVED_CONFIG
    from learners.pipeline.runs.record import run_record
    from learners.pipeline.runs.run_config import RunConfig

    out = work / "grpo-run"
    checkpoint = out / "checkpoint-2"
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "model.safetensors").write_bytes(b"0" * 64)
    write_checkpoint_manifest(checkpoint)
    (out / RESOLVED_CONFIG).write_text(json.dumps(run_record(RunConfig.load("cpu-tiny"))))
    return out


def run_cli(args: list[str], cwd: Path, extra_env: dict | None = None) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "countdown_env.cli", *args], capture_output=True, text=True,
                            env=env, cwd=cwd, timeout=600)  # fmt: skip
    seconds = time.perf_counter() - start
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return seconds, result.returncode, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="in-process repeats (best of)")
    parser.add_argument("--skip-cli", action="store_true", help="only the in-process part")
    parser.add_argument("--json", help="also write the figures as JSON here")
    args = parser.parse_args()
    start = time.perf_counter()
    sum(range(10**6))
    print(f"calibration: sum(range(10**6)) {time.perf_counter() - start:.4f} s; load {os.getloadavg()[0]:.2f}")
    figures: dict[str, list] = {"in_process": [], "cli": []}
    print(f"\n{'in process':<52} {'seconds':>9} {'target':>7} {'ratio':>6}")
    for name, fn, target in in_process_cases():
        seconds = best_of(fn, args.repeats)
        figures["in_process"].append({"case": name, "seconds": seconds, "target": target})
        print(f"{name:<52} {seconds:>9.4f} {target:>7.2f} {seconds / target:>6.2f}")
    if not args.skip_cli:
        print(f"\n{'command line':<52} {'seconds':>9} {'target':>7} {'ratio':>6} exit  line")
        from countdown_env.helpers.atomic import output_claim

        with tempfile.TemporaryDirectory() as tmp, output_claim(Path(tmp) / "claimed.json"):
            work = Path(tmp)
            for name, argv, target in cli_cases(work):
                env = {"VLLM_CPU_KVCACHE_SPACE": "1000"} if "KV cache" in name else {}
                seconds, code, line = run_cli(argv, work, env)
                figures["cli"].append({"case": name, "seconds": seconds, "target": target, "exit": code, "line": line})
                print(f"{name:<52} {seconds:>9.2f} {target:>7.1f} {seconds / target:>6.2f} {code:>4}  {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
