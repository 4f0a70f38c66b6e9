"""The small fixed eval sets committed in ``datasets/`` at the repository root: their specs, loader, rebuilder.

Each set is the test split of :func:`countdown_env.splits.build_split_records` for one :class:`SplitSpec`
(no train rows), stored as compact jsonl without the ``prompt`` column (prompts depend on the template; the
loader adds them). Rebuild with ``python -m countdown_env.splits.eval_sets --out datasets`` (``--check`` compares
bytes instead of writing).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..helpers.jsonl import jsonl_line, read_jsonl, write_jsonl
from ..prompts import chat_messages
from ..puzzle import Puzzle
from ..solving.oracle import StepOracle
from ..task_presets import task_preset
from . import SplitSpec, build_split_records

EVAL_SET_SIZE = 512

EVAL_SETS: dict[str, SplitSpec] = {
    **{
        f"countdown_n{n}": SplitSpec(n_numbers=(n,), train_size=0, eval_size=EVAL_SET_SIZE, seed=0)
        for n in (3, 4, 5, 6)
    },
    "tiny_n3": SplitSpec(
        n_numbers=(3,), train_size=0, eval_size=EVAL_SET_SIZE, seed=0, value_range=(1, 20), target_range=(10, 200)
    ),
    "tinyzero_3to4": SplitSpec(train_size=0, eval_size=EVAL_SET_SIZE, task=task_preset("tinyzero-3to4")),
}
"""Name -> spec. ``countdown_nK``: K numbers in 1..100, targets 10..1000 (the generator's defaults);
``tiny_n3``: the embedded tiny model's calibration (3 numbers in 1..20, targets 10..200); ``tinyzero_3to4``: the
``tinyzero-3to4`` task preset (:mod:`countdown_env.task_presets`: 3-4 numbers in 1..99, each used exactly once,
TinyZero's prompt and reward), comparable with TinyZero-style published results."""

STORED_COLUMNS = ("numbers", "target", "n_numbers", "solution", "num_solutions", "difficulty", "fewest_steps")
"""The stored columns, in order: the split's, and ``fewest_steps``, the fewest operations that reach the target
(:meth:`~countdown_env.solving.oracle.StepOracle.fewest_steps` under the set's rules). With ``num_solutions`` it is
each puzzle's certified difficulty."""

DATASETS_DIR = Path(__file__).resolve().parents[2] / "datasets"
"""``datasets/`` of a source checkout (absent from an installed wheel: pass ``directory`` then)."""


def eval_set_rows(name: str, progress: bool | None = False) -> list[dict[str, Any]]:
    """The rows of eval set ``name`` as stored (built from its spec; takes seconds for the 6-number set);
    ``progress``: a bar over the puzzles (``None``: when stderr is a terminal)."""
    try:
        spec = EVAL_SETS[name]
    except KeyError:
        raise ValueError(f"unknown eval set {name!r}; choose one of {sorted(EVAL_SETS)}") from None
    return stored_rows(spec, build_split_records(spec, progress=progress)["test"])


def stored_rows(spec: SplitSpec, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Split rows as an eval set stores them: :data:`STORED_COLUMNS`, ``fewest_steps`` added."""
    rules = dict(use_all_numbers=spec.task.use_all_numbers, integer_intermediates=spec.task.integer_intermediates)
    rules["operators"] = spec.task.operators
    out = []
    for row in rows:
        steps = StepOracle(row["target"], **rules).fewest_steps(row["numbers"])
        out.append({**{k: row[k] for k in STORED_COLUMNS if k != "fewest_steps"}, "fewest_steps": steps})
    return out


def eval_set_bytes(name: str, progress: bool | None = False) -> bytes:
    """The exact bytes of ``datasets/{name}.jsonl``."""
    return b"".join(jsonl_line(row) for row in eval_set_rows(name, progress))


def load_eval_set(
    name: str,
    *,
    directory: str | os.PathLike | None = None,
    template: str | None = None,
    use_all_numbers: bool | None = None,
    as_dataset: bool = True,
):
    """A committed eval set as a ``datasets.Dataset`` with a ``prompt`` column added (chat messages for
    ``template``); ``as_dataset=False`` gives the rows as a list of dicts (no ``datasets`` import). ``name`` is a
    key of :data:`EVAL_SETS` or a jsonl path (rows with ``numbers`` or ``nums``, and ``target``). ``template`` and
    ``use_all_numbers`` default to the set's own task (``tinyzero_3to4``: ``tinyzero``, every number exactly once;
    the others and a path: ``default``, at most once)."""
    spec = EVAL_SETS.get(str(name))
    if template is None:
        template = spec.task.template if spec is not None else "default"
    if use_all_numbers is None:
        use_all_numbers = spec.task.use_all_numbers if spec is not None else False
    path = Path(name) if str(name).endswith(".jsonl") else Path(directory or DATASETS_DIR) / f"{name}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"no eval set at {path} (rebuild with: python -m countdown_env.splits.eval_sets --out DIR)"
        )
    rows = []
    for r in read_jsonl(path):
        puzzle = Puzzle.from_dict(r)
        if "numbers" not in r:  # the `nums` alias: stored under the project's name
            r = {"numbers": list(puzzle.numbers), **{k: v for k, v in r.items() if k != "nums"}}
        rows.append({"prompt": chat_messages(puzzle, template, use_all_numbers=use_all_numbers), **r})
    if not as_dataset:
        return rows
    from .hf_datasets import records_to_dataset, split_features

    features = split_features(counts=not rows or "difficulty" in rows[0])
    if rows and "fewest_steps" in rows[0]:  # the committed sets' certified length (STORED_COLUMNS)
        from datasets import Value

        features["fewest_steps"] = Value("int64")
    return records_to_dataset(rows, features)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m countdown_env.splits.eval_sets", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default=str(DATASETS_DIR), help="folder for {name}.jsonl (default: datasets/)")
    parser.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    parser.add_argument("names", nargs="*", default=sorted(EVAL_SETS), help="sets to build (default: all)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (shown when stderr is a terminal)")
    args = parser.parse_args(argv)
    progress = False if args.no_progress else None
    status = 0
    for name in args.names:
        path = Path(args.out) / f"{name}.jsonl"
        if args.check:
            same = path.is_file() and path.read_bytes() == eval_set_bytes(name, progress)
            print(f"{path}: {'identical' if same else 'DIFFERENT'}")
            status |= not same
        else:
            digest = write_jsonl(eval_set_rows(name, progress), path)
            print(f"{path}: sha256 {digest}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
