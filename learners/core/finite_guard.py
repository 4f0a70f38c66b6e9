"""Stop a run whose loss or weights stop being finite, before the step is logged or saved.

transformers hides a NaN loss from the logs (``logging_nan_inf_filter`` replaces it with the running mean) and an
all-NaN model trains, checkpoints and finishes with a normal summary. :class:`FiniteGuard` notes every micro-batch's
loss (a device-side flag: no synchronisation per micro-batch) and, at the end of each optimiser step — after the
update, before transformers logs, evaluates or saves that step — checks the flag and the trainable weights once. A
non-finite value raises :class:`NonFiniteTraining`, a one-line ``RuntimeError`` naming the step, so the newest
checkpoint on disk stays the last good one. Under several processes the verdict is reduced over them (every rank
stops at the same step).
"""

from __future__ import annotations

from typing import Any

import torch


class NonFiniteTraining(RuntimeError):
    """The loss or the weights became NaN or infinite (one line for the user)."""


class FiniteGuard:
    """A per-step verdict on the loss (:meth:`note_loss`) and the weights (:meth:`check`)."""

    def __init__(self) -> None:
        self._bad_loss: torch.Tensor | None = None

    def note_loss(self, loss: torch.Tensor) -> None:
        """Remember whether this micro-batch's loss is finite (no device synchronisation)."""
        bad = ~torch.isfinite(loss.detach()).all()
        self._bad_loss = bad if self._bad_loss is None else self._bad_loss | bad

    def problem(self, model) -> str | None:
        """``"the loss"``, ``"the weights (NAME)"`` or ``None``; resets the loss flag for the next step."""
        bad_loss, self._bad_loss = self._bad_loss, None
        params = [(name, p) for name, p in model.named_parameters() if p.requires_grad] if model is not None else []
        flags = [~torch.isfinite(p.detach()).all() for _, p in params]
        device = params[0][1].device if params else torch.device("cpu")
        loss_flag = bad_loss.to(device) if bad_loss is not None else torch.zeros((), dtype=torch.bool, device=device)
        verdict = torch.stack([loss_flag, *flags]).to(torch.int32)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(verdict, op=torch.distributed.ReduceOp.MAX)
        bad = verdict.nonzero().flatten().tolist()  # one synchronisation per optimiser step
        if not bad:
            return None
        if bad[0] == 0:
            return "the loss"
        return f"the weights ({params[bad[0] - 1][0]})"

    def check(self, step: int, model, args: Any = None) -> None:
        """Raise :class:`NonFiniteTraining` naming ``step`` when the loss or the weights are not finite."""
        what = self.problem(model)
        if what is None:
            return
        hint = ""
        if args is not None:
            hint = f" (learning_rate {args.learning_rate:g}, max_grad_norm {args.max_grad_norm:g})"
        raise NonFiniteTraining(
            f"training stopped at step {step}: {what} became NaN or infinite{hint}; nothing of this step was saved, "
            "so the newest checkpoint is the last good one: lower the learning rate or check the config"
        )

    def callback(self):
        """A ``TrainerCallback`` that checks at every step's end (before that step's log, eval and save). It holds
        the guard, not the trainer (no reference cycle keeps a finished trainer alive)."""
        from transformers import TrainerCallback

        guard = self

        class FiniteCheck(TrainerCallback):
            def on_step_end(self, args, state, control, model=None, **kwargs):
                guard.check(state.global_step, model, args)

        return FiniteCheck()
