"""TRL's trainer, imported without vLLM until a trainer generates with it.

TRL's generation modules (``trl/generation/vllm_generation.py`` and ``vllm_client.py``) import vLLM at module level
whenever it is installed, so ``from trl import GRPOTrainer`` pays vLLM's import in every process, including runs that
never start an engine: ``import learners.core.trainer`` took 22.7 s of CPU with it and 13.7 s without (medians of
three runs each on the project's 2-core AVX2-only machine), and a two-step ``countdown train`` of the tiny model 41 s
against 31 s (one run each). The test suite starts such processes by the dozen, and a user's CPU run pays it at every
start.

:func:`trl_without_vllm` keeps vLLM out while TRL's trainer modules load: a ``None`` entry in ``sys.modules``, which
Python's import system documents as "this module is absent" (``importlib.util.find_spec`` answers ``None`` and an
import raises ``ModuleNotFoundError``), so TRL's ``is_vllm_available()`` is false for that moment. The entry is removed
on leaving. :func:`load_trl_vllm` runs the two generation modules again, now with vLLM, the first time a trainer is
built with ``use_vllm`` (:class:`learners.core.trainer.CountdownGRPOTrainer` calls it): reloading executes a module
anew in the same namespace, so the classes TRL's trainer already holds see vLLM's names from then on. Where vLLM or
TRL's generation module was imported before, both are no-ops.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Iterator

__all__ = ["load_trl_vllm", "trl_without_vllm"]

_GENERATION = "trl.generation.vllm_generation"
_CLIENT = "trl.generation.vllm_client"


@contextlib.contextmanager
def trl_without_vllm() -> Iterator[None]:
    """Inside, importing TRL's modules does not import vLLM (see the module docstring)."""
    if "vllm" in sys.modules or _GENERATION in sys.modules:
        yield
        return
    sys.modules["vllm"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("vllm", 0) is None:
            del sys.modules["vllm"]


def load_trl_vllm() -> bool:
    """Give TRL's generation modules their vLLM names if they loaded without them; whether vLLM is installed."""
    generation = importlib.import_module(_GENERATION)
    if hasattr(generation, "LLM"):
        return True
    if importlib.util.find_spec("vllm") is None:
        return False
    importlib.reload(importlib.import_module(_CLIENT))
    importlib.reload(generation)
    return True
