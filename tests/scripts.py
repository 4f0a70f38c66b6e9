"""Load one of the project's scripts (``benchmarks/``, ``experiments/``: files, not packages) as a module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str | None = None) -> ModuleType:
    """The module of the script at ``relative`` (from the repository root), executed once per call."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recomputed_page(page: Path, command: tuple[str, ...], out: Path) -> tuple[list[str], list[str]]:
    """A committed results page whose third line is the command that wrote it (``python SCRIPT ARGS... --out PAGE``, in
    backticks, starting with ``command``: the script and e.g. its subcommand): ``(written again, committed)``, the
    lines that command writes into ``out`` when run from the repository root and the page's own, both without that
    third line (their ``--out`` differs)."""
    import os
    import shlex

    lines = page.read_text(encoding="utf-8").splitlines()
    argv = shlex.split(lines[2].strip("`"))
    assert argv[: 1 + len(command)] == ["python", *command], lines[2]
    script, argv = command[0], argv[2:]
    argv[argv.index("--out") + 1] = str(out)
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        assert load_script(script).main(argv) == 0
    finally:
        os.chdir(here)
    again = out.read_text(encoding="utf-8").splitlines()
    return again[:2] + again[3:], lines[:2] + lines[3:]
