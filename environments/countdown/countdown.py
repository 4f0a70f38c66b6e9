"""countdown: the Countdown arithmetic puzzle as a `verifiers` environment (from the countdown-rl project).

One module serves both `verifiers` APIs:
- verifiers 0.3.x (``vf-eval countdown``): the module's ``load_environment(**kwargs)`` -> ``vf.SingleTurnEnv``;
- verifiers 0.4 (``vf-eval countdown``): the ``Taskset`` (and bundled chat ``Harness``) exported in ``__all__``.

The v1 classes resolve on first access, so the 0.3.x path never imports ``verifiers.v1``. The implementation
lives in the countdown-rl package (``verifiers_ext``), which must be installed alongside this one.
"""

from countdown_env.helpers.lazy_exports import lazy_exports
from verifiers_ext.classic_env import load_environment

__all__ = ["CountdownTaskset", "CountdownHarness", "load_environment"]  # noqa: F822 (v1 names: module __getattr__)

__getattr__, __dir__ = lazy_exports(
    __name__,
    dict.fromkeys(
        ("CountdownTaskset", "CountdownHarness", "CountdownTasksetConfig", "CountdownTaskRow", "CountdownData"),
        "taskset",
    ),
    globals(),
    source="verifiers_ext",
)
