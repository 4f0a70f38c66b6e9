"""Evaluation: pass@1 and pass@k of a model on a split, during a run and after it.

- :mod:`.evaluate`: sample k completions per puzzle, verify them, report pass@1/pass@k with intervals;
- :mod:`.statistics`: the project's one statistics module (pass@k, bootstrap and Student t intervals);
- :mod:`.eval_models`: evaluating a checkpoint folder (its task, its sampler backend);
- :mod:`.turns`: multi-turn evaluation; :mod:`.callback`: the eval-every-N-steps callback of a run;
- :mod:`.report`: the report on disk, on screen and as a Markdown table.
"""
