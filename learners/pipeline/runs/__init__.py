"""Runs: one training run from its YAML config to its folder.

- :mod:`.config`: the YAML presets of ``countdown train`` and their ``--set`` overrides; :mod:`.trl_args` TRL's
  spellings of the same; :mod:`.checks` every check of a config that needs no data and no weights;
- :mod:`.driver`: the one run driver (data, task, model, trainer, callbacks, the run's end); :mod:`.folder` and
  :mod:`.record` the run's folder and ``resolved_config.json``; :mod:`.processes` who writes under
  ``accelerate launch``;
- :mod:`.rollouts` the rollout routes (env episodes, TRL tools); :mod:`.curriculum_callback` the curriculum's
  trainer callback; :mod:`.trainer_progress` progress lines; :mod:`.plotting` ``training.png``;
- :mod:`.demo`: ``countdown demo-train``.
"""
