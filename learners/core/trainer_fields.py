"""Each registered learner's trainer options and their defaults, readable without importing TRL.

A learner's config class is a ``GRPOConfig`` subclass, and importing it pulls in TRL, transformers and peft
(about 4 s on these machines). ``countdown train`` checks a config's trainer keys and value types before any such
import, from ``trainer_fields.json`` beside this module: every option of every learner's config class with its
default when that is a number, a bool or a string (``None`` otherwise: not type-checked). The file records the
stack it was generated on (the trl and transformers versions and a digest of the config modules: the base config's
and those each registered algorithm's spec names); when the installed stack differs, :func:`trainer_fields` falls
back to importing the class, so it is never wrong, only slower. Regenerate it with
``python -m learners.core.trainer_fields`` (a test checks it matches the classes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

FIELDS_FILE = Path(__file__).with_name("trainer_fields.json")


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


def _recorded() -> dict[str, Any] | None:
    try:
        recorded = json.loads(FIELDS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) and recorded.get("stack") == stack_key() else None


def trainer_fields(spec) -> dict[str, Any]:
    """The options of ``spec``'s (a :class:`~learners.core.registry.LearnerSpec`) config class and their defaults:
    from ``trainer_fields.json`` when it was generated on this stack, else by importing the class."""
    recorded = _recorded()
    if recorded is not None and spec.config_class in recorded.get("classes", {}):
        return recorded["classes"][spec.config_class]
    return fields_of(_config_class(spec))


def _config_class(spec) -> type:
    import importlib

    return getattr(importlib.import_module(spec.module), spec.config_class)


def generate() -> dict[str, Any]:
    """The file's content for the installed stack (imports every learner's config class)."""
    from .registry import LEARNERS

    classes = {spec.config_class: fields_of(_config_class(spec)) for spec in LEARNERS.values()}
    return {"stack": stack_key(), "classes": dict(sorted(classes.items()))}


def main() -> None:
    from countdown_env.helpers.atomic import write_text

    content = generate()
    write_text(FIELDS_FILE, json.dumps(content, indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIELDS_FILE.name}: {len(content['classes'])} config classes on trl {content['stack']['trl']}")


if __name__ == "__main__":
    main()
