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
    parser.add_argument(
        "--answer-tokens",
        metavar="MODEL",
        default=None,
        help="also value the answer token by token with MODEL's tokenizer (a model folder or Hub id; needs "
        "transformers): answer_tokens per row, each token's prefix solvable or not and the first that is not",
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
        answer_offsets=None if args.answer_tokens is None else tokenizer_offsets(args.answer_tokens),
    )
    print(report.summary())
    return 0


def tokenizer_offsets(model: str):
    """``text -> [(start, end), ...]`` from the fast tokenizer of ``model`` (loaded with transformers)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise ImportError("--answer-tokens needs transformers (pip install 'countdown-rl[train]')") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"--answer-tokens: no tokenizer could be loaded from {model!r} ({str(exc).splitlines()[0]})"
        ) from None
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"--answer-tokens: {model!r} has no fast tokenizer (character offsets need one)")

    def offsets(text: str) -> list[tuple[int, int]]:
        return tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]

    return offsets
