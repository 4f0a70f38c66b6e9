"""Module-level ``__getattr__`` and ``__dir__`` for packages that export names from submodules loaded on first access,
so that importing the package stays cheap (``countdown_env``, ``verifiers_ext``, the ``learners`` packages, the
``countdown`` `verifiers` environment), and for names kept one release as deprecated aliases of their new name.

It lives in ``countdown_env``, the lowest layer, so that every package may use it (and imports nothing heavy)."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    namespace: dict[str, Any],
    *,
    source: str | None = None,
    deprecated: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for module ``package`` whose globals are ``namespace``.

    A name ``n`` of ``exports`` is imported from ``<source>.<exports[n]>`` (``source`` defaults to ``package``) on
    first access and stored in ``namespace``, so later lookups skip the call. A name ``old`` of ``deprecated`` is
    its new name ``deprecated[old]`` (an export or a global) under a :class:`DeprecationWarning`, at every access;
    ``__dir__`` lists the module's globals and the exports, not the deprecated names.
    """
    source = package if source is None else source
    deprecated = dict(deprecated or {})

    def __getattr__(name: str) -> Any:
        if name in deprecated:
            new = deprecated[name]
            warnings.warn(
                f"{package}.{name} is deprecated (kept for one release): use {package}.{new}",
                DeprecationWarning,
                stacklevel=2,
            )
            return namespace[new] if new in namespace else __getattr__(new)
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{source}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def moved_module(old: str, new: str) -> None:
    """Make module ``old`` (a deprecated path, kept one release) the module ``new``: warn once, at the first import
    of ``old``, with a :class:`DeprecationWarning`, and put ``new`` in ``sys.modules`` under ``old``, so both names
    are one module object (one set of module-level state) and later imports of ``old`` neither reload nor warn.
    Called as ``moved_module(__name__, "new.path")`` by the module left at the old path; run as a script
    (``python -m old.path``), it runs the new module as the script."""
    if old == "__main__":  # `python -m <old path>`: run the new module as the script, after the same warning
        spec = sys._getframe(1).f_globals.get("__spec__")
        old = spec.name if spec is not None else old
        warnings.warn(f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=2)
        import runpy

        runpy.run_module(new, run_name="__main__", alter_sys=True)
        return
    module = importlib.import_module(new)
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__") == old:
        frame, level = frame.f_back, level + 1
    # `warnings` skips the import machinery's frames itself: the warning names the module that imported `old`
    warnings.warn(f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=level)
    sys.modules[old] = module
