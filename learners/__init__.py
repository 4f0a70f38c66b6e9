"""TRL-based learners for Countdown, one package per algorithm (TRL-experimental style).

``learners.core``
    the base trainer :class:`~learners.core.trainer.CountdownGRPOTrainer` (a ``trl.GRPOTrainer`` with two
    seams), the base config, prefix batches and the registry :data:`learners.core.registry.LEARNERS`.
``learners.grpo``, ``.contrastive``, ``.oracle_shaped``, ``.ps_ppo``, ``.s_grpo``, ``.t_spmo``
    one algorithm each: ``spec.py`` (its registration, torch-free), ``config.py`` (a config dataclass),
    ``trainer.py`` (its seam overrides), its maths in further modules, and the equations in the package docstring.
    An algorithm imports ``learners.core``, ``learners.sampling`` and ``countdown_env``, and another algorithm
    package only as its base (``contrastive`` builds on ``grpo``, ``oracle_shaped`` on both).
``learners.sampling``
    one sampler protocol and its backends (``transformers``, a ``vllm.LLM``, a vLLM server): eval, env rollouts,
    T-SPMO replay and the warm-start measurement draw completions through it. Imports ``learners.core`` only for
    the vLLM CPU engine defaults.
``learners.pipeline``
    ``countdown train``/``eval``/``compare``, the demo, SFT, the embedded tiny model, plots and YAML presets.

Importing a package imports neither torch nor trl; its names load on first use.
"""
