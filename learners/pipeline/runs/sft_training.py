"""Supervised warm start: TRL's ``SFTTrainer`` on solver-derived reasoning traces, loss on assistant tokens only.

The rows come from the splits helper's :func:`countdown_env.sft.build_sft_records` (``prompt`` chat messages +
one assistant ``completion`` message, verified by construction). They are re-prompted with the task's template
(the tiny model uses the short ``compact`` prompt) and turned into ``messages`` conversations; TRL's
``assistant_only_loss=True`` then trains on the tokens inside the chat template's ``{% generation %}`` block:
the assistant answer and its end-of-turn marker (so the model learns to stop). A real model's chat template has no
such block (SmolLM2's ChatML has none): its rows stay prompt/completion pairs (:func:`sft_rows`), and TRL trains on
what the conversation adds to the prompt rendered with its generation prompt: again the answer and the end-of-turn
marker (``completion_only_loss``).

Optimiser defaults follow the tiny-model calibration of the 1 M-parameter tiny model on 2 CPU cores: AdamW
(0.9, 0.95), weight decay 0.1, peak lr 1.5e-3, 30 warmup steps, cosine decay to 10 %, clip 1.0, batch 64, fp32
(~1100 steps ≈ 10 min reach ~38 % greedy / ~25 % at T=0.8 on 3-number puzzles).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SFT_HISTORY_FILE = "sft_log_history.json"
"""The SFT run's log history (loss per logging step), saved beside the model for plots."""

DEFAULT_SFT_ARGS: dict[str, Any] = dict(
    learning_rate=1.5e-3,
    adam_beta1=0.9,
    adam_beta2=0.95,
    weight_decay=0.1,
    warmup_steps=30,
    lr_scheduler_type="cosine_with_min_lr",
    lr_scheduler_kwargs={"min_lr_rate": 0.1},
    max_grad_norm=1.0,
    per_device_train_batch_size=64,
    max_length=512,
    bf16=False,
    gradient_checkpointing=False,
    report_to="none",
    logging_steps=25,
    save_strategy="no",
    assistant_only_loss=True,
    dataloader_num_workers=0,
)


def sft_messages(records: Sequence[dict[str, Any]], task=None) -> list[dict[str, Any]]:
    """``messages`` rows (the task's prompt + the record's assistant completion), ready for SFTTrainer.

    ``task``: a :class:`~countdown_env.task.CountdownTask` or a template name (default ``CountdownTask()``).
    """
    from countdown_env import Puzzle

    from ..data import as_task

    task = as_task(task)
    rows = []
    for record in records:
        completion = record["completion"]
        if isinstance(completion, str):
            completion = [{"role": "assistant", "content": completion}]
        rows.append({"messages": [*task.messages(Puzzle.from_dict(record)), *completion]})
    if not rows:
        raise ValueError("no SFT records given")
    return rows


GENERATION_MARK = "{% generation %}"
"""What a chat template needs for ``assistant_only_loss`` (TRL reads the assistant tokens from its block)."""


def sft_rows(records: Sequence[dict[str, Any]], task, tokenizer) -> list[dict[str, Any]]:
    """:func:`sft_messages` rows for a tokenizer whose chat template marks the assistant's tokens
    (:data:`GENERATION_MARK`); for any other, the same conversations as ``prompt``/``completion`` pairs."""
    rows = sft_messages(records, task)
    if GENERATION_MARK in (getattr(tokenizer, "chat_template", None) or ""):
        return rows
    return [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in rows]


def run_sft(
    model: str | Path,
    records: Sequence[dict[str, Any]],
    output_dir: str | Path,
    *,
    task=None,
    max_steps: int = 600,
    seed: int = 0,
    callbacks: list | None = None,
    peft_config: Any = None,
    **sft_args: Any,
) -> Path:
    """Fine-tune the checkpoint folder ``model`` on ``records``; save the result (+ tokenizer) to ``output_dir``.

    ``task`` (a :class:`~countdown_env.task.CountdownTask` or a template name; default: the compact template) sets
    the prompts and is recorded in ``output_dir`` (``countdown_task.json``) for ``countdown train``/``eval``.

    ``sft_args`` override :data:`DEFAULT_SFT_ARGS` (any ``trl.SFTConfig`` field). ``peft_config`` (a
    ``peft.LoraConfig``) trains an adapter instead of every weight; ``output_dir`` then holds the adapter
    (``adapter_config.json``, ``adapter_model.safetensors``), not a whole model. Returns ``output_dir``.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig, SFTTrainer

    from countdown_env.helpers.atomic import write_text

    from ..data import as_task
    from ..models.tiny import save_tokenizer
    from ..models.tokenizer_io import load_tokenizer
    from .trainer_progress import line_progress

    out = Path(output_dir)
    task = as_task("compact" if task is None else task)
    tokenizer = load_tokenizer(model)
    rows = sft_rows(records, task, tokenizer)
    settings = {**DEFAULT_SFT_ARGS, **sft_args}
    if "completion" in rows[0]:  # no generation block to read assistant tokens from: the completion is the loss
        settings.update(assistant_only_loss=False, completion_only_loss=True)
    callbacks = [*(callbacks or []), *line_progress(settings, "SFT")]  # lines, not a bar, into a log
    args = SFTConfig(
        output_dir=str(out),
        max_steps=max_steps,
        seed=seed,
        use_cpu=not torch.cuda.is_available(),
        **settings,
    )
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32),
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=callbacks,
        peft_config=peft_config,
    )
    trainer.train()
    trainer.save_model(str(out))
    write_text(out / SFT_HISTORY_FILE, json.dumps(trainer.state.log_history, indent=1) + "\n")
    save_tokenizer(tokenizer, out)
    task.save(out)
    return out
