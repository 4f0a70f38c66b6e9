"""TRL's trainer loads without vLLM, and gets vLLM's names when a trainer generates with it
(learners/core/trl_vllm_import.py). Each check runs in a fresh interpreter: the test process may hold vLLM already."""

import importlib.util
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed"),
]

FRESH_PROCESS = r"""
import sys

import learners.core.trainer  # imports trl's GRPOTrainer
import trl.generation.vllm_generation as generation
from trl.trainer import grpo_trainer

assert "vllm" not in sys.modules, sorted(name for name in sys.modules if name.startswith("vllm"))
assert not hasattr(generation, "LLM")
import importlib.util
assert importlib.util.find_spec("vllm") is not None  # the absence mark is gone after the import

from learners.core.trl_vllm_import import load_trl_vllm

assert load_trl_vllm()
import vllm
from packaging.version import Version

trainer_globals = grpo_trainer.VLLMGeneration.__init__.__globals__  # the class TRL's trainer builds
assert trainer_globals["LLM"] is vllm.LLM and trainer_globals["SamplingParams"] is vllm.SamplingParams
client_globals = trainer_globals["VLLMClient"].__init__.__globals__
stateful = Version(Version(vllm.__version__).base_version) >= Version("0.28.0")
assert client_globals["_HAS_STATEFUL_TRAINER_ENGINE"] is stateful
assert "get_ip" in client_globals

llm = generation.LLM
assert load_trl_vllm() and generation.LLM is llm  # a second call reloads nothing
print("ok")
"""


def test_trainer_imports_without_vllm_and_loads_it_for_a_vllm_trainer():
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def test_an_import_that_fails_inside_the_window_leaves_vllm_importable():
    code = (
        "import importlib.util, sys\n"
        "from learners.core.trl_vllm_import import trl_without_vllm\n"
        "try:\n"
        "    with trl_without_vllm():\n"
        "        import vllm\n"
        "except ModuleNotFoundError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('vllm imported inside the window')\n"
        "assert 'vllm' not in sys.modules and importlib.util.find_spec('vllm') is not None\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
