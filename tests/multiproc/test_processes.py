"""learners.pipeline.runs.processes: decisions made once and broadcast, the claim held by the main process only (two
gloo processes started here, without TRL), and the check of a launch that started fewer processes than it asked for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_launch import free_port

from learners.pipeline.runs.processes import launch_problem, sharding_problem


def _worker(rank: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2", OMP_NUM_THREADS="1")  # fmt: skip
    import torch.distributed as dist

    from countdown_env.helpers.atomic import claim_path
    from learners.pipeline.runs.processes import run_processes

    processes = run_processes(ddp_timeout=120)
    record: dict = {"processes": processes.num_processes, "main": processes.is_main, "calls": []}
    # the main process's value reaches every process; the others never compute it
    record["decided"] = processes.decide(lambda: record["calls"].append(rank) or f"from rank {rank}")
    try:
        processes.decide(lambda: int("not a number"))
    except ValueError as exc:  # raised on the main process, re-raised on every process
        record["error"] = str(exc)
    record["shared"] = processes.share(rank * 10 + 7)
    run_dir = Path(out) / "run"
    with processes.claim(run_dir):
        dist.barrier()  # the main process holds the claim now, whichever process reads it
        record["claim_holder"] = int(claim_path(run_dir).read_text())
        record["pid"] = os.getpid()
        dist.barrier()
    Path(out, f"rank-{rank}.json").write_text(json.dumps(record))
    os._exit(0)  # no gloo teardown at exit (tests/multiproc/probe_worker.exit_at_once)


HANG_BOUND_S = 1800
"""Seconds the test waits for its workers before killing them (a hang guard, not a timing)."""


@pytest.mark.slow
def test_decisions_are_the_main_process_and_reach_every_process(tmp_path):
    import torch.multiprocessing as mp

    context = mp.start_processes(_worker, args=(free_port(), str(tmp_path)), nprocs=2, join=False, start_method="spawn")
    try:
        # a bound against a hang only (the workers take seconds): a worker still running after it is killed, and the
        # test then fails on its missing record, never on the time it took
        for _ in range(HANG_BOUND_S):
            if context.join(timeout=1):  # True once every process ended
                break
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
    missing = [r for r in (0, 1) if not (tmp_path / f"rank-{r}.json").is_file()]
    assert not missing, f"ranks {missing} wrote no record (hung or failed)"
    main, other = (json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in (0, 1))
    assert main["processes"] == other["processes"] == 2 and main["main"] and not other["main"]
    assert main["decided"] == other["decided"] == "from rank 0"
    assert main["calls"] == [0] and other["calls"] == []
    assert main["error"] == other["error"] and "not a number" in main["error"]
    assert main["shared"] == other["shared"] == 7
    assert main["claim_holder"] == other["claim_holder"] == main["pid"] != other["pid"]


@pytest.mark.parametrize(
    ("env", "processes", "problem"),
    [
        ({}, 1, None),  # a plain process
        ({"WORLD_SIZE": "2", "MASTER_PORT": "1", "ACCELERATE_MIXED_PRECISION": "no"}, 2, None),  # torchrun, all there
        ({"WORLD_SIZE": "2"}, 1, "WORLD_SIZE=2"),
        ({"MASTER_PORT": "29500", "ACCELERATE_USE_CPU": "False"}, 1, "--multi_gpu"),  # accelerate's 1-process launcher
        ({"MASTER_PORT": "29500"}, 1, None),  # not started by accelerate: nothing to say
    ],
)
def test_launch_problem(env, processes, problem):
    found = launch_problem(env, processes)
    assert (found is None) if problem is None else (problem in found)


def test_a_multi_process_cpu_checkpoint_loads_at_cpu_rank():
    """transformers resumes a multi-process run's optimizer with ``map_location=args.device``: ``cpu:RANK`` on CPU."""
    import io

    import torch

    from learners.core.checkpoints import load_indexed_cpu_locations

    saved = io.BytesIO()
    torch.save({"exp_avg": torch.arange(3.0)}, saved)
    load_indexed_cpu_locations()
    saved.seek(0)
    loaded = torch.load(saved, map_location=torch.device("cpu", 1), weights_only=True)
    assert torch.equal(loaded["exp_avg"], torch.arange(3.0)) and loaded["exp_avg"].device.type == "cpu"


@pytest.mark.parametrize(
    ("env", "fsdp", "deepspeed", "problem"),
    [
        ({}, False, False, None),
        ({"ACCELERATE_USE_FSDP": "true"}, True, False, None),
        ({"ACCELERATE_USE_FSDP": "true"}, False, False, "asked for FSDP"),  # accelerate 1.15 on CPU: plain DDP
        ({"ACCELERATE_USE_DEEPSPEED": "true"}, False, True, None),
        ({"ACCELERATE_USE_DEEPSPEED": "True"}, False, False, "asked for DeepSpeed"),
    ],
)
def test_sharding_problem(env, fsdp, deepspeed, problem):
    found = sharding_problem(env, fsdp, deepspeed, "DistributedType.MULTI_CPU")
    assert (found is None) if problem is None else (problem in found and "MULTI_CPU" in found)


def test_the_shipped_accelerate_configs_load_as_accelerate_reads_them():
    from accelerate.commands.config.config_args import load_config_from_file

    from learners.pipeline.runs.config import CONFIG_DIR

    found = {path.stem: load_config_from_file(str(path)) for path in (CONFIG_DIR / "accelerate").glob("*.yaml")}
    kinds = {name: str(config.distributed_type).rsplit(".", 1)[-1] for name, config in found.items()}
    assert kinds == {"ddp": "MULTI_GPU", "zero2": "DEEPSPEED", "zero3": "DEEPSPEED", "fsdp2": "FSDP"}
    assert [found[name].deepspeed_config["zero_stage"] for name in ("zero2", "zero3")] == [2, 3]
    assert found["fsdp2"].fsdp_config["fsdp_version"] == 2
    assert found["ddp"].mixed_precision == "no" and found["ddp"].num_processes == 2  # the CPU recipe as tested
