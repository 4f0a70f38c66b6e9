"""The one eval callback of a training run (``countdown train``, ``demo-train`` and each run of ``compare``)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from transformers import TrainerCallback


def policy_sampler(trainer, model, tokenizer, batch_size: int):
    """The sampler an eval of the live policy uses: the trainer's colocated vLLM engine, synced to the current policy
    (TRL syncs it only before generating a batch, so after an optimiser step it still holds the weights before it),
    when it has one; ``transformers`` ``generate`` on ``model`` otherwise. On the CPU a real model generates several
    times faster in the engine (benchmarks/results/smollm2_135m), and the eval samples from the very engine the
    training batches come from."""
    from ...sampling import HFSampler, VLLMSampler

    if getattr(trainer, "use_vllm", False) and getattr(trainer, "vllm_mode", None) == "colocate":
        if getattr(trainer, "async_rollouts", None) is not None:
            trainer.async_rollouts.wait_idle()  # the engine is the generation worker's until its batches are done
        trainer.vllm_generation.sync_weights()
        return VLLMSampler(trainer.vllm_generation.llm, tokenizer=trainer.processing_class)
    return HFSampler(model, tokenizer, batch_size=batch_size, device=next(model.parameters()).device)


def evaluate_policy(trainer, model, rows, settings, task, tokenizer) -> dict[str, Any]:
    """:func:`learners.pipeline.evaluation.evaluate.evaluate` of the live policy on ``rows`` with ``settings`` (an
    :class:`~learners.pipeline.runs.run_config.EvalSection`), per-puzzle results kept, leaving the training RNG and
    the train/eval mode as they were."""
    import torch

    from .evaluate import evaluate

    was_training = model.training
    device = next(model.parameters()).device
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        report = evaluate(
            policy_sampler(trainer, model, tokenizer, settings.batch_size),
            tokenizer,
            rows,
            task=task,
            samples=settings.samples,
            temperature=settings.temperature,
            max_new_tokens=settings.max_new_tokens,
            seed=settings.seed,
            per_puzzle=True,
        )
    if was_training:
        model.train()
    return report


class EvalCallback(TrainerCallback):
    """Evaluate the policy at step 0, every ``settings.every`` steps and at the end (``every`` 0: never), on the first
    ``settings.limit`` rows, and hand each report to ``consume(step, report)``.

    One eval per step, on the main process: every process enters the gather of sharded parameters, and where a
    forward is a collective (FSDP, ZeRO-3) every process runs the same eval (same rows and seed). ``consume`` is
    called on every process, with ``None`` on the others. The default logs ``eval_pass@1`` (its interval, pass@k,
    format rate) into the trainer's history: the ``eval_`` prefix files it under ``eval/`` in TensorBoard and wandb,
    as HF's own eval metrics. ``done``: the steps already evaluated (a resumed run's). ``shared_step0``: step-0
    reports by ``step0_key``, filled by the first run that evaluates and reused by the next (``compare``'s runs of one
    seed start from one model and sample their eval alike, so their step 0 is computed once per seed; the other
    processes keep the key only, so that every process decides alike)."""

    def __init__(
        self,
        rows: list[dict],
        settings,
        task,
        tokenizer,
        *,
        consume: Callable[[int, dict | None], None] | None = None,
        done: set[int] | None = None,
        shared_step0: dict | None = None,
        step0_key: Any = None,
    ):
        self.rows = rows[: settings.limit] if settings.limit else rows
        self.settings, self.task, self.tokenizer = settings, task, tokenizer
        self.consume = consume or self.log_report
        self.done = done if done is not None else set()
        self.shared_step0, self.step0_key = shared_step0, step0_key
        self._trainer = None  # a weak reference: no trainer <-> callback cycle keeping a finished trainer alive
        self._control = None

    @property
    def trainer(self):
        return self._trainer() if self._trainer is not None else None

    @trainer.setter
    def trainer(self, trainer):
        self._trainer = weakref.ref(trainer) if trainer is not None else None

    @property
    def active(self) -> bool:
        return bool(self.rows) and self.settings.every > 0

    def evaluate(self, state, control=None) -> None:
        """Evaluate at ``state.global_step`` unless it is done already."""
        from ...sampling.trainer_sampler import gathered_policy, lockstep_forward

        step = state.global_step
        if not self.active or step in self.done:
            return
        self.done.add(step)
        trainer, main = self.trainer, state.is_world_process_zero
        shared = self.shared_step0 if step == 0 else None
        reused = shared is not None and self.step0_key in shared
        report = shared[self.step0_key] if reused else None
        if not reused:
            with gathered_policy(trainer) as model:
                if main or lockstep_forward(trainer):
                    report = evaluate_policy(trainer, model, self.rows, self.settings, self.task, self.tokenizer)
            if shared is not None:
                shared[self.step0_key] = report if main else None
        self._control = control
        self.consume(step, report if main else None)

    def log_report(self, step: int, report: dict | None) -> None:
        """The default ``consume``: the report's figures into the trainer's log history (main process)."""
        if report is None:
            return
        overall = report["overall"]
        low, high = overall["pass@1_ci95"]
        logs = {"eval_pass@1": overall["pass@1"], "eval_pass@1_low": low, "eval_pass@1_high": high}
        k = report["samples"]
        if f"pass@{k}" in overall and k > 1:
            logs[f"eval_pass@{k}"] = overall[f"pass@{k}"]
        logs["eval_format_rate"] = overall["format_rate"]
        logs["eval_puzzles"], logs["eval_samples"] = overall["n_puzzles"], k  # what the curve's plot says it is
        control = self._control
        should_log = control.should_log if control is not None else False
        self.trainer.log(logs)  # model is in eval mode here: TRL flushes only (empty) eval metrics
        if control is not None:  # Trainer.log resets should_log; keep this step's regular log
            control.should_log = should_log

    def finish_restored(self, state) -> None:
        """The end-of-training eval of a run restored from its last checkpoint (not trained again)."""
        self._mark_logged(state)
        self.evaluate(state)

    def _mark_logged(self, state) -> None:
        # after a resume, the restored history already holds the evals up to the checkpoint
        self.done |= {e["step"] for e in state.log_history if "eval_pass@1" in e or "eval/pass@1" in e}

    def on_train_begin(self, args, state, control, **kwargs):
        # the resume step itself is not on the schedule (unless it is a multiple of `every`, evaluated then)
        self._mark_logged(state)
        if state.global_step == 0:
            self.evaluate(state)

    def on_step_end(self, args, state, control, **kwargs):
        if self.active and (state.global_step % self.settings.every == 0 or state.global_step >= state.max_steps):
            self.evaluate(state, control)

    def on_train_end(self, args, state, control, **kwargs):
        self.evaluate(state)
