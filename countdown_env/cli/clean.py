"""``countdown clean-sft IN.jsonl OUT``: clean external Countdown SFT data as the contrastive shaping post did
(see cleaning.py)."""

from __future__ import annotations

import argparse

from .options import add_template_argument


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="jsonl with numbers (or nums), target and a response")
    parser.add_argument("out", help="a .jsonl file, or a folder (gets train.jsonl, an HF copy, a card and report.json)")
    parser.add_argument("--response-field", default=None, help="the response column (default: first present of "
                        "response, response_ws, chosen, completion, output, answer)")  # fmt: skip
    add_template_argument(parser)
    parser.add_argument("--allow-empty-reasoning", action="store_true", help="keep rows whose reasoning is empty")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing non-empty output")


def run(args: argparse.Namespace) -> int:
    from ..sft.cleaning import clean_file

    report = clean_file(
        args.input,
        args.out,
        response_field=args.response_field,
        template=args.template,
        require_reasoning=not args.allow_empty_reasoning,
        overwrite=args.overwrite,
    )
    print(report.summary())
    return 0
