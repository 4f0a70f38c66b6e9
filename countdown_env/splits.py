"""Reproducible train/eval splits of Countdown puzzles, as Hugging Face datasets and jsonl files.

Each split is drawn from its own seeded puzzle stream per number count (the eval stream never depends on the
train size), duplicates are dropped by canonical key (sorted numbers, target: a permutation of the numbers is
the same puzzle), and train never holds a puzzle of eval (nor of ``exclude``). Trivial puzzles (the target is one
of the numbers) are skipped unless ``allow_trivial``. Every row carries a reference
solution checked by the verifier. Sizes are totals, shared as evenly as possible across ``n_numbers`` (earlier
counts take the remainder); rows are interleaved across counts so that any prefix is balanced.

A :class:`SplitSpec` holds a :class:`~countdown_env.task.CountdownTask` (settings, rules, template); each stream draws
from that task with its count and seed replaced. The same :class:`SplitSpec` gives the same rows on any machine, and
:func:`write_splits` writes them byte-identically. ``datasets`` is imported only by the functions that return or
write HF datasets.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .puzzle import Puzzle
from .task import CountdownTask, task_from

SPLIT_COLUMNS = ("prompt", "numbers", "target", "n_numbers", "solution", "num_solutions", "difficulty")
"""Columns of every split row, in this order."""

SPLIT_NAMES = ("train", "eval")

MAX_N_NUMBERS = 6
"""Largest number count the splits accept (the exact solver counts solutions of 6 numbers in well under a second)."""


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

    ``SplitSpec(n_numbers=(3, 4), train_size=..., task=task)`` or, as before, with the task's fields as keywords
    (``seed=``, ``value_range=``, ``template=`` ...). ``n_numbers`` defaults to the task's counts, else (3, 4, 5);
    the stored task's ``n_numbers`` holds the counts (the task's own when they match, else an int for one count and
    equal weights for several), so that ``spec.task.to_dict()`` records the build. The task's fields read as the
    spec's (``spec.seed``, ``spec.value_range`` ...). Splits need solvable puzzles: a task with
    ``require_solvable=False`` is refused.
    """

    task: CountdownTask
    n_numbers: tuple[int, ...]
    train_size: int
    eval_size: int
    allow_trivial: bool
    exclude: frozenset[PuzzleKey] = field(compare=False, repr=False)

    def __init__(
        self,
        n_numbers: int | tuple[int, ...] | None = None,
        train_size: int = 50_000,
        eval_size: int = 512,
        *,
        task: CountdownTask | None = None,
        allow_trivial: bool = False,
        exclude: frozenset[PuzzleKey] | Iterable = frozenset(),
        **task_fields: Any,
    ) -> None:
        if n_numbers is None:
            n_numbers = task.counts if isinstance(task, CountdownTask) else (3, 4, 5)
        task = task_from(task, task_fields, "SplitSpec")
        ns = (n_numbers,) if isinstance(n_numbers, int) else tuple(n_numbers)
        if not ns or len(set(ns)) != len(ns):
            raise SplitError(f"n_numbers must be a non-empty list of distinct counts, got {list(ns)}")
        for n in ns:
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N_NUMBERS:
                raise SplitError(f"each n_numbers must be an integer in 1..{MAX_N_NUMBERS}, got {n!r}")
        for name, size in (("train_size", train_size), ("eval_size", eval_size)):
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise SplitError(f"{name} must be a non-negative integer, got {size!r}")
        if train_size + eval_size == 0:
            raise SplitError("train_size and eval_size are both 0: nothing to build")
        if not task.require_solvable:
            raise SplitError("split rows carry a verified solution: the task needs require_solvable=True")
        if task.counts != ns:  # the task records the counts built (as given when they are the task's own)
            task = replace(task, n_numbers=ns[0] if len(ns) == 1 else tuple((n, 1.0) for n in ns))
        set_field = object.__setattr__
        set_field(self, "task", task)
        set_field(self, "n_numbers", ns)
        set_field(self, "train_size", train_size)
        set_field(self, "eval_size", eval_size)
        set_field(self, "allow_trivial", bool(allow_trivial))
        set_field(self, "exclude", frozenset(_key(k) for k in exclude))

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
        """The task of one (count, split) stream: ``n`` numbers, seed :func:`stream_seed`."""
        return replace(self.task, n_numbers=n, seed=stream_seed(self.task.seed, n, split))

    def to_dict(self) -> dict[str, Any]:
        """The build settings as plain JSON types: the task's fields (``n_numbers`` as the list of counts), the
        sizes, ``allow_trivial`` and ``exclude`` (how many puzzles were excluded)."""
        return {
            **self.task.to_dict(),
            "n_numbers": list(self.n_numbers),
            "train_size": self.train_size,
            "eval_size": self.eval_size,
            "allow_trivial": self.allow_trivial,
            "exclude": len(self.exclude),
        }


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


def _is_trivial(puzzle: Puzzle) -> bool:
    """The target is one of the numbers: solved by writing it down (the generator's random-expression targets
    give about 2 % of these for 3 and 4 numbers)."""
    return puzzle.target in puzzle.numbers


