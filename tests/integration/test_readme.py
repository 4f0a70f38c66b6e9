"""Every code block of README.md and of the documentation pages runs as printed (issue 36 item 1), or says why not.

The convention: a fenced block preceded by ``<!-- not run: REASON -->`` on the line just above its fence is not
run here; REASON must say why (a GPU, a network, hours of CPU, a server, a cluster, or a named test that already
runs its path: ``runs in tests/FILE.py::TEST``, so that CI spends that time once) and, where one exists, which
test runs the same thing (a command that is merely slow is printed at a smoke size instead). Every ``countdown``
command of every bash block, run or not, is parsed by its subcommand's parser and ``train``'s and ``compare``'s
settings are resolved (seconds in all). Every other ``python`` and ``bash`` block runs, in a scratch folder that
sees the repository's folders (``datasets/``, ``tests/fixtures/``, ...) and gets its own ``runs/`` and ``data/``:

- the ``python`` blocks in one interpreter, in README order, each in a fresh namespace (a block that needs a name
  must define or import it: a reader copies one block, not the page), with ``OMP_NUM_THREADS=1``;
- each ``bash`` block with ``bash -e -o pipefail``, the project's ``countdown`` and ``python`` first on PATH.

The pages run in :data:`PAGES` order, which is the order of the README they were cut from (a block may use what an
earlier block wrote). A failure names the block by its page and line.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ("install", "task", "training", "scaling", "comparing", "learners", "verifiers", "testing", "warm_start",
        "gpu_recipe", "experiments", "architecture", "references")  # fmt: skip
PAGES = [README, *(ROOT / "docs" / f"{name}.md" for name in DOCS)]
"""Every page whose blocks run; ``test_every_page_is_listed`` keeps it whole."""
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w*)\s*$")
RUNNABLE = ("python", "bash")
TEXT = ("", "text")
"""Fences of plain text (a diagram, a printed table): nothing to run."""
ACCEPTED_REASONS = ("GPU", "network", "hour", "runs until stopped", "needs the server", "in tests/")
"""A not-run reason names one of these; a command that is merely slow is printed at a smoke size and run, unless a
named test already runs its path ("runs in tests/FILE.py::TEST": CI time is spent once)."""
NAMED_TEST = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
OUTPUTS = {"runs", "data", "outputs", ".git", ".venv", ".venv-vf-classic", "build", "dist"}


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None  # the reason, when marked
    page: str = "README.md"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks of a Markdown text with the not-run reason of each (``None``: run it)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            raise ValueError(f"{page}:{i + 1}: a code fence that is never closed")
        above = NOT_RUN.match(lines[i - 1].strip()) if i else None
        blocks.append(
            Block(i + 1, match.group(1), "\n".join(lines[i + 1 : end]) + "\n", above and above.group(1), page)
        )
        i = end + 1
    return blocks


BLOCKS = [
    b for page in PAGES for b in readme_blocks(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())
]


def test_every_page_is_listed():
    assert set(PAGES) == {README, *(ROOT / "docs").glob("*.md")}


def test_the_front_page_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_every_block_runs_or_says_why_not():
    """Blocks are python, bash or marked; every mark gives a reason a reviewer can judge; the runner reads every
    not-run comment (a comment not directly above a fence would silently mark nothing)."""
    marks = [
        line for page in PAGES for line in page.read_text(encoding="utf-8").splitlines() if NOT_RUN.match(line.strip())
    ]
    assert BLOCKS and len(marks) == sum(b.not_run is not None for b in BLOCKS)
    for block in BLOCKS:
        if block.not_run is not None:
            assert len(block.not_run) >= 20, f"{block.where}: say why the block is not run"
            assert any(reason in block.not_run for reason in ACCEPTED_REASONS), (
                f"{block.where}: a not-run block needs a GPU, a network, hours or a running server; "
                f"a slow command runs at a smoke size instead ({block.not_run!r})"
            )
        else:
            assert block.language in (*RUNNABLE, *TEXT), f"{block.where}: a {block.language!r} block: mark it"
    assert any(b.language == "python" and b.not_run is None for b in BLOCKS)


def test_every_test_a_reason_names_exists():
    named = [(b.where, m) for b in BLOCKS if b.not_run for m in NAMED_TEST.finditer(b.not_run)]
    assert named
    for where, match in named:
        path = ROOT / match.group(1)
        assert path.is_file() and f"def {match.group(2)}(" in path.read_text(), f"{where}: no test {match.group(0)}"
    for block in BLOCKS:
        if block.not_run and "in tests/" in block.not_run:
            assert NAMED_TEST.search(block.not_run), f"{block.where}: name the test (tests/FILE.py::TEST)"


SEPARATORS = {";", "&", "&&", "|", "||"}


def printed_commands(code: str) -> list[list[str]]:
    """The arguments after ``countdown`` of each ``countdown`` command of a bash block, split as the shell splits
    them: ``countdown ...`` or ``... -m countdown_env.cli ...`` (``accelerate launch``), after any ``VAR=value``
    prefix; a command whose arguments are elided (``...``) is left out, and so is one inside a quoted string (an
    ``sbatch --wrap``)."""
    found = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command: list[str] = []
        for token in [*lexer, ";"]:
            if token not in SEPARATORS:
                command.append(token)
                continue
            while command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", command[0]):
                command.pop(0)
            argv = None
            if command[:1] == ["countdown"]:
                argv = command[1:]
            elif "countdown_env.cli" in command and command[command.index("countdown_env.cli") - 1] == "-m":
                argv = command[command.index("countdown_env.cli") + 1 :]
            if argv and "..." not in argv:
                found.append(argv)
            command = []
    return found


def test_printed_commands_are_split_as_the_shell_splits_them():
    code = (
        "countdown generate --count 5   # JSON lines\nCUDA_VISIBLE_DEVICES=1 countdown train --set 'a.b=c d' &\n"
        "countdown --version; countdown eval --help\naccelerate launch --num_processes 2 \\\n"
        "    -m countdown_env.cli train --max-steps 2\ncountdown compare ... --resume\nsbatch --wrap 'countdown x'\n"
    )
    assert printed_commands(code) == [
        ["generate", "--count", "5"], ["train", "--set", "a.b=c d"], ["--version"], ["eval", "--help"],
        ["train", "--max-steps", "2"],
    ]  # fmt: skip


@pytest.mark.slow  # imports TRL and every learner: ~10 s
def test_every_printed_countdown_command_parses_and_resolves(monkeypatch, capsys):
    """Every ``countdown`` command of every bash block, run or not (a GPU recipe included), parses with its
    subcommand's parser; ``train`` resolves its settings (preset, ``--set`` keys, flags) and ``compare`` checks its
    own, as each does before any work. A renamed flag or setting fails here in seconds. What depends on the machine
    is left out: whether the model is there (a Hub id, or the output of an earlier command) and whether its vLLM
    mode needs CUDA (a GPU recipe)."""
    from countdown_env.cli import command_parser, commands
    from learners.commands.compare import settings_from_args
    from learners.commands.train import run_config
    from learners.pipeline.runs import checks

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(checks, "check_model", lambda model, **_: None)
    monkeypatch.setattr(checks, "check_cpu_vllm", lambda trainer: None)
    known, checked = commands(), 0
    for block in BLOCKS:
        for argv in printed_commands(block.code) if block.language == "bash" else []:
            if argv[0] not in known:
                assert argv[0] in ("--version", "--help"), f"{block.where}: no subcommand {argv[0]!r}"
                continue
            _, parser = command_parser(argv[0], known)
            try:
                args = parser.parse_args(argv[1:])
            except SystemExit as exc:  # --help exits 0; a usage error 2, with its line on stderr
                assert exc.code == 0, f"{block.where}: countdown {shlex.join(argv)}: {capsys.readouterr().err}"
                continue
            try:
                if argv[0] == "train":
                    run_config(args)
                elif argv[0] == "compare":
                    settings_from_args(args)
            except (ValueError, OSError, RuntimeError) as exc:
                pytest.fail(f"{block.where}: countdown {shlex.join(argv)}: {exc}")
            checked += 1
    assert checked >= 30


def test_the_convention_is_read_as_documented():
    text = "intro\n<!-- not run: needs a GPU and the Hub -->\n```bash\nnvidia-smi\n```\n\n```python\nx = 1\n```\n"
    marked, plain = readme_blocks(text)
    assert (marked.line, marked.language, marked.code, marked.not_run) == (
        3,
        "bash",
        "nvidia-smi\n",
        "needs a GPU and the Hub",
    )
    assert (plain.line, plain.language, plain.not_run) == (7, "python", None)
    with pytest.raises(ValueError, match="never closed"):
        readme_blocks("```python\nx = 1\n")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder with the repository's top-level entries linked in (read as in a clone) and its own outputs."""
    folder = tmp_path_factory.mktemp("readme")
    for entry in ROOT.iterdir():
        if entry.name not in OUTPUTS and not entry.name.startswith(".pytest"):
            (folder / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return folder


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "OMP_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT), "COUNTDOWN_DEBUG": "1"}  # fmt: skip


RUNNER = """
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
for where, code in blocks:
    try:
        exec(compile(code, where, "exec"), {"__name__": "__main__"})
    except BaseException:
        print(f"{where}: the python block fails:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    print(f"{where}: ok", flush=True)
"""


@pytest.mark.slow
def test_python_blocks_run_as_printed(scratch, tmp_path):
    blocks = [(b.where, b.code) for b in BLOCKS if b.language == "python" and b.not_run is None]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")], cwd=scratch,
                          env=_env(), capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
    assert done.stdout.count(": ok") == len(blocks)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if b.language == "bash" and b.not_run is None],
                         ids=lambda b: b.where)  # fmt: skip
def test_bash_blocks_run_as_printed(block, scratch):
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=scratch, env=_env(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"{block.where}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
