"""Modules moved into subpackages keep their old path for one release: a module left there warns once with a
DeprecationWarning naming the new path and *is* the new module (one module object, one set of module-level state).
Nothing the project imports by itself goes through an old path."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def moved_paths() -> dict[str, str]:
    """old module -> new module, read from the modules that call ``moved_module(__name__, "new")``."""
    found = {}
    for package in ("countdown_env", "learners", "verifiers_ext"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "moved_module":
                    old = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                    found[old] = node.args[1].value
    return found


MOVED = moved_paths()


def test_the_moves_are_found():
    assert MOVED["countdown_env.solver"] == "countdown_env.solving.solver"
    assert MOVED["learners.pipeline.run_driver"] == "learners.pipeline.runs.driver"
    assert len(MOVED) == 36


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_is_the_new_module(old):
    new = MOVED[old]
    assert old not in {m for m in MOVED.values()}, "a shim must not point at another shim"
    sys.modules.pop(old, None)  # as on a first import
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}; the old path goes in the next release"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) is sys.modules[old]
    parent, _, name = old.rpartition(".")
    assert getattr(importlib.import_module(parent), name) is module
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert importlib.import_module(old) is module  # once: a second import neither reloads nor warns


def run_python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_importing_countdown_env_and_its_public_names_warns_nothing():
    code = "import countdown_env\nfor name in countdown_env.__all__: getattr(countdown_env, name)\n"
    out = run_python("-W", "error::DeprecationWarning", "-c", code)
    assert out.returncode == 0, out.stderr[-2000:]


def test_nothing_in_the_repository_names_an_old_path():
    """Not by import (absolute or relative, lazy or not), in a string or a docstring, in the packages, tests,
    benchmarks, environments or the README: only the shims and this test spell an old path. Read as text and ``ast``,
    nothing imported."""
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(old) for old in MOVED) + r")\b(?![\w])")
    files = [ROOT / "README.md"] + [
        path
        for folder in ("countdown_env", "learners", "verifiers_ext", "tests", "benchmarks", "environments")
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if name in MOVED or path == Path(__file__).resolve():
            continue
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)]
        if path.suffix == ".py":
            found += [f"{path.relative_to(ROOT)}: {old}" for old in relative_imports(path, name) if old in MOVED]
    assert not found, "old module paths in use:\n" + "\n".join(found)


def relative_imports(path: Path, name: str) -> set[str]:
    """The modules ``from .x import y`` lines of ``path`` (module ``name``) resolve to: ``pkg.x`` and ``pkg.x.y``."""
    base = name.split(".")[:-1]  # a package's __init__ and its modules resolve against the package alike
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = base[: len(base) - (node.level - 1)]
            source = ".".join(anchor + ([node.module] if node.module else []))
            out.add(source)
            out.update(f"{source}.{alias.name}" for alias in node.names)
    return out


def test_an_old_path_run_as_a_script_warns_and_runs_the_new_module():
    out = run_python("-W", "always::DeprecationWarning", "-m", "countdown_env.eval_sets", "--help")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "countdown_env.eval_sets moved to countdown_env.splits.eval_sets" in out.stderr
    assert out.stdout.startswith("usage: python -m countdown_env.splits.eval_sets")
