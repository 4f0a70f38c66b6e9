"""Countdown for the classic `verifiers` API (0.3.x): ``load_environment(**kwargs) -> vf.SingleTurnEnv``.

The environment is single-turn chat built from one :class:`~countdown_env.task.CountdownTask`: the prompt is the
template's system and user turns (``task.messages``), the model answers once. An ``XMLParser`` over the template's
reasoning/answer tags (``reasoning``/``solution`` by default, ``think``/``answer`` for ``tinyzero``) is attached for
`verifiers`' own tooling; scoring does not rely on it: the rubric's two functions call the project's verifier.

    reward = 1.0 * correct_answer + format_bonus * valid_format      (= task.score(reply, puzzle).reward)

``correct_answer`` is 1.0 when the last answer block is a correct expression (exact rational arithmetic, the
task's rules); ``valid_format`` is 1.0 when the reply
is one reasoning block followed by one non-empty answer block with nothing else around; its weight is the task's
``format_bonus`` (0.0 by default: a metric that is logged but not rewarded).

Datasets are built offline from the task's puzzles (``task.puzzle(i)``): training rows are indices
``0 .. num_train_examples - 1``, evaluation rows the next ``num_eval_examples`` indices (disjoint index ranges; a
puzzle may still repeat by chance, as in any random draw). ``vf-eval`` evaluates on the evaluation rows.
`verifiers` is imported when :func:`load_environment` is called, not when this module is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from countdown_env.rewards import RewardConfig
from countdown_env.task import CountdownTask, task_from

from .dataset_rows import PuzzleSource
from .reply_scoring import correctness, format_score, puzzle_from_info

__all__ = ["classic_api_installed", "load_environment", "rubric_functions"]


def classic_api_installed() -> bool:
    """Whether the installed `verifiers` has the classic API (0.3.x; 0.4 keeps only ``verifiers.v1``), read from
    the distribution's metadata without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major_minor = tuple(int(part) for part in version("verifiers").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return major_minor < (0, 4)


def rubric_functions(config: RewardConfig) -> tuple[Callable[..., float], Callable[..., float]]:
    """``(correct_answer, valid_format)``: reward functions with the classic Rubric signature
    (keyword arguments ``completion``, ``info``, ... ; one rollout each) for ``config``'s tags and rules."""

    def correct_answer(completion: Any, info: Any = None, **kwargs: Any) -> float:
        """1.0 when the reply's last answer block solves the row's puzzle, else 0.0."""
        return correctness(completion, puzzle_from_info(info), config)

    def valid_format(completion: Any, **kwargs: Any) -> float:
        """1.0 when the reply is one reasoning block then one non-empty answer block, else 0.0."""
        return format_score(completion, config)

    return correct_answer, valid_format


def _init_parameters(cls) -> set[str]:
    """The named constructor parameters along ``cls``'s MRO (``self``, ``*args``, ``**kwargs`` left out)."""
    import inspect

    names = set()
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__ and klass is not object:
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    names.add(p.name)
    return names


def load_environment(
    num_train_examples: int = 1000,
    num_eval_examples: int = 100,
    task: CountdownTask | dict | None = None,
    **kwargs: Any,
):
    """Countdown as a ``vf.SingleTurnEnv`` (classic `verifiers` 0.3.x API).

    ``task`` is a :class:`~countdown_env.task.CountdownTask` (or its dict); otherwise the keyword arguments that
    are task fields (``n_numbers``, ``value_range``, ``seed``, ``use_all_numbers``, ``template`` — ``"default"``,
    ``"tinyzero"`` or ``"compact"`` —, ``format_bonus`` ...) build one. The other keyword arguments go to
    ``vf.SingleTurnEnv`` (e.g. ``sampling_args``, ``max_workers``). Invalid options raise ``ValueError`` here.
    """
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if num_train_examples + num_eval_examples == 0:
        raise ValueError("num_train_examples and num_eval_examples are both 0: the environment would have no rows")
    if isinstance(task, dict):
        task = CountdownTask.from_dict(task)
    task_names = {f.name for f in fields(CountdownTask)}
    task_fields = {k: v for k, v in kwargs.items() if k in task_names}
    env_kwargs = {k: v for k, v in kwargs.items() if k not in task_names}
    source = PuzzleSource(task_from(task, task_fields, "load_environment"))

    # imported only now: bad options fail fast, without paying for the verifiers import
    import verifiers as vf

    if not hasattr(vf, "SingleTurnEnv"):
        raise ImportError(
            f"verifiers {getattr(vf, '__version__', '?')} has no classic API (SingleTurnEnv): use the v1 taskset "
            "(verifiers_ext.taskset.CountdownTaskset) or verifiers 0.3.1 in its own venv (make install-vf-classic)"
        )
    from datasets import Dataset

    from countdown_env.helpers.keys import refuse_unknown

    # vf.Environment takes **kwargs and would swallow a typo (n_numbrs=3 built a 4-number task)
    refuse_unknown("load_environment keyword", env_kwargs, task_names | _init_parameters(vf.SingleTurnEnv))

    train = Dataset.from_list(source.rows(num_train_examples)) if num_train_examples else None
    evaluation = None
    if num_eval_examples:
        evaluation = Dataset.from_list(source.rows(num_eval_examples, start=num_train_examples))

    config = source.reward_config
    parser = vf.XMLParser([config.reasoning_tag, config.answer_tag], answer_field=config.answer_tag)
    correct_answer, valid_format = rubric_functions(config)
    weights = [1.0, config.format_bonus]
    rubric = vf.Rubric(funcs=[correct_answer, valid_format], weights=weights, parser=parser)
    return vf.SingleTurnEnv(dataset=train, eval_dataset=evaluation, parser=parser, rubric=rubric, **env_kwargs)
