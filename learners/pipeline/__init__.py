"""The training pipeline around the learners, in three subpackages and the pieces they share:

- :mod:`.runs`: ``countdown train``, the demo and the warm start: run configs, their checks, the one run driver, the
  run's folder and record, the curriculum callback, SFT runs, progress lines and plots;
- :mod:`.evaluation`: ``countdown eval`` and the in-run evals: pass@k with intervals (:mod:`.evaluation.statistics`),
  checkpoint and multi-turn evals, reports;
- :mod:`.models`: which model a run loads (``tiny``, the shipped warm start, pretrained, a checkpoint), the embedded
  tiny model and its tokenizer, pretrained models installed offline;
- shared by the three: :mod:`.data` (prompt datasets, the task recorded with a checkpoint) and :mod:`.rollouts`
  (environment episodes as TRL's ``rollout_func``, also played by the multi-turn eval); :mod:`.compare`: learners
  side by side; ``configs/``: the YAML presets; ``tiny_warm_start*/``: the shipped warm starts.

Nothing here is an algorithm: learners live in their own packages (``learners.grpo``, ``learners.ps_ppo``, ...)
and are found through :mod:`learners.core.registry`.
"""
