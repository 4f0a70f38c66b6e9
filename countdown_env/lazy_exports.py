"""Module-level ``__getattr__`` for packages that export names from submodules loaded on first access, so that
importing the package stays cheap (``countdown_env``, ``countdown_env.envs``, ``verifiers_ext``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_getattr(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: ``name`` is imported from ``package.<exports[name]>`` on first access and
    stored in ``namespace`` (the package's globals), so later lookups skip the call."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
