"""What the Monte Carlo experiments share (E1, E2 and the claims' preconditions P1-P4 of docs/experiments.md): the
model and training puzzles an experiment used, one generation batch of groups in TRL's layout with the verifier's
verdicts, Monte Carlo values of prefixes, and the provenance written beside every result.

Puzzles are the first N of the seed-0 training split ``countdown compare`` builds for the model's task (its full
``train_size`` of 2000, the ``tiny_n3`` eval set excluded), so that a measurement sees the prompts a training run
of the harness sees first. Rewards and verdicts come from the env's ``score_trajectories`` with the task's reward
settings (stop at eos; a completion cut at the budget scores 0 and is not a success).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import platform
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from learners.pipeline.machine import cpu_line, cpu_record

ROOT = Path(__file__).resolve().parents[1]
TEMPERATURE = 0.8  # the harness's sampling temperature (countdown compare, E1-E6)
SPLIT_SEED = 0
TRAIN_SIZE = 2000  # countdown compare's training split size (learners.pipeline.compare.settings.FULL)


@dataclasses.dataclass
class Setting:
    """A model folder with its tokenizer and task, and the first puzzles of its seed-0 training split."""

    name: str  # as ``--model`` names it: "warm-start", "warm-start-multistep"
    model_dir: Path
    model: object
    tokenizer: object
    task: object
    puzzles: list
    prompt_ids: list[list[int]]


def load_setting(prompts: int, model: str = "warm-start") -> Setting:
    """The model ``--model`` names (``learners.pipeline.models.resolve_model``) in eval mode, float32, and the first
    ``prompts`` puzzles of its task's seed-0 training split."""
    from transformers import AutoModelForCausalLM

    from countdown_env.splits.eval_sets import load_eval_set
    from learners.pipeline.compare import train_split
    from learners.pipeline.compare.settings import EVAL_SET
    from learners.pipeline.data import model_task
    from learners.pipeline.evaluation.evaluate import prompt_token_ids
    from learners.pipeline.models import resolve_model
    from learners.pipeline.models.tokenizer_io import load_tokenizer

    model_dir = Path(resolve_model(model))
    task = model_task(model_dir)
    if task is None:
        raise RuntimeError(f"{model} records no task")
    tokenizer = load_tokenizer(model_dir)
    exclude = [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]
    puzzles = train_split(task, TRAIN_SIZE, SPLIT_SEED, exclude)[:prompts]
    if len(puzzles) < prompts:
        raise RuntimeError(f"the training split holds {len(puzzles)} puzzles, {prompts} asked for")
    network = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    network.eval()
    return Setting(model, model_dir, network, tokenizer, task, puzzles, prompt_token_ids(tokenizer, task, puzzles))


def rewards_of(task, tokenizer, stop_ids, puzzles, completions, max_new_tokens: int) -> list[float]:
    """The task's verifier reward of each completion (``score_trajectories``; truncated: 0)."""
    from countdown_env.trajectory import score_trajectories

    trajectories = score_trajectories(
        puzzles,
        [list(c) for c in completions],
        tokenizer,
        reward_config=task.reward_config,
        max_new_tokens=max_new_tokens,
        stop_ids=list(stop_ids),
    )
    return [float(t.reward) for t in trajectories]


# ------------------------------------------------------------------------------------------------ one batch
@dataclasses.dataclass
class Batch:
    """One generation batch in TRL's layout (prompts left-padded, completions right-padded, eos kept)."""

    seed: int
    group_size: int
    puzzles: list  # one per row
    prompt_ids: torch.Tensor  # (rows, P)
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor  # (rows, T)
    completion_mask: torch.Tensor  # (rows, T) int
    rewards: torch.Tensor  # (rows,)
    success: torch.Tensor  # (rows,) bool: the verifier's verdict, not cut at the budget
    advantages: torch.Tensor  # (rows,)

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(dim=1)

    @property
    def mixed(self) -> torch.Tensor:
        """(groups,) bool: the group has a success and a failure (GRPO's advantage is non-zero there)."""
        grouped = self.success.view(-1, self.group_size)
        return grouped.any(dim=1) & ~grouped.all(dim=1)

    def completions(self) -> list[list[int]]:
        """Each row's completion ids (eos kept, padding dropped)."""
        return [ids[: int(n)].tolist() for ids, n in zip(self.completion_ids, self.lengths, strict=True)]

    def as_trl(self) -> dict:
        return dict(
            prompt_ids=self.prompt_ids,
            prompt_mask=self.prompt_mask,
            completion_ids=self.completion_ids,
            completion_mask=self.completion_mask,
            advantages=self.advantages.clone(),
        )


