"""countdown_env.helpers.threads: the thread count of each process (the rule's arithmetic, and that the command
applies it
before torch starts)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from countdown_env.helpers.threads import ThreadPlan, apply_plan, local_processes, parse_threads, plan_threads


@pytest.mark.parametrize(
    ("cores", "local", "expected"),
    [(2, None, 2), (2, "2", 1), (16, "3", 5), (16, "16", 1), (1, "4", 1), (3, "2", 1), (64, "8", 8)],
)
def test_cores_are_shared_by_the_local_processes(cores, local, expected):
    env = {} if local is None else {"LOCAL_WORLD_SIZE": local}
    plan = plan_threads(None, env, cores)
    assert plan.threads == expected
    # never more threads over the machine's processes than cores (unless one core per process is already too many)
    assert plan.threads * local_processes(env) <= max(cores, local_processes(env))


def test_explicit_settings_win_in_order():
    env = {"LOCAL_WORLD_SIZE": "2", "OMP_NUM_THREADS": "3"}
    assert plan_threads(None, env, 8) == ThreadPlan(3, "OMP_NUM_THREADS")
    assert plan_threads(5, env, 8).threads == 5
    assert plan_threads("5", env, 8).threads == 5
    assert plan_threads("torch", env, 8) == ThreadPlan(None, "--threads torch")
    assert plan_threads(None, {"OMP_NUM_THREADS": "", "MPI_LOCALNRANKS": "4"}, 8).threads == 2  # empty: not set


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", ""])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ValueError, match="--threads must be"):
        parse_threads(bad)


def test_the_plan_goes_to_the_environment_without_overriding_what_is_set():
    shared = {"OMP_WAIT_POLICY": "ACTIVE"}
    apply_plan(ThreadPlan(3, "test"), shared, cores=8)  # a share of the cores: vLLM's engine must not take them all
    assert shared["OMP_NUM_THREADS"] == shared["MKL_NUM_THREADS"] == "3"
    assert shared["OMP_WAIT_POLICY"] == "ACTIVE" and shared["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    whole = {"VLLM_CPU_OMP_THREADS_BIND": "0-1"}
    apply_plan(ThreadPlan(2, "test"), whole, cores=2)
    assert whole["OMP_WAIT_POLICY"] == "PASSIVE" and whole["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    alone = {}
    apply_plan(ThreadPlan(2, "test"), alone, cores=2)
    assert "VLLM_CPU_OMP_THREADS_BIND" not in alone  # every core is this process's: vLLM's own binding stays
    untouched = {"X": "1"}
    apply_plan(ThreadPlan(None, "--threads torch"), untouched, cores=2)
    assert untouched == {"X": "1"}


PROBE = textwrap.dedent(
    """
    import sys, types
    from countdown_env import cli
    probe = types.ModuleType("threads_probe")
    probe.USES_TORCH = True
    probe.add_arguments = lambda parser: None
    def run(args):
        assert "torch" not in sys.modules  # the command starts torch after the threads are set
        import torch
        print(torch.get_num_threads())
    probe.run = run
    sys.modules["threads_probe"] = probe
    cli.SUBCOMMANDS["threads-probe"] = ("threads_probe", "probe")
    sys.exit(cli.main(["threads-probe", *sys.argv[1:]]))
    """
)


@pytest.mark.parametrize(("args", "local", "omp", "expected"), [
    ((), "2", None, "share"), (("--threads", "1"), "1", "2", 1), ((), "1", "1", 1),
])  # fmt: skip
def test_the_command_sets_torch_threads_before_torch_starts(args, local, omp, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "LOCAL_WORLD_SIZE")}
    env["LOCAL_WORLD_SIZE"] = local
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if expected == "share":
        expected = max(1, len(os.sched_getaffinity(0)) // int(local))
    assert int(proc.stdout.split()[-1]) == expected
