"""How many CPU threads each process computes with: one rule for every entry point (the ``countdown`` command, the
benchmarks).

torch (and the OpenMP/MKL pools under it) takes every core of the machine in every process by default, and OpenMP
threads spin while they wait for work. Two processes on two cores then fight over them, and on a machine that
others load the spinning threads take the CPU from the thread that holds the work: generating with the tiny model
at load ~9 on 2 cores, 2 spinning threads made 73-161 tokens/s where 1 thread made 1 092-1 597 and 2 threads that
sleep while waiting (``OMP_WAIT_POLICY=PASSIVE``) 2 488-2 992 (one run each, side by side, 2026-12-03).
Sleeping waits have a price where nothing else wants the cores, most likely a wake-up per parallel region (the full
``make demo`` on 2 cores, one run each: 604 s spinning against 772 s sleeping, and 957 s against 1 787 s on a machine
whose hypervisor took up to a third of the CPU; beside one burner spinning took >= 3000 s against 1 314 s sleeping).
The rule keeps them: the idle loss was a fifth to nearly half, the loss of spinning beside one burner >= 3x;
``--threads torch`` is the faster choice on a machine that one process has to itself (``benchmarks/bench_threads.py``,
docs/scaling.md).

The rule (:func:`plan_threads`), applied by :func:`configure_threads` before torch creates its thread pools:

1. ``--threads N`` (the ``countdown`` option) wins; ``--threads torch`` leaves everything to torch and OpenMP
   (the behaviour before this module: every core, spinning waits);
2. else an explicit ``OMP_NUM_THREADS`` in the environment wins (``accelerate launch`` sets it in the processes it
   starts: its ``--num_cpu_threads_per_process``, 1 by default for ``--multi_gpu``);
3. else the cores this process may run on (``os.sched_getaffinity``) divided by the processes of the launch on this
   machine (``LOCAL_WORLD_SIZE``, as torchrun and ``accelerate launch`` set it; MPI's local size), at least 1.

The chosen count goes to ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` (child processes inherit it) and to
``torch.set_num_threads`` when torch is already imported. Unless set, ``OMP_WAIT_POLICY`` becomes ``PASSIVE``
(waiting threads sleep), and when the count is below the usable cores ``VLLM_CPU_OMP_THREADS_BIND`` becomes
``nobind``: a vLLM CPU engine of its own (``countdown eval --backend vllm``) runs its worker in a child process that
vLLM's automatic binding would give every core this process may use, in every process; unbound it inherits this
process's count. (TRL's colocated engine runs inside the training process and computes with its threads.) This
module imports no torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass

TORCH_DEFAULT = "torch"
"""``--threads torch``: set nothing (torch's and OpenMP's own defaults)."""

LOCAL_SIZE_VARIABLES = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                        "MV2_COMM_WORLD_LOCAL_SIZE")  # fmt: skip
"""Environment variables that give the number of processes of the launch on this machine (torchrun's first)."""


@dataclass(frozen=True)
class ThreadPlan:
    """The threads of this process: ``threads`` (``None``: torch's own default) and why (``source``)."""

    threads: int | None
    source: str


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def local_processes(env: Mapping[str, str]) -> int:
    """The processes of this launch on this machine (1 for a plain process)."""
    for name in LOCAL_SIZE_VARIABLES:
        value = env.get(name, "")
        if value.isdigit() and int(value) >= 1:
            return int(value)
    return 1


def parse_threads(value: str | int | None) -> int | str | None:
    """A ``--threads`` value: a count >= 1, ``"torch"``, or ``None`` (not given); ValueError otherwise."""
    if value is None or value == TORCH_DEFAULT:
        return value
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--threads must be a number >= 1 or {TORCH_DEFAULT!r}, got {value!r}")
    return int(text)


def plan_threads(requested: int | str | None, env: Mapping[str, str], cores: int) -> ThreadPlan:
    """The module's rule: ``requested`` (``--threads``), else ``OMP_NUM_THREADS`` of ``env``, else ``cores`` divided
    by the local processes of ``env`` (at least 1)."""
    requested = parse_threads(requested)
    if requested == TORCH_DEFAULT:
        return ThreadPlan(None, "--threads torch")
    if requested is not None:
        return ThreadPlan(int(requested), "--threads")
    explicit = env.get("OMP_NUM_THREADS", "").strip()
    if explicit.isdigit() and int(explicit) >= 1:
        return ThreadPlan(int(explicit), "OMP_NUM_THREADS")
    processes = local_processes(env)
    return ThreadPlan(max(1, cores // processes), f"{cores} usable cores / {processes} local processes")


def apply_plan(plan: ThreadPlan, env: MutableMapping[str, str], cores: int) -> None:
    """Write ``plan`` into ``env``: the thread counts, a passive wait policy where unset, and, when the plan takes
    fewer than the ``cores`` this process may use, no vLLM core binding where unset (vLLM's CPU engine process
    would otherwise bind a thread to every core it may use; unbound, it inherits ``OMP_NUM_THREADS``)."""
    if plan.threads is None:
        return
    env["OMP_NUM_THREADS"] = str(plan.threads)
    env["MKL_NUM_THREADS"] = str(plan.threads)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if plan.threads < cores:
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")


def configure_threads(requested: int | str | None = None) -> ThreadPlan:
    """Apply the module's rule to this process: environment variables first (read by torch and OpenMP when they
    start), then ``torch.set_num_threads`` if torch is already imported. Call it before importing torch."""
    cores = usable_cores()
    plan = plan_threads(requested, os.environ, cores)
    apply_plan(plan, os.environ, cores)
    torch = sys.modules.get("torch")
    if plan.threads is not None and torch is not None and hasattr(torch, "set_num_threads"):
        if torch.get_num_threads() != plan.threads:
            torch.set_num_threads(plan.threads)
    return plan