def grpo_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """TRL's ``grpo`` advantages (scale_rewards="group"): (r − group mean) / (group std + 1e-4), Bessel std."""
    grouped = rewards.view(-1, group_size)
    mean = grouped.mean(dim=1).repeat_interleave(group_size)
    std = grouped.std(dim=1).repeat_interleave(group_size)  # unbiased, as trl.trainer.utils.nanstd
    return (rewards - mean) / (std + 1e-4)


def generate_batch(
    model, tokenizer, task, puzzles, prompt_ids, *, group_size, max_new_tokens, seed, sampler_batch: int = 64
) -> Batch:
    """``group_size`` completions of every prompt at T = 0.8 through ``learners.sampling.HFSampler`` (``sampler_batch``
    rows per generate call: the sampled tokens depend on it), scored by the task's verifier."""
    from countdown_env.trajectory import score_trajectories
    from learners.sampling import HFSampler, Sampling

    sampler = HFSampler(model, tokenizer, batch_size=sampler_batch)
    samples = sampler.sample(
        prompt_ids, Sampling(temperature=TEMPERATURE, seed=seed), n=group_size, max_new_tokens=max_new_tokens
    )
    ids = [s.ids for per_prompt in samples for s in per_prompt]
    rows = [p for p in puzzles for _ in range(group_size)]
    trajectories = score_trajectories(
        rows,
        ids,
        tokenizer,
        reward_config=task.reward_config,
        max_new_tokens=max_new_tokens,
        stop_ids=list(sampler.stop_ids),
    )
    pad = tokenizer.pad_token_id
    width_p, width_c, n = max(map(len, prompt_ids)), max(map(len, ids)), len(ids)
    prompt = torch.full((n, width_p), pad, dtype=torch.long)
    prompt_mask = torch.zeros((n, width_p), dtype=torch.long)
    completion = torch.full((n, width_c), pad, dtype=torch.long)
    completion_mask = torch.zeros((n, width_c), dtype=torch.long)
    for i, row_ids in enumerate(ids):
        p = prompt_ids[i // group_size]
        prompt[i, width_p - len(p) :], prompt_mask[i, width_p - len(p) :] = torch.tensor(p), 1
        completion[i, : len(row_ids)], completion_mask[i, : len(row_ids)] = torch.tensor(row_ids), 1
    rewards = torch.tensor([float(t.reward) for t in trajectories])
    success = torch.tensor([bool(t.verification.correct) and not t.truncated for t in trajectories])
    return Batch(
        seed,
        group_size,
        rows,
        prompt,
        prompt_mask,
        completion,
        completion_mask,
        rewards,
        success,
        grpo_advantages(rewards, group_size),
    )


# ------------------------------------------------------------------------------------------------ a learner's seam 1
@contextlib.contextmanager
def learner_trainer(
    learner: str, model_dir, tokenizer, task, puzzles, *, group_size: int, max_new_tokens: int, **config
):
    """A real trainer of the registered ``learner`` (``config``: its config options over the registry defaults) on
    its own copy of the weights at ``model_dir``, for calling its seam 1 (:func:`shape`); output in a temporary
    folder."""
    from transformers import AutoModelForCausalLM

    from learners.core.registry import get_learner
    from learners.pipeline.data import prompt_dataset
    from learners.pipeline.models.tiny import tiny_cpu_kwargs

    spec = get_learner(learner)
    _, trainer_class = spec.load()
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = tiny_cpu_kwargs(
            tmp,
            num_generations=group_size,
            per_device_train_batch_size=group_size,
            max_completion_length=max_new_tokens,
            temperature=TEMPERATURE,
        )
        yield trainer_class(
            model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
            reward_funcs=None,
            args=spec.make_config(**{**kwargs, **config}),
            train_dataset=prompt_dataset(puzzles, task),
            processing_class=tokenizer,
            task=task,
        )


def shape(trainer, batch: Batch) -> dict:
    """The learner's seam 1 (``shape_batch``) on ``batch`` as a training batch, with the rollout the base trainer
    builds (its own verifier verdicts, scored once: not ``batch.success``)."""
    trl_batch = batch.as_trl()
    inputs = [{"numbers": list(p.numbers), "target": p.target} for p in batch.puzzles]
    return trainer.shape_batch(trl_batch, trainer.make_rollout(trl_batch, inputs, batch.rewards[:, None]))


def shape_ps_ppo(trainer, batch: Batch, budget: float, strategy: str) -> torch.Tensor:
    """(rows, T) survival ξ of every row from ``PSPPOTrainer.shape_batch`` at ``budget`` and ``strategy``."""
    trainer.args.budget, trainer.args.cutoff_strategy = float(budget), strategy
    return shape(trainer, batch)["cutoff_survival"]


# ------------------------------------------------------------------------------------------------ prefix values
def prefix_values(
    requests, sampler, sampling_seed, task, tokenizer, puzzles, prompt_ids, *, continuations, max_new_tokens,
    batch_size, log,
) -> list[dict]:  # fmt: skip
    """Mean reward, its standard error, the number of continuations and their rewards for each request (prompt
    index, prefix ids): ``continuations`` continuations of prompt+prefix within the remaining budget at T = 0.8,
    batched through the sampler (call ``c`` seeded ``sampling_seed + c``). A prefix that already ended (its last
    token stops, or the budget is spent) has its own reward as an exact value (``n`` = 0)."""
    import numpy as np

    from learners.sampling import Sampling

    stop = set(sampler.stop_ids)
    out: list[dict | None] = [None] * len(requests)
    todo = []
    for k, (prompt, prefix) in enumerate(requests):
        if (prefix and prefix[-1] in stop) or len(prefix) >= max_new_tokens:  # already ended: exact value
            reward = rewards_of(task, tokenizer, sampler.stop_ids, [puzzles[prompt]], [prefix], max_new_tokens)
            out[k] = dict(mean=reward[0], se=0.0, n=0, rewards=reward)
        else:
            todo.append(k)
    # Longest prefix first: rows of one generate call then have similar budgets (and lengths).
    todo.sort(key=lambda k: -len(requests[k][1]))
    per_call = max(batch_size // continuations, 1) * 8  # requests per sample() call (progress lines)
    start = time.perf_counter()
    for call, first in enumerate(range(0, len(todo), per_call)):
        chunk = todo[first : first + per_call]
        inputs = [prompt_ids[requests[k][0]] + requests[k][1] for k in chunk]
        budgets = [max_new_tokens - len(requests[k][1]) for k in chunk]
        sampling = Sampling(temperature=TEMPERATURE, seed=sampling_seed + call)
        samples = sampler.sample(inputs, sampling, n=continuations, max_new_tokens=budgets)
        flat_puzzles, flat_ids = [], []
        for k, per_request in zip(chunk, samples, strict=True):
            prompt, prefix = requests[k]
            for s in per_request:
                flat_puzzles.append(puzzles[prompt])
                flat_ids.append(prefix + s.ids)
        rewards = np.asarray(
            rewards_of(task, tokenizer, sampler.stop_ids, flat_puzzles, flat_ids, max_new_tokens)
        ).reshape(len(chunk), continuations)
        for k, values in zip(chunk, rewards, strict=True):
            var = float(values.var(ddof=1)) if values.size > 1 else 0.0
            out[k] = dict(
                mean=float(values.mean()), se=math.sqrt(var / values.size), n=int(values.size), rewards=values.tolist()
            )
        done = first + len(chunk)
        rate = done * continuations / (time.perf_counter() - start)
        log(f"    continuations: {done}/{len(todo)} prefixes x {continuations} ({rate:.0f} rows/s)")
    return out


# ------------------------------------------------------------------------------------------------ statistics
def cluster_bootstrap(statistic, clusters: int, *, resamples: int = 1000, seed: int = 0) -> list[float]:
    """95 % percentile interval of ``statistic(indices)`` over ``resamples`` draws of ``clusters`` cluster indices
    with replacement (prompts or groups: the independent units); NaN draws are dropped."""
    import numpy as np

    rng = np.random.default_rng(seed)
    values = np.array([statistic(rng.integers(0, clusters, clusters)) for _ in range(resamples)], dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return [math.nan, math.nan]
    low, high = np.quantile(values, [0.025, 0.975])
    return [float(low), float(high)]


# ------------------------------------------------------------------------------------------------ provenance
def without_nan(value):
    """``value`` with every NaN or infinite float as ``None`` (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nan(v) for v in value]
    return value


def versions() -> dict:
    import numpy
    import transformers

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", None
    return dict(
        python=platform.python_version(),
        torch=torch.__version__,
        transformers=transformers.__version__,
        numpy=numpy.__version__,
        git_commit=commit,
        git_tracked_changes=dirty,
        platform=f"{platform.system()}, {cpu_line(cpu_record())}",  # the vector extensions set CPU step times
    )


def command_line(argv: list[str]) -> str:
    """``python SCRIPT ARGS`` with paths inside the repository made relative (no machine paths)."""
    import sys

    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        script = Path(script.name)
    args = []
    for a in argv:
        p = Path(a)
        if p.is_absolute():
            try:
                a = str(p.resolve().relative_to(ROOT))
            except ValueError:
                a = "<abs>/" + p.name
        args.append(a)
    return shlex.join(["python", str(script), *args])


# ------------------------------------------------------------------------------------------------ one measurement
PRECONDITIONS_PROTOCOL = "docs/experiments.md#preconditions-of-the-claims-monte-carlo-no-training"


class Measurement:
    """What every precondition script records beside its figures: its name, the command, the load average at the
    start and the wall time. ``log`` prints a timestamped progress line; ``finish`` writes ``results.json`` and
    ``summary.md`` into the output folder (atomically) and prints the summary. Torch runs on one thread."""

    def __init__(self, name: str, argv: list[str] | None, protocol: str = PRECONDITIONS_PROTOCOL):
        import sys

        self.protocol = protocol

        torch.set_num_threads(1)
        self.name = name
        self.command = command_line(sys.argv[1:] if argv is None else list(argv))
        self.started = time.perf_counter()
        loadavg = Path("/proc/loadavg")
        self.load = " ".join(loadavg.read_text().split()[:3]) if loadavg.is_file() else "n/a"

    def log(self, message: str) -> None:
        print(f"[{time.perf_counter() - self.started:7.1f}s] {message}", flush=True)

    def finish(self, out: Path, payload: dict, summary) -> dict:
        """The report (provenance, then ``payload``), written as ``out/results.json`` and ``out/summary.md``
        (``summary(report)``, which may open with :func:`provenance_lines`)."""
        import datetime
        import json

        from countdown_env.helpers.atomic import write_text

        report = dict(
            precondition=self.name,
            protocol=self.protocol,
            date=datetime.date.today().isoformat(),
            command=self.command,
            runtime_s=time.perf_counter() - self.started,
            load_at_start=self.load,
            versions=versions(),
            **payload,
        )
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "results.json", json.dumps(without_nan(report), indent=1) + "\n")
        text = summary(report)
        write_text(out / "summary.md", text)
        print(text)
        return report


def provenance_lines(report: dict, title: str, script: str) -> list[str]:
    """A summary's opening: its title, the protocol, the command, date, wall time, machine and load."""
    v = report["versions"]
    return [
        f"# {title}",
        "",
        f"Protocol: `docs/experiments.md`, preconditions ({report['precondition']}). Written by `{script}`.",
        "",
        f"- command: `{report['command']}`",
        f"- date: {report['date']}; wall time {report['runtime_s'] / 60:.1f} min; {v['platform']}, torch "
        f"{v['torch']}, 1 thread; load average at start {report['load_at_start']}",
    ]
