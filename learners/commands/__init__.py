"""The learners' ``countdown`` subcommands, one module each: ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``: argparse and one call into the library (:mod:`learners.pipeline`), nothing else. They are
registered with the ``countdown`` command through the ``countdown.commands`` entry points in ``pyproject.toml``
(:mod:`countdown_env.cli` names no learner module)."""

import argparse


def add_precision_option(parser, what: str, default: str | None = "auto", *, setting: bool = False) -> None:
    """``--precision auto|fp32|bf16`` (:mod:`learners.pipeline.precision`), ``what`` saying what it applies to; with
    ``setting``, a :class:`Setting` of the run config (no default: the config's holds)."""
    from ..pipeline.precision import PRECISIONS

    where = {"action": Setting, "key": "precision", "type": str} if setting else {"default": default}
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        **where,
        help=f"{what}; auto: bf16 for real models where the CPU has amx_bf16 or avx512_bf16 (or on a bf16 GPU), fp32 "
        "for the tiny models and elsewhere",
    )


def add_earlier_spelling(parser, field, kind) -> None:
    """A size field's earlier flag (its ``was`` metadata, e.g. ``--steps`` for ``max_steps``), hidden from ``--help``
    and writing the same destination: the commands committed records ran keep running."""
    if "was" in field.metadata:
        parser.add_argument(f"--{field.metadata['was'].replace('_', '-')}", dest=field.name, type=kind,
                            help=argparse.SUPPRESS)  # fmt: skip


class Setting(argparse.Action):
    """A flag that writes its value into the run config's flags layer as it is parsed: ``args.settings``, nested as
    the YAML (``--learning_rate 1e-5`` -> ``{"trainer": {"learning_rate": 1e-5}}``), at ``key`` (``section.name``;
    :meth:`learners.pipeline.runs.run_config.RunConfig.load` takes it as its ``flags``). A flag with a ``type`` keeps
    the value it gives; one without is read as YAML (``nargs="*"``, TRL's spellings: ``--bf16`` alone is ``true``,
    several values a list); one with ``nargs=0`` writes its ``const``. Given twice, the last one holds. ``args.DEST``
    is set only when the flag is given."""

    def __init__(self, option_strings, dest, *, key: str, nargs=None, const=None, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=argparse.SUPPRESS, **kwargs)
        self.key = key

    def __call__(self, parser, namespace, values, option_string=None):
        from ..pipeline.runs.config import merge_layer, nested, parse_override_value
        from ..pipeline.runs.trl_args import yaml_value

        if self.nargs == 0:
            value = self.const
        elif self.type is None:
            value = parse_override_value(self.key, yaml_value(values if isinstance(values, list) else [values]))
        else:
            value = values
        namespace.settings = merge_layer(getattr(namespace, "settings", None) or {}, nested(self.key, value))
        setattr(namespace, self.dest, value)
