"""Named tasks: a :class:`~countdown_env.task.CountdownTask` under a name, for tasks that others' results are quoted
on, so that a recipe, an eval set and a reader mean the same puzzles, rules, prompt and reward.

- ``tinyzero-3to4``: built like TinyZero's Countdown data and reward (https://github.com/Jiayi-Pan/TinyZero:
  ``examples/data_preprocess/countdown.py`` reads the Hub set ``Jiayi-Pan/Countdown-Tasks-3to4``;
  ``verl/utils/reward_score/countdown.py`` scores it). 3 or 4 numbers (drawn per puzzle, equal odds) in 1..99, every
  number used exactly once (TinyZero's ``validate_equation``: the sorted numbers of the answer equal the sorted
  given numbers), the ``tinyzero`` prompt (``<think>``/``<answer>``), and TinyZero's reward: 1 correct, 0.1 for a
  wrong answer inside an answer block (``format_score``), 0 with no answer. Targets 1..100 drawn as the project's
  generator draws them (a random expression over all the numbers): the Hub set's own target range could not be read
  here, so this is a choice, not a copy. ``datasets/tinyzero_3to4.jsonl`` is 512 of its puzzles
  (``countdown_env.splits.eval_sets``); datasets/README.md states how it matches TinyZero's data and how it differs.
"""

from __future__ import annotations

from .task import CountdownTask

TASK_PRESETS: dict[str, CountdownTask] = {
    "tinyzero-3to4": CountdownTask(
        n_numbers=(3, 4),
        value_range=(1, 99),
        target_range=(1, 100),
        use_all_numbers=True,
        template="tinyzero",
        format_score=0.1,
        seed=0,
    ),
}
"""Name -> task (see the module docstring for each)."""


def task_preset(name: str) -> CountdownTask:
    """The task named ``name``; an unknown name is a one-line ``ValueError`` listing the known ones."""
    try:
        return TASK_PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown task preset {name!r}; choose one of {sorted(TASK_PRESETS)}") from None
