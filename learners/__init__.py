"""TRL-based learners for Countdown, one package per algorithm (TRL-experimental style).

``learners.core``
    the base trainer :class:`~learners.core.trainer.CountdownGRPOTrainer` (a ``trl.GRPOTrainer`` with two
    seams), the base config, prefix batches and the registry :data:`learners.core.registry.LEARNERS`.
``learners.grpo``, ``learners.contrastive``, ``learners.ps_ppo``, ``learners.s_grpo``, ``learners.t_spmo``
    one algorithm each: ``config.py`` (a config dataclass), ``trainer.py`` (its seam overrides), its maths in
    further modules, and the equations in the package docstring. An algorithm imports only ``learners.core``
    and ``countdown_env``.
``learners.pipeline``
    ``countdown train``/``eval``/``compare``, the demo, SFT, the embedded tiny model, plots and YAML presets.

Importing a package imports neither torch nor trl; its names load on first use.
"""
