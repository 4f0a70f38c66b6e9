"""The T-SPMO trainer: only its seam overrides; the equations are in the package docstring (:mod:`learners.t_spmo`)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch
from accelerate.utils import gather_object
from transformers import ProcessorMixin
from trl.data_utils import is_conversational
from trl.trainer.utils import use_adapter

from learners.core.batch_keys import PER_TOKEN_KEYS
from learners.core.trainer import CountdownGRPOTrainer, Rollout
from learners.sampling import trainer_sampler, trainer_sampling
from learners.sampling.trainer_sampler import gathered_policy, lockstep_forward
from learners.t_spmo.prefix_trie import PrefixAdvantages, prefix_advantages
from learners.t_spmo.replay import ReplayBuffer, ReplayPlan
from learners.t_spmo.replay_rows import append_rows, pad_right, padded_rows
from learners.t_spmo.spec import async_refusal

from .config import TSPMOConfig

__all__ = ["TSPMOConfig", "TSPMOTrainer", "prefix_advantages"]


class TSPMOTrainer(CountdownGRPOTrainer):
    """T-SPMO on :class:`~learners.core.trainer.CountdownGRPOTrainer`; see the module docstring for the equations.

    Seam 1 (``shape_batch``): replay (optional), prefix-trie advantages over the gathered groups, the unique-
    transition loss mask, estimator statistics. Seam 2: ``truncate_to_loss_tokens`` (no compute after the last loss
    token) and ``loss_penalty`` (the optional L2 term).
    """

    _tag_names = ["trl", "countdown-rl", "t-spmo"]
    _name = "T-SPMO"

    @classmethod
    def async_refusal(cls, args) -> str | None:
        return async_refusal(args)  # the spec's, also asked before the run folder is claimed

    def __init__(self, model, reward_funcs=None, args: TSPMOConfig | None = None, *trainer_args, **trainer_kwargs):
        args = self._check_args(args, TSPMOConfig, "t-spmo")
        super().__init__(model, reward_funcs, args, *trainer_args, **trainer_kwargs)
        self.replay_enabled = args.replay_success + args.replay_failure > 0
        self.replay_buffer = ReplayBuffer(
            args.replay_capacity,
            keep_failures=args.replay_failure > 0,
            min_prefix=args.replay_min_prefix,
        )
        self._replay_rng = np.random.default_rng(args.replay_seed)
        self._l2_unique = 1.0  # |U| of the current micro-batch (set in seam 2 before the penalty is asked for)
        self.last_trie: PrefixAdvantages | None = None  # the latest batch's trie result (for inspection and tests)
        self.last_replay_plans: list[ReplayPlan] = []
        if self.replay_enabled:
            self._check_replay_support()
        self._l2_params = [p for p in self.model.parameters() if p.requires_grad] if args.l2_coef > 0 else []
        self._l2_anchor = (
            [p.detach().clone() for p in self._l2_params] if args.l2_coef > 0 and args.l2_anchor == "init" else None
        )

    def _check_replay_support(self) -> None:
        unsupported = {
            "tools": bool(self.tools),
            "environment_factory": self.environment_factories is not None,
            "rollout_func": self.rollout_func is not None,
            # TRL's private `_is_vlm` is this test of the public processing_class
            "a multimodal processor": isinstance(self.processing_class, ProcessorMixin),
            "model-based reward functions": any(isinstance(f, torch.nn.Module) for f in self.reward_funcs),
            "async reward functions": any(inspect.iscoroutinefunction(f) for f in self.reward_funcs),
        }
        found = [name for name, present in unsupported.items() if present]
        if found:
            raise ValueError(f"T-SPMO replay does not support {', '.join(found)}; set replay budgets to 0")

    # ------------------------------------------------------------------------------------------------ seam 1
    def shape_batch(self, batch: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
        pad_id = _pad_token_id(self)
        ids = self.gather_rows(batch["completion_ids"], pad_value=pad_id)
        mask = self.gather_rows(batch["completion_mask"], pad_value=0)
        rewards = rollout.rewards.clone()
        groups = torch.arange(ids.size(0), device=ids.device) // rollout.num_generations
        starts = torch.zeros_like(groups)
        local_rows = [ids.new_tensor(range(rollout.process_slice.start, rollout.process_slice.stop))]
        replay_counts = None
        if self.replay_enabled and rollout.mode == "train":
            if not torch.equal(self.loss_mask(batch), batch["completion_mask"]):
                raise ValueError(
                    "T-SPMO replay restarts from completion prefixes and cannot tell environment or tool tokens "
                    "(masked out of the loss) from the model's own: use replay_success = replay_failure = 0 "
                    "with tool or environment rollouts"
                )
            replay = self._replay(batch, rollout, ids, mask, rewards)
            width = max(ids.size(1), replay["ids"].size(1))
            ids = torch.cat([pad_right(ids, width, pad_id), pad_right(replay["ids"], width, pad_id)])
            mask = torch.cat([pad_right(mask, width, 0), pad_right(replay["mask"], width, 0)])
            rewards = torch.cat([rewards, replay["rewards"]])
            groups = torch.cat([groups, replay["groups"]])
            starts = torch.cat([starts, replay["starts"]])
            local_rows.append(replay["local_rows"] + rollout.rewards.numel())
            replay_counts = replay["counts"]
        # A row without valid tokens (e.g. masked as truncated) leaves the trie entirely, reward included.
        rewards = torch.where(mask.sum(dim=1) > 0, rewards, torch.full_like(rewards, float("nan")))
        trie = prefix_advantages(ids, rewards, mask, group_ids=groups, start_positions=starts)
        self.last_trie = trie
        rows = torch.cat(local_rows)
        width = batch["completion_ids"].size(1)
        advantages = trie.advantages[rows, :width].to(batch["completion_ids"].device)
        loss_mask = trie.loss_mask[rows, :width].to(batch["completion_ids"].device) * self.loss_mask(batch)
        self.set_loss_mask(batch, loss_mask)
        if self.args.tspmo_objective == "prob":
            old = batch.get("old_per_token_logps")
            if old is None:
                old = self.per_token_logps(self.model, batch, batch_size=self.args.per_device_train_batch_size)
                batch["old_per_token_logps"] = old
            advantages = advantages * torch.exp(old)
        batch["advantages"] = advantages * loss_mask
        self._log_trie(trie, rollout.mode, replay_counts)
        return batch

    def _log_trie(self, trie: PrefixAdvantages, mode: str, replay_counts: dict[str, float] | None) -> None:
        for name, value in trie.stats.as_dict().items():
            if name in ("num_groups", "num_completions"):
                continue
            self.log_metric(f"tspmo/{name}", value, mode)
        for name, value in (replay_counts or {}).items():
            self.log_metric(f"tspmo/replay_{name}", value, mode)

    # ------------------------------------------------------------------------------------------------ replay
    def _replay(self, batch, rollout: Rollout, ids, mask, rewards) -> dict[str, Any]:
        """Plan, generate, score and append the replayed rows; return what the trie needs of all processes."""
        num_processes, rank = self.accelerator.num_processes, self.accelerator.process_index
        size = rollout.num_generations
        pad_id = _pad_token_id(self)
        prompt_ids = self.gather_rows(batch["prompt_ids"], pad_value=pad_id)
        prompt_mask = self.gather_rows(batch["prompt_mask"], pad_value=0)
        all_inputs = gather_object(list(rollout.inputs))
        keys = [tuple(prompt_ids[g * size][prompt_mask[g * size].bool()].tolist()) for g in range(rollout.num_groups)]
        lengths = mask.sum(dim=1).tolist()
        # a success is a correct answer (the verifier's verdict), whatever the reward functions pay; the reward
        # threshold only binarises rows without a puzzle (no verdict)
        unverified = torch.nan_to_num(rewards, nan=-torch.inf) >= self.args.success_threshold
        successes = rollout.successes(fallback=unverified).tolist()
        scored = zip(rewards.tolist(), lengths, successes, strict=True)
        for row, (reward, length, success) in enumerate(scored):
            if length:  # a NaN reward (unscorable) is left out, as the trie leaves it out
                kind = None if reward != reward else success
                self.replay_buffer.add(keys[row // size], ids[row, :length].tolist(), kind)
        plans = self.replay_buffer.plan(keys, self.args.replay_success, self.args.replay_failure, self._replay_rng)
        self.last_replay_plans = plans
        slots = self._replay_slots(batch["completion_ids"].size(0), rollout.num_groups)
        mine = plans[rank::num_processes]
        inputs = [list(keys[p.group]) + list(p.prefix) for p in mine]
        # where every forward is a collective (FSDP, ZeRO-3) every process samples `slots` rows, fillers included
        lockstep = slots if lockstep_forward(self) else 0
        completions = self._generate_continuations(inputs, mine, pad_to=lockstep, filler=list(keys[0]))
        scores = self._score_replays(mine, completions, all_inputs, size)
        rows = self._replay_rows(batch, mine, keys, completions, slots)
        append_rows(batch, rows, pad_id)

        device = ids.device
        local_rewards = torch.full((slots,), float("nan"), device=device)
        local_rewards[: len(mine)] = scores.to(device)
        local_groups = torch.zeros(slots, dtype=torch.long, device=device)
        local_groups[: len(mine)] = torch.tensor([p.group for p in mine], dtype=torch.long, device=device)
        local_starts = torch.zeros(slots, dtype=torch.long, device=device)
        local_starts[: len(mine)] = torch.tensor([len(p.prefix) for p in mine], dtype=torch.long, device=device)
        all_rewards = self.gather_rows(local_rewards)
        successes = [p.success for p in plans]
        return {
            "ids": self.gather_rows(rows["completion_ids"], pad_value=pad_id),
            "mask": self.gather_rows(rows["completion_mask"], pad_value=0),
            "rewards": all_rewards,
            "groups": self.gather_rows(local_groups),
            "starts": self.gather_rows(local_starts),
            "local_rows": torch.arange(rank * slots, (rank + 1) * slots, device=device),
            "counts": {
                "rows": float(len(plans)),
                "from_success": float(sum(successes)),
                "reward_mean": float(torch.nanmean(all_rewards).item()) if plans else float("nan"),
            },
        }

    def _replay_slots(self, local_rows: int, num_groups: int) -> int:
        """Rows every process appends: its share of the budget, rounded up to keep whole micro-batches."""
        budget = num_groups * (self.args.replay_success + self.args.replay_failure)
        slots = -(-budget // self.accelerator.num_processes)
        chunks = self.args.steps_per_generation
        return slots + (-(local_rows + slots)) % chunks

    @torch.no_grad()
    def _generate_continuations(
        self, inputs: list[list[int]], plans: list[ReplayPlan], pad_to: int = 0, filler: list[int] | None = None
    ) -> list[list[int]]:
        """Sample a continuation of each prompt∘prefix with the current policy, through the sampler that generates
        like this trainer (:func:`learners.sampling.trainer_sampler`: its colocated vLLM engine, its vLLM server,
        else ``generate`` on the policy that :func:`~learners.sampling.trainer_sampler.gathered_policy` gathers with
        TRL's public ``unwrap_model_for_generation``; every process enters it, replaying or not) with its sampling
        settings (:func:`learners.sampling.trainer_sampling`); return prefix + continuation. ``pad_to``: sample
        that many rows in all, the missing ones one token of ``filler`` each (dropped), so that every process runs
        the same generate calls."""
        budgets = [self.max_completion_length - len(p.prefix) for p in plans]
        sampling = trainer_sampling(self)
        if self.use_vllm:
            samples = trainer_sampler(self).sample(inputs, sampling, max_new_tokens=budgets) if inputs else []
        else:
            extra = max(pad_to - len(inputs), 0)
            with gathered_policy(self) as unwrapped:  # entered by every process: under ZeRO-3 it is a collective
                sampler = trainer_sampler(self, model=unwrapped)
                rows, limits = inputs + [filler] * extra, budgets + [1] * extra
                samples = sampler.sample(rows, sampling, max_new_tokens=limits)[: len(inputs)] if rows else []
        return [list(plan.prefix) + one.ids for plan, (one,) in zip(plans, samples, strict=True)]

    def _score_replays(self, plans, completions, all_inputs, size) -> torch.Tensor:
        """Total reward of each replayed completion with the trainer's reward functions, as TRL scores a batch: the
        dataset columns as keyword arguments, ``None`` read as NaN, weighted by ``reward_weights``, NaN where every
        function gave NaN (the base's rollout rewards).

        Scored here, on this process's replayed rows: TRL's ``_calculate_rewards`` (private) gathers its result
        across processes (a collective, while each process replays its own number of rows) and the base trainer
        keeps its result as the rollout's rewards; the base has no public per-process scoring helper. What is
        read is public (``reward_funcs``, ``reward_func_names``, ``reward_weights``, ``processing_class``,
        ``state``); TRL's ``log_extra``/``log_metric`` hooks become no-ops (replayed rows are not the batch's)."""
        if not plans:
            return torch.zeros(0)
        examples = [all_inputs[p.group * size] for p in plans]
        prompts = [example["prompt"] for example in examples]
        texts = self.processing_class.batch_decode(completions, skip_special_tokens=True)
        conversational = is_conversational({"prompt": prompts[0]})
        decoded = [[{"role": "assistant", "content": t}] for t in texts] if conversational else texts
        keys = [k for k in examples[0] if k not in ("prompt", "completion", "completion_ids")]
        kwargs = {k: [example[k] for example in examples] for k in keys}
        kwargs.update(trainer_state=self.state, log_extra=_ignore, log_metric=_ignore)
        per_func = torch.full((len(plans), len(self.reward_funcs)), float("nan"))
        for i, func in enumerate(self.reward_funcs):
            values = func(prompts=prompts, completions=decoded, completion_ids=completions, **kwargs)
            if len(values) != len(plans):
                raise ValueError(f"reward function {self.reward_func_names[i]} returned {len(values)} rewards")
            per_func[:, i] = torch.tensor([float("nan") if v is None else float(v) for v in values])
        total = (per_func * self.reward_weights.cpu().unsqueeze(0)).nansum(dim=1)
        total[torch.isnan(per_func).all(dim=1)] = float("nan")
        return total

    def _replay_rows(self, batch, plans, keys, completions, slots) -> dict[str, torch.Tensor]:
        """The replayed rows as TRL-shaped tensors (filler rows copy local row 0 and carry no loss)."""
        device = batch["completion_ids"].device
        first_prompt = batch["prompt_ids"][0][batch["prompt_mask"][0].bool()].tolist()
        first_completion = batch["completion_ids"][0][batch["completion_mask"][0].bool()].tolist()
        prompts = [list(keys[p.group]) for p in plans] + [first_prompt] * (slots - len(plans))
        bodies = list(completions) + [first_completion] * (slots - len(plans))
        stop_ids = set(self.eos_token_ids) if self.mask_truncated_completions else None
        rows = padded_rows(prompts, bodies, _pad_token_id(self), stop_ids, device=device)
        rows["completion_mask"] = rows["completion_mask"].to(batch["completion_mask"].dtype)
        width = rows["completion_ids"].size(1)
        extra = [k for k, v in batch.items() if isinstance(v, torch.Tensor) and v.dim() > 0 and k not in rows]
        unknown = [k for k in extra if k not in PER_TOKEN_KEYS]
        if unknown:
            raise ValueError(f"T-SPMO replay cannot extend the batch field(s) {unknown}")
        logps = None
        if "old_per_token_logps" in batch or "sampling_per_token_logps" in batch:
            logps = self.per_token_logps(self.model, rows, batch_size=self.args.per_device_train_batch_size)
        for key in extra:
            value = batch[key]
            if key == "tool_mask":
                rows[key] = rows["completion_mask"].clone()
            elif key == "advantages":
                rows[key] = torch.zeros((slots,) if value.dim() == 1 else (slots, width), device=device)
            elif key in ("old_per_token_logps", "sampling_per_token_logps"):
                rows[key] = logps  # the replay rows were sampled from the current model itself
            elif key == "ref_per_token_logps":
                rows[key] = self._reference_logps(rows)
            elif key == "importance_sampling_ratio":
                rows[key] = torch.ones((slots, 1 if value.size(1) == 1 else width), device=device, dtype=value.dtype)
        return rows

    @torch.no_grad()
    def _reference_logps(self, rows) -> torch.Tensor:
        batch_size = self.args.per_device_train_batch_size
        if self.ref_model is not None:
            return self.per_token_logps(self.ref_model, rows, batch_size=batch_size)
        model = self.accelerator.unwrap_model(self.model)
        with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
            return self.per_token_logps(self.model, rows, batch_size=batch_size)

    # ------------------------------------------------------------------------------------------------ seam 2
    def select_loss_tokens(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Nothing to select (seam 1 did); remember the |U| this micro-batch's policy-gradient term is divided by."""
        self._l2_unique = self.unique_transitions(inputs)
        return inputs

    def unique_transitions(self, inputs: dict[str, Any]) -> float:
        """|U| of one optimiser step as TRL's loss sees it: the D with policy-gradient term −(1/D) Σ_U A·log π.

        ``dapo``: TRL divides each micro-batch by ``num_items_in_batch``/P · GA/``steps_per_generation``; summed over
        the GA micro-batches of a step and averaged over the P processes that is D = ``num_items_in_batch`` · GA /
        ``steps_per_generation`` (the step's share of the generation batch's unique transitions). ``bnpo``: the
        micro-batch's own loss tokens (TRL divides by them and by GA, as the base divides the penalty by GA).
        """
        if self.loss_type == "bnpo":
            return max(float(self.loss_mask(inputs).sum()), 1.0)
        items = max(float(inputs["num_items_in_batch"]), 1.0)
        if self.model.training:
            items *= self.current_gradient_accumulation_steps / self.args.steps_per_generation
        return items

    def truncate_to_loss_tokens(self) -> bool:
        return True

    def loss_penalty(self, model) -> torch.Tensor | None:
        """(λ/|U|)·‖θ − θ_0‖² (or ‖θ‖²) over the trainable parameters; ``None`` when ``l2_coef`` is 0.

        The paper's objective is Σ_U A·π − λ‖θ‖²; the policy-gradient term here is divided by |U|
        (:meth:`unique_transitions`), so the penalty is divided by the same |U| and λ keeps the paper's meaning:
        the L2-to-policy-gradient weight ratio is λ whatever the number of unique transitions."""
        if self.args.l2_coef <= 0:
            return None
        if self._l2_anchor is None:
            penalty = sum((p.float() ** 2).sum() for p in self._l2_params)
        else:
            pairs = zip(self._l2_params, self._l2_anchor, strict=True)
            penalty = sum(((p.float() - a.float()) ** 2).sum() for p, a in pairs)
        self.log_metric("tspmo/l2_penalty", float(penalty.detach()))
        return self.args.l2_coef * penalty / self._l2_unique


def _pad_token_id(trainer) -> int:
    """The pad id of the trainer's tokenizer, read through the public ``processing_class`` (the tokenizer, or a
    processor's ``tokenizer``): the object TRL keeps as its private ``_tokenizer`` and gives a pad token (the eos
    token when it has none) at construction."""
    processing_class = trainer.processing_class
    tokenizer = processing_class.tokenizer if isinstance(processing_class, ProcessorMixin) else processing_class
    return tokenizer.pad_token_id


def _ignore(*args, **kwargs) -> None:
    """Stand-in for TRL's ``log_extra``/``log_metric`` reward hooks while scoring replayed rows."""
