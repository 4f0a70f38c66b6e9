"""The processes of one run under ``accelerate launch``: who writes, who waits, and decisions made once.

``countdown train``, ``countdown compare`` and ``countdown demo-train`` run as one plain process, or as N copies
started by ``accelerate launch --multi_gpu --num_processes N`` (on one machine or, with ``--num_machines``, on
several). Every copy runs the same command; :class:`RunProcesses` tells them apart:

- the *global* main process (rank 0 over every machine, ``PartialState().is_main_process``) alone claims the output
  folder (:func:`countdown_env.helpers.atomic.output_claim`) and writes run folders, resolved configs, data files,
  reports and plots. Several machines must therefore see the output folder on shared storage (as the loopback test
  does);
- a decision that reads the disk (where a ``--resume`` starts: which checkpoint is complete, whether the run already
  finished) is made by the main process and broadcast (:meth:`RunProcesses.decide`): every rank continues from the
  same verified checkpoint, and an error there (a refused folder, no complete checkpoint) is raised on every rank;
- what the main process writes for the others to read (the tiny model it builds, the data split) is written inside
  such a decision, so it exists before they read it; results computed on the main process alone (an eval, a
  report) reach the others through :meth:`RunProcesses.share`.

The process group is created here, before the trainer, with the settings ``transformers.TrainingArguments`` would
give it (CPU: gloo; ``ddp_timeout``); the trainer's accelerator then reuses it.

A launch that asked for several processes but started one (``accelerate launch --num_processes 2`` without
``--multi_gpu``, or ``--cpu`` without MPI, runs the script once) is named in one warning line
(:func:`launch_problem`): accelerate's single-process launcher still sets ``MASTER_PORT`` for it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 1800
"""The process group's timeout when the config gives no ``trainer.ddp_timeout`` (transformers' default)."""


def launch_problem(env: Mapping[str, str], num_processes: int) -> str | None:
    """Why this launch runs fewer processes than were asked for, or ``None``.

    ``env`` is this process's environment; ``num_processes`` the processes that joined the process group. Two cases:
    torchrun's ``WORLD_SIZE`` differs from the group that formed, or accelerate's launcher ran one process for a
    command that asked for several: it sets ``MASTER_PORT`` (and its ``ACCELERATE_*`` variables) when more than one
    process or machine was asked for, while only torchrun sets ``WORLD_SIZE``."""
    asked = env.get("WORLD_SIZE")
    if asked is not None:
        if asked.isdigit() and int(asked) != num_processes:
            return f"WORLD_SIZE={asked} processes were launched but {num_processes} joined the run"
        return None
    launched_by_accelerate = any(key.startswith("ACCELERATE_") for key in env)
    if launched_by_accelerate and "MASTER_PORT" in env and num_processes == 1:
        return (
            "accelerate launch asked for several processes but started one (its single-process launcher): on a "
            "machine without a GPU add --multi_gpu (torchrun + gloo; --cpu needs MPI for several processes)"
        )
    return None


def sharding_problem(env: Mapping[str, str], fsdp: bool, deepspeed: bool, distributed_type: str) -> str | None:
    """Why a launch that asked for FSDP or DeepSpeed (``accelerate launch`` sets ``ACCELERATE_USE_FSDP`` /
    ``ACCELERATE_USE_DEEPSPEED``) trains without it (``fsdp``/``deepspeed``: what the trainer runs), or ``None``.
    accelerate 1.15 turns FSDP on only for accelerator devices: CPU processes train plain DDP (DeepSpeed runs on
    CPU, with its CPU accelerator)."""
    asked = {"FSDP": ("ACCELERATE_USE_FSDP", fsdp), "DeepSpeed": ("ACCELERATE_USE_DEEPSPEED", deepspeed)}
    for name, (variable, active) in asked.items():
        if env.get(variable, "").lower() == "true" and not active:
            problem = f"the launch asked for {name} but the trainer runs {distributed_type} (every process holds "
            problem += "the whole model)"
            if name == "FSDP":
                problem += ": accelerate turns FSDP on for GPUs and other accelerators, not for CPU processes"
            return problem
    return None


class RunProcesses:
    """This process's place among the processes of one launch (one plain process: the main one, alone)."""

    def __init__(self, num_processes: int = 1, process_index: int = 0):
        self.num_processes = num_processes
        self.process_index = process_index

    @property
    def is_main(self) -> bool:
        """The global main process (rank 0 over every machine): the one that writes."""
        return self.process_index == 0

    @property
    def several(self) -> bool:
        return self.num_processes > 1

    def decide(self, decision: Callable[[], T]) -> T:
        """``decision()`` computed on the main process only and broadcast to every process; an exception it raises
        is raised on every process (so no rank waits for a peer that already failed)."""
        if not self.several:
            return decision()
        import torch.distributed as dist

        outcome: list[Any] = [None, None]
        if self.is_main:
            try:
                outcome = [decision(), None]
            except Exception as exc:  # noqa: BLE001 - re-raised below, on every process
                outcome = [None, exc]
        dist.broadcast_object_list(outcome, src=0)
        value, error = outcome
        if error is not None:
            raise error
        return value

    def share(self, value: T) -> T:
        """The main process's ``value``, on every process (the others' ``value`` is ignored)."""
        return self.decide(lambda: value)

    @contextlib.contextmanager
    def claim(self, out: str | Path) -> Iterator[None]:
        """:func:`countdown_env.helpers.atomic.output_claim` on ``out`` held by the main process for the block; the
        other processes write nothing there and claim nothing."""
        if not self.is_main:
            yield
            return
        from countdown_env.helpers.atomic import output_claim

        with output_claim(out):
            yield


_CURRENT: RunProcesses | None = None


def run_processes(ddp_timeout: float | None = None) -> RunProcesses:
    """The processes of this launch, with the process group created when several were launched (once per
    process; ``ddp_timeout``: the group's timeout in seconds). A launch that asked for more processes than
    started is named on stderr (:func:`launch_problem`)."""
    global _CURRENT
    if _CURRENT is not None:
        return _CURRENT
    distributed = "WORLD_SIZE" in os.environ or "MASTER_PORT" in os.environ
    current = RunProcesses()
    if distributed:
        from datetime import timedelta

        import torch
        from accelerate import PartialState

        timeout = timedelta(seconds=float(ddp_timeout or DEFAULT_TIMEOUT_S))
        # the CPU settings are forced without CUDA (RunConfig.learner_config): use_cpu -> gloo, as the trainer's
        # (accelerate keeps its state in a class-wide dict that TrainingArguments clears and rebuilds: read it now)
        state = PartialState(cpu=not torch.cuda.is_available(), timeout=timeout)
        current = RunProcesses(int(state.num_processes), int(state.process_index))
    _CURRENT = current
    problem = launch_problem(os.environ, _CURRENT.num_processes)
    if problem is not None:
        print(f"countdown: warning: {problem}", file=sys.stderr, flush=True)
    return _CURRENT
