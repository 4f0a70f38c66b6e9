"""Each registered learner's trainer options and their defaults, readable without importing TRL.

A learner's config class is a ``GRPOConfig`` subclass, and importing it pulls in TRL, transformers and peft
(about 4 s on these machines). ``countdown train`` checks a config's trainer keys and value types before any such
import, from a list of every option of every learner's config class with its default when that is a number, a bool
or a string (``None`` otherwise: not type-checked). The list is built by importing the classes once per stack (the
trl and transformers versions and a digest of the config modules: the base config's and those each registered
algorithm's spec names) and kept outside the repository, in ``CACHE/trainer_fields/DIGEST.json``
(:func:`countdown_env.helpers.cache.cache_root`): a learner added or changed needs no file regenerated, and the
first check after an upgrade is the slow one. A cache that cannot be written costs the import each time, never a
wrong answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any


def _config_sources() -> list[Path]:
    """The base config's file and every registered algorithm's config files (its spec's ``config_sources``)."""
    from .registry import ALGORITHMS

    sources = {Path(__file__).with_name("config.py").resolve()}
    sources.update(path.resolve() for spec in ALGORITHMS.values() for path in spec.config_sources)
    return sorted(sources)


def stack_key() -> dict[str, str]:
    """What the options depend on: the trl and transformers versions and the config modules of the learners."""
    digest = hashlib.sha256()
    for path in _config_sources():  # each named by its folder and file: ``core/config.py``
        digest.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    versions = {}
    for package in ("trl", "transformers"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return {**versions, "config_sources": digest.hexdigest()}


def fields_of(config_class: type) -> dict[str, Any]:
    """``{option: default}`` of a config dataclass; defaults other than bool/int/float/str become ``None``."""
    out = {}
    for field in dataclasses.fields(config_class):
        default = field.default
        out[field.name] = default if isinstance(default, (bool, int, float, str)) else None
    return out


def fields_file(stack: dict[str, str] | None = None) -> Path:
    """Where the option list of the installed stack (``stack``, default :func:`stack_key`) is cached."""
    from countdown_env.helpers.cache import cache_root

    key = hashlib.sha256(json.dumps(stack or stack_key(), sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "trainer_fields" / f"{key}.json"


def all_fields() -> dict[str, dict[str, Any]]:
    """``{config class name: {option: default}}`` of every registered learner: from the cache when it holds this
    stack's list, else built (importing the classes) and cached."""
    stack = stack_key()  # reads every config module: once per call
    path = fields_file(stack)
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(recorded, dict) and recorded.get("stack") == stack:
            return recorded["classes"]
    except (OSError, ValueError, KeyError):
        pass
    content = generate()
    try:
        from countdown_env.helpers.atomic import write_text

        write_text(path, json.dumps(content, indent=1, sort_keys=True) + "\n")
    except OSError:  # a read-only cache: correct, only slower next time
        pass
    return content["classes"]


def trainer_fields(spec) -> dict[str, Any]:
    """The options of ``spec``'s (a :class:`~learners.core.registry.LearnerSpec`) config class and their defaults."""
    classes = all_fields()
    if spec.config_class in classes:
        return classes[spec.config_class]
    return fields_of(_config_class(spec))  # a learner registered after the list was built


def _config_class(spec) -> type:
    import importlib

    return getattr(importlib.import_module(spec.module), spec.config_class)


def generate() -> dict[str, Any]:
    """The list for the installed stack (imports every learner's config class)."""
    from .registry import LEARNERS

    classes = {spec.config_class: fields_of(_config_class(spec)) for spec in LEARNERS.values()}
    return {"stack": stack_key(), "classes": dict(sorted(classes.items()))}
