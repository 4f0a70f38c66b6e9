"""tests/integration/test_vllm.py's weight-sync run (the tiny model, a parity reward, lr 1e-3, 5 GRPO steps, TRL's
colocated
vLLM engine with the project's sync) in every process of a launch; the main process writes what TRL logged.

Launched by test_vllm_two_processes.py under 2 CPU processes: each process builds an engine of its own
(``vllm_tensor_parallel_size`` 1) and syncs it; TRL gathers the sampling log-prob differences of both processes
before it logs them, so an engine left behind on either process shows.

Usage: python vllm_sync_run.py MODEL_DIR OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from probe_worker import exit_at_once


def main(model_dir: str, out_dir: str) -> None:
    import torch.distributed as dist

    from tests.integration.test_vllm import _sync_run

    means, maxes = _sync_run(Path(model_dir), Path(out_dir), "full")
    if dist.get_rank() == 0:
        record = {"means": means, "maxes": maxes, "processes": dist.get_world_size()}
        Path(out_dir, "sync.json").write_text(json.dumps(record))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main(sys.argv[1], sys.argv[2])
    exit_at_once()  # no teardown race at exit (probe_worker.exit_at_once)
