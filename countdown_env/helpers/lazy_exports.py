"""Module-level ``__getattr__`` and ``__dir__`` for packages that export names from submodules loaded on first access,
so that importing the package stays cheap (``countdown_env``, ``verifiers_ext``, the ``learners`` packages, the
``countdown`` `verifiers` environment).

It lives in ``countdown_env``, the lowest layer, so that every package may use it (and imports nothing heavy)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    source: str | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for module ``package`` whose globals are ``namespace``.

    A name ``n`` of ``exports`` is imported from ``<source>.<exports[n]>`` (``source`` defaults to ``package``) on
    first access and stored in ``namespace``, so later lookups skip the call; ``__dir__`` lists the module's globals
    and the exports.
    """
    source = package if source is None else source

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{source}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
