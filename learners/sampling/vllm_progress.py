"""vLLM's offline generation shown by the project's progress display (:mod:`countdown_env.helpers.progress`).

``vllm.LLM.generate(use_tqdm=...)`` takes ``True`` (a tqdm bar, shown even in a log file as carriage-return
redraws), ``False`` (nothing) or a tqdm factory. Left at a bool, a vLLM eval whose stderr is a log file or a pipe
said nothing for its whole run (issue 44 item 11). :func:`vllm_progress` gives the factory: a tqdm bar on a terminal,
plain lines with rate and ETA elsewhere, and vLLM's own tokens/s estimate on both.

vLLM 0.31 calls the factory twice per ``generate``: ``factory(prompts, desc="Rendering prompts")`` over the
prompts it renders (fast: passed through unchanged here), then ``factory(total=REQUESTS, desc=..., postfix=...)``
for the run, on which it calls ``update(n)`` with the completions of each finished prompt, rewrites ``postfix`` with
its input/output tokens/s and reads ``format_dict["elapsed"]`` and ``n``. With ``n`` samples per prompt its engine
counts each sample as a request, so ``total`` and the updates both count completions (measured: 16 prompts x 2
samples gave ``total=32``).
"""

from __future__ import annotations

import time
from typing import Any

DESCRIPTION = "generating (vLLM)"


class CompletionsBar:
    """The tqdm surface vLLM's ``_run_engine`` uses, over a :func:`countdown_env.helpers.progress.progress_bar`."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.n = 0
        self.start = time.monotonic()
        self._postfix = ""

    @property
    def format_dict(self) -> dict[str, float]:
        """``elapsed`` seconds, never 0 (vLLM divides by it)."""
        return {"elapsed": max(time.monotonic() - self.start, 1e-6)}

    @property
    def postfix(self) -> str:
        return self._postfix

    @postfix.setter
    def postfix(self, text: str) -> None:
        self._postfix = text
        self.bar.set_postfix_str(text)

    def update(self, n: int = 1) -> None:
        self.n += n
        self.bar.update(n)

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        self.bar.close()


def vllm_progress(enabled: bool | None):
    """``use_tqdm`` for ``LLM.generate``: ``False`` when ``enabled`` is ``False`` (``--no-progress``), else a factory
    (module docstring) whose bar counts completions; ``enabled=None``: a tqdm bar when stderr is a terminal, lines
    otherwise (:func:`countdown_env.helpers.progress.progress_bar`)."""
    if enabled is False:
        return False
    from countdown_env.helpers.progress import progress_bar

    def factory(iterable: Any = None, *, total: int | None = None, **_: Any) -> Any:
        if iterable is not None:  # the prompts vLLM renders before generating
            return iterable
        return CompletionsBar(progress_bar(total, DESCRIPTION, enabled, unit="completions"))

    return factory
