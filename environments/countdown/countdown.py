"""countdown: the Countdown arithmetic puzzle as a `verifiers` environment (from the countdown-rl project).

One module serves both `verifiers` APIs:
- verifiers 0.3.x (``vf-eval countdown``): the module's ``load_environment(**kwargs)`` -> ``vf.SingleTurnEnv``;
- verifiers 0.4 (``vf-eval countdown``): the ``Taskset`` (and bundled chat ``Harness``) exported in ``__all__``.

The v1 classes resolve on first access, so the 0.3.x path never imports ``verifiers.v1``. The implementation
lives in the countdown-rl package (``verifiers_ext``), which must be installed alongside this one.
"""

from verifiers_ext.classic_env import load_environment

__all__ = ["CountdownTaskset", "CountdownHarness", "load_environment"]  # noqa: F822 (v1 names: module __getattr__)


def __getattr__(name: str):
    if name in ("CountdownTaskset", "CountdownHarness", "CountdownConfig", "CountdownTask", "CountdownData"):
        from verifiers_ext import taskset

        return getattr(taskset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
