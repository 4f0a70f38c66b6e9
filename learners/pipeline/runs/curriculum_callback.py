"""The trainer callback of a curriculum run: the training loop's side of
:class:`countdown_env.procedural.CountdownCurriculum` (whose levels and schedule stay in ``countdown_env``)."""

from __future__ import annotations

from transformers import TrainerCallback

from countdown_env.procedural import CountdownCurriculum


class CurriculumCallback(TrainerCallback):
    """At the start of training, the levels of a resumed run come back from the log history
    (:meth:`~CountdownCurriculum.restore`); each logged line feeds the curriculum's metric to it and records its
    levels in that step's log entry (:meth:`~CountdownCurriculum.observe`)."""

    def __init__(self, curriculum: CountdownCurriculum) -> None:
        self.curriculum = curriculum

    def on_train_begin(self, args, state, control, **kwargs):
        self.curriculum.restore(state.log_history)

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.curriculum.observe(logs, state.global_step, state.log_history)
