r"""Asynchronous rollouts: the colocated vLLM engine generates the next steps' completions while the trainer updates.

With ``async_max_staleness = K`` (``countdown train --async``, YAML ``async: {max_staleness: K}``) the trainer keeps
the training prompts of the next ``K`` optimiser steps in hand (read from its dataloader ahead of time, in the same
order as a synchronous run) and hands them to a generation worker (one thread driving the colocated engine; the
engine itself runs in vLLM's own process, so generation and the update overlap on two cores). A step takes its
completions from the worker; when the worker has nothing left in flight, the engine takes the current weights and
the next ``K`` steps' prompts are submitted. So the samples of step :math:`t` come from the policy of step
:math:`t - s` with :math:`0 \le s \le K` (``s`` is logged per step as ``async/staleness``); a batch older than ``K``
(or whose prompts are not the step's) is dropped, counted in ``async/dropped``, and generated anew. ``K = 0`` runs
the same machinery with nothing ahead: each step's batch is generated, on fresh weights, by the worker while the
trainer waits, which is the synchronous run (same samples, same updates: the test of the machinery).

Why this and not TRL's ``AsyncGRPOTrainer``: that trainer derives from TRL's ``_BaseTrainer``, not from
``GRPOTrainer``, so the two seams every learner here overrides (after generation, before the loss) do not exist on
it, and it generates through a vLLM server whose weights are moved by NCCL or adapter folders over HTTP. Here the
seam is ``GRPOTrainer._generate``: the worker calls it on the prompts of a later step, and everything after it
(rewards, advantages, the learners' seams, the loss) runs on the main thread as in a synchronous run.

Off-policy correction: each sample keeps the log-probabilities its engine sampled it with (the behaviour policy
:math:`\mu`), and TRL's truncated importance sampling (``vllm_importance_sampling_correction``, weight
:math:`\min(\pi_{\theta}/\mu, C)` per token) corrects the loss for the staleness; a run with ``K >= 1`` and that
correction off is refused. A learner whose estimator needs samples of the current policy says so in its trainer's
``async_refusal`` (T-SPMO; contrastive with its moving scorer), and is refused in one line before any engine
starts.

After each weight sync the engine's log-probabilities of a fixed probe are checked against the trainer's
(:meth:`AsyncRollouts.check_sync`): a sync that left the engine on other weights stops the run in one line before any
of its samples are trained on.

Where the time goes, logged per step: ``async/generate_seconds`` (the worker's wall time for the step's batch) and
``async/generate_cpu_share`` (the share of it the worker thread spent running), ``async/train_seconds`` and
``async/train_cpu_share`` (the same for the training thread, from one generation handed over to the next). With one
torch thread per side (``--threads 1``) a share well below 1 means the thread waited for the interpreter lock or for
a core; ``benchmarks/bench_async.py`` reports them beside the sync run's.

Limits, each refused in one line: one process only (TRL gathers prompts and lengths across processes inside
``_generate``, and a worker thread would enter those collectives out of step with the main thread); the dataset
route only (the env and tools routes run their own multi-turn loop on the engine); the colocated engine only. The
queue of samples is not part of a checkpoint: a resumed run starts with an empty queue (its first step generates
on the restored weights). A worker that fails stops the run at the step that needs its batch with its error, and a
worker that does not answer within :data:`RESULT_TIMEOUT` seconds stops it with one line; the worker is a daemon
thread that lives for the length of ``train()`` and is stopped when it returns or raises.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any

RESULT_TIMEOUT = 3600.0
"""Longest wait for a batch the worker generates (seconds): a wedged engine stops the run, never hangs it."""

SYNC_PROBE_TOLERANCE = 0.02
"""Largest difference allowed, after a weight sync, between the engine's and the trainer's log-probability of any
token of the probe: the colocated sync meets 0.003-0.006 on the CPU (docs/training.md), a stale engine 0.26+."""

SYNC_PROBE = "Countdown: reach 24 with 3, 4, 6 and 8 using + - * / once each. (3 - 8 / 4) * ..."
"""The fixed text whose token log-probabilities the engine and the trainer must agree on after each sync."""


def async_problem(trainer_class, args, trainer_kwargs: dict) -> str | None:
    """Why a ``trainer_class`` run with ``args`` (and the trainer's keyword arguments) cannot generate asynchronously,
    or ``None``: checked before the trainer (and its engine) is built."""
    from accelerate import PartialState

    if not (args.use_vllm and args.vllm_mode == "colocate"):
        return "async rollouts generate with the colocated vLLM engine: set use_vllm=true and vllm_mode=colocate"
    if PartialState().num_processes > 1:
        return ("async rollouts run in one process: TRL gathers prompts and lengths across processes inside each "
                "generation, which a worker thread would enter out of step with the training thread")  # fmt: skip
    if trainer_kwargs.get("rollout_func") is not None or trainer_kwargs.get("environment_factory") is not None:
        return "async rollouts take the dataset route only (the env and tools routes drive the engine turn by turn)"
    if args.async_max_staleness > 0 and not args.vllm_importance_sampling_correction:
        return ("async rollouts with max_staleness >= 1 need vllm_importance_sampling_correction=true: it weights "
                "each stale sample by pi/mu, the only correction of the staleness")  # fmt: skip
    return trainer_class.async_refusal(args)


class AsyncRollouts:
    """The generation worker of one trainer and the steps' prompts read ahead (see the module's docstring)."""

    def __init__(self, trainer, max_staleness: int):
        self.trainer = trainer
        self.max_staleness = max_staleness
        self.ahead: deque = deque()  # (batch_samples, num_items_in_batch) of the next steps, in order
        self.pending: deque = deque()  # (prompts, policy step, Future) submitted to the worker, in order
        self.dropped = 0
        self.trained_since: tuple[float, float] | None = None  # (wall, thread CPU) when the last generate() returned
        self.jobs: queue.Queue = queue.Queue()
        self.worker = threading.Thread(target=self._work, name="countdown-async-rollouts", daemon=True)
        self.worker.start()
        self.probe_ids = trainer.processing_class(SYNC_PROBE, add_special_tokens=False)["input_ids"]
        self._real_sync = trainer.vllm_generation.sync_weights
        trainer.vllm_generation.sync_weights = self._sync_outside_worker

    def _sync_outside_worker(self) -> None:
        # TRL syncs inside each generation when the step changed; here the training thread syncs, between generations
        if threading.current_thread() is not self.worker:
            self._real_sync()

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            future, generate, prompts = job
            if future.set_running_or_notify_cancel():
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    result = generate(prompts)
                except BaseException as exc:  # noqa: BLE001 - handed to the training thread, which raises it
                    future.set_exception(exc)
                else:
                    future.timing = (time.perf_counter() - wall, time.thread_time() - cpu)
                    future.set_result(result)

    def submit(self, generate, prompts: list) -> Future:
        future: Future = Future()
        self.jobs.put((future, generate, prompts))
        return future

    # -- the training thread ------------------------------------------------------------------------------------
    def batch_samples(self, fetch, depth: int):
        """The step's micro-batches, with the prompts of the ``depth`` steps after it read ahead (``fetch()`` reads
        one step's batches from the dataloader; an empty read is the epoch's end)."""
        if not self.ahead:
            self.ahead.append(fetch())
        while len(self.ahead) <= depth and self.ahead[-1][0]:
            self.ahead.append(fetch())
        current = self.ahead.popleft()
        if not current[0] and self.ahead:  # the previous epoch ran out: this epoch's first read
            current = self.ahead.popleft()
        return current

    def next_prompts(self) -> list[list]:
        """The prompts of each step read ahead (``[]`` past the epoch's end)."""
        return [[row["prompt"] for row in batches[0]] for batches, _ in self.ahead if batches]

    def generate(self, prompts: list, generate) -> Any:
        """Step ``global_step``'s generation of ``prompts`` (``generate``: ``GRPOTrainer._generate``)."""
        step = self.trainer.state.global_step
        log = self.trainer.log_metric
        if self.trained_since is not None:  # the training thread's work since the last generation was handed over
            wall, cpu = time.perf_counter() - self.trained_since[0], time.thread_time() - self.trained_since[1]
            log("async/train_seconds", wall)
            log("async/train_cpu_share", cpu / wall if wall > 0 else 1.0)
        result, staleness, waited, used = None, 0, 0.0, None
        if self.pending:
            ahead_prompts, version, future = self.pending.popleft()
            start = time.perf_counter()
            batch = self._result(future)
            waited = time.perf_counter() - start
            if ahead_prompts == prompts and step - version <= self.max_staleness:
                result, staleness, used = batch, step - version, future
            else:
                self.dropped += 1
        if result is None and self.pending:  # dropped while later batches are in flight: they are older still
            self.wait_idle()
            self.dropped += len(self.pending)
            self.pending.clear()
        if not self.pending:  # nothing in flight: the engine takes the current weights, the next steps are submitted
            self._real_sync()
            self.check_sync()
            if result is None:
                start = time.perf_counter()
                used = self.submit(generate, prompts)
                result = self._result(used)
                waited += time.perf_counter() - start
            for ahead in self.next_prompts()[: self.max_staleness]:
                self.pending.append((ahead, step, self.submit(generate, ahead)))
        log("async/staleness", float(staleness))
        log("async/dropped", float(self.dropped))
        log("async/wait_seconds", waited)
        seconds, cpu = used.timing
        log("async/generate_seconds", seconds)
        log("async/generate_cpu_share", cpu / seconds if seconds > 0 else 1.0)
        self.trained_since = (time.perf_counter(), time.thread_time())
        return result

    def check_sync(self) -> float:
        """Stop the run, in one line, unless the engine now holds the trainer's weights: the largest difference of
        the two's log-probability of each token of :data:`SYNC_PROBE` (given the tokens before it) must stay within
        :data:`SYNC_PROBE_TOLERANCE`. Logged as ``async/sync_probe_max_diff``; returns it."""
        import torch
        from vllm import SamplingParams

        from .vllm_sync import vllm_sampling_kwargs

        trainer, ids = self.trainer, self.probe_ids
        # greedy: the probe draws nothing from the engine's random stream, which the next batches sample from
        params = SamplingParams(**vllm_sampling_kwargs())
        output = trainer.vllm_generation.llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)[0]
        engine = torch.tensor([step[token].logprob for step, token in zip(output.prompt_logprobs[1:], ids[1:],
                                                                            strict=True)])  # fmt: skip
        model = trainer.accelerator.unwrap_model(trainer.model)
        with torch.no_grad():
            logits = model(torch.tensor([ids], device=trainer.accelerator.device)).logits[0, :-1].float()
        policy = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(ids[1:], device=logits.device)[:, None])
        difference = float((policy[:, 0].cpu() - engine).abs().max())
        trainer.log_metric("async/sync_probe_max_diff", difference)
        if not difference <= SYNC_PROBE_TOLERANCE:
            raise RuntimeError(
                f"async rollouts: after the weight sync at step {trainer.state.global_step} the engine's log-probs of "
                f"a probe differ from the trainer's by {difference:.3g} (more than {SYNC_PROBE_TOLERANCE}): the engine "
                "does not hold the trainer's weights; the run stops before training on its samples"
            )
        return difference

    def _result(self, future: Future):
        try:
            return future.result(timeout=RESULT_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise RuntimeError(f"async rollouts: the generation worker gave no batch in {RESULT_TIMEOUT:.0f} s: "
                               "the vLLM engine is wedged or dead; the run stops here") from None  # fmt: skip

    def wait_idle(self) -> None:
        """Wait until the worker has finished every batch in flight (they stay queued for their steps): the engine
        may then be used or synced by the training thread (the eval callback does)."""
        for _, _, future in list(self.pending):
            self._result(future)

    def close(self) -> None:
        """Drop what is in flight and stop the worker: it ends after its current batch, which is waited for (the
        engine is then free), bounded by :data:`RESULT_TIMEOUT`."""
        for _, _, future in self.pending:
            future.cancel()
        self.pending.clear()
        self.jobs.put(None)
        self.worker.join(timeout=RESULT_TIMEOUT)
        self.trainer.vllm_generation.sync_weights = self._real_sync
