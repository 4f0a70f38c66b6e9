"""The typed sections of a run config (the YAML's ``data``, ``eval``, ``lora`` and ``async`` keys), each declared
once as a dataclass with its defaults; the keys a section accepts are read from it (:data:`DATA_KEYS`, ...), so a
new field is a new accepted key with nothing else to edit. :class:`~learners.pipeline.runs.run_config.RunConfig`
holds them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..evaluation.protocol import EVAL_SAMPLES, EVAL_TEMPERATURE


@dataclass(frozen=True)
class DataSection:
    """``data:``: split files (``train``, optional ``eval``), or a split of the task built now (``train_size`` puzzles,
    ``eval_size`` disjoint ones); with a ``curriculum`` the training prompts come from it and ``data`` gives the eval
    rows only."""

    train: str | None = None
    eval: str | None = None
    train_size: int | None = None
    eval_size: int = 0


@dataclass(frozen=True)
class EvalSection:
    """``eval:``: evaluate the policy every ``every`` steps (0: never), at step 0 and at the end, on the first ``limit``
    eval rows (all when ``None``): ``samples`` completions per puzzle at ``temperature``, up to ``max_new_tokens`` each
    (pass@1 with its 95 % interval over puzzles, logged as ``eval_pass@1``)."""

    every: int = 0
    samples: int = EVAL_SAMPLES
    temperature: float = EVAL_TEMPERATURE
    max_new_tokens: int = 768
    limit: int | None = None
    seed: int = 0
    batch_size: int = 64


@dataclass(frozen=True)
class LoraSection:
    """``lora:``: train a LoRA adapter of ``rank`` on ``targets`` (``attention``, ``all-linear`` or module names) with
    ``alpha`` (default ``2 rank``) instead of every weight; ``final/`` then holds the merged weights."""

    rank: int
    targets: str | tuple[str, ...] = "attention"
    alpha: int | None = None

    def peft_config(self):
        """The ``peft`` ``LoraConfig`` (:func:`learners.pipeline.runs.lora.lora_config`)."""
        from .lora import lora_config

        return lora_config(self.rank, self.targets, self.alpha)


@dataclass(frozen=True)
class AsyncSection:
    """``async:``: generation by the colocated vLLM engine runs ahead of the update, its samples at most
    ``max_staleness`` policy versions old (:mod:`learners.core.async_rollouts`)."""

    max_staleness: int = 1


def field_names(section: type) -> tuple[str, ...]:
    """The keys a section accepts: its dataclass's fields, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(section))


DATA_KEYS = field_names(DataSection)
EVAL_KEYS = field_names(EvalSection)
LORA_KEYS = field_names(LoraSection)
ASYNC_KEYS = field_names(AsyncSection)
