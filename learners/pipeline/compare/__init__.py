r"""``countdown compare``: registered learners side by side, from one warm start, on the same prompts and eval.

::

    countdown compare --learners grpo dr_grpo dapo prime_rl contrastive ps_ppo s_grpo t_spmo \
        --seeds 0 1 2 --steps 200 --eval-every 50 --out runs/compare [--set grpo.learning_rate=1e-5] [--resume]

Every run (one learner, one seed) starts from the same model folder (``--model``; default
:func:`default_warm_start`), trains on the same prompts in the same order for a given seed (a split of the model's
task built from the seed, disjoint from the eval set; TRL's sampler shuffles it with the seed), with the same
group size, generation settings and learning rate (the ``compare`` preset), and is evaluated the same way:
``datasets/tiny_n3.jsonl``, 4 samples per puzzle at T=0.8, at step 0, every ``--eval-every`` steps and at the
end (the eval's sampling seed is the run's seed, and the eval does not disturb the training RNG). A learner's own
settings are its registry defaults (``learners.core.registry``) unless ``--set LEARNER.key=value`` (or
``all.key=value``) says otherwise.

Output (``DIR``)
----------------
- ``results.csv``: one row per (learner, seed, eval step), columns :data:`CSV_COLUMNS`; the last four are
  cumulative over the run's training steps (eval excluded):

  - ``wall_seconds``: time inside the optimiser steps (``on_step_begin`` to ``on_step_end``: generation, scoring,
    the learner's seams, forward/backward, optimiser), eval and checkpointing excluded;
  - ``generated_tokens``: completion tokens sampled by TRL (the env's trajectory lengths, eos included);
  - ``loss_tokens``: the non-zero entries of the loss mask (``completion_mask * tool_mask``) after the learner's
    ``select_loss_tokens``, summed over every loss call — the tokens the update actually trained on;
  - ``forward_tokens``: completion columns the loss's forward/backward actually ran (rows × padded width of each
    micro-batch, times the base trainer's ``loss/forward_token_frac`` for learners that truncate to their loss
    tokens: PS-PPO, T-SPMO, S-GRPO with ``truncate_after_last_selected``). Prompt tokens, TRL's no-grad old/ref
    log-prob passes and learners' own extra passes (PS-PPO's proxy, T-SPMO's replay) are not counted; they
    show in ``wall_seconds``.

  ``train_reward`` is the mean env reward of the completions generated since the previous eval row (empty at
  step 0); ``pass@1``/``pass@N`` (N = ``--eval-samples``, 4 by default)/``format_rate``/``mean_completion_tokens``
  come from the eval.
- ``summary.md``: the command and machine; per learner the final pass@1 and pass@N (mean over seeds, 95 % CI:
  Student t over the seeds' means, or the puzzle bootstrap for a single seed), the difference to ``grpo`` two ways
  — the mean of the per-seed paired differences with a Student t interval over seeds (training variance inside:
  the headline) and a paired puzzle bootstrap (per seed, puzzles resampled with replacement, seeds held fixed) —,
  seconds per step and its ratio to ``grpo``, tokens per step; ranked by pass@1; the mechanism-engagement table
  (:mod:`.engagement`: the share of loss tokens each learner's mechanism changed, "never acted" when 0); failed
  runs with their error.
- ``engagement.csv``: one row per (learner, seed, mechanism quantity): its mean over the run's logged steps.
- ``curves.png``: pass@1 against step and against training wall-clock seconds, mean completion length and
  cumulative forward/loss tokens against step; one line per learner (mean over seeds), band min-max over seeds.
- ``runs/LEARNER-sSEED/``: ``rows.csv``, ``evals/step-N.jsonl`` (per-puzzle correctness of every eval),
  ``final_eval.jsonl`` (the last one), ``log_history.json``, ``DONE`` (a JSON record) or ``ERROR`` (traceback),
  and TRL checkpoints (every ``--eval-every`` steps; removed after ``DONE`` unless ``--keep-checkpoints``).

A failing run is reported (``ERROR``, the summary) and the others go on; the command then exits with 1.
``--resume`` skips runs with ``DONE``, continues the others from their newest checkpoint
(``trainer.train(resume_from_checkpoint=...)``, counters restored from the checkpoint's ``compare_state.json``;
exact across epochs) and rewrites the results; without ``--resume`` or ``--overwrite`` a non-empty ``DIR`` is
refused, and so is ``--resume`` into a folder without ``compare.json``. Learners of one seed whose prompt digests
differ (not the same prompts in the same order) are an error: the command exits 1 naming the seeds. Files are
written atomically (temporary file, then ``os.replace``). ``--quick``: tiny sizes for tests.

Runs are sequential (seed-major: every learner of seed 0 first). Under ``accelerate launch`` with N processes each
run is one N-process training run (``--prompts-per-step`` stays the global batch: N must divide its rows), the main
process alone writes ``DIR`` and evaluates, the counters are summed over the processes, and a failing run stops the
comparison (the processes cannot agree to go on); :mod:`learners.pipeline.runs.processes`.
"""

