"""``countdown label-steps --in F.jsonl --out G.jsonl [--prm-out H.jsonl]``: label every step of each row's
completion with the exact oracle (valid, solvable after, the first mistake); see
:mod:`countdown_env.steps.label_file`."""

from __future__ import annotations

import argparse

from .options import add_rule_arguments, add_template_argument, claiming_out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="source", required=True, help="jsonl with numbers, target and completion")
    parser.add_argument("--out", required=True, help="the rows again, with steps, first_mistake, solvable_before")
    parser.add_argument(
        "--prm-out", default=None, help="also write a process-reward dataset (prompt, completions, labels)"
    )
    add_rule_arguments(parser)
    add_template_argument(parser)
    parser.add_argument("--overwrite", action="store_true", help="replace existing non-empty outputs")


@claiming_out
def run(args: argparse.Namespace) -> int:
    from ..steps.label_file import label_file

    report = label_file(
        args.source,
        args.out,
        prm_out=args.prm_out,
        use_all_numbers=args.use_all_numbers,
        integer_intermediates=args.integer_intermediates,
        template=args.template,
        overwrite=args.overwrite,
    )
    print(report.summary())
    return 0
