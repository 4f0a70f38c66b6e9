"""Start ``countdown`` commands under ``accelerate launch`` (2 CPU processes: torchrun + gloo), bounded in time.

Every launch gets a free rendezvous port, runs in a process group of its own and has a deadline: a launch that
hangs (a rank waiting for a peer that died) is killed with its whole group and the test fails with its output
instead of blocking the suite.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 600
"""The longest any launch of these tests may take (a 2-step run takes ~10-60 s on 2 busy cores)."""

GREEDY = "trainer.generation_kwargs={do_sample: false}"
"""Greedy decoding: completions depend on the weights and prompts only, so a 2-process run and a 1-process run
generate the same batches and their metrics must agree. Every group is then homogeneous (zero advantage), so the
weights stay those of the warm start and later steps stay comparable too."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


ACCELERATE_CONFIGS = ROOT / "learners" / "pipeline" / "configs" / "accelerate"


def with_config(name: str, port: int) -> list[str]:
    """``accelerate launch --config_file`` of a shipped config (``ddp``, ``zero3``, ...) of ``countdown_env.cli``."""
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ACCELERATE_CONFIGS / f"{name}.yaml"),
    ]
    return cmd + ["--main_process_port", str(port), "--module", "countdown_env.cli"]


def accelerate(num_processes: int, port: int, *, machines: int = 1, machine_rank: int = 0) -> list[str]:
    """``accelerate launch`` of ``python -m countdown_env.cli`` over ``num_processes`` CPU processes in all."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(num_processes)]
    cmd += ["--num_machines", str(machines), "--mixed_precision", "no", "--dynamo_backend", "no"]
    if machines > 1:
        cmd += ["--machine_rank", str(machine_rank), "--main_process_ip", "127.0.0.1"]
    return cmd + ["--main_process_port", str(port), "--module", "countdown_env.cli"]


def start(cmd: list[str]) -> subprocess.Popen:
    """``cmd`` from the repository root in a new process group (one thread per process)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and every process under it: the launcher, torchrun and every rank (torchrun starts each rank
    in a session of its own, so the launcher's process group does not hold them)."""
    import psutil  # accelerate's dependency

    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        try:
            member.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def finish(proc: subprocess.Popen, deadline: float | None = None) -> tuple[int, str, str]:
    """Wait for ``proc`` until ``deadline`` (``time.monotonic()``; default now + :data:`DEADLINE_S`); on timeout kill
    its group and fail. Returns (exit status, stdout, stderr)."""
    remaining = (deadline or time.monotonic() + DEADLINE_S) - time.monotonic()
    try:
        out, err = proc.communicate(timeout=max(remaining, 1))
    except subprocess.TimeoutExpired:
        kill(proc)
        out, err = proc.communicate()
        raise AssertionError(f"launch still running after its deadline; killed. stderr:\n{err[-4000:]}") from None
    return proc.returncode, out, err


def run(cmd: list[str]) -> tuple[str, str]:
    """Run ``cmd`` to the end; assert it succeeded; (stdout, stderr)."""
    code, out, err = finish(start(cmd))
    assert code == 0, f"exit {code}:\n{err[-4000:]}"
    return out, err


def wait_for(path: Path, proc: subprocess.Popen, deadline_s: float = DEADLINE_S) -> None:
    """Poll until ``path`` exists; fail (killing ``proc``'s group) if ``proc`` ends first or time runs out."""
    deadline = time.monotonic() + deadline_s
    while not path.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"launch ended (exit {proc.returncode}) before {path} appeared:\n{err[-4000:]}")
        if time.monotonic() > deadline:
            kill(proc)
            proc.communicate()
            raise AssertionError(f"{path} did not appear within {deadline_s} s; launch killed")
        time.sleep(0.05)
