"""Reproducible train/test splits of Countdown puzzles: what a build is (:class:`SplitSpec`) and the build itself
(:func:`build_split_records`: plain row dicts, no HF import).

Each split is drawn from its own seeded puzzle stream per number count (the test stream never depends on the
train size), duplicates are dropped by canonical key (sorted numbers, target: a permutation of the numbers is
the same puzzle), and train never holds a puzzle of test (nor of ``exclude``). The splits are named as Hugging Face
datasets names them, ``train`` and ``test`` (:data:`SPLIT_NAMES`). Trivial puzzles (the target is one
of the numbers, :func:`~countdown_env.puzzle.is_trivial`) are left out unless the task's ``allow_trivial``: each
stream draws with ``allow_trivial=True`` and the build skips a trivial index (the generator itself would redraw
it within the index), so the rows are those built before the task rule existed (the committed eval sets under
``datasets/`` are rebuilt byte for byte). Every row carries a reference
solution checked by the verifier. Sizes are totals, shared as evenly as possible across ``n_numbers`` (earlier
counts take the remainder); rows are interleaved across counts so that any prefix is balanced.

A :class:`SplitSpec` holds a :class:`~countdown_env.task.CountdownTask` (settings, rules, template); each stream draws
from that task with its count and seed replaced. The same :class:`SplitSpec` gives the same rows on any machine.

A build is two steps: a cheap, serial *plan* (which generator indices each (split, count) stream keeps: puzzles are
drawn without solution counts, duplicates and trivial ones skipped) and the expensive *rows* (solution, count,
difficulty per kept index), which are independent of each other. So ``num_proc`` spreads the rows over a process
pool, and :mod:`countdown_env.splits.shards` computes every n-th row for one machine and merges the shards back in
order. All give the bytes of a one-process build. ``counts=False`` skips the solution counts (no
``num_solutions``/``difficulty`` columns; up to :data:`MAX_N_NUMBERS_NO_COUNTS` numbers).

The rest of a split's life is in modules of their own: :mod:`countdown_env.splits.folders` writes a split folder
(:func:`~countdown_env.splits.folders.write_splits`, atomically, byte-identically) and reads it back
(:func:`~countdown_env.splits.folders.read_split_rows`); :mod:`countdown_env.splits.manifest` is its integrity
manifest (:func:`~countdown_env.splits.manifest.verify_split`); :mod:`countdown_env.splits.hf_datasets` the Hugging Face
side (features, ``Dataset``/``DatasetDict``, ``save_to_disk``); :mod:`countdown_env.splits.shards` a build spread
over machines; :mod:`countdown_env.splits.eval_sets` the fixed eval sets committed in ``datasets/``;
:mod:`countdown_env.helpers.jsonl` the jsonl files.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..puzzle import Puzzle, is_trivial
from ..task import CountdownTask, task_from

SPLIT_COLUMNS = ("prompt", "numbers", "target", "n_numbers", "solution", "num_solutions", "difficulty")
"""Columns of every split row, in this order (without the last two when built with ``counts=False``)."""

COUNT_COLUMNS = ("num_solutions", "difficulty")

SPLIT_NAMES = ("train", "test")
"""The split names of a build, as Hugging Face datasets names them (TRL's ``--dataset_test_split`` default is
``"test"``). The sizes keep the role's name, as TRL does (``eval_size`` feeds ``eval_dataset``)."""

HELD_OUT = "test"

LEGACY_SPLIT_NAMES = {"test": "eval"}
"""The held-out split was named ``eval`` until the HF naming: its streams keep that seed name (:func:`stream_seed`),
so every build, and the committed eval sets, stay byte for byte."""

MAX_N_NUMBERS = 6
"""Largest number count the splits accept with solution counts (counting is exact up to 6 numbers)."""

MAX_N_NUMBERS_NO_COUNTS = 8
"""Largest number count with ``counts=False`` (the solver's limit)."""


MAX_CONSECUTIVE_DUPLICATES = 500
"""Draws in a row that may all repeat known puzzles before the puzzle space counts as exhausted."""


class SplitError(ValueError):
    """Raised for invalid split arguments, or when the puzzle space is too small for the sizes asked."""


PuzzleKey = tuple[tuple[int, ...], int]


