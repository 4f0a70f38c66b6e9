"""The learners' ``countdown`` subcommands, one module each: ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``: argparse and one call into the library (:mod:`learners.pipeline`), nothing else. They are
registered with the ``countdown`` command through the ``countdown.commands`` entry points in ``pyproject.toml``
(:mod:`countdown_env.cli` names no learner module)."""


def add_precision_option(parser, what: str, default: str | None = "auto") -> None:
    """``--precision auto|fp32|bf16`` (:mod:`learners.pipeline.precision`), ``what`` saying what it applies to."""
    from ..pipeline.precision import PRECISIONS

    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=default,
        help=f"{what}; auto: bf16 for real models where the CPU has amx_bf16 or avx512_bf16 (or on a bf16 GPU), fp32 "
        "for the tiny models and elsewhere",
    )