from __future__ import annotations

import dataclasses
import json
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path

from countdown_env.helpers.atomic import write_text

from ..data import tiny_task
from ..evaluation.statistics import mean_ci, paired_bootstrap_diff
from ..models import resolve_model
from ..runs.record import config_changes
from .curves import plot_curves
from .engagement import engagement_csv, engagement_rows
from .results import CSV_COLUMNS, CUMULATIVE_COLUMNS, read_rows, rows_to_csv
from .run_progress import Progress
from .runs import (
    STEP0_DIR,
    Comparison,
    default_warm_start,
    has_shipped_warm_start,
    run_name,
    saved_step0_reports,
    train_one,
)
from .settings import EVAL_SET, SETTINGS_FILE, CompareSettings, parse_overrides
from .summary import learner_table, prompt_digest_mismatches, summary_markdown

__all__ = [
    "CSV_COLUMNS",
    "CUMULATIVE_COLUMNS",
    "CompareSettings",
    "add_arguments",
    "default_warm_start",
    "learner_table",
    "mean_ci",
    "paired_bootstrap_diff",
    "parse_overrides",
    "read_rows",
    "rows_to_csv",
    "run",
    "run_compare",
]


def quiet_libraries() -> None:
    """No per-checkpoint progress bars or deprecation chatter from transformers between the progress lines."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=r".*gradient_checkpointing.*deprecated", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*deprecated", category=FutureWarning)


def _relevant(overrides: Sequence[str], learners: Sequence[str]) -> list[str]:
    """The ``--set`` items that apply to ``learners`` (every learner's and theirs), in order, in the grammar a
    comparison records now (a ``compare.json`` of the earlier grammar resumes)."""
    from .settings import canonical_override, split_override

    return [canonical_override(item) for item in overrides if split_override(item)[0] in ("all", *learners)]


COMPARE_OUTPUTS = (SETTINGS_FILE, "results.csv", "summary.md", "engagement.csv", "curves.png", "runs", "data",
                   "init-model", STEP0_DIR)  # fmt: skip
"""Every entry a comparison writes into ``DIR``: ``--overwrite`` removes these and refuses a folder with anything
else."""


def prepare_dir(out: Path, settings: CompareSettings, *, resume: bool, overwrite: bool) -> None:
    """Refuse a non-empty ``out`` unless resuming (a comparison's folder, same settings) or overwriting (a
    comparison's folder holding nothing else)."""
    from countdown_env.helpers.atomic import check_output, remove_owned

    settings_path = out / SETTINGS_FILE
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file")
    check_output(out, [resolve_model(settings.model)] if settings.model else [], overwrite=True, what="--out")
    non_empty = out.is_dir() and any(out.iterdir())
    if non_empty and resume:
        if not settings_path.is_file():
            raise ValueError(
                f"--resume: {out} has no {SETTINGS_FILE}, so it holds no comparison to continue; give a new --out"
            )
        if settings_path.is_file():
            old = CompareSettings.upgraded(json.loads(settings_path.read_text()))
            new = settings.to_dict()
            changed = list(config_changes({k: old.get(k) for k in new}, new, ignore=CompareSettings.RESUMABLE))
            if "overrides" in changed and _relevant(old.get("overrides", []), settings.learners) == _relevant(
                settings.overrides, settings.learners
            ):
                changed.remove("overrides")
            if changed:
                raise ValueError(
                    f"--resume: {out} was run with different {changed} "
                    f"({', '.join(f'{k}={old.get(k)!r}' for k in changed)}); use a new --out or --overwrite"
                )
    elif non_empty and overwrite:
        if not settings_path.is_file():
            raise ValueError(
                f"--overwrite: {out} has no {SETTINGS_FILE}; refusing to delete a folder compare did not write"
            )
        remove_owned(out, COMPARE_OUTPUTS)  # refuses a comparison's folder that also holds the user's files
    elif non_empty:
        raise ValueError(f"{out} is not empty: pass --resume to continue it or --overwrite to start again")
    out.mkdir(parents=True, exist_ok=True)
    write_text(settings_path, json.dumps(settings.to_dict(), indent=2) + "\n")


def eval_puzzles() -> list[tuple[tuple[int, ...], int]]:
    """``(numbers, target)`` of every eval-set puzzle (all of it, whatever ``--eval-limit``): never trained on."""
    from countdown_env.splits.eval_sets import load_eval_set

    return [(tuple(r["numbers"]), r["target"]) for r in load_eval_set(EVAL_SET, as_dataset=False)]


def train_split(task, size: int, seed: int, exclude) -> list:
    """``size`` distinct training puzzles of ``task`` drawn with ``seed``, none of them in ``exclude``."""
    from countdown_env import Puzzle
    from countdown_env.splits import SplitSpec, build_split_records

    spec = SplitSpec(task=dataclasses.replace(task, seed=seed), train_size=size, eval_size=0, exclude=exclude)
    rows = build_split_records(spec, progress=False).get("train", [])
    return [Puzzle.from_dict(r) for r in rows]


def train_file_puzzles(path: str | Path, size: int, seed: int, exclude) -> list:
    """Up to ``size`` puzzles of the JSONL ``path`` (``numbers``/``target`` rows), in an order shuffled with ``seed``;
    a puzzle of ``exclude`` (the eval set) in the file is refused by line, as is a file with no puzzle."""
    import random

    from countdown_env import Puzzle
    from countdown_env.helpers.jsonl import iter_jsonl

    held_out = {(tuple(sorted(numbers)), target) for numbers, target in exclude}
    puzzles = []
    for line, row in enumerate(iter_jsonl(path), 1):
        try:
            puzzle = Puzzle.from_dict(row)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ValueError(f"--train-file {path} line {line}: not a puzzle ({exc})") from None
        if (tuple(sorted(puzzle.numbers)), puzzle.target) in held_out:
            raise ValueError(f"--train-file {path} line {line}: {puzzle.numbers} -> {puzzle.target} is an eval puzzle")
        puzzles.append(puzzle)
    if not puzzles:
        raise ValueError(f"--train-file {path}: no puzzles")
    random.Random(seed).shuffle(puzzles)
    return puzzles[:size]


def run_compare(
    settings: CompareSettings,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    progress_bars: bool | None = None,
) -> dict:
    """Run (or resume) the comparison into ``out``; returns ``{"failures": {...}, "finished": n, ...}``. The folder
    is held exclusively for the whole comparison (a second compare into it is refused at once)."""
    from ..runs.processes import run_processes

    if settings.train_file:  # an eval puzzle in it is refused before the folder is claimed or any run starts
        train_file_puzzles(settings.train_file, settings.train_size, 0, eval_puzzles())
    processes = run_processes()
    with processes.claim(out):
        return _run_compare(settings, Path(out), resume=resume, overwrite=overwrite, progress_bars=progress_bars)


def _run_compare(settings: CompareSettings, out: Path, *, resume: bool, overwrite: bool, progress_bars) -> dict:
    """:func:`run_compare` under its claim: the model, task and eval rows; each (learner, seed) run in order (a failing
    run is reported and the others go on); then the reports."""
    from countdown_env.splits.eval_sets import load_eval_set

    from ..data import model_task
    from ..models.tokenizer_io import load_tokenizer
    from ..runs.processes import run_processes

    out = Path(out)
    processes = run_processes()  # several: the main process writes DIR and decides; the others train beside it
    processes.decide(lambda: prepare_dir(out, settings, resume=resume, overwrite=overwrite))
    model, random_model = _comparison_model(settings, out, processes)
    task = model_task(model) or tiny_task()
    eval_rows = load_eval_set(EVAL_SET, as_dataset=False)[: settings.eval_limit or None]
    all_rows: dict[tuple[str, int], list[dict]] = {}
    runs = [(learner, seed) for seed in settings.seeds for learner in settings.learners]

    def rewrite_results() -> None:
        if processes.is_main:
            ordered = [row for key in runs for row in all_rows.get(key, [])]
            write_text(out / "results.csv", rows_to_csv(ordered, settings.eval_samples))

    progress = Progress(len(runs), bars=progress_bars, quiet=not processes.is_main)
    saved = processes.decide(lambda: saved_step0_reports(out))
    comparison = Comparison(settings=settings, out=out, model=model, task=task, tokenizer=load_tokenizer(model),
                            eval_rows=eval_rows, train_puzzles=_train_rows(settings, out, task, processes),
                            progress=progress, on_row=rewrite_results, rows=all_rows, initial_evals=saved,
                            saved_step0=set(saved))  # fmt: skip
    failures: dict[tuple[str, int], str] = {}
    skipped = 0
    quiet_libraries()
    for learner, seed in runs:
        outcome = _run_one(learner, seed, comparison, runs, resume, processes)
        if outcome == "skipped":
            skipped += 1
            continue
        if outcome is not None:
            failures[(learner, seed)] = outcome
        rewrite_results()
    # as the user named it ("warm-start" for the shipped one): no absolute path of this machine in the summary
    info = dict(model=settings.model or "warm-start", random_model=random_model, task=task.to_dict(),
                eval_puzzles=len(eval_rows))  # fmt: skip

    def write_reports() -> dict:
        rewrite_results()
        return _write_reports(out, settings, runs, all_rows, failures, skipped, info)

    return processes.decide(write_reports)  # the main process writes; every process returns the result


def _comparison_model(settings: CompareSettings, out: Path, processes) -> tuple[Path, bool]:
    """The model every run starts from (``--model``, else the shipped warm start, else a random tiny model written
    into ``out``) and whether it is that random one."""
    from ..models import resolve_model

    random_model = settings.model is None and not has_shipped_warm_start()
    model = Path(resolve_model(settings.model)) if settings.model else processes.decide(lambda: default_warm_start(out))
    if not (model / "config.json").is_file():
        raise FileNotFoundError(f"--model {model}: no config.json (give a checkpoint folder)")
    return model, random_model


def _train_rows(settings: CompareSettings, out: Path, task, processes):
    """A function of the seed giving its training puzzles (``--train-file`` drawn by the seed, else a split of
    ``task``), built once per seed by the main process and written to ``out/data/train-sSEED.jsonl``."""
    from countdown_env.helpers.jsonl import write_jsonl

    exclude = eval_puzzles()
    cache: dict[int, list] = {}

    def build(seed: int):
        if settings.train_file:
            puzzles = train_file_puzzles(settings.train_file, settings.train_size, seed, exclude)
        else:
            puzzles = train_split(task, settings.train_size, seed, exclude)
        if not puzzles:
            raise ValueError("no training puzzles")
        path = out / "data" / f"train-s{seed}.jsonl"
        if not path.is_file():
            write_jsonl([{"numbers": list(p.numbers), "target": p.target} for p in puzzles], path)
        return puzzles

    def rows(seed: int):
        if seed not in cache:
            cache[seed] = processes.decide(lambda: build(seed))
        return cache[seed]

    return rows


def _run_one(learner: str, seed: int, comparison: Comparison, runs: list, resume: bool, processes) -> str | None:
    """Train one (learner, seed) run: ``None`` when it finished, ``"skipped"`` when a resumed comparison had
    finished it before, else the traceback of its failure (also written to its ``ERROR``)."""
    out, progress = comparison.out, comparison.progress
    run_dir = out / "runs" / run_name(learner, seed)
    if resume and processes.decide(lambda: (run_dir / "DONE").is_file()):
        if processes.is_main:
            comparison.rows[(learner, seed)] = read_rows(run_dir / "rows.csv")
        progress.index += 1
        progress.note(f"[{progress.index}/{progress.total}] {learner} seed {seed}: done before, skipped")
        return "skipped"
    started = time.perf_counter()
    try:
        record = train_one(learner, seed, comparison, resume)
    except Exception:  # noqa: BLE001 - a failing run is reported and the others go on
        if processes.several:
            raise  # the other processes are inside this run's collectives: they cannot go on to the next one
        error = traceback.format_exc()
        write_text(run_dir / "ERROR", error)
        if progress.index < runs.index((learner, seed)) + 1:
            progress.index = runs.index((learner, seed)) + 1
            progress.label = f"[{progress.index}/{progress.total}] {learner} seed {seed}"
        progress.finish(f"FAILED: {error.strip().splitlines()[-1]}")
        return error
    progress.finish(f"done: pass@1 {record['pass@1']:.3f}, {record['wall_seconds']:.1f} s training, "
                    f"{time.perf_counter() - started:.1f} s with evals")  # fmt: skip
    return None


def _write_reports(out: Path, settings: CompareSettings, runs: list, all_rows: dict, failures: dict, skipped: int,
                   info: dict) -> dict:  # fmt: skip
    """``summary.md``, ``engagement.csv`` and ``curves.png`` (``results.csv`` is rewritten as runs finish); returns
    the comparison's result."""
    rows = [row for key in runs for row in all_rows.get(key, [])]
    engagement = engagement_rows({key: out / "runs" / run_name(*key) for key in runs})  # read the histories once
    write_text(out / "summary.md", summary_markdown(out, settings, rows, failures, info, engagement))
    write_text(out / "engagement.csv", engagement_csv(engagement))
    plot_curves(rows, out / "curves.png", settings.learners)
    return {
        "out": str(out),
        "finished": len(runs) - len(failures),
        "skipped": skipped,
        "failures": {run_name(*key): text.strip().splitlines()[-1] for key, text in failures.items()},
        "prompt_digest_mismatches": prompt_digest_mismatches(out, settings),
    }
