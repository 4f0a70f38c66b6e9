"""A vLLM engine that dies mid-generation ends ``countdown eval --backend vllm`` in one line (issue 35 item 8): it
sat at 0 % CPU forever (2 of 2 tries). The run is a subprocess with a generous timeout only so that the hang it
guards against cannot hang the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_eval_ends_in_one_line_when_the_engine_core_dies(tiny_model_dir, tmp_path):
    split = tmp_path / "s.jsonl"
    split.write_text('{"numbers": [3, 4, 9], "target": 21}\n{"numbers": [2, 5, 7], "target": 17}\n')
    out = tmp_path / "report.json"
    # the engine core in a child process (what eval builds): vLLM turns that off in this process's environment once
    # a colocated (external_launcher) engine ran here, and the child would inherit it
    env = {**os.environ, "PYTHONPATH": str(REPO), "COUNTDOWN_DEBUG": "", "VLLM_CPU_KVCACHE_SPACE": "1",
           "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}  # fmt: skip
    try:
        result = subprocess.run(
            [sys.executable, str(REPO / "tests" / "engine_death_run.py"), str(tiny_model_dir), str(split), str(out)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("countdown eval hung after its vLLM engine core died")
    assert "exit 2" in result.stdout, (result.stdout[-2000:], result.stderr[-2000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("countdown eval: error: ")]
    assert len(errors) == 1 and "engine core process died during generation" in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not out.exists()
