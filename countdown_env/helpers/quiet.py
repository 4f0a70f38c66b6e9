"""Third-party noise a command's user need not read, silenced where this process decides it (issue 67's first hour).

- vLLM's INFO lines (about 38 per quick run): the engines a command starts log at WARNING unless
  ``VLLM_LOGGING_LEVEL`` says otherwise (they read it from the environment they inherit);
- ``torch.distributed.reduce_op is deprecated`` (6 per SmolLM2 run), raised inside vLLM's kernel dispatcher: ignored
  here, and in the processes a command starts through ``PYTHONWARNINGS`` unless the user set it;
- with stderr not a terminal (a log), the Hugging Face bars (``Loading weights``, ``Writing model shards``, downloads)
  are off (``HF_HUB_DISABLE_PROGRESS_BARS``): a log gets the project's plain progress lines only
  (:mod:`countdown_env.helpers.progress`).

Lines written before Python starts or by native code (``NUMA binding``, ``libtcmalloc``/``libiomp`` not in
``LD_PRELOAD``, ``Triton is installed, but ...``) cannot be silenced from here; docs/install.md lists them as expected.
"""

from __future__ import annotations

import os
import re
import warnings

_REDUCE_OP = "`torch.distributed.reduce_op` is deprecated"
_DISPATCHER = "vllm.triton_utils.dispatcher"


def quiet_third_party() -> None:
    """Set the defaults above (an explicit environment variable of the user's always wins)."""
    from .progress import terminal

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if not terminal():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("PYTHONWARNINGS", f"ignore::FutureWarning:{_DISPATCHER}")
    warnings.filterwarnings("ignore", message=re.escape(_REDUCE_OP), category=FutureWarning)