@dataclass(frozen=True, init=False)
class SplitSpec:
    """Everything that determines a build: a :class:`~countdown_env.task.CountdownTask` (generator settings,
    rules, template; its ``seed`` is the build's seed), the number counts, the split sizes (totals over the
    counts), ``allow_trivial`` and ``exclude``.

    ``allow_trivial`` is the task's field (``None``, the default: the task's, False for a new task; True or False
    replaces the task's), so the recorded task says whether the rows may hold trivial puzzles.

    ``SplitSpec(n_numbers=(3, 4), train_size=..., task=task)`` or, as before, with the task's fields as keywords
    (``seed=``, ``value_range=``, ``template=`` ...). ``n_numbers`` defaults to the task's counts, else (3, 4, 5);
    the stored task's ``n_numbers`` holds the counts (the task's own when they match, else an int for one count and
    equal weights for several), so that ``spec.task.to_dict()`` records the build. The task's fields read as the
    spec's (``spec.seed``, ``spec.value_range`` ...). Splits need solvable puzzles: a task with
    ``require_solvable=False`` is refused. ``counts=False`` skips the solution counts (rows without
    ``num_solutions``/``difficulty``) and allows up to :data:`MAX_N_NUMBERS_NO_COUNTS` numbers.
    """

    task: CountdownTask
    n_numbers: tuple[int, ...]
    train_size: int
    eval_size: int
    allow_trivial: bool
    exclude: frozenset[PuzzleKey] = field(compare=False, repr=False)
    counts: bool = True

    def __init__(
        self,
        n_numbers: int | tuple[int, ...] | None = None,
        train_size: int = 50_000,
        eval_size: int = 512,
        *,
        task: CountdownTask | None = None,
        allow_trivial: bool | None = None,
        exclude: frozenset[PuzzleKey] | Iterable = frozenset(),
        counts: bool = True,
        **task_fields: Any,
    ) -> None:
        if n_numbers is None:
            n_numbers = task.counts if isinstance(task, CountdownTask) else (3, 4, 5)
        task = task_from(task, task_fields, "SplitSpec")
        ns = (n_numbers,) if isinstance(n_numbers, int) else tuple(n_numbers)
        if not ns or len(set(ns)) != len(ns):
            raise SplitError(f"n_numbers must be a non-empty list of distinct counts, got {list(ns)}")
        if not isinstance(counts, bool):
            raise SplitError(f"counts must be True or False, got {counts!r}")
        largest = MAX_N_NUMBERS if counts else MAX_N_NUMBERS_NO_COUNTS
        for n in ns:
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= largest:
                hint = (
                    f"; up to {MAX_N_NUMBERS_NO_COUNTS} without solution counts (--no-counts)"
                    if counts and n in range(MAX_N_NUMBERS + 1, MAX_N_NUMBERS_NO_COUNTS + 1)
                    else ""
                )
                raise SplitError(f"each n_numbers must be an integer in 1..{largest}, got {n!r}{hint}")
        for name, size in (("train_size", train_size), ("eval_size", eval_size)):
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise SplitError(f"{name} must be a non-negative integer, got {size!r}")
        if train_size + eval_size == 0:
            raise SplitError("train_size and eval_size are both 0: nothing to build")
        if not task.require_solvable:
            raise SplitError("split rows carry a verified solution: the task needs require_solvable=True")
        if allow_trivial is not None:
            if not isinstance(allow_trivial, bool):
                raise SplitError(f"allow_trivial must be True, False or None (the task's), got {allow_trivial!r}")
            if allow_trivial != task.allow_trivial:
                task = replace(task, allow_trivial=allow_trivial)
        for k, n in enumerate(ns):  # rows per count as sizes() shares them
            wanted = sum(total // len(ns) + (k < total % len(ns)) for total in (train_size, eval_size))
            bound = distinct_puzzles_bound(task, n)
            if wanted > bound:
                raise SplitError(
                    f"{wanted} distinct puzzles with {n} numbers asked for, but at most {bound} exist with values in "
                    f"{list(task.value_range)} and targets in {list(task.target_range)}: lower --train/--eval or widen "
                    "the ranges"
                )
        if task.counts != ns:  # the task records the counts built (as given when they are the task's own)
            task = replace(task, n_numbers=ns[0] if len(ns) == 1 else tuple((n, 1.0) for n in ns))
        set_field = object.__setattr__
        set_field(self, "task", task)
        set_field(self, "n_numbers", ns)
        set_field(self, "train_size", train_size)
        set_field(self, "eval_size", eval_size)
        set_field(self, "allow_trivial", task.allow_trivial)
        set_field(self, "exclude", frozenset(puzzle_key(k) for k in exclude))
        set_field(self, "counts", counts)

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not the spec's own: the task's fields read as the spec's
        if name in _TASK_FIELDS:
            return getattr(self.task, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def sizes(self, split: str) -> dict[int, int]:
        """Rows per number count for ``split`` ("train" or "test")."""
        total = {"train": self.train_size, HELD_OUT: self.eval_size}[split]
        base, extra = divmod(total, len(self.n_numbers))
        return {n: base + (k < extra) for k, n in enumerate(self.n_numbers)}

    def stream_task(self, n: int, split: str) -> CountdownTask:
        """The task that draws one (count, split) stream: :func:`stream_task`."""
        return stream_task(self.task, n, split)

    def to_dict(self) -> dict[str, Any]:
        """The build settings as plain JSON types: the task's fields (``n_numbers`` as the list of counts), the
        sizes, ``allow_trivial``, ``exclude`` (how many puzzles were excluded) and ``counts`` (only when False)."""
        out = {
            **self.task.to_dict(),
            "n_numbers": list(self.n_numbers),
            "train_size": self.train_size,
            "eval_size": self.eval_size,
            "allow_trivial": self.allow_trivial,
            "exclude": len(self.exclude),
        }
        if not self.counts:
            out["counts"] = False
        return out


_TASK_FIELDS = frozenset(f.name for f in fields(CountdownTask))


def puzzle_key(item: Puzzle | PuzzleKey | Any) -> PuzzleKey:
    """The canonical key (sorted numbers, target) of a :class:`~countdown_env.puzzle.Puzzle` or a ``(numbers,
    target)`` pair; :class:`SplitError` for anything else (an ``exclude`` entry)."""
    if isinstance(item, Puzzle):
        return item.key
    try:
        numbers, target = item
        return tuple(sorted(int(n) for n in numbers)), int(target)
    except (TypeError, ValueError):
        raise SplitError(f"exclude entries must be Puzzles or (numbers, target) pairs, got {item!r}") from None


def stream_seed(seed: int, n_numbers: int, split: str) -> int:
    """The generator seed of one (split, number count) stream: stable across machines and Python versions."""
    split = LEGACY_SPLIT_NAMES.get(split, split)  # "test" draws the streams builds named "eval"
    digest = hashlib.sha256(f"countdown-splits:{seed}:{n_numbers}:{split}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def stream_task(task: CountdownTask, n: int, split: str) -> CountdownTask:
    """The task that draws one (count, split) stream of a build of ``task``: ``n`` numbers, seed :func:`stream_seed`,
    and ``allow_trivial=True``: the stream holds every puzzle and the build skips the trivial ones unless
    ``task.allow_trivial`` (:func:`distinct_draws`), so an index the generator would redraw is dropped instead and
    the rows stay those of builds made before the trivial rule moved into the task (the generator's ~2 % trivial
    draws for 3 and 4 numbers)."""
    return replace(task, n_numbers=n, seed=stream_seed(task.seed, n, split), allow_trivial=True)


def _row(record, rules: CountdownTask, counts: bool = True) -> dict[str, Any]:
    from ..expressions.verifier import verify

    puzzle = record.puzzle
    check = verify(
        record.solution,
        puzzle,
        use_all_numbers=rules.use_all_numbers,
        integer_intermediates=rules.integer_intermediates,
    )
    if not check.correct:  # the solver and the verifier disagree: a bug, never silently kept
        raise RuntimeError(f"reference solution {record.solution!r} for {puzzle} fails verification: {check.reason}")
    row = {
        "prompt": rules.messages(puzzle),
        "numbers": list(puzzle.numbers),
        "target": puzzle.target,
        "n_numbers": puzzle.n_numbers,
        "solution": record.solution,
    }
    if counts:
        row["num_solutions"] = record.num_solutions
        row["difficulty"] = record.difficulty
    return row


def distinct_draws(
    draw: Callable[[int], Any], size: int, taken: set[PuzzleKey], spec: SplitSpec, what: str
) -> Iterator[tuple[int, Any]]:
    """``(draws so far, item)`` for the first ``size`` items of ``draw(0), draw(1), ...`` (a ``Puzzle`` or a record
    with ``.puzzle``) whose keys are not in ``taken`` (which it extends), trivial puzzles skipped unless
    ``spec.allow_trivial``. Raises :class:`SplitError` after :data:`MAX_CONSECUTIVE_DUPLICATES` misses in a row."""
    index, found, misses = 0, 0, 0
    while found < size:
        item = draw(index)
        index += 1
        puzzle = item if isinstance(item, Puzzle) else item.puzzle
        if puzzle.key in taken or (not spec.allow_trivial and is_trivial(puzzle)):
            misses += 1
            if misses > MAX_CONSECUTIVE_DUPLICATES:
                raise SplitError(
                    f"only {found} of {size} distinct {what} after {index} draws: the puzzle space "
                    f"(value_range={spec.task.value_range}, target_range={spec.task.target_range}) is too small for "
                    "the sizes asked"
                )
            continue
        misses = 0
        taken.add(puzzle.key)
        found += 1
        yield index, item


def _unique_rows(spec: SplitSpec, n: int, split: str, size: int, taken: set[PuzzleKey], tick) -> list[dict]:
    """``size`` rows of one stream whose keys are not in ``taken`` (which it extends): one process, each draw's
    record computed once."""
    gen = spec.stream_task(n, split).generator()
    rows: list[dict] = []
    draw = gen.record if spec.counts else (lambda i: gen.record(i, count=False))
    for _, record in distinct_draws(draw, size, taken, spec, f"{split} puzzles with {n} numbers"):
        rows.append(_row(record, spec.task, spec.counts))
        tick()
    return rows


def interleave(groups: list[list[dict]]) -> Iterator[dict]:
    """Row 0 of every group, then row 1 of every group, ... (groups run out at their own length)."""
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        for g in groups:
            if i < len(g):
                yield g[i]


Plan = list[tuple[str, int, list[int]]]
"""``[(split, n, kept generator indices), ...]``: test streams first, then train, counts in spec order."""


def build_plan(spec: SplitSpec) -> Plan:
    """Which indices of each (split, count) stream a build keeps: puzzles drawn without solution counts (fast),
    duplicates, test puzzles (for train), excluded and trivial puzzles skipped, in the order of a serial build."""
    eval_keys: dict[int, set[PuzzleKey]] = {}
    plan: Plan = []
    for split in (HELD_OUT, "train"):
        for n, size in spec.sizes(split).items():
            taken = eval_keys.setdefault(n, set(spec.exclude)) if split == HELD_OUT else set(eval_keys[n])
            gen = spec.stream_task(n, split).generator()
            what = f"{split} puzzles with {n} numbers"
            plan.append((split, n, [i - 1 for i, _ in distinct_draws(gen.__getitem__, size, taken, spec, what)]))
    return plan


def plan_items(plan: Plan) -> list[tuple[str, int, int]]:
    """The plan as one ``(split, n, generator index)`` item per row, in plan order."""
    return [(split, n, index) for split, n, indices in plan for index in indices]


def assemble_splits(plan: Plan, rows: list[dict]) -> dict[str, list[dict]]:
    """Rows in plan order -> ``{split: rows interleaved across counts}`` (non-empty splits only)."""
    out: dict[str, list[dict]] = {}
    position = 0
    for split in (HELD_OUT, "train"):
        groups = []
        for s, _, indices in plan:
            if s == split:
                groups.append(rows[position : position + len(indices)])
                position += len(indices)
        if any(groups):
            out[split] = list(interleave(groups))
    return out


_WORKER_TASKS: dict[str, CountdownTask] = {}


def _rows_for_items(task_json: str, counts: bool, items: list[tuple[str, int, int]]) -> list[dict]:
    """Rows of ``(split, n, index)`` items (a worker's unit: picklable arguments, the task as JSON)."""
    task = _WORKER_TASKS.get(task_json)
    if task is None:
        task = _WORKER_TASKS[task_json] = CountdownTask.from_dict(json.loads(task_json))
    streams: dict[tuple[str, int], Any] = {}
    rows = []
    for split, n, index in items:
        gen = streams.get((split, n))
        if gen is None:
            gen = streams[(split, n)] = stream_task(task, n, split).generator()
        rows.append(_row(gen.record(index, count=counts), task, counts))
    return rows


def compute_rows(spec: SplitSpec, items: list[tuple[str, int, int]], num_proc: int, tick) -> list[dict]:
    """Rows of ``items`` in order, on ``num_proc`` processes (chunks of consecutive items)."""
    task_json = json.dumps(spec.task.to_dict(), sort_keys=True)
    if num_proc <= 1 or len(items) < 2:
        rows = []
        for item in items:
            rows.extend(_rows_for_items(task_json, spec.counts, [item]))
            tick()
        return rows
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # small chunks keep the processes busy to the end (6-number rows cost 100x 3-number ones)
    chunk = max(1, min(64, len(items) // (num_proc * 16)))
    chunks = [items[i : i + chunk] for i in range(0, len(items), chunk)]
    rows: list[dict] = []
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=num_proc, mp_context=context) as pool:
        for part in pool.map(_rows_for_items, [task_json] * len(chunks), [spec.counts] * len(chunks), chunks):
            rows.extend(part)
            tick(len(part))
    return rows


def build_split_records(
    spec: SplitSpec | None = None, *, progress: bool | None = None, num_proc: int = 1, **spec_kwargs: Any
) -> dict[str, list[dict]]:
    """Rows (plain dicts with :data:`SPLIT_COLUMNS`) of every non-empty split, test first; no HF import.

    Pass a :class:`SplitSpec` or its fields as keywords. ``progress`` shows a tqdm bar on stderr (``None``: when
    stderr is a terminal, at any size; only when tqdm is installed). ``num_proc > 1`` computes the rows on a
    process pool (same rows).
    """
    if spec is None:
        spec = SplitSpec(**spec_kwargs)
    elif spec_kwargs:
        raise TypeError("pass either a SplitSpec or its fields, not both")
    num_proc = check_num_proc(num_proc)
    total = spec.train_size + spec.eval_size
    bar = puzzle_progress_bar(total, progress)
    tick = bar.update if bar is not None else (lambda *_: None)
    try:
        if num_proc > 1:
            plan = build_plan(spec)
            return assemble_splits(plan, compute_rows(spec, plan_items(plan), num_proc, tick))
        eval_keys: dict[int, set[PuzzleKey]] = {}
        out: dict[str, list[dict]] = {}
        for split in (HELD_OUT, "train"):
            groups = []
            for n, size in spec.sizes(split).items():
                taken = eval_keys.setdefault(n, set(spec.exclude)) if split == HELD_OUT else set(eval_keys[n])
                groups.append(_unique_rows(spec, n, split, size, taken, tick))
            if any(groups):
                out[split] = list(interleave(groups))
        return out
    finally:
        if bar is not None:
            bar.close()


def distinct_puzzles_bound(task: CountdownTask, n: int) -> int:
    """An upper bound on the distinct puzzles with ``n`` numbers of ``task``'s ranges: every multiset of ``n`` values
    times every target (solvability and triviality only lower it). A split holds distinct puzzles, so a size above
    it can never be built; refused at once instead of a search that would run for ever."""
    low, high = task.value_range
    t_low, t_high = task.target_range
    return math.comb(high - low + n, n) * (t_high - t_low + 1)


def check_num_proc(num_proc: Any) -> int:
    """``num_proc`` if it is an integer >= 1, else :class:`SplitError`."""
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        raise SplitError(f"num_proc must be an integer >= 1, got {num_proc!r}")
    return num_proc


def puzzle_progress_bar(total: int, progress: bool | None):
    """A progress display over puzzles (:func:`countdown_env.helpers.progress.progress_bar`: ``None`` = a tqdm bar when
    stderr is a terminal, at any size, else plain lines for a long build), or ``None`` (``False``)."""
    from ..helpers.progress import NoBar, progress_bar

    bar = progress_bar(total, "building puzzles", progress, unit="puzzle")
    return None if isinstance(bar, NoBar) else bar
