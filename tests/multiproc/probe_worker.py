"""What the two-process worker scripts share: puzzles, a deterministic rollout, a reward, the trainer run.

Completions come from :func:`rollout`, which depends only on the prompt and the row's *global* index, so a run
as one plain process and a run under ``accelerate launch --multi_gpu --num_processes 2`` on a machine without
CUDA (torchrun + gloo; TRL's ``use_cpu=True`` makes it MULTI_CPU — ``accelerate launch --cpu`` with several
processes needs MPI) see identical batches. ``GLOBAL_BATCH`` is 3 groups of ``NUM_GENERATIONS``: under two
processes the middle group is split 2 + 2, so a learner that forgot to gather would see half groups.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

PUZZLES = [((3, 7, 11), 21), ((2, 5, 9), 19), ((4, 6, 8), 32), ((1, 3, 5), 15)]
GLOBAL_BATCH = 12  # 3 groups of 4: under 2 processes the middle group is split 2 + 2
NUM_GENERATIONS = 4


def rollout(prompts, trainer):
    """TRL ``rollout_func``: 1-5 "x" characters then eos, the count fixed by the global row, step and prompt."""
    tok = trainer.processing_class
    rank, local = trainer.accelerator.process_index, len(prompts)
    prompt_ids, completion_ids = [], []
    for i, prompt in enumerate(prompts):
        ids = tok.apply_chat_template(prompt, tokenize=True, add_generation_prompt=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        row = rank * local + i  # global row: identical in both runs
        n = 1 + (row * 7 + trainer.state.global_step * 3 + len(ids)) % 5
        prompt_ids.append(ids)
        completion_ids.append(tok.encode("x" * n, add_special_tokens=False) + [tok.eos_token_id])
    return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}


SOLUTIONS = {((3, 7, 11), 21): "3*7", ((2, 5, 9), 19): "2*5+9", ((4, 6, 8), 32): "4*8", ((1, 3, 5), 15): "3*5"}
"""A correct answer per puzzle of PUZZLES (short enough for 8 new tokens with the tags and eos)."""


def answering_rollout(prompts, trainer):
    """:func:`rollout`, but every row whose global row plus step is a multiple of 3 answers its puzzle correctly
    (``<solution>...</solution>``): every group holds correct and wrong answers, so learners whose successes are
    the verifier's verdicts (PS-PPO) see mixed groups."""
    out = rollout(prompts, trainer)
    tok = trainer.processing_class
    rank, local = trainer.accelerator.process_index, len(prompts)
    for i, prompt in enumerate(prompts):
        if (rank * local + i + trainer.state.global_step) % 3:
            continue
        text = prompt[-1]["content"]  # the compact template: "Numbers: 3, 7, 11\nTarget: 21"
        asked = {f"Numbers: {', '.join(map(str, ns))}\nTarget: {t}": answer for (ns, t), answer in SOLUTIONS.items()}
        (answer,) = [answer for question, answer in asked.items() if question in text]
        body = tok.encode(f"<solution>{answer}</solution>", add_special_tokens=False)
        out["completion_ids"][i] = body + [tok.eos_token_id]
    return out


def reward(completions, **kwargs):
    """Completion length mod 3: groups get mixed rewards without any model skill."""
    return [float(len(c[0]["content"]) % 3) for c in completions]


def train(trainer_cls, config_cls, model_dir: str, out_dir: str, rollout_func=rollout, **config_overrides) -> None:
    """Two steps of ``trainer_cls`` on the tiny model with ``rollout_func`` (default :func:`rollout`) and
    :func:`reward`.

    The config is the tiny CPU run with ``GLOBAL_BATCH / WORLD_SIZE`` rows per process and 8 new tokens;
    ``config_overrides`` replace or add keys (a learner's own options).
    """
    from transformers import AutoModelForCausalLM

    from countdown_env import Puzzle
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    n_proc = int(os.environ.get("WORLD_SIZE", "1"))
    kwargs = tiny_cpu_kwargs(
        Path(out_dir) / "trainer",
        per_device_train_batch_size=GLOBAL_BATCH // n_proc,
        num_generations=NUM_GENERATIONS,
        max_completion_length=8,
        **config_overrides,
    )
    trainer = trainer_cls(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=reward,
        args=config_cls(**kwargs),
        train_dataset=prompt_dataset([Puzzle(n, t) for n, t in PUZZLES], "compact"),
        processing_class=load_tokenizer(model_dir),
        rollout_func=rollout_func,
    )
    trainer.train()


def append_rows(out_dir: str, rank: int, rows: list[dict]) -> None:
    """Append ``rows`` to ``OUT_DIR/rows-RANK.jsonl`` (one file per process; the test reads them all)."""
    with open(Path(out_dir) / f"rows-{rank}.jsonl", "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def exit_at_once() -> None:
    """End a worker process without running interpreter and C++ teardown: flush, then ``os._exit(0)``.

    A worker's results are on disk by then. Under load, a rank that exited normally sometimes aborted in teardown
    ("terminate called without an active exception", SIGABRT): static destructors ran while a gloo/TCPStore
    background thread was still alive (the peer, which hosts the store, may already be gone). Destroying the
    process group first needs the peer to take part (a barrier, or a collective destroy), which under load either
    timed out or hung. Skipping teardown removes the race: there is nothing left to tear down that matters."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