def _row(record, spec: SplitSpec) -> dict[str, Any]:
    from .verifier import verify

    puzzle = record.puzzle
    rules = spec.task
    check = verify(
        record.solution,
        puzzle,
        use_all_numbers=rules.use_all_numbers,
        integer_intermediates=rules.integer_intermediates,
    )
    if not check.correct:  # the solver and the verifier disagree: a bug, never silently kept
        raise RuntimeError(f"reference solution {record.solution!r} for {puzzle} fails verification: {check.reason}")
    return {
        "prompt": rules.messages(puzzle),
        "numbers": list(puzzle.numbers),
        "target": puzzle.target,
        "n_numbers": puzzle.n_numbers,
        "solution": record.solution,
        "num_solutions": record.num_solutions,
        "difficulty": record.difficulty,
    }


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
        if puzzle.key in taken or (not spec.allow_trivial and _is_trivial(puzzle)):
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
    """``size`` rows of one stream whose keys are not in ``taken`` (which it extends)."""
    gen = spec.stream_task(n, split).generator()
    rows: list[dict] = []
    for _, record in _distinct_draws(gen.record, size, taken, spec, f"{split} puzzles with {n} numbers"):
        rows.append(_row(record, spec))
        tick()
    return rows


def _interleave(groups: list[list[dict]]) -> Iterator[dict]:
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        for g in groups:
            if i < len(g):
                yield g[i]


def build_split_records(
    spec: SplitSpec | None = None, *, progress: bool | None = None, **spec_kwargs: Any
) -> dict[str, list[dict]]:
    """Rows (plain dicts with :data:`SPLIT_COLUMNS`) of every non-empty split, eval first; no HF import.

    Pass a :class:`SplitSpec` or its fields as keywords. ``progress`` shows a tqdm bar on stderr (``None``: only
    for builds of at least 5000 rows, and only when tqdm is installed).
    """
    if spec is None:
        spec = SplitSpec(**spec_kwargs)
    elif spec_kwargs:
        raise TypeError("pass either a SplitSpec or its fields, not both")
    total = spec.train_size + spec.eval_size
    bar = _progress_bar(total, progress)
    tick = bar.update if bar is not None else (lambda *_: None)
    try:
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


def _progress_bar(total: int, progress: bool | None):
    if progress is False or (progress is None and total < 5000):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="building puzzles", unit="puzzle", mininterval=0.5)


def split_features():
    """The HF ``Features`` of a split (explicit, so that empty and non-empty builds share one schema)."""
    from datasets import Features, List, Value

    return Features(
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


def records_to_dataset(rows: list[dict], features=None):
    """A ``datasets.Dataset`` from rows; its fingerprint hashes the rows, so saving it is reproducible."""
    from datasets import Dataset

    fingerprint = hashlib.sha256(b"".join(_jsonl_line(r) for r in rows)).hexdigest()[:16]
    ds = Dataset.from_list(rows, features=features or split_features())
    return Dataset(ds.data, info=ds.info, fingerprint=fingerprint)


def build_splits(spec: SplitSpec | None = None, *, progress: bool | None = None, **spec_kwargs: Any) -> dict:
    """``{"eval": Dataset, "train": Dataset}`` (non-empty splits only); see :func:`build_split_records`."""
    records = build_split_records(spec, progress=progress, **spec_kwargs)
    return {name: records_to_dataset(rows) for name, rows in records.items()}


def _jsonl_line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_jsonl(rows: Iterable[dict], path: str | os.PathLike) -> str:
    """Write rows as compact UTF-8 jsonl (keys in row order); returns the file's sha256."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(path, "wb") as fh:
        for row in rows:
            line = _jsonl_line(row)
            digest.update(line)
            fh.write(line)
    return digest.hexdigest()


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """Rows of a jsonl file (blank lines skipped); a clear error names the bad line."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    return rows


def write_splits(
    splits: dict[str, list[dict]] | dict[str, Any],
    out_dir: str | os.PathLike,
    *,
    spec: SplitSpec | None = None,
    save_to_disk: bool = True,
) -> dict[str, str]:
    """Write ``{split}.jsonl`` for each split, a ``DatasetDict.save_to_disk`` copy (``load_from_disk(out_dir)``
    reads it back) and ``manifest.json`` (spec, its task's dict under ``task``, row counts, jsonl sha256). Returns
    ``{split: jsonl sha256}``.

    ``splits`` maps names to row lists (from :func:`build_split_records`) or to ``datasets.Dataset``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows_by_split = {name: (rows if isinstance(rows, list) else rows.to_list()) for name, rows in splits.items()}
    hashes = {name: write_jsonl(rows, out / f"{name}.jsonl") for name, rows in rows_by_split.items()}
    if save_to_disk:
        from datasets import DatasetDict

        DatasetDict({name: records_to_dataset(rows) for name, rows in rows_by_split.items()}).save_to_disk(str(out))
    manifest = {
        "builder": "countdown_env.splits",
        "spec": spec.to_dict() if spec is not None else None,
        "task": spec.task.to_dict() if spec is not None else None,
        "rows": {name: len(rows) for name, rows in rows_by_split.items()},
        "sha256": hashes,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return hashes
