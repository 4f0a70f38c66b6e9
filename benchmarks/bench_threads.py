"""Wall time of ``countdown demo-train`` (what ``make demo`` runs) with the project's thread rule against the
behaviour before it, on a quiet machine and beside CPU burners.

Two settings, each a fresh ``countdown demo-train`` process with ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``OMP_WAIT_POLICY`` removed from its environment:

- ``torch``: ``--threads torch``, the behaviour before ``countdown_env.threads`` (torch's default: every core,
  OpenMP threads spinning while they wait);
- ``project``: the default rule (the usable cores divided by the local processes, waiting threads sleep).

Conditions: ``quiet`` (nothing else started by this script; the machine's own load is printed beside every figure)
and ``loaded`` (``--burners`` processes running ``while True: pass`` for the whole run). The two settings alternate
within each repeat, so slow drifts of the machine's load hit both. Printed: the wall seconds of every run, the
demo's own stage timings (``eval before RL``, ``grpo RL``, ...), the 1-minute load average before each run, and
the ratio ``torch / project`` per condition (above 1: the project's rule is faster).

    python benchmarks/bench_threads.py                       # the full demo: 2 settings x 2 conditions, ~1 h
    python benchmarks/bench_threads.py --quick               # checks the script end to end (not a timing)
    python benchmarks/bench_threads.py --conditions loaded --burners 2 --json benchmarks/results/threads/loaded.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETTINGS = {"torch": ["--threads", "torch"], "project": []}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY")


def countdown_command() -> list[str]:
    """``countdown`` of this interpreter's environment (``python -m countdown_env.cli`` where no script exists)."""
    script = Path(sys.executable).with_name("countdown")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "countdown_env.cli"]


def run_demo(setting: str, demo_args: list[str], work: Path) -> dict:
    """One ``countdown demo-train`` in a fresh process; its wall seconds, stage timings and the load before it."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    out = work / f"demo-{setting}-{time.monotonic_ns()}"
    cmd = [*countdown_command(), "demo-train", "--out", str(out), "--no-progress", *demo_args, *SETTINGS[setting]]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stages = json.loads(proc.stdout.strip().splitlines()[-1])  # the command's last line: its stage timings
    return {"setting": setting, "wall_s": round(wall, 1), "load_before": round(load, 2), "stages_s": stages}


def start_burners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(burners: list[subprocess.Popen]) -> None:
    for burner in burners:
        burner.kill()
    for burner in burners:
        burner.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="demo-train --quick (checks the script, not a timing)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each setting per condition")
    parser.add_argument("--conditions", nargs="+", choices=("quiet", "loaded"), default=["quiet", "loaded"])
    parser.add_argument("--burners", type=int, default=1, help="busy-loop processes beside the loaded runs")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args, demo_args = parser.parse_known_args()  # anything else goes to demo-train (e.g. --rl-steps 100)
    if args.quick:
        demo_args = ["--quick", *demo_args]
    if args.repeats < 1 or args.burners < 0:
        parser.error("--repeats must be >= 1 and --burners >= 0")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"countdown demo-train {' '.join(demo_args)}; {cores} usable cores; python {sys.version.split()[0]}")
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as tmp:
        for condition in args.conditions:
            burners = start_burners(args.burners) if condition == "loaded" else []
            try:
                for repeat in range(args.repeats):
                    order = list(SETTINGS) if repeat % 2 == 0 else list(reversed(SETTINGS))
                    for setting in order:
                        run = {"condition": condition, **run_demo(setting, demo_args, Path(tmp))}
                        runs.append(run)
                        stages = ", ".join(f"{k} {v}" for k, v in run["stages_s"].items())
                        print(f"{condition:6} {setting:7} wall {run['wall_s']:7.1f} s  load before "
                              f"{run['load_before']:5.2f}  stages: {stages}", flush=True)  # fmt: skip
            finally:
                stop(burners)
    print()
    for condition in args.conditions:
        walls = {s: [r["wall_s"] for r in runs if r["condition"] == condition and r["setting"] == s] for s in SETTINGS}
        mean = {s: sum(v) / len(v) for s, v in walls.items()}
        burner_note = f" beside {args.burners} burner(s)" if condition == "loaded" else ""
        print(f"{condition}{burner_note}: torch {mean['torch']:.1f} s, project {mean['project']:.1f} s, "
              f"torch / project = {mean['torch'] / mean['project']:.2f}x")  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        record = {"demo_args": demo_args, "cores": cores, "burners": args.burners, "runs": runs}
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
