"""T-SPMO's replay: keep completions per prompt and plan restarts from a sampled prefix of one of them.

Seed 002 (T-SPMO, "Replay-Based Resampling"; the referee calls it underspecified, so the exact rules are ours):
with 50 completions per prompt most trie paths stop branching early (every prefix deeper than a few tokens is seen
once). Replay restarts generation *inside* a stored completion so that the trie gets more completions through a
deep prefix: each step, for each prompt, ``C_success`` restarts from successful completions and ``C_failure`` from
failed ones. Our specification:

- **What is stored.** Per prompt (key: the prompt's token ids), the most recent ``capacity`` distinct successful
  completions and, separately, failed ones. A success is a correct answer (the trainer passes the verifier's
  verdict, :mod:`learners.core.verdicts`; never a reward threshold). The current step's completions are added
  *before* planning, so a prompt's first success can be replayed in the same step.
- **Which completion.** Uniform over the stored completions of the kind (with replacement across the budget).
- **Where to restart.** A prefix length |q| uniform in ``[min_prefix, len(y) - 1]``: at least ``min_prefix``
  tokens are kept and at least one token (e.g. the end-of-turn token) is regenerated. Completions shorter than
  ``min_prefix + 1`` are never replayed.
- **How it is used.** The trainer generates a continuation of prompt∘q with the current policy, scores the full
  completion q∘continuation with the same reward functions, and adds it to the step's batch; in the trie it
  counts for q and deeper nodes only (``start_positions`` in :func:`learners.t_spmo.prefix_trie.prefix_advantages`).

Everything here is plain Python and a seeded ``numpy`` generator, so every process that sees the same gathered
batch makes the same plan.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ReplayBuffer", "ReplayPlan"]


@dataclass(frozen=True)
class ReplayPlan:
    """One restart: continue the completion ``prefix`` of the prompt of group ``group``.

    Attributes:
        group: index of the group (prompt) in the batch.
        prefix: the kept tokens q (a proper prefix of ``source``).
        source: the stored completion the prefix was cut from.
        success: whether ``source`` was a successful completion.
    """

    group: int
    prefix: tuple[int, ...]
    source: tuple[int, ...]
    success: bool


class ReplayBuffer:
    """Recent distinct successful and failed completions per prompt, and the restart plans drawn from them.

    Args:
        capacity: completions kept per prompt and kind (oldest dropped first); at least 1.
        keep_failures: store failed completions too (needed only when the failure budget is positive).
        min_prefix: the fewest tokens a restart keeps (>= 1; a restart from 0 tokens is an ordinary sample).
        max_prompts: prompts remembered (least recently updated forgotten first); bounds memory on long runs.
    """

    def __init__(
        self,
        capacity: int = 8,
        *,
        keep_failures: bool = False,
        min_prefix: int = 1,
        max_prompts: int = 100_000,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if min_prefix < 1:
            raise ValueError(f"min_prefix must be >= 1, got {min_prefix}")
        if max_prompts < 1:
            raise ValueError(f"max_prompts must be >= 1, got {max_prompts}")
        self.capacity = capacity
        self.keep_failures = keep_failures
        self.min_prefix = min_prefix
        self.max_prompts = max_prompts
        # prompt key -> (successes, failures), each an insertion-ordered set of completions
        self._store: OrderedDict[Hashable, tuple[OrderedDict, OrderedDict]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._store)

    def add(self, key: Hashable, completion: Sequence[int], success: bool | None) -> None:
        """Remember ``completion`` (token ids, without padding) of prompt ``key`` as a success (a correct answer) or
        a failure; ``success=None`` (unscorable, e.g. a NaN reward) is ignored."""
        if success is None:
            return
        if not isinstance(success, bool):
            raise TypeError(f"success must be True, False or None (unscorable), got {type(success).__name__}")
        if not success and not self.keep_failures:
            return
        if key not in self._store:
            self._store[key] = (OrderedDict(), OrderedDict())
            if len(self._store) > self.max_prompts:
                self._store.popitem(last=False)
        self._store.move_to_end(key)
        kind = self._store[key][0 if success else 1]
        completion = tuple(int(t) for t in completion)
        kind.pop(completion, None)
        kind[completion] = None
        while len(kind) > self.capacity:
            kind.popitem(last=False)

    def completions(self, key: Hashable, success: bool) -> list[tuple[int, ...]]:
        """The stored completions of prompt ``key`` of one kind, oldest first."""
        stored = self._store.get(key)
        return [] if stored is None else list(stored[0 if success else 1])

    def plan(
        self,
        keys: Sequence[Hashable],
        success_budget: int,
        failure_budget: int,
        rng: np.random.Generator,
    ) -> list[ReplayPlan]:
        """Restart plans for the groups whose prompts are ``keys`` (group g has prompt ``keys[g]``).

        Up to ``success_budget`` restarts per group from stored successes and ``failure_budget`` from stored
        failures (fewer when the prompt has no eligible completion of that kind), in group order.
        """
        if success_budget < 0 or failure_budget < 0:
            raise ValueError("replay budgets must be >= 0")
        plans = []
        for group, key in enumerate(keys):
            for success, budget in ((True, success_budget), (False, failure_budget)):
                if budget == 0:
                    continue
                eligible = [c for c in self.completions(key, success) if len(c) > self.min_prefix]
                if not eligible:
                    continue
                for _ in range(budget):
                    source = eligible[int(rng.integers(len(eligible)))]
                    cut = int(rng.integers(self.min_prefix, len(source)))  # in [min_prefix, len - 1]
                    plans.append(ReplayPlan(group=group, prefix=source[:cut], source=source, success=success))
        return plans
