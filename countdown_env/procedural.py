"""A reasoning-gym-style adapter (no reasoning-gym dependency): procedural datasets, ``score_answer``, a curriculum.

reasoning-gym users write ``create_dataset("countdown", size=..., seed=...)``, read entries
``{"question", "answer", "metadata"}`` and score an extracted answer with ``score_answer(answer, entry)``. The
same shapes here, built on a :class:`~countdown_env.task.CountdownTask`:

>>> ds = create_dataset("countdown", size=3, seed=0, n_numbers=3, value_range=(1, 20), target_range=(10, 100))
>>> entry = ds[0]
>>> sorted(entry)
['answer', 'metadata', 'question']
>>> ds.score_answer(entry["answer"], entry)
1.0
>>> score_answer("1 + 1", entry)
0.0

- entry ``i`` is puzzle ``i`` of the task (deterministic per seed and index, any machine); ``question`` is the task's
  prompt as plain text (system turn, blank line, user turn), ``answer`` one reference expression (the generator's
  witness, checked by the verifier), ``metadata`` the numbers, target, index, reference and the task's dict. No
  entry is trivial (the target one of the numbers) unless the task allows it (``create_dataset(...,
  allow_trivial=True)``).
- :func:`score_answer` is the project's verifier under the entry's rules: 1.0 for a correct expression, else 0.0.
  An answer that still holds the template's answer tags is reduced to its last answer block first.
- :class:`CountdownCurriculum`: number-count levels and difficulty levels (``easy``/``medium``/``hard`` from the
  solution count, :data:`countdown_env.solving.generator.DIFFICULTY_THRESHOLDS`; ``any`` = no filter). Each logged
  train accuracy (:meth:`CountdownCurriculum.observe`, called by the trainer callback
  ``learners.pipeline.runs.curriculum_callback.CurriculumCallback``) raises the level when it reaches ``threshold``
  ``patience`` times in a row: difficulty first, then the next number count from the easiest difficulty again.
  :meth:`CountdownCurriculum.train_dataset` is a ``datasets.IterableDataset`` whose prompts follow the current level
  as training reads them. ``countdown train`` builds one from a ``curriculum:`` YAML section.

Imports no torch/transformers/datasets at import time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .puzzle import Puzzle
from .task import CountdownTask, task_from

DATASET_NAME = "countdown"
"""The name :func:`create_dataset` answers to (reasoning-gym's)."""

SOURCE_DATASET = "countdown_rl"
"""``metadata["source_dataset"]`` of the entries: a name of its own, so that reasoning-gym's
``get_score_answer_fn("countdown")`` (its own, different rules) is not picked for them."""

REASONING_GYM_KEYS = {
    "min_numbers": "n_numbers",
    "max_numbers": "n_numbers",
    "min_value": "value_range",
    "max_value": "value_range",
    "min_target": "target_range",
    "max_target": "target_range",
}
"""reasoning-gym's ``CountdownConfig`` range bounds and the task field each pair sets."""


def task_fields_from_reasoning_gym(kwargs: dict[str, Any]) -> dict[str, Any]:
    """reasoning-gym's ``CountdownConfig`` keywords (``min_numbers=3, max_numbers=4, min_value, max_value,
    min_target, max_target``, ``operators=("+", "-", "*", "/")``, ``shuffle``) as task fields; other keys as given.
    A bound given alone takes the task default's other end."""
    defaults = CountdownTask()
    out = {k: v for k, v in kwargs.items() if k not in REASONING_GYM_KEYS and k != "shuffle"}
    for field_name in ("n_numbers", "value_range", "target_range"):
        low_key, high_key = [k for k, v in REASONING_GYM_KEYS.items() if v == field_name]
        if low_key in kwargs or high_key in kwargs:
            if field_name in kwargs:
                raise ValueError(f"give {field_name} or {low_key}/{high_key}, not both")
            default = getattr(defaults, field_name)
            low_default, high_default = (default, default) if isinstance(default, int) else default
            low, high = kwargs.get(low_key, low_default), kwargs.get(high_key, high_default)
            out[field_name] = low if field_name == "n_numbers" and low == high else (low, high)
    if isinstance(out.get("operators"), (list, tuple)):
        out["operators"] = "".join(out["operators"])
    return out


DIFFICULTY_LEVELS = ("any", "easy", "medium", "hard")
"""Difficulty level names: ``any`` (no solution-count filter) and the generator's labels."""


def difficulty_bounds(level: str, n_numbers: int) -> tuple[int | None, int | None]:
    """``(min_solutions, max_solutions)`` that select puzzles of difficulty ``level`` with ``n_numbers`` numbers."""
    from .solving.generator import DIFFICULTY_THRESHOLDS

    if level not in DIFFICULTY_LEVELS:
        raise ValueError(f"unknown difficulty level {level!r}; choose from {list(DIFFICULTY_LEVELS)}")
    if level == "any":
        return None, None
    hard, medium = DIFFICULTY_THRESHOLDS[min(max(n_numbers, 1), 6)]
    return {"hard": (1, hard), "medium": (hard + 1, medium), "easy": (medium + 1, None)}[level]


def reference_solution(task: CountdownTask, index: int) -> str:
    """One correct expression for ``task.puzzle(index)``: the generator's witness (the random expression its target
    came from; no solution counting), else the solver's; ``""`` for an unsolvable puzzle."""
    from .solving.solver import solve

    generator = task.generator(task.n_numbers_at(index))
    puzzle, solution, _ = generator._draw(index)
    if solution is None:
        solution = solve(
            puzzle,
            operators=task.operators,
            use_all_numbers=task.use_all_numbers,
            integer_intermediates=task.integer_intermediates,
        )
    return solution or ""


def entry(task: CountdownTask, index: int) -> dict[str, Any]:
    """The reasoning-gym entry of puzzle ``index`` of ``task``."""
    puzzle = task.puzzle(index)
    solution = reference_solution(task, index)
    return {
        "question": task.prompt_text(puzzle),
        "answer": solution,
        "metadata": {
            "source_dataset": SOURCE_DATASET,
            "source_index": index,
            "numbers": list(puzzle.numbers),
            "target": puzzle.target,
            "n_numbers": puzzle.n_numbers,
            "expression": solution,
            "difficulty": difficulty_metadata(task),
            "task": task.to_dict(),
        },
    }


def difficulty_metadata(task: CountdownTask) -> dict[str, tuple[int, int]]:
    """reasoning-gym's ``metadata["difficulty"]`` of a countdown entry: the ranges its config draws from."""
    n = task.n_numbers
    if isinstance(n, int):
        numbers = (n, n)
    elif isinstance(n, tuple) and len(n) == 2 and all(isinstance(x, int) for x in n):
        numbers = (int(n[0]), int(n[1]))
    else:  # weighted ((n, weight), ...) pairs
        counts = [int(pair[0]) for pair in n]
        numbers = (min(counts), max(counts))
    return {"numbers": numbers, "value": tuple(task.value_range), "target": tuple(task.target_range)}


def score_answer(answer: str | None, entry: dict[str, Any]) -> float:
    """1.0 when ``answer`` (an expression, or text holding the entry's answer tags) solves the entry's puzzle under
    its task's rules, else 0.0 (``None`` and unparsable answers included). Never raises on model text."""
    from .expressions.answers import extract_answer
    from .expressions.verifier import verify

    if not isinstance(answer, str) or not answer.strip():
        return 0.0
    metadata = entry.get("metadata", entry)
    task_dict = metadata.get("task") or {}
    task = CountdownTask.from_dict(task_dict) if task_dict else CountdownTask()
    tag = task.prompt_template.answer_tag
    if f"<{tag}>" in answer:
        answer = extract_answer(answer, tag=tag) or ""
    check = verify(
        answer,
        Puzzle.from_dict(metadata),
        use_all_numbers=task.use_all_numbers,
        integer_intermediates=task.integer_intermediates,
    )
    return 1.0 if check.correct else 0.0


class CountdownDataset:
    """A procedural dataset of ``size`` entries of a task (reasoning-gym's ``ProceduralDataset`` shape):
    ``len(ds)``, ``ds[i]``, iteration, ``ds.score_answer(answer, entry)``. ``seed`` replaces the task's seed;
    without a ``seed`` and without a ``task``, the seed is drawn at random as in reasoning-gym (``ds.seed`` records
    it). Task fields may be given as reasoning-gym's ``CountdownConfig`` keywords (``min_numbers``/``max_numbers``,
    ``min_value``/``max_value``, ``min_target``/``max_target``, ``operators`` as a tuple)."""

    def __init__(
        self, task: CountdownTask | None = None, *, size: int = 500, seed: int | None = None, **task_fields: Any
    ):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"size must be an integer >= 0, got {size!r}")
        if seed is None and task is None and "seed" not in task_fields:
            import random

            seed = random.SystemRandom().randrange(2**31)
        task = task_from(task, task_fields_from_reasoning_gym(task_fields), "CountdownDataset")
        self.task = task if seed is None else replace(task, seed=seed)
        self.size = size
        self.seed = self.task.seed

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict[str, Any]:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"entry index must be an integer, got {type(index).__name__}")
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(f"entry index {index} out of range for a dataset of {self.size}")
        return entry(self.task, index)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index in range(self.size):
            yield entry(self.task, index)

    def score_answer(self, answer: str | None, entry: dict[str, Any]) -> float:
        return score_answer(answer, entry)


