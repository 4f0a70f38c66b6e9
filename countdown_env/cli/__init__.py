"""The ``countdown`` command.

Each subcommand is a module that provides ``add_arguments(parser)`` and ``run(args) -> int``, imported only when
chosen, so that ``countdown --help`` stays fast and the environment package never imports torch. The environment's
own subcommands (``demo``, ``build-splits``, ``generate``, ...) are listed in :data:`SUBCOMMANDS`; other packages
add theirs through the ``countdown.commands`` entry-point group (name -> module with a one-line ``HELP``; the
learners' ``train``, ``eval``, ``compare``, ``demo-train`` and ``warm-start`` come from ``learners.commands``), so
this package names no module outside itself.

Threads: every subcommand runs under :func:`countdown_env.helpers.threads.configure_threads` (set before the subcommand
imports torch); those whose module sets ``USES_TORCH = True`` also take ``--threads N|torch``.

Errors: a subcommand raises (``ValueError``, ``OSError``, ``RuntimeError``, ``ImportError``) for anything the user
can fix; :func:`main` prints ``countdown <command>: error: <message>`` on stderr and returns 2, without a traceback
(``COUNTDOWN_DEBUG=1`` re-raises, showing it). Argument errors are argparse's, in the same form.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

USER_ERRORS = (ValueError, OSError, RuntimeError, ImportError)
"""Exceptions a subcommand raises for a user error: one line on stderr, exit status 2."""

# name -> (module, one-line help): the environment's subcommands. Add one with one line here.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("countdown_env.cli.demo", "generate puzzles, solve them, verify answers and print a summary"),
    "build-splits": (
        "countdown_env.cli.build_splits",
        "build reproducible train/eval splits (jsonl + HF save_to_disk)",
    ),
    "build-sft": ("countdown_env.cli.build_sft", "build SFT warm-start rows with solver-derived reasoning traces"),
    "clean-sft": ("countdown_env.cli.clean", "clean external Countdown SFT data (contrastive shaping post's filters)"),
    "merge-splits": ("countdown_env.cli.merge", "merge the shard folders of build-splits --shard K/N into one split"),
    "generate": ("countdown_env.cli.generate", "print puzzles of a task as JSON lines (numbers, target, a solution)"),
    "solve": ("countdown_env.cli.solve", "solve one puzzle: a solution, --all of them or --count (exit 1: none)"),
    "label-steps": (
        "countdown_env.cli.label_steps",
        "label each step of completions with the exact oracle (valid, solvable after, first mistake; PRM rows)",
    ),
    "verify": ("countdown_env.cli.verify", "judge one answer: verdict and reason (exit 0 correct, 1 wrong)"),
}

ENTRY_POINT_GROUP = "countdown.commands"
"""Subcommands of other installed packages: ``name = "package.module"`` (the module has ``HELP``)."""


def commands() -> dict[str, tuple[str, str | None]]:
    """Every subcommand: :data:`SUBCOMMANDS`, then the ``countdown.commands`` entry points (help ``None``: the
    module's ``HELP``, read when the help is printed)."""
    from importlib.metadata import entry_points

    found: dict[str, tuple[str, str | None]] = dict(SUBCOMMANDS)
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        found.setdefault(entry.name, (entry.value, None))
    return found


def _help(module_name: str, help_text: str | None) -> str:
    if help_text is not None:
        return help_text
    return str(getattr(importlib.import_module(module_name), "HELP", ""))


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` after every option's help, except where the default is ``None`` (the help text then
    says what happens, e.g. "default: the shipped warm start")."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (argparse prints the whole usage block first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="countdown", description="Countdown puzzles for RL of language models.")
    parser.add_argument("--version", action="version", version=f"countdown {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in commands().items():
        sub.add_parser(name, help=_help(module_name, help_text), add_help=False)
    return parser


def command_parser(name: str, known: dict[str, tuple[str, str | None]] | None = None):
    """The module of subcommand ``name`` and its argument parser (``--threads`` added where it uses torch); parsing
    with it checks a printed command without running it (``tests/integration/test_readme.py``)."""
    module_name, help_text = (commands() if known is None else known)[name]
    module = importlib.import_module(module_name)
    parser = OneLineErrorParser(
        prog=f"countdown {name}", description=_help(module_name, help_text), formatter_class=DefaultsHelpFormatter
    )
    module.add_arguments(parser)
    if getattr(module, "USES_TORCH", False):
        parser.add_argument(
            "--threads",
            type=_threads_value,
            help="CPU threads of each process (torch, OpenMP, MKL); 'torch': torch's own default (every core). "
            "Default: OMP_NUM_THREADS when set, else the cores this process may use divided by the processes of the "
            "launch on this machine",
        )
    return module, parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    known = commands()
    if not argv or argv[0] not in known:
        parser = build_parser()
        if argv and argv[0] in ("--version", "-V"):
            print(f"countdown {_version()}")
            return 0
        if not argv or argv[0] in ("-h", "--help"):
            parser.print_help()
            return 0
        parser.error(f"unknown command {argv[0]!r}; choose one of {', '.join(known)}")
    name, rest = argv[0], argv[1:]
    module, parser = command_parser(name, known)
    try:
        args = parser.parse_args(rest)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed by argparse: return, not raise
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    from ..helpers.quiet import quiet_third_party
    from ..helpers.threads import configure_threads

    configure_threads(getattr(args, "threads", None))  # before the subcommand imports torch
    quiet_third_party()
    try:
        code = int(module.run(args) or 0)
    except USER_ERRORS as exc:
        if os.environ.get("COUNTDOWN_DEBUG", "") not in ("", "0"):
            raise
        print(f"countdown {name}: error: {error_message(exc)}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        print(f"countdown {name}: interrupted", file=sys.stderr)
        code = 130
    return exit_distributed_process(code)


def exit_distributed_process(code: int) -> int:
    """``code``, or, in a process of a multi-process launch (a torch process group of more than one process), end
    the process at once with ``code`` (``os._exit`` after flushing): at interpreter exit gloo's teardown can abort
    a process whose peer (the one hosting the rendezvous store) is already gone, and torchrun would report the
    finished run as failed. The work and its files are complete by then."""
    dist = sys.modules.get("torch.distributed")  # never imported here: only a command that used it has it
    if dist is not None and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _threads_value(text: str) -> int | str:
    from ..helpers.threads import parse_threads

    try:
        return parse_threads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _version() -> str:
    """The installed distribution's version (countdown-rl), else the package's ``__version__``."""
    try:
        from importlib.metadata import version

        return version("countdown-rl")
    except Exception:  # not installed (a bare checkout on sys.path)
        from countdown_env import __version__

        return __version__


def error_message(exc: BaseException) -> str:
    """One line for a user error (the exception's text; its type when the text is empty or unhelpful)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, FileNotFoundError) and exc.filename and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}"
    elif isinstance(exc, ImportError) and exc.name:
        text = f"{text} (a missing optional dependency: pip install -e '.[train]' or the package named)"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"not UTF-8 text (byte {exc.start}: {exc.reason})"
    return text or type(exc).__name__


if __name__ == "__main__":
    raise SystemExit(main())
