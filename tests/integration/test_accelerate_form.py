"""Every ``accelerate launch`` the project shows works as printed (issue 44 item 9).

accelerate starts a Python script (a path) or, with ``-m``/``--module``, a module: ``accelerate launch ... countdown
train`` fails with ``can't open file '.../countdown'``. The project shows ``-m countdown_env.cli train ...`` in the
README, the docs and the shipped accelerate configs' comments; each shown command is parsed here by accelerate's
own parser and by the countdown subcommand's, and one short launch of 2 processes (``--help``) runs the shown form
and the bare one side by side.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIGS = sorted((ROOT / "learners" / "pipeline" / "configs" / "accelerate").glob("*.yaml"))
COMMANDS = ("train", "compare", "demo-train")


def _fenced(text: str) -> list[str]:
    """Shell commands of the fenced blocks, continuation lines joined."""
    found = []
    for block in re.findall(r"^```\w*\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        found += [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    return found


def _inline(text: str) -> list[str]:
    """Code spans outside fenced blocks (a span may run over lines, as Markdown allows)."""
    prose = re.sub(r"^```\w*\n.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def _yaml_comments(text: str) -> list[str]:
    lines = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    return [line.strip() for line in "\n".join(lines).replace("\\\n", " ").splitlines()]


def shown_launches() -> list[tuple[str, str]]:
    """``(where, command)`` of every ``accelerate launch`` that starts a program, in the docs and the configs."""
    shown = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        shown += [(path.name, c) for c in _fenced(text) + _inline(text)]
    for path in CONFIGS:
        shown += [(path.name, c) for c in _yaml_comments(path.read_text(encoding="utf-8"))]
    launches = []
    for where, command in shown:
        if "accelerate launch" not in command or "..." in command:
            continue  # prose that names the launcher, or a sketch with elided options
        tokens = shlex.split(command, comments=True)
        while tokens and re.fullmatch(r"[A-Z_]+=\S*", tokens[0]):
            tokens.pop(0)  # CUDA_VISIBLE_DEVICES=... before the command
        if tokens[:2] == ["accelerate", "launch"] and any(name in tokens for name in (*COMMANDS, "countdown")):
            launches.append((where, command))
    return launches


def _countdown_parser(name: str) -> argparse.ArgumentParser:
    """The parser ``countdown NAME`` builds (countdown_env.cli.main), errors raised instead of printed."""
    from countdown_env.cli import commands

    module = importlib.import_module(commands()[name][0])
    parser = argparse.ArgumentParser(prog=f"countdown {name}", exit_on_error=False)
    module.add_arguments(parser)
    if getattr(module, "USES_TORCH", False):
        parser.add_argument("--threads")
    return parser


LAUNCHES = shown_launches()


def test_the_launches_are_found():
    """docs/scaling.md's smoke commands, its several-machines and server-mode commands, and each shipped config's."""
    places = {where for where, _ in LAUNCHES}
    assert "scaling.md" in places and {path.name for path in CONFIGS} <= places
    assert sum(where == "scaling.md" for where, _ in LAUNCHES) >= 4


@pytest.mark.parametrize("where,command", LAUNCHES, ids=[f"{w}:{c[:60]}" for w, c in LAUNCHES])
def test_every_shown_launch_names_the_module_and_parses(where, command):
    from accelerate.commands.launch import launch_command_parser

    tokens = shlex.split(command, comments=True)
    while re.fullmatch(r"[A-Z_]+=\S*", tokens[0]):
        tokens.pop(0)
    args = launch_command_parser().parse_args(tokens[2:])
    assert args.module and args.training_script == "countdown_env.cli", (
        f"{where}: `{command}` starts {args.training_script!r} as a script: accelerate cannot open it; "
        "show `-m countdown_env.cli`"
    )
    name, rest = args.training_script_args[0], args.training_script_args[1:]
    assert name in COMMANDS, f"{where}: `{command}`"
    _countdown_parser(name).parse_args(rest)  # an unknown option or a bad value raises


@pytest.mark.slow
def test_the_shown_form_launches_and_the_bare_name_does_not(tmp_path):
    """Two CPU processes (torchrun + gloo) of ``countdown train --help``: the module form and the installed
    script's path exit 0; the bare ``countdown`` is a path accelerate cannot open."""
    from tests.multiproc.cli_launch import accelerate, free_port

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    base = accelerate(2, free_port())[:-2]  # the launcher's options, without `--module countdown_env.cli`

    def launch(*program: str) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *program, "train", "--help"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    shown = launch("-m", "countdown_env.cli")
    assert shown.returncode == 0 and shown.stdout.count("usage: countdown train") == 2, shown.stderr[-3000:]
    script = Path(sys.executable).parent / "countdown"
    if script.is_file():  # the console script of an installed checkout ($(command -v countdown))
        by_path = launch(str(script))
        assert by_path.returncode == 0 and by_path.stdout.count("usage: countdown train") == 2, by_path.stderr[-3000:]
    bare = launch("countdown")
    assert bare.returncode != 0 and "can't open file" in bare.stderr
