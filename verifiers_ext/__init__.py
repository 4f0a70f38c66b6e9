"""verifiers_ext: Countdown as an environment for the `verifiers` library (PrimeIntellect), both APIs.

- classic API (verifiers 0.3.x): :func:`load_environment` -> ``vf.SingleTurnEnv`` (module ``classic_env``);
- v1 API (verifiers 0.4, ``verifiers.v1``): :class:`CountdownTaskset` and friends (module ``taskset``).

`verifiers` is optional: importing this package imports neither version; the names below load their module
on first access, so only the one you use needs its `verifiers`. The installable environment package that
``vf-eval countdown`` imports lives in ``environments/countdown/``.
"""

from __future__ import annotations

from countdown_env.helpers.lazy_exports import lazy_exports

_EXPORTS = {
    "load_environment": "classic_env",
    "rubric_functions": "classic_env",
    "CountdownData": "taskset",
    "CountdownHarness": "taskset",
    "CountdownTaskRow": "taskset",
    "CountdownTaskset": "taskset",
    "CountdownTasksetConfig": "taskset",
    "PuzzleSource": "dataset_rows",
    "reply_text": "reply_scoring",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
