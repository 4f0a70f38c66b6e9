"""The learners' ``countdown`` subcommands, one module each: ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``: argparse and one call into the library (:mod:`learners.pipeline`), nothing else. They are
registered with the ``countdown`` command through the ``countdown.commands`` entry points in ``pyproject.toml``
(:mod:`countdown_env.cli` names no learner module)."""
