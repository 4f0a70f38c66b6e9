"""Reproducible train/eval splits of Countdown puzzles, as Hugging Face datasets and jsonl files.

Each split is drawn from its own seeded puzzle stream per number count (the eval stream never depends on the
train size), duplicates are dropped by canonical key (sorted numbers, target: a permutation of the numbers is
the same puzzle), and train never holds a puzzle of eval (nor of ``exclude``). Trivial puzzles (the target is one
of the numbers, :func:`~countdown_env.puzzle.is_trivial`) are left out unless the task's ``allow_trivial``: each
stream draws with ``allow_trivial=True`` and the build skips a trivial index (the generator itself would redraw
it within the index), so the rows are those built before the task rule existed (the committed eval sets under
``datasets/`` are rebuilt byte for byte). Every row carries a reference
solution checked by the verifier. Sizes are totals, shared as evenly as possible across ``n_numbers`` (earlier
counts take the remainder); rows are interleaved across counts so that any prefix is balanced.

A :class:`SplitSpec` holds a :class:`~countdown_env.task.CountdownTask` (settings, rules, template); each stream draws
from that task with its count and seed replaced. The same :class:`SplitSpec` gives the same rows on any machine, and
:func:`write_splits` writes them byte-identically. ``datasets`` is imported only by the functions that return or
write HF datasets.

A build is two steps: a cheap, serial *plan* (which generator indices each (split, count) stream keeps: puzzles are
drawn without solution counts, duplicates and trivial ones skipped) and the expensive *rows* (solution, count,
difficulty per kept index), which are independent of each other. So ``num_proc`` spreads the rows over a process
pool and ``build_shard(spec, k, n)`` computes every n-th row for one machine; :func:`merge_shards` puts the rows back
in order. All give the bytes of a one-process build. ``counts=False`` skips the solution counts (no
``num_solutions``/``difficulty`` columns; up to :data:`MAX_N_NUMBERS_NO_COUNTS` numbers).

Writes are atomic (:mod:`countdown_env.atomic`): the folder is built beside the target and renamed into place.
``manifest.json`` records the sha256 of every file of the folder; :func:`verify_split` (run by
:func:`read_split_rows`, ``countdown eval --split`` and ``countdown train``'s ``data.train``) checks it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .atomic import atomic_dir, write_text
from .dataset_card import write_card
from .puzzle import Puzzle, is_trivial
from .task import CountdownTask, task_from

SPLIT_COLUMNS = ("prompt", "numbers", "target", "n_numbers", "solution", "num_solutions", "difficulty")
"""Columns of every split row, in this order (without the last two when built with ``counts=False``)."""

COUNT_COLUMNS = ("num_solutions", "difficulty")

MANIFEST = "manifest.json"
SHARD_FILE = "shard.json"

SPLIT_NAMES = ("train", "eval")

MAX_N_NUMBERS = 6
"""Largest number count the splits accept with solution counts (counting is exact up to 6 numbers)."""

MAX_N_NUMBERS_NO_COUNTS = 8
"""Largest number count with ``counts=False`` (the solver's limit)."""


MAX_CONSECUTIVE_DUPLICATES = 500
"""Draws in a row that may all repeat known puzzles before the puzzle space counts as exhausted."""


class SplitError(ValueError):
    """Raised for invalid split arguments, or when the puzzle space is too small for the sizes asked."""


class SplitIntegrityError(ValueError):
    """A split folder whose files do not match the sha256 its ``manifest.json`` records."""


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
        if task.counts != ns:  # the task records the counts built (as given when they are the task's own)
            task = replace(task, n_numbers=ns[0] if len(ns) == 1 else tuple((n, 1.0) for n in ns))
        set_field = object.__setattr__
        set_field(self, "task", task)
        set_field(self, "n_numbers", ns)
        set_field(self, "train_size", train_size)
        set_field(self, "eval_size", eval_size)
        set_field(self, "allow_trivial", task.allow_trivial)
        set_field(self, "exclude", frozenset(_key(k) for k in exclude))
        set_field(self, "counts", counts)

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not the spec's own: the task's fields read as the spec's
        if name in _TASK_FIELDS:
            return getattr(self.task, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def sizes(self, split: str) -> dict[int, int]:
        """Rows per number count for ``split`` ("train" or "eval")."""
        total = {"train": self.train_size, "eval": self.eval_size}[split]
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


def _key(item: Puzzle | PuzzleKey | Any) -> PuzzleKey:
    if isinstance(item, Puzzle):
        return item.key
    try:
        numbers, target = item
        return tuple(sorted(int(n) for n in numbers)), int(target)
    except (TypeError, ValueError):
        raise SplitError(f"exclude entries must be Puzzles or (numbers, target) pairs, got {item!r}") from None


def stream_seed(seed: int, n_numbers: int, split: str) -> int:
    """The generator seed of one (split, number count) stream: stable across machines and Python versions."""
    digest = hashlib.sha256(f"countdown-splits:{seed}:{n_numbers}:{split}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def stream_task(task: CountdownTask, n: int, split: str) -> CountdownTask:
    """The task that draws one (count, split) stream of a build of ``task``: ``n`` numbers, seed :func:`stream_seed`,
    and ``allow_trivial=True``: the stream holds every puzzle and the build skips the trivial ones unless
    ``task.allow_trivial`` (:func:`_distinct_draws`), so an index the generator would redraw is dropped instead and
    the rows stay those of builds made before the trivial rule moved into the task (the generator's ~2 % trivial
    draws for 3 and 4 numbers)."""
    return replace(task, n_numbers=n, seed=stream_seed(task.seed, n, split), allow_trivial=True)


def _row(record, rules: CountdownTask, counts: bool = True) -> dict[str, Any]:
    from .verifier import verify

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


def _distinct_draws(
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
    for _, record in _distinct_draws(draw, size, taken, spec, f"{split} puzzles with {n} numbers"):
        rows.append(_row(record, spec.task, spec.counts))
        tick()
    return rows


def _interleave(groups: list[list[dict]]) -> Iterator[dict]:
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        for g in groups:
            if i < len(g):
                yield g[i]


Plan = list[tuple[str, int, list[int]]]
"""``[(split, n, kept generator indices), ...]``: eval streams first, then train, counts in spec order."""


def build_plan(spec: SplitSpec) -> Plan:
    """Which indices of each (split, count) stream a build keeps: puzzles drawn without solution counts (fast),
    duplicates, eval puzzles (for train), excluded and trivial puzzles skipped, in the order of a serial build."""
    eval_keys: dict[int, set[PuzzleKey]] = {}
    plan: Plan = []
    for split in ("eval", "train"):
        for n, size in spec.sizes(split).items():
            taken = eval_keys.setdefault(n, set(spec.exclude)) if split == "eval" else set(eval_keys[n])
            gen = spec.stream_task(n, split).generator()
            what = f"{split} puzzles with {n} numbers"
            plan.append((split, n, [i - 1 for i, _ in _distinct_draws(gen.__getitem__, size, taken, spec, what)]))
    return plan


def _plan_items(plan: Plan) -> list[tuple[str, int, int]]:
    return [(split, n, index) for split, n, indices in plan for index in indices]


def _assemble(plan: Plan, rows: list[dict]) -> dict[str, list[dict]]:
    """Rows in plan order -> ``{split: rows interleaved across counts}`` (non-empty splits only)."""
    out: dict[str, list[dict]] = {}
    position = 0
    for split in ("eval", "train"):
        groups = []
        for s, _, indices in plan:
            if s == split:
                groups.append(rows[position : position + len(indices)])
                position += len(indices)
        if any(groups):
            out[split] = list(_interleave(groups))
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


def _compute_rows(spec: SplitSpec, items: list[tuple[str, int, int]], num_proc: int, tick) -> list[dict]:
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
    """Rows (plain dicts with :data:`SPLIT_COLUMNS`) of every non-empty split, eval first; no HF import.

    Pass a :class:`SplitSpec` or its fields as keywords. ``progress`` shows a tqdm bar on stderr (``None``: when
    stderr is a terminal, at any size; only when tqdm is installed). ``num_proc > 1`` computes the rows on a
    process pool (same rows).
    """
    if spec is None:
        spec = SplitSpec(**spec_kwargs)
    elif spec_kwargs:
        raise TypeError("pass either a SplitSpec or its fields, not both")
    num_proc = _check_num_proc(num_proc)
    total = spec.train_size + spec.eval_size
    bar = _progress_bar(total, progress)
    tick = bar.update if bar is not None else (lambda *_: None)
    try:
        if num_proc > 1:
            plan = build_plan(spec)
            return _assemble(plan, _compute_rows(spec, _plan_items(plan), num_proc, tick))
        eval_keys: dict[int, set[PuzzleKey]] = {}
        out: dict[str, list[dict]] = {}
        for split in ("eval", "train"):
            groups = []
            for n, size in spec.sizes(split).items():
                taken = eval_keys.setdefault(n, set(spec.exclude)) if split == "eval" else set(eval_keys[n])
                groups.append(_unique_rows(spec, n, split, size, taken, tick))
            if any(groups):
                out[split] = list(_interleave(groups))
        return out
    finally:
        if bar is not None:
            bar.close()


def _check_num_proc(num_proc: Any) -> int:
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        raise SplitError(f"num_proc must be an integer >= 1, got {num_proc!r}")
    return num_proc


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``."""
    k, sep, n = str(text).partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit() or not 0 <= int(k) < int(n):
        raise SplitError(f"--shard must be K/N with 0 <= K < N (e.g. 0/4 ... 3/4), got {text!r}")
    return int(k), int(n)


def _plan_digest(plan: Plan) -> str:
    return hashlib.sha256(json.dumps(plan, separators=(",", ":")).encode()).hexdigest()


def build_shard(spec: SplitSpec, shard: int, num_shards: int, *, num_proc: int = 1, progress: bool | None = None):
    """Shard ``shard`` of ``num_shards``: the rows at plan positions ``shard, shard + num_shards, ...`` (round robin,
    so every shard gets the same mix of number counts). Returns the shard record :func:`write_shard` writes."""
    if not (isinstance(shard, int) and isinstance(num_shards, int) and 0 <= shard < num_shards):
        raise SplitError(f"shard must satisfy 0 <= shard < num_shards, got {shard}/{num_shards}")
    plan = build_plan(spec)
    items = _plan_items(plan)[shard::num_shards]
    bar = _progress_bar(len(items), progress)
    tick = bar.update if bar is not None else (lambda *_: None)
    try:
        rows = _compute_rows(spec, items, _check_num_proc(num_proc), tick)
    finally:
        if bar is not None:
            bar.close()
    info = {
        "builder": "countdown_env.splits.shard",
        "shard": [shard, num_shards],
        "spec": spec.to_dict(),
        "task": spec.task.to_dict(),
        "plan": [[split, n, len(indices)] for split, n, indices in plan],
        "plan_sha256": _plan_digest(plan),
        "rows": len(rows),
    }
    return info, rows


def write_shard(info: dict, rows: list[dict], out_dir: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """A shard folder: ``rows.jsonl`` and ``shard.json`` (its settings, the plan, the rows' sha256); atomic."""
    out = Path(out_dir)
    with atomic_dir(out, overwrite=overwrite) as tmp:
        digest = write_jsonl(rows, tmp / "rows.jsonl")
        write_text(tmp / SHARD_FILE, json.dumps({**info, "sha256": digest}, indent=2, sort_keys=True) + "\n")
    return out


def merge_shards(shard_dirs: Iterable[str | os.PathLike]) -> tuple[dict[str, list[dict]], dict]:
    """``(rows by split, {"spec", "task"})`` of a complete set of shard folders (any order); refuses a missing,
    repeated, damaged or foreign shard with one line."""
    shards: dict[int, tuple[dict, list[dict]]] = {}
    reference = None
    for folder in shard_dirs:
        folder = Path(folder)
        path = folder / SHARD_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{folder} is not a shard folder (no {SHARD_FILE}; build it with --shard K/N)")
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SplitIntegrityError(f"{path}: not valid JSON (a damaged shard; rebuild it)") from None
        if _file_sha256(folder / "rows.jsonl") != info.get("sha256"):
            raise SplitIntegrityError(f"{folder}/rows.jsonl does not match the sha256 in {SHARD_FILE}; rebuild it")
        k, n = info["shard"]
        key = (info["spec"], info["plan_sha256"], n)
        if reference is None:
            reference = key
        elif key != reference:
            raise SplitError(f"{folder} is a shard of another build (different settings, plan or shard count)")
        if k in shards:
            raise SplitError(f"shard {k}/{n} given twice ({folder})")
        shards[k] = (info, read_jsonl(folder / "rows.jsonl"))
    if reference is None:
        raise SplitError("no shard folders given")
    n = reference[2]
    missing = sorted(set(range(n)) - set(shards))
    if missing:
        raise SplitError(f"missing shards {', '.join(f'{k}/{n}' for k in missing)}")
    info = shards[0][0]
    plan = [(split, count, [0] * size) for split, count, size in info["plan"]]
    total = sum(size for _, _, size in info["plan"])
    rows = [shards[p % n][1][p // n] for p in range(total)]
    return _assemble(plan, rows), {"spec": info["spec"], "task": info["task"]}


def _progress_bar(total: int, progress: bool | None):
    """A tqdm bar over puzzles (:func:`countdown_env.progress.progress_bar`: ``None`` = when stderr is a terminal,
    at any size), or ``None``."""
    from .progress import NoBar, progress_bar

    bar = progress_bar(total, "building puzzles", progress, unit="puzzle")
    return None if isinstance(bar, NoBar) else bar


def split_features(counts: bool = True):
    """The HF ``Features`` of a split (explicit, so that empty and non-empty builds share one schema)."""
    from datasets import Features, List, Value

    features = Features(
        {
            "prompt": List({"role": Value("string"), "content": Value("string")}),
            "numbers": List(Value("int64")),
            "target": Value("int64"),
            "n_numbers": Value("int64"),
            "solution": Value("string"),
            "num_solutions": Value("int64"),
            "difficulty": Value("string"),
        }
    )
    if not counts:
        for name in COUNT_COLUMNS:
            del features[name]
    return features


def records_to_dataset(rows: list[dict], features=None):
    """A ``datasets.Dataset`` from rows; its fingerprint hashes the rows, so saving it is reproducible."""
    from datasets import Dataset

    fingerprint = hashlib.sha256(b"".join(_jsonl_line(r) for r in rows)).hexdigest()[:16]
    if features is None:
        features = split_features(counts=not rows or "difficulty" in rows[0])
    ds = Dataset.from_list(rows, features=features)
    return Dataset(ds.data, info=ds.info, fingerprint=fingerprint)


def build_splits(spec: SplitSpec | None = None, *, progress: bool | None = None, **spec_kwargs: Any):
    """A ``datasets.DatasetDict`` ``{"eval": Dataset, "train": Dataset}`` (non-empty splits only), as
    ``load_from_disk`` reads a written split back; see :func:`build_split_records`."""
    from datasets import DatasetDict

    records = build_split_records(spec, progress=progress, **spec_kwargs)
    return DatasetDict({name: records_to_dataset(rows) for name, rows in records.items()})


def _jsonl_line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_jsonl(rows: Iterable[dict], path: str | os.PathLike) -> str:
    """Write rows as compact UTF-8 jsonl (keys in row order), atomically; returns the file's sha256."""
    from .atomic import atomic_file

    digest = hashlib.sha256()
    with atomic_file(path, "wb") as fh:
        for row in rows:
            line = _jsonl_line(row)
            digest.update(line)
            fh.write(line)
    return digest.hexdigest()


def iter_jsonl(path: str | os.PathLike, *, bad_json: str = "raise") -> Iterator[Any]:
    """The objects of a jsonl file, lazily (blank lines skipped); a line that is not UTF-8 raises a ``ValueError``
    naming it, and so does one that is not JSON unless ``bad_json="none"`` (then it yields ``None``)."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text (a binary file?)") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if "\\u" in line:  # an escaped lone surrogate loads, then fails every UTF-8 write later
                    json.dumps(obj, ensure_ascii=False).encode("utf-8")
            except (ValueError, RecursionError, UnicodeEncodeError) as exc:
                # JSONDecodeError, a 100 000-deep array (RecursionError), a 5 000-digit integer (ValueError)
                if bad_json != "none":
                    why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
                    raise ValueError(f"{path}:{lineno}: not valid JSON for this reader ({why})") from None
                yield None
                continue
            yield obj


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """Rows of a jsonl file (blank lines skipped); a clear error names the bad line."""
    return list(iter_jsonl(path))


def write_splits(
    splits: dict[str, list[dict]] | dict[str, Any],
    out_dir: str | os.PathLike,
    *,
    spec: SplitSpec | dict | None = None,
    save_to_disk: bool = True,
    overwrite: bool = False,
    progress: bool | None = None,
) -> dict[str, str]:
    """Write ``{split}.jsonl`` for each split, a ``DatasetDict.save_to_disk`` copy (``load_from_disk(out_dir)``
    reads it back) and ``manifest.json`` (spec, its task's dict under ``task``, row counts, jsonl sha256, and under
    ``files`` the sha256 of every file of the folder). Returns ``{split: jsonl sha256}``.

    The folder is built beside ``out_dir`` and renamed into place (atomic); an existing non-empty ``out_dir`` is
    refused unless ``overwrite`` (then replaced whole). ``splits`` maps names to row lists (from
    :func:`build_split_records`) or to ``datasets.Dataset``; ``spec`` is the :class:`SplitSpec` or, for a merge,
    ``{"spec": ..., "task": ...}`` as recorded. ``progress`` governs ``datasets``' own "Saving the dataset" bars
    too (``None``: when stderr is a terminal).
    """
    rows_by_split = {name: (rows if isinstance(rows, list) else rows.to_list()) for name, rows in splits.items()}
    if isinstance(spec, SplitSpec):
        spec_info: dict[str, Any] = {"spec": spec.to_dict(), "task": spec.task.to_dict()}
    else:
        spec_info = {"spec": (spec or {}).get("spec"), "task": (spec or {}).get("task")}
    with atomic_dir(out_dir, overwrite=overwrite) as tmp:
        hashes = {name: write_jsonl(rows, tmp / f"{name}.jsonl") for name, rows in rows_by_split.items()}
        if save_to_disk:
            from datasets import DatasetDict
            from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

            from .progress import wanted

            silence = not wanted(progress) and not are_progress_bars_disabled()
            if silence:
                disable_progress_bars()
            try:
                DatasetDict({n: records_to_dataset(rows) for n, rows in rows_by_split.items()}).save_to_disk(str(tmp))
            finally:
                if silence:
                    enable_progress_bars()
        write_card(tmp, spec_info, {name: len(rows) for name, rows in rows_by_split.items()})  # README.md
        manifest = {
            "builder": "countdown_env.splits",
            **spec_info,
            "rows": {name: len(rows) for name, rows in rows_by_split.items()},
            "sha256": hashes,
            "files": {
                rel: _file_sha256(tmp / rel)
                for rel in sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
            },
        }
        write_text(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return hashes


def _file_sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_split(path: str | os.PathLike) -> dict | None:
    """Check a split against its ``manifest.json``: for a folder every file the manifest lists, for a jsonl file
    that file (when a manifest beside it lists it). Returns the manifest (``None`` when there is none: nothing to
    check). Raises :class:`SplitIntegrityError` with one line on a missing or changed file."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SplitIntegrityError(f"{manifest_path}: not valid JSON (a damaged split; rebuild it)") from None
    if not isinstance(manifest, dict) or manifest.get("builder") != "countdown_env.splits":
        return None
    files = manifest.get("files")
    if files is None:  # manifests written before the files list: the jsonl hashes only
        files = {f"{name}.jsonl": digest for name, digest in (manifest.get("sha256") or {}).items()}
    if not path.is_dir():
        files = {k: v for k, v in files.items() if k == path.name}
    for rel, expected in sorted(files.items()):
        actual = _file_sha256(folder / rel)
        if actual is None:
            raise SplitIntegrityError(f"{folder}: {rel} is missing but listed in {MANIFEST} (a partial copy?)")
        if actual != expected:
            raise SplitIntegrityError(
                f"{folder}: {rel} does not match the sha256 in {MANIFEST} (changed or mixed builds); rebuild the split"
            )
    return manifest


def read_split_rows(path: str | os.PathLike, split: str = "eval") -> list[dict]:
    """Rows of a split after :func:`verify_split`: a jsonl file, or a split folder's ``{split}.jsonl``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no split at {path}")
    verify_split(path)
    if path.is_dir():
        target = path / f"{split}.jsonl"
        if not target.is_file():
            raise FileNotFoundError(f"{path} has no {split}.jsonl")
        return read_jsonl(target)
    return read_jsonl(path)
