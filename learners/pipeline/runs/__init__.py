"""Runs: a training run from its YAML config to its folder, and the runs built on it.

- :mod:`.config`: the YAML presets of ``countdown train`` and their ``--set`` overrides; :mod:`.trl_args` TRL's
  spellings of the same; :mod:`.checks` every check of a config that needs no data and no weights;
- :mod:`.driver`: the one run driver (data, task, model, trainer, callbacks, the run's end); :mod:`.folder` and
  :mod:`.record` the run's folder and ``resolved_config.json``; :mod:`.processes` who writes under
  ``accelerate launch``;
- :mod:`.curriculum_callback` the curriculum's trainer callback; :mod:`.trainer_progress` progress lines;
  :mod:`.plotting` ``training.png``;
- :mod:`.sft_training`: an SFT run (TRL's ``SFTTrainer`` on solver-derived traces); :mod:`.warm_start`: the shipped
  warm start's recipe and report (``countdown warm-start``); :mod:`.demo`: ``countdown demo-train``.
"""
