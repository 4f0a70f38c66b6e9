"""The training pipeline around the learners, in three subpackages and the pieces they share:

- :mod:`.runs`: ``countdown train`` and the demo: run configs, their checks, the one run driver, the run's folder and
  record, rollout routes, the curriculum callback, progress lines and plots;
- :mod:`.evaluation`: ``countdown eval`` and the in-run evals: pass@k with intervals (:mod:`.evaluation.statistics`),
  checkpoint and multi-turn evals, reports;
- :mod:`.models`: which model a run loads (``tiny``, the shipped warm start, pretrained, a checkpoint), the embedded
  tiny model and its tokenizer, SFT training and the shipped warm start's recipe;
- :mod:`.data`: prompt datasets and the task recorded with a checkpoint; :mod:`.compare`: learners side by side;
  ``configs/``: the YAML presets; ``tiny_warm_start*/``: the shipped warm starts.

Nothing here is an algorithm: learners live in their own packages (``learners.grpo``, ``learners.ps_ppo``, ...)
and are found through :mod:`learners.core.registry`.
"""
