"""Every wait on a vLLM engine ends when its core process dies (issue 35 item 8), through one helper,
:func:`learners.sampling.vllm_engine.generate_watched`: the sampler's and the contrastive vLLM scorer's. A fake engine
stands in for vLLM here (its ``generate`` blocks on the client's output queue as vLLM 0.31's does, and its core
process is already dead); ``tests/integration/test_vllm.py`` kills a real core."""

from __future__ import annotations

import queue
import threading
from types import SimpleNamespace

import pytest


class DeadProcess:
    exitcode = -9

    def is_alive(self) -> bool:
        return False


class FakeLLM:
    """What :func:`watch_engine` reads of a ``vllm.LLM`` (the core client's output queue and its core processes),
    and a ``generate`` that waits on that queue like vLLM's client: forever, unless something is put there."""

    def __init__(self) -> None:
        self.outputs: queue.Queue = queue.Queue()
        manager = SimpleNamespace(processes=[DeadProcess()])
        core = SimpleNamespace(outputs_queue=self.outputs, resources=SimpleNamespace(engine_manager=manager))
        cache = SimpleNamespace(block_size=32)
        self.llm_engine = SimpleNamespace(engine_core=core, vllm_config=SimpleNamespace(cache_config=cache))

    def generate(self, *args, **kwargs):
        item = self.outputs.get()
        if isinstance(item, BaseException):
            raise item
        return item


def outcome_of(call) -> BaseException | None:
    """Run ``call`` in a thread joined with a generous bound (only so that the hang this guards against cannot hang
    the suite); the exception it raised."""
    result: dict = {}

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the tests check
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the call still waits on an engine whose core process is dead"
    return result.get("error")


def test_a_generate_waiting_on_a_dead_core_ends_in_one_line():
    from learners.sampling.vllm_engine import EngineDied, generate_watched

    error = outcome_of(lambda: generate_watched(FakeLLM(), [{"prompt_token_ids": [1, 2]}]))
    assert isinstance(error, EngineDied), error
    assert "engine core process died during generation (exit code -9" in str(error) and "\n" not in str(error)


def test_the_contrastive_vllm_scorer_waits_through_the_same_watch():
    pytest.importorskip("vllm")  # SamplingParams
    from learners.contrastive.scoring import SpanRequest, VLLMScorer
    from learners.sampling.vllm_engine import EngineDied

    scorer = VLLMScorer(FakeLLM())
    error = outcome_of(lambda: scorer._run([SpanRequest((1, 2, 3), 2)], [True]))
    assert isinstance(error, EngineDied), error