def create_dataset(name: str = DATASET_NAME, **kwargs: Any) -> CountdownDataset:
    """``create_dataset("countdown", size=500, seed=0, task=... | **task fields)`` as in reasoning-gym."""
    if name != DATASET_NAME:
        raise ValueError(f"unknown dataset {name!r}; this adapter provides {DATASET_NAME!r}")
    return CountdownDataset(**kwargs)


# -------------------------------------------------------------------------------------------------- curriculum
ATTRIBUTES = ("n_numbers", "difficulty")


@dataclass
class CountdownCurriculum:
    """Number-count and difficulty levels, raised when train accuracy reaches ``threshold`` (see module doc).

    ``n_numbers``: the counts in order (e.g. ``(3, 4, 5)``); ``difficulty``: level names in order (e.g.
    ``("easy", "medium", "hard")``; ``("any",)`` for counts only). ``patience``: logged accuracies in a row at or
    above ``threshold`` that raise the level. ``metric``: the logged key read (the project's trainers log
    ``countdown/accuracy``; plain TRL logs ``reward``). ``history``: ``(step, n_numbers, difficulty)`` per raise.
    """

    n_numbers: Sequence[int] = (3, 4, 5)
    difficulty: Sequence[str] = ("easy", "medium", "hard")
    threshold: float = 0.7
    patience: int = 1
    metric: str = "countdown/accuracy"
    n_numbers_level: int = 0
    difficulty_level: int = 0
    streak: int = 0
    history: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.n_numbers = tuple(self.n_numbers)
        self.difficulty = tuple(self.difficulty)
        if not self.n_numbers or any(isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 6
                                     for n in self.n_numbers):  # fmt: skip
            raise ValueError(f"curriculum n_numbers must be counts in 1..6 (solution counting), got {self.n_numbers}")
        if not self.difficulty:
            raise ValueError("curriculum difficulty needs at least one level")
        for level in self.difficulty:
            difficulty_bounds(level, 3)  # names checked
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise ValueError(f"curriculum threshold must be in [0, 1], got {self.threshold!r}")
        if isinstance(self.patience, bool) or not isinstance(self.patience, int) or self.patience < 1:
            raise ValueError(f"curriculum patience must be an integer >= 1, got {self.patience!r}")
        self.set_attr_level("n_numbers", self.n_numbers_level)
        self.set_attr_level("difficulty", self.difficulty_level)

    # -- reasoning-gym's BaseCurriculum surface -----------------------------------------------------------------
    def _levels(self, attr: str) -> tuple:
        if attr not in ATTRIBUTES:
            raise ValueError(f"unknown curriculum attribute {attr!r}; choose from {list(ATTRIBUTES)}")
        return self.n_numbers if attr == "n_numbers" else self.difficulty

    def get_attr_level(self, attr: str) -> int:
        self._levels(attr)
        return self.n_numbers_level if attr == "n_numbers" else self.difficulty_level

    def get_attr_value(self, attr: str) -> Any:
        return self._levels(attr)[self.get_attr_level(attr)]

    def set_attr_level(self, attr: str, level: int) -> None:
        levels = self._levels(attr)
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < len(levels):
            raise ValueError(f"{attr} level must be in 0..{len(levels) - 1}, got {level!r}")
        setattr(self, f"{attr}_level", level)

    def increment_attr_level(self, attr: str) -> bool:
        """One level up for ``attr``; False (nothing changes) at its top."""
        level = self.get_attr_level(attr)
        if level + 1 >= len(self._levels(attr)):
            return False
        self.set_attr_level(attr, level + 1)
        return True

    def decrement_attr_level(self, attr: str) -> bool:
        level = self.get_attr_level(attr)
        if level == 0:
            return False
        self.set_attr_level(attr, level - 1)
        return True

    # -- the schedule ----------------------------------------------------------------------------------------
    @property
    def at_top(self) -> bool:
        return self.n_numbers_level == len(self.n_numbers) - 1 and self.difficulty_level == len(self.difficulty) - 1

    def raise_level(self) -> bool:
        """Next difficulty; at the last one, the next number count from the first difficulty. False at the top."""
        if self.increment_attr_level("difficulty"):
            return True
        if self.increment_attr_level("n_numbers"):
            self.difficulty_level = 0
            return True
        return False

    def update(self, accuracy: float, step: int | None = None) -> bool:
        """Record one logged train accuracy; raise the level after ``patience`` in a row at or above the threshold.
        Returns whether the level was raised."""
        self.streak = self.streak + 1 if float(accuracy) >= float(self.threshold) else 0
        if self.streak < self.patience or not self.raise_level():
            return False
        self.streak = 0
        self.history.append((step, self.get_attr_value("n_numbers"), self.get_attr_value("difficulty")))
        return True

    def levels(self) -> dict[str, Any]:
        """What is logged: ``curriculum/n_numbers``, ``curriculum/difficulty_level`` (index into ``difficulty``)."""
        return {"curriculum/n_numbers": self.get_attr_value("n_numbers"), "curriculum/difficulty_level":
                self.difficulty_level}  # fmt: skip

    def task(self, base: CountdownTask | None = None) -> CountdownTask:
        """``base`` at the current level: its count and the solution-count bounds of the difficulty."""
        base = base or CountdownTask()
        n = self.get_attr_value("n_numbers")
        low, high = difficulty_bounds(self.get_attr_value("difficulty"), n)
        return replace(base, n_numbers=n, min_solutions=low, max_solutions=high)

    # -- data ------------------------------------------------------------------------------------------------
    def rows(self, base: CountdownTask | None = None, start: int = 0) -> Iterator[dict[str, Any]]:
        """Endless prompt rows (``prompt``, ``numbers``, ``target``): puzzle ``i, i + 1, ...`` of :meth:`task` at the
        level current when the row is read. Trivial puzzles (the target is one of the numbers; common among
        "easy") follow the base task's rule: none unless ``base.allow_trivial`` (the generator redraws them)."""
        index = start
        tasks: dict[tuple[int, int], CountdownTask] = {}
        while True:
            key = (self.n_numbers_level, self.difficulty_level)
            task = tasks.get(key)
            if task is None:
                task = tasks[key] = self.task(base)
            puzzle = task.puzzle(index)
            index += 1
            yield {"prompt": task.messages(puzzle), "numbers": list(puzzle.numbers), "target": puzzle.target}

    def train_dataset(self, base: CountdownTask | None = None):
        """A ``datasets.IterableDataset`` of :meth:`rows` (train with ``shuffle_dataset=False`` so that no shuffle
        buffer reads ahead at the old level, and ``max_steps`` set: the stream is endless)."""
        from datasets import Features, IterableDataset, List, Value

        features = Features(
            {
                "prompt": List({"role": Value("string"), "content": Value("string")}),
                "numbers": List(Value("int64")),
                "target": Value("int64"),
            }
        )
        curriculum = self

        def generate():
            yield from curriculum.rows(base)

        return IterableDataset.from_generator(generate, features=features)

    # -- a training run's log ----------------------------------------------------------------------------------
    def restore(self, log_history: Sequence[dict[str, Any]]) -> None:
        """The levels of a resumed run: those of the last ``log_history`` entry that logged them (entries whose
        number count is not one of :attr:`n_numbers` are skipped); nothing changes without one."""
        for logged in reversed(log_history):
            if "curriculum/n_numbers" in logged and logged["curriculum/n_numbers"] in self.n_numbers:
                self.n_numbers_level = self.n_numbers.index(logged["curriculum/n_numbers"])
                self.set_attr_level("difficulty", int(logged["curriculum/difficulty_level"]))
                return

    def observe(self, logs: dict[str, Any] | None, step: int, log_history: list[dict[str, Any]]) -> None:
        """One logged line of a training run: its :attr:`metric` (if it has one) goes to :meth:`update`, and the
        levels are added to the ``log_history`` entry of ``step`` (the last one, when it is that step's)."""
        if not logs or self.metric not in logs:
            return
        self.update(logs[self.metric], step=step)
        if log_history and log_history[-1].get("step") == step:
            log_history[-1].update(self.levels())

    # -- serialisation ---------------------------------------------------------------------------------------
    CONFIG_KEYS = ("n_numbers", "difficulty", "threshold", "patience", "metric")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CountdownCurriculum:
        """From a ``curriculum:`` YAML section (keys :attr:`CONFIG_KEYS`); unknown keys are refused."""
        if not isinstance(data, dict):
            raise ValueError(f"the curriculum section must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.CONFIG_KEYS))
        if unknown:
            raise ValueError(f"unknown curriculum keys {unknown}; known: {list(cls.CONFIG_KEYS)}")
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_numbers": list(self.n_numbers),
            "difficulty": list(self.difficulty),
            "threshold": self.threshold,
            "patience": self.patience,
            "metric": self.metric,
            "level": {"n_numbers": self.get_attr_value("n_numbers"), "difficulty": self.get_attr_value("difficulty")},
            "history": [list(h) for h in self.history],
        }


__all__ = [
    "CountdownCurriculum",
    "CountdownDataset",
    "DIFFICULTY_LEVELS",
    "create_dataset",
    "difficulty_bounds",
    "entry",
    "reference_solution",
    "score_answer",
]
