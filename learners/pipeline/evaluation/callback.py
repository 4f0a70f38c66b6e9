"""The eval-every-N-steps callback of a training run."""

from __future__ import annotations

import weakref


def make_eval_callback(eval_rows: list[dict], settings, task, tokenizer):
    """The eval-every-N-steps callback of ``settings`` (a run's :class:`~learners.pipeline.runs.run_config.
    EvalSection`; logs ``eval_pass@1``: the ``eval_`` prefix files it under ``eval/`` in TensorBoard and wandb, as HF's
    own eval metrics). The task is recorded in checkpoints by the base trainer."""
    from transformers import TrainerCallback

    from ...sampling import HFSampler
    from ...sampling.trainer_sampler import gathered_policy, lockstep_forward
    from .evaluate import evaluate

    every, limit = settings.every, settings.limit
    rows = eval_rows[:limit] if limit else eval_rows
    sampling = dict(samples=settings.samples, temperature=settings.temperature,
                    max_new_tokens=settings.max_new_tokens, seed=settings.seed)  # fmt: skip

    class EvalCallback(TrainerCallback):
        """Evaluate the policy on the eval split at step 0, every ``every`` steps and at the end."""

        def __init__(self):
            self._trainer = None  # a weak reference: no trainer <-> callback cycle keeping a finished trainer alive
            self.done: set[int] = set()

        @property
        def trainer(self):
            return self._trainer() if self._trainer is not None else None

        @trainer.setter
        def trainer(self, trainer):
            self._trainer = weakref.ref(trainer) if trainer is not None else None

        def _run(self, state, control=None):
            step = state.global_step
            if not rows or not every or step in self.done:
                return
            self.done.add(step)
            trainer, main = self.trainer, state.is_world_process_zero
            # one eval, on the main process; every process enters the gather of sharded parameters, and where
            # a forward is a collective (FSDP, ZeRO-3) every process runs the same eval (same rows and seed)
            with gathered_policy(trainer) as model:
                if not (main or lockstep_forward(trainer)):
                    return
                was_training = model.training
                device = next(model.parameters()).device
                sampler = HFSampler(model, tokenizer, batch_size=settings.batch_size, device=device)
                report = evaluate(sampler, tokenizer, rows, task=task, **sampling)
                if was_training:
                    model.train()
            if not main:
                return
            overall = report["overall"]
            low, high = overall["pass@1_ci95"]
            logs = {"eval_pass@1": overall["pass@1"], "eval_pass@1_low": low, "eval_pass@1_high": high}
            k = report["samples"]
            if f"pass@{k}" in overall and k > 1:
                logs[f"eval_pass@{k}"] = overall[f"pass@{k}"]
            logs["eval_format_rate"] = overall["format_rate"]
            logs["eval_puzzles"], logs["eval_samples"] = overall["n_puzzles"], k  # what the curve's plot says it is
            should_log = control.should_log if control is not None else False
            self.trainer.log(logs)  # model is in eval mode here: TRL flushes only (empty) eval metrics
            if control is not None:  # Trainer.log resets should_log; keep this step's regular log
                control.should_log = should_log

        def on_train_begin(self, args, state, control, **kwargs):
            # after a resume, the restored history already holds the evals up to the checkpoint, and the resume
            # step itself is not on the schedule (unless it is a multiple of `every`, evaluated then)
            self.done |= {e["step"] for e in state.log_history if "eval_pass@1" in e or "eval/pass@1" in e}
            if state.global_step == 0:
                self._run(state)

        def finish_restored(self, state):
            """The end-of-training eval of a run restored from its last checkpoint (not trained again)."""
            self.done |= {e["step"] for e in state.log_history if "eval_pass@1" in e or "eval/pass@1" in e}
            self._run(state)

        def on_step_end(self, args, state, control, **kwargs):
            if every and state.global_step % every == 0:
                self._run(state, control)

        def on_train_end(self, args, state, control, **kwargs):
            self._run(state)

    return EvalCallback()
