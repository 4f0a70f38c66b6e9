"""Wall time of ``countdown demo-train`` (what ``make demo`` runs) with the project's thread rule against the
behaviour before it, on a quiet machine and beside CPU burners.

Two settings, each a fresh ``countdown demo-train`` process with ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and
``OMP_WAIT_POLICY`` removed from its environment:

- ``torch``: ``--threads torch``, the behaviour before ``countdown_env.helpers.threads`` (torch's default: every core,
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

``--generation`` measures the mechanism instead, in seconds: tokens/s of HF ``generate`` with the shipped warm
start (32 rows x 96 new tokens), each setting in a fresh process, side by side: 1 thread, every core with OpenMP's
default (spinning) waits, every core with sleeping waits (``OMP_WAIT_POLICY=PASSIVE``, the project's default),
every core spinning 10 000 or 30 000 iterations before sleeping (``GOMP_SPINCOUNT``), under each of ``--conditions``.
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
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def countdown_command() -> list[str]:
    """``countdown`` of this interpreter's environment (``python -m countdown_env.cli`` where no script exists)."""
    script = Path(sys.executable).with_name("countdown")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "countdown_env.cli"]


def run_demo(setting: str, demo_args: list[str], work: Path, timeout: float | None) -> dict:
    """One ``countdown demo-train`` in a fresh process; its wall seconds, stage timings and the load before it (a run
    stopped at ``timeout`` seconds is recorded as ``stopped``, its wall a lower bound)."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    out = work / f"demo-{setting}-{time.monotonic_ns()}"
    cmd = [*countdown_command(), "demo-train", "--out", str(out), "--no-progress", *demo_args, *SETTINGS[setting]]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        wall = time.perf_counter() - started
        return {"setting": setting, "wall_s": round(wall, 1), "load_before": round(load, 2), "stopped": True,
                "stages_s": {}}  # fmt: skip
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stages = json.loads(proc.stdout.strip().splitlines()[-1])  # the command's last line: its stage timings
    return {"setting": setting, "wall_s": round(wall, 1), "load_before": round(load, 2), "stages_s": stages}


GENERATION_SETTINGS = {  # name -> environment of the measuring process
    "1 thread": {"OMP_NUM_THREADS": "1"},
    "all cores, spinning waits": {},
    "all cores, sleeping waits": {"OMP_WAIT_POLICY": "PASSIVE"},
    "all cores, spin 10k then sleep": {"GOMP_SPINCOUNT": "10000"},
    "all cores, spin 30k then sleep": {"GOMP_SPINCOUNT": "30000"},
}

GENERATE = """
import time, torch
from transformers import AutoModelForCausalLM
from learners.pipeline.models import SHIPPED_DIR
from learners.pipeline.models.tokenizer_io import load_tokenizer
tokenizer = load_tokenizer(SHIPPED_DIR)
model = AutoModelForCausalLM.from_pretrained(SHIPPED_DIR).eval()
messages = [{"role": "user", "content": "Numbers: 3, 7, 11\\nTarget: 21"}]
ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
ids = torch.tensor([list(ids["input_ids"] if hasattr(ids, "keys") else ids)] * 32)
torch.manual_seed(0)
with torch.no_grad():
    model.generate(ids, max_new_tokens=8, do_sample=True)
    start = time.perf_counter()
    model.generate(ids, max_new_tokens=96, min_new_tokens=96, do_sample=True)
print(torch.get_num_threads(), 32 * 96 / (time.perf_counter() - start))
"""


def measure_generation(repeats: int) -> None:
    """Tokens/s of each of :data:`GENERATION_SETTINGS`, alternating, with the load before each run."""
    base = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    for repeat in range(repeats):
        for name, extra in GENERATION_SETTINGS.items():
            load = os.getloadavg()[0]
            proc = subprocess.run([sys.executable, "-c", GENERATE], env={**base, **extra}, capture_output=True,
                                  text=True, check=True)  # fmt: skip
            threads, rate = proc.stdout.split()[-2:]
            print(f"run {repeat + 1} {name:26} {threads} threads {float(rate):8.0f} tokens/s  load before {load:5.2f}",
                  flush=True)  # fmt: skip


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
    parser.add_argument("--timeout", type=float, help="stop a demo run after this many seconds (recorded as stopped)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument("--generation", action="store_true", help="tokens/s of generate per thread setting instead")
    args, demo_args = parser.parse_known_args()  # anything else goes to demo-train (e.g. --rl-steps 100)
    if args.generation:
        for condition in args.conditions:
            burners = start_burners(args.burners) if condition == "loaded" else []
            try:
                print(f"{condition}" + (f" beside {args.burners} burner(s)" if burners else ""), flush=True)
                measure_generation(args.repeats)
            finally:
                stop(burners)
        return
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
                        run = {"condition": condition, **run_demo(setting, demo_args, Path(tmp), args.timeout)}
                        runs.append(run)
                        stages = ", ".join(f"{k} {v}" for k, v in run["stages_s"].items())
                        stopped = " (stopped: a lower bound)" if run.get("stopped") else ""
                        print(f"{condition:6} {setting:7} wall {run['wall_s']:7.1f} s{stopped}  load before "
                              f"{run['load_before']:5.2f}  stages: {stages}", flush=True)  # fmt: skip
            finally:
                stop(burners)
    print()
    for condition in args.conditions:
        cells = {s: [r for r in runs if r["condition"] == condition and r["setting"] == s] for s in SETTINGS}
        mean = {s: sum(r["wall_s"] for r in cell) / len(cell) for s, cell in cells.items()}
        stopped = {s: any(r.get("stopped") for r in cell) for s, cell in cells.items()}
        bound = {s: ">= " if stopped[s] else "" for s in SETTINGS}
        ratio = "unknown" if stopped["project"] else f"{bound['torch']}{mean['torch'] / mean['project']:.2f}x"
        burner_note = f" beside {args.burners} burner(s)" if condition == "loaded" else ""
        print(f"{condition}{burner_note}: torch {bound['torch']}{mean['torch']:.1f} s, project "
              f"{bound['project']}{mean['project']:.1f} s, torch / project = {ratio}")  # fmt: skip
    if args.json:
        from countdown_env.helpers.atomic import write_text
        from learners.pipeline.machine import cpu_record

        record = {"demo_args": demo_args, "cores": cores, "cpu": cpu_record(), "burners": args.burners, "runs": runs}
        write_text(args.json, json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
