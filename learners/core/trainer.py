"""The base trainer every Countdown learner subclasses: ``trl.GRPOTrainer`` plus exactly two seams.

``CountdownGRPOTrainer`` accepts the same constructor arguments as ``trl.GRPOTrainer`` (trl 1.16.x) and one
optional keyword, ``task`` (a :class:`countdown_env.task.CountdownTask`: template tags, rules and format bonus of
the reward; default ``CountdownTask()``). With ``reward_funcs=None`` the reward comes from the environment: TRL's
batch is turned into :class:`countdown_env.trajectory.Trajectory` records by the env's batched scorer
``score_trajectories`` (the very function the token-level Gymnasium env calls at episode end) with the task's
reward settings, so trainer and env cannot disagree. The dataset must then carry ``numbers`` and ``target``
columns (see :func:`learners.pipeline.data.prompt_dataset`).

The seams (a learner overrides these and nothing else)
------------------------------------------------------
1. ``shape_batch(self, batch, rollout) -> batch`` runs once per generation batch, on every process, right after
   TRL generated, scored and computed its advantages, *before* TRL shuffles and splits the batch.
   ``batch`` is TRL's dict: ``prompt_ids``/``prompt_mask`` (B,P), ``completion_ids``/``completion_mask`` (B,T),
   ``advantages`` (B,), ``num_items_in_batch`` (scalar), optional ``old_per_token_logps``,
   ``ref_per_token_logps``, ``sampling_per_token_logps``, ``importance_sampling_ratio``, ``tool_mask``.
   B is this process's rows. A learner may
   - set per-token advantages: ``batch["advantages"] = A`` with shape (B,T) (TRL's loss accepts them);
   - select loss tokens with :meth:`set_loss_mask` (stored in ``tool_mask``; never zero ``completion_mask``
     per token: it is also the attention mask);
   - add extra per-row tensors with first dimension B (they follow TRL's shuffle/split).
   ``num_items_in_batch`` is recomputed from the loss mask after the seam, so dropped tokens leave the
   token-level normalisers (``dapo``, ``bnpo``) too.
   ``rollout`` (:class:`~learners.core.rollout.Rollout`) holds the gathered reward totals and verdicts of *all*
   processes in group order, the group size, this process's row slice, the puzzles and the trajectories of the
   local rows (built once by :meth:`make_rollout`; a learner reads them, never rescoring a completion).
2. Before the loss, per (shuffled) micro-batch, inside the base's ``_compute_loss`` (which no learner
   overrides). Three hooks, called in this order:

   - ``select_loss_tokens(self, inputs) -> inputs``: select tokens (loss mask), or adjust per-token tensors
     computed from the micro-batch (e.g. advantages that depend on the current policy's log-probs, obtained
     with :meth:`per_token_logps`). Return a new dict rather than mutating ``inputs``: TRL reuses the buffered
     micro-batch when ``num_iterations > 1``.
   - ``truncate_to_loss_tokens(self) -> bool``: when true, TRL's loss runs on prefixes only: the rows are sorted
     into at most ``args.max_buckets`` length buckets (a :class:`~learners.core.config.CountdownConfig`
     field), each cut after its rows' last loss token, and the bucket losses are recombined exactly
     (:func:`learners.core.prefix_batches.prefix_loss`; equal bucket sizes on every rank under several processes).
     The loss and its gradient are unchanged (causal attention); the forward/backward shrinks. The share of
     completion columns actually run is logged as ``loss/forward_token_frac``. Default: ``False`` (one call
     of TRL's loss on the whole micro-batch).
   - ``loss_penalty(self, model) -> Tensor | None``: an extra term (e.g. an L2 penalty on the weights) added
     to TRL's loss. Return it at the scale of one optimiser step: the base divides it by the gradient
     accumulation steps in training, so it counts once per step. Default: ``None``.

Groups and processes
--------------------
Rows of one prompt group (``num_generations`` completions) are contiguous *in the gathered order* during
seam 1; under several processes a group may be spread over processes. Compute group statistics on gathered
tensors (``rollout.rewards``, or :meth:`gather_rows` for per-token tensors), then keep this process's rows with
``rollout.local(...)``. Every process must call :meth:`gather_rows` the same number of times (it is a
collective operation).

Helpers for learners: :meth:`gather_rows`, :meth:`loss_mask`, :meth:`set_loss_mask`, :meth:`per_token_logps`,
:meth:`recount_items`, :meth:`log_metric`, :meth:`log_ratio_metrics`.

Logged metrics (under ``countdown/``): ``accuracy`` (share of answers the task's verifier accepts and that ended
within the budget, whatever the reward functions pay: :mod:`learners.core.verdicts`' rule; logged when the rows have
puzzles), ``format_rate``,
``mean_completion_length`` (tokens), ``truncation_rate`` (no end-of-turn token within the budget),
``homogeneous_group_frac`` (groups whose rewards all agree: zero GRPO advantage).

A loss or a trainable weight that becomes NaN or infinite stops the run at that step with one line, before the step
is logged or saved (:mod:`learners.core.finite_guard`); TRL's prompt sampler is made resumable across epochs
(:mod:`learners.core.epoch_sampler`).

Checkpoints: every ``checkpoint-N`` also holds the task (``countdown_task.json``) and whatever
``checkpoint_writers`` add, then a manifest of sha256s written last; it is built beside its place and renamed whole
into it, so a failed save leaves none; ``save_total_limit`` rotation happens after that
(:mod:`learners.core.checkpoints`), so the newest complete checkpoint is never removed.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .prefix_batches import prefix_loss
from .rollout import Rollout, puzzles_from_inputs, weighted_reward_total
from .trl_vllm_import import load_trl_vllm, trl_without_vllm

with trl_without_vllm():  # vLLM loads when a trainer generates with it, not with every import of TRL's trainer
    from trl import GRPOConfig, GRPOTrainer

__all__ = ["CountdownGRPOTrainer", "LossCall", "Rollout", "puzzles_from_inputs"]


@dataclass(frozen=True)
class LossCall:
    """What the last call of the loss ran on (:attr:`CountdownGRPOTrainer.last_loss_call`): ``loss_tokens`` (tokens
    of the loss mask after seam 2), ``completion_tokens`` (the micro-batch's completion ids, padding included) and
    ``forward_tokens`` (the completion columns its forward ran: all of them, or the prefix buckets' share).
    ``loss_tokens`` is a 0-d tensor on the batch's device (read it with ``int()``)."""

    loss_tokens: torch.Tensor
    completion_tokens: int
    forward_tokens: int


class CountdownGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` with Countdown rewards from the environment, Countdown metrics and two seams.

    See the module docstring for the seam API. Extra keyword argument (beyond ``GRPOTrainer``'s):
        task: the :class:`~countdown_env.task.CountdownTask` whose reward settings (answer/reasoning tags of its
            template, ``use_all_numbers``, ``integer_intermediates``, ``format_bonus``) score completions when
            ``reward_funcs`` is ``None``, and which learners read for tags (``self.reward_config``).
            Default: ``CountdownTask()``.
    """

    def _add_overlong_penalty(self, reward_funcs, args):
        """DAPO's soft overlong punishment (``overlong_buffer_fraction`` > 0) appended as the last reward function,
        weighted ``overlong_penalty_weight``; ``self._overlong_column`` is its column (``None`` when off)."""
        self._overlong_column: int | None = None
        fraction = getattr(args, "overlong_buffer_fraction", 0.0)
        if fraction <= 0:
            return reward_funcs, args
        from trl.rewards import get_soft_overlong_punishment

        reward_funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
        buffer = max(1, round(fraction * args.max_completion_length))
        penalty = get_soft_overlong_punishment(args.max_completion_length, buffer)
        args = copy.copy(args)  # the weights below are this trainer's; leave the caller's config as it was
        if args.reward_weights is not None and len(args.reward_weights) == len(reward_funcs):
            args.reward_weights = [*args.reward_weights, args.overlong_penalty_weight]
        elif args.reward_weights is None and args.overlong_penalty_weight != 1.0:
            args.reward_weights = [1.0] * len(reward_funcs) + [args.overlong_penalty_weight]
        self._overlong_column = len(reward_funcs)
        return [*reward_funcs, penalty], args

    def __init__(self, model, reward_funcs=None, args=None, *trainer_args, task=None, **trainer_kwargs):
        from countdown_env.task import CountdownTask

        if task is not None and not isinstance(task, CountdownTask):
            raise TypeError(f"task must be a countdown_env.task.CountdownTask, got {type(task).__name__}")
        self.task = task if task is not None else CountdownTask()
        self.last_loss_call: LossCall | None = None
        self._rollout_trajectories: list[Any] | None = None
        self._rollout_rewards_per_func: torch.Tensor | None = None
        self.uses_env_reward = reward_funcs is None and trainer_kwargs.get("environment_factory") is None
        if self.uses_env_reward:
            reward_funcs = [self.countdown_env_reward]
        reward_funcs, args = self._add_overlong_penalty(reward_funcs, args)
        if getattr(args, "async_max_staleness", None) is not None:
            from .async_rollouts import async_problem

            problem = async_problem(type(self), args, trainer_kwargs)
            if problem is not None:
                raise ValueError(problem)
        engine_settings = contextlib.nullcontext()
        if getattr(args, "use_vllm", False):
            load_trl_vllm()  # this module imported TRL's trainer without vLLM
            if not torch.cuda.is_available():
                from .vllm_sync import colocated_engine_settings, cpu_engine_defaults

                cpu_engine_defaults()
                engine_settings = colocated_engine_settings()  # float32 in a bf16 run too: see there
        with engine_settings:
            super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        # checkpoints are built beside their place, get a manifest written last, are renamed whole into place and
        # rotated after that (learners/core/checkpoints.py)
        self.checkpoint_writers: list[Callable[[Path], Any]] = [self.task.save]
        self._checkpoints_kept, self.args.save_total_limit = self.args.save_total_limit, None
        self._checkpoint_staging: str | None = None
        # a NaN/inf loss or weight stops the run at that step, before it is logged or saved (core/finite_guard.py)
        from .finite_guard import FiniteGuard

        self.finite_guard = FiniteGuard()
        self.add_callback(self.finite_guard.callback())
        if self.accelerator.num_processes > 1 and self.accelerator.device.type == "cpu":
            from .checkpoints import load_indexed_cpu_locations

            load_indexed_cpu_locations()  # a multi-process CPU run resumes its optimizer from "cpu:RANK"
        if self.use_vllm:
            from .vllm_sync import use_layerwise_sync

            use_layerwise_sync(self)  # colocated vLLM on the CPU: TRL's per-parameter sync cannot load there
        self.async_rollouts = None  # the generation worker, for the length of train() (core/async_rollouts.py)

    @classmethod
    def async_refusal(cls, args) -> str | None:
        """Why this learner, with ``args``, cannot train on asynchronous rollouts
        (:mod:`learners.core.async_rollouts`), or ``None``."""
        return None

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """With async rollouts, the step's batches and the next steps' read ahead (same order as without)."""
        if self.async_rollouts is None:
            return super().get_batch_samples(epoch_iterator, num_batches, device)
        fetch = lambda: super(CountdownGRPOTrainer, self).get_batch_samples(epoch_iterator, num_batches, device)  # noqa: E731
        return self.async_rollouts.batch_samples(fetch, self.async_rollouts.max_staleness)

    def _generate(self, prompts):
        """TRL's generation, through the async worker when there is one (training batches only)."""
        if self.async_rollouts is None or not self.model.training:
            return super()._generate(prompts)
        return self.async_rollouts.generate(prompts, super()._generate)

    def release_generation_engine(self) -> bool:
        """Free a colocated vLLM engine and its KV cache once training is over (:mod:`learners.core.vllm_release`:
        it outlived the trainer, 1 GiB per run on the CPU); returns whether there was one."""
        from .vllm_release import release_colocated_engine

        return release_colocated_engine(self)

    def train(self, *args, **kwargs):
        """TRL's training loop; with ``async_max_staleness`` set, its generation worker runs for the loop's length and
        is stopped when the loop ends, however it ends (no thread is left behind)."""
        if getattr(self.args, "async_max_staleness", None) is None:
            return super().train(*args, **kwargs)
        from .async_rollouts import AsyncRollouts

        self.async_rollouts = AsyncRollouts(self, self.args.async_max_staleness)
        try:
            return super().train(*args, **kwargs)
        finally:
            self.async_rollouts.close()
            self.async_rollouts = None

    def _get_output_dir(self, trial) -> str:
        """Where TRL's save puts ``checkpoint-N``: the staging folder beside it while one is saved."""
        return getattr(self, "_checkpoint_staging", None) or super()._get_output_dir(trial)

    def _save_checkpoint(self, model, trial) -> None:
        """TRL's checkpoint save, built beside its place and renamed whole into it, with the ``checkpoint_writers``
        files and the manifest (:func:`learners.core.checkpoints.save_checkpoint_whole`)."""
        from .checkpoints import save_checkpoint_whole

        save = lambda: super(CountdownGRPOTrainer, self)._save_checkpoint(model, trial)  # noqa: E731
        save_checkpoint_whole(self, trial, save, self._checkpoints_kept)

    def training_step(self, model, inputs, *args, **kwargs):
        loss = super().training_step(model, inputs, *args, **kwargs)
        self.finite_guard.note_loss(loss)
        return loss

    def _get_train_sampler(self, dataset=None):
        """TRL's prompt sampler, with the epoch's shuffle restored on resume (:mod:`learners.core.epoch_sampler`)."""
        from trl.trainer.utils import RepeatSampler

        from .epoch_sampler import EpochRepeatSampler

        sampler = super()._get_train_sampler(dataset)
        return EpochRepeatSampler.like(sampler) if type(sampler) is RepeatSampler else sampler

    def create_model_card(self, *args, **kwargs):
        """TRL's model card, without its "fine-tuned version of [None](https://huggingface.co/None)" for a model
        that was loaded from a local folder (TRL names only Hub ids)."""
        super().create_model_card(*args, **kwargs)
        card = Path(self.args.output_dir) / "README.md"
        if self.is_world_process_zero() and card.is_file():
            text = card.read_text(encoding="utf-8")
            broken = "a fine-tuned version of [None](https://huggingface.co/None)"
            if broken in text:
                from countdown_env.helpers.atomic import write_text

                write_text(card, text.replace(broken, "trained from a local checkpoint (not a Hugging Face Hub model)"))

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        """transformers' missing/unexpected-key warnings on resume, without the false alarm for a tied weight: a
        checkpoint saves a tied LM head once (under the embedding's name), and transformers 5 no longer recognises
        it here, printing ``missing keys ... ['lm_head.weight']`` on every resume of a tied model. A missing key
        whose parameter is the same tensor as a loaded one is not missing; every other missing key is reported."""
        missing = list(getattr(load_result, "missing_keys", []) or [])
        if missing:
            aliases: dict[int, set[str]] = {}
            model = self.accelerator.unwrap_model(self.model)
            for name, parameter in model.named_parameters(remove_duplicate=False):
                aliases.setdefault(id(parameter), set()).add(name)
            loaded = {name for names in aliases.values() for name in names} - set(missing)
            tied = {name for names in aliases.values() if names & loaded for name in names & set(missing)}
            if tied:
                from types import SimpleNamespace

                load_result = SimpleNamespace(
                    missing_keys=[k for k in missing if k not in tied], unexpected_keys=load_result.unexpected_keys
                )
        super()._issue_warnings_after_load(load_result)

    @property
    def reward_config(self):
        """The task's :class:`~countdown_env.rewards.RewardConfig` (tags from its template, rules, format bonus)."""
        return self.task.reward_config

    # ----------------------------------------------------------------------------------------------- seams
    def shape_batch(self, batch: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
        """Seam 1 (after generation and scoring). Default: identity."""
        return batch

    def select_loss_tokens(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Seam 2, per micro-batch: select loss tokens or edit per-token tensors. Default: identity."""
        return inputs

    def truncate_to_loss_tokens(self) -> bool:
        """Seam 2: run TRL's loss on bucketed prefixes cut after each row's last loss token. Default: ``False``."""
        return False

    def loss_penalty(self, model) -> torch.Tensor | None:
        """Seam 2: a term added to TRL's loss, at the scale of one optimiser step. Default: ``None`` (nothing)."""
        return None

    @classmethod
    def _check_args(cls, args: GRPOConfig | None, config_class: type[GRPOConfig], default_output_dir: str):
        """``args`` if it is a ``config_class``; ``config_class(default_output_dir)`` when ``None``; else TypeError."""
        if args is None:
            return config_class(default_output_dir)
        if not isinstance(args, config_class):
            raise TypeError(f"{cls.__name__} needs args of type {config_class.__name__}, got {type(args).__name__}")
        return args

    # ---------------------------------------------------------------------------------- env reward
    def countdown_env_reward(self, prompts, completions, completion_ids, numbers=None, target=None, **kwargs):
        """TRL reward function: score the batch with the env's ``score_trajectories`` (1 correct, else 0)."""
        if numbers is None or target is None:
            raise ValueError(
                "the Countdown env reward needs 'numbers' and 'target' dataset columns "
                "(build the dataset with learners.pipeline.data.prompt_dataset) or pass reward_funcs"
            )
        from countdown_env import Puzzle

        puzzles = [Puzzle(ns, t) for ns, t in zip(numbers, target, strict=True)]
        trajectories = self.score_completions(puzzles, [list(ids) for ids in completion_ids])
        self._rollout_trajectories = trajectories
        return [float(t.reward) for t in trajectories]

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # Keep TRL's gathered (N, F) rewards for seam 1; TRL itself only hands advantages onwards.
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rollout_rewards_per_func = rewards_per_func
        return rewards_per_func

    # ------------------------------------------------------------------------------------- wiring
    def _generate_and_score_completions(self, inputs):
        self._rollout_trajectories = None
        batch = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        rollout = self.make_rollout(batch, inputs, self._rollout_rewards_per_func, mode, self._rollout_trajectories)
        self._log_rollout_metrics(batch, rollout)
        batch = self.shape_batch(batch, rollout)
        if batch is None:
            raise TypeError(f"{type(self).__name__}.shape_batch must return the batch dict")
        self.recount_items(batch)
        return batch

    def make_rollout(
        self,
        batch: dict[str, Any],
        inputs: Sequence[dict[str, Any]],
        rewards_per_func: torch.Tensor,
        mode: str = "train",
        env_trajectories: list[Any] | None = None,
    ) -> Rollout:
        """The :class:`Rollout` of one generation batch: one reward total per completion (the reward weights'
        sum), its puzzles and one verdict per completion (:mod:`learners.core.verdicts`), scored here once unless
        the env reward's ``env_trajectories`` already did. Collective (gathers the verdicts)."""
        from .verdicts import gathered_verdicts, scored_trajectories

        index = self.accelerator.process_index
        if env_trajectories is not None:  # the env reward built the rows' puzzles and scored them
            puzzles, trajectories = [t.puzzle for t in env_trajectories], env_trajectories
        else:
            puzzles = puzzles_from_inputs(inputs) or self._environment_puzzles(len(inputs))
            trajectories = scored_trajectories(self, batch, puzzles)
        return Rollout(
            rewards=weighted_reward_total(rewards_per_func, self.reward_weights),
            rewards_per_func=rewards_per_func,
            num_generations=self.num_generations if mode == "train" else self.num_generations_eval,
            process_slice=slice(index * len(inputs), (index + 1) * len(inputs)),
            inputs=list(inputs),
            puzzles=puzzles,
            trajectories=trajectories,
            verdicts=gathered_verdicts(self, trajectories, len(inputs), batch["completion_ids"].device),
            env_rewarded=env_trajectories is not None,
            mode=mode,
        )

    def _compute_loss(self, model, inputs):
        inputs = self.select_loss_tokens(inputs)
        if inputs is None:
            raise TypeError(f"{type(self).__name__}.select_loss_tokens must return the inputs dict")
        completion_tokens = int(inputs["completion_ids"].numel())
        forward_frac = 1.0
        if self.truncate_to_loss_tokens():
            loss, stats = prefix_loss(
                super()._compute_loss,
                model,
                inputs,
                self.loss_type,
                self.args.max_buckets,
                equal_rows=self.accelerator.num_processes > 1,  # TRL gathers per-row metrics in every call
            )
            forward_frac = stats["tokens"] / max(stats["full_tokens"], 1)
            self.log_metric("loss/forward_token_frac", forward_frac)
        else:
            loss = super()._compute_loss(model, inputs)
        self.last_loss_call = LossCall(
            loss_tokens=(self.loss_mask(inputs) != 0).sum().detach(),  # a tensor: no device sync per loss call
            completion_tokens=completion_tokens,
            forward_tokens=round(completion_tokens * forward_frac),
        )
        penalty = self.loss_penalty(model)
        if penalty is not None:
            steps = self.current_gradient_accumulation_steps if self.model.training else 1
            loss = loss + penalty / steps
        return loss

    def score_completions(self, puzzles: Sequence[Any], completion_ids: Sequence[Sequence[int]]) -> list[Any]:
        """The env's :class:`~countdown_env.trajectory.Trajectory` of each completion: the task's verdict and reward
        (``score_trajectories`` with the task's reward settings, this trainer's budget and stop ids)."""
        from countdown_env.trajectory import score_trajectories

        return score_trajectories(
            puzzles,
            completion_ids,
            self.processing_class,
            reward_config=self.reward_config,
            max_new_tokens=self.max_completion_length,
            stop_ids=list(self.eos_token_ids),
        )

    def _environment_puzzles(self, rows: int) -> list[Any] | None:
        """The ``puzzle`` of each rollout's environment (``environment_factory`` without a puzzle dataset)."""
        environments = getattr(self, "environments", None)
        if not environments or len(environments) != rows:
            return None
        puzzles = [getattr(env, "puzzle", None) for env in environments]
        return puzzles if all(p is not None for p in puzzles) else None

    # ------------------------------------------------------------------------------------- helpers
    def gather_rows(self, tensor: torch.Tensor, pad_value: float = 0) -> torch.Tensor:
        """Gather a per-row (B, ...) tensor from every process into (N, ...), padding dim 1 to a common width.

        Collective: every process must call it. Use ``rollout.local(gathered, width=B_T)`` to slice back.
        """
        if self.accelerator.num_processes == 1:
            return tensor
        if tensor.dim() > 1:
            tensor = self.accelerator.pad_across_processes(tensor, dim=1, pad_index=pad_value)
        return self.accelerator.gather(tensor.contiguous())

    @staticmethod
    def loss_mask(batch: dict[str, Any]) -> torch.Tensor:
        """(B,T) the tokens the loss uses: ``completion_mask * tool_mask``."""
        mask = batch["completion_mask"]
        tool_mask = batch.get("tool_mask")
        return mask if tool_mask is None else mask * tool_mask

    @staticmethod
    def set_loss_mask(batch: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
        """Restrict the loss to ``mask`` (B,T) (0/1); the attention mask (``completion_mask``) stays intact."""
        completion_mask = batch["completion_mask"]
        if mask.shape != completion_mask.shape:
            raise ValueError(f"loss mask shape {tuple(mask.shape)} != completion_mask {tuple(completion_mask.shape)}")
        batch["tool_mask"] = mask.to(device=completion_mask.device, dtype=completion_mask.dtype)
        return batch

    def recount_items(self, batch: dict[str, Any]) -> None:
        """Recompute ``num_items_in_batch`` (loss tokens over all processes) from the current loss mask."""
        batch["num_items_in_batch"] = self.accelerator.gather(self.loss_mask(batch).sum()).sum()

    def _get_per_token_logps_and_entropies(self, model, *args, **kwargs):
        """TRL's log-probabilities, with two cuts that leave their values as they were (tests/learners/
        test_base_trainer.py, test_precision.py; their time: ``benchmarks/bench_precision.py``):

        - TRL's fused LM head projects and log-softmaxes only the completion tokens where Triton runs, but every
          position of every row elsewhere (fixed tile shapes for compilers such as Neuron's): on a CPU the prompt and
          the padding cost the LM head's full-vocabulary work too (49 152 wide for SmolLM2; in fp32, which TRL's
          backward uses off CUDA). Here it scores the completion tokens on a CPU as well;
        - under bf16 autocast a LoRA layer's cast of its input to its float32 weights' dtype is undone by autocast at
          once: an activation-sized copy in and out per adapted layer and pass, skipped.
        """
        from peft.helpers import disable_input_dtype_casting

        with (
            _completion_tokens_only(),
            disable_input_dtype_casting(model, active=self.accelerator.mixed_precision == "bf16"),
        ):
            return super()._get_per_token_logps_and_entropies(model, *args, **kwargs)

    @torch.no_grad()
    def per_token_logps(self, model, batch: dict[str, Any], batch_size: int | None = None) -> torch.Tensor:
        """(B,T) log-probabilities of the completion tokens under ``model`` (no gradient)."""
        input_ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention_mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(
            model,
            input_ids,
            attention_mask,
            batch["completion_ids"].size(1),
            batch_size=batch_size or input_ids.size(0),
        )
        return logps

    def log_ratio_metrics(self, ratios: dict[str, tuple[Any, Any]], mode: str | None = None) -> None:
        """Log ``sum(numerator) / sum(denominator)`` over all processes for each ``name: (numerator, denominator)``
        (scalars or 0-d tensors of this process; one collective for all; a zero denominator counts as 1).

        Collective: every process must call it with the same names."""
        values = [float(x) for pair in ratios.values() for x in pair]
        stats = torch.tensor(values, device=self.accelerator.device, dtype=torch.float64).unsqueeze(0)
        totals = self.accelerator.gather(stats).sum(dim=0).view(-1, 2).tolist()
        for name, (numerator, denominator) in zip(ratios, totals, strict=True):
            self.log_metric(name, numerator / max(denominator, 1.0), mode)

    def log_metric(self, name: str, value: float, mode: str | None = None) -> None:
        """Append a scalar to TRL's metrics (averaged per logging step). Call with the same value on all ranks."""
        mode = mode or ("train" if self.model.training else "eval")
        self._metrics[mode][name].append(float(value))

    def _log_rollout_metrics(self, batch: dict[str, Any], rollout: Rollout) -> None:
        device = batch["completion_ids"].device
        trajectories = rollout.trajectories
        if trajectories is not None:
            lengths = torch.tensor([float(len(t.completion_ids)) for t in trajectories], device=device)
            truncated = torch.tensor([bool(t.truncated) for t in trajectories], device=device)
            format_ok = torch.tensor([bool(t.format_ok) for t in trajectories], device=device)
        else:
            lengths = batch["completion_mask"].sum(dim=1).float()  # 0 for rows TRL masked as truncated
            eos = torch.tensor(sorted(self.eos_token_ids), device=device)
            truncated = ~torch.isin(batch["completion_ids"], eos).any(dim=1)
            format_ok = torch.zeros(len(lengths), device=device)  # not logged: no verdict without puzzles
        stats = torch.stack(
            [
                format_ok.float().sum(),
                truncated.float().sum(),
                lengths.sum(),
                torch.tensor(float(len(lengths)), device=device),
            ]
        )
        totals = self.accelerator.gather(stats.unsqueeze(0)).sum(dim=0)
        n = totals[3].clamp(min=1.0)
        mode = rollout.mode
        if trajectories is not None:  # without puzzles there is no verdict to count
            # the verifier's verdict (correct and within the budget), never a reward threshold: the learner's own
            # reward functions may shape the reward (DAPO's overlong penalty, a format bonus)
            verdicts = rollout.verdicts
            self._metrics[mode]["countdown/accuracy"].append(verdicts[~torch.isnan(verdicts)].mean().item())
            self._metrics[mode]["countdown/format_rate"].append((totals[0] / n).item())
        self._metrics[mode]["countdown/truncation_rate"].append((totals[1] / n).item())
        self._metrics[mode]["countdown/mean_completion_length"].append((totals[2] / n).item())
        self._metrics[mode]["countdown/homogeneous_group_frac"].append(
            rollout.homogeneous_groups().float().mean().item()
        )


@contextlib.contextmanager
def _completion_tokens_only():
    """While inside, TRL's fused LM head (``trl.trainer.utils.add_fused_lm_head``) takes its compact path on a CPU:
    the projection and log-softmax run on the loss positions only (``hidden_states[mask]``), as on a Triton device.
    The choice is TRL's module-level ``_use_triton``; a TRL without it leaves the call as it is (a test fails then)."""
    import trl.trainer.utils as trl_utils

    original = getattr(trl_utils, "_use_triton", None)
    if original is None:
        yield
        return
    trl_utils._use_triton = lambda device: device.type == "cpu" or original(device)
    try:
        yield
    finally:
        trl_utils._use_triton = original
