"""Countdown for the classic `verifiers` API (0.3.x): ``load_environment(**kwargs) -> vf.SingleTurnEnv``.

The environment is single-turn chat: the prompt is the template's system and user turns
(:func:`countdown_env.prompts.chat_messages`), the model answers once. An ``XMLParser`` over the template's
reasoning/answer tags (``reasoning``/``solution`` by default) is attached for `verifiers`' own tooling; scoring
does not rely on it: the rubric's two functions call the project's verifier.

    reward = 1.0 * correct_answer + 0.0 * valid_format

``correct_answer`` is 1.0 when the last answer block is a correct expression (exact rational arithmetic, the
generator's rules); ``valid_format`` (weight 0, a metric that is logged but not rewarded) is 1.0 when the reply
is one reasoning block followed by one non-empty answer block with nothing else around.

Datasets are built offline from :class:`countdown_env.generator.PuzzleGenerator`: training rows are generator
indices ``0 .. num_train_examples - 1``, evaluation rows the next ``num_eval_examples`` indices (disjoint index
ranges; a puzzle may still repeat by chance, as in any random draw). ``vf-eval`` evaluates on the evaluation rows.
`verifiers` is imported when :func:`load_environment` is called, not when this module is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from countdown_env.rewards import RewardConfig

from .puzzle_source import PuzzleSource
from .reply_scoring import correctness, format_score, puzzle_from_info

__all__ = ["load_environment", "rubric_functions"]


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


def load_environment(
    num_train_examples: int = 1000,
    num_eval_examples: int = 100,
    n_numbers: int = 4,
    value_range: tuple[int, int] | list[int] = (1, 100),
    target_range: tuple[int, int] | list[int] = (10, 1000),
    operators: str = "+-*/",
    require_solvable: bool = True,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    min_solutions: int | None = None,
    max_solutions: int | None = None,
    seed: int = 0,
    target_mode: str = "expression",
    template: str = "default",
    **env_kwargs: Any,
):
    """Countdown as a ``vf.SingleTurnEnv`` (classic `verifiers` 0.3.x API).

    The generator options are those of :class:`countdown_env.generator.PuzzleGenerator`; ``template`` names a
    prompt template (``"default"``: ``<reasoning>``/``<solution>``; ``"tinyzero"``: ``<think>``/``<answer>``).
    ``env_kwargs`` go to ``vf.SingleTurnEnv`` (e.g. ``sampling_args``, ``max_workers``). Invalid options raise
    ``ValueError`` here.
    """
    for name, value in (("num_train_examples", num_train_examples), ("num_eval_examples", num_eval_examples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if num_train_examples + num_eval_examples == 0:
        raise ValueError("num_train_examples and num_eval_examples are both 0: the environment would have no rows")
    source = PuzzleSource.from_options(
        template,
        n_numbers=n_numbers,
        value_range=value_range,
        target_range=target_range,
        operators=operators,
        require_solvable=require_solvable,
        use_all_numbers=use_all_numbers,
        integer_intermediates=integer_intermediates,
        min_solutions=min_solutions,
        max_solutions=max_solutions,
        seed=seed,
        target_mode=target_mode,
    )

    # imported only now: bad options fail fast, without paying for the verifiers import
    import verifiers as vf
    from datasets import Dataset

    train = Dataset.from_list(source.rows(num_train_examples)) if num_train_examples else None
    evaluation = None
    if num_eval_examples:
        evaluation = Dataset.from_list(source.rows(num_eval_examples, start=num_train_examples))

    config = source.reward_config
    parser = vf.XMLParser([config.reasoning_tag, config.answer_tag], answer_field=config.answer_tag)
    correct_answer, valid_format = rubric_functions(config)
    rubric = vf.Rubric(funcs=[correct_answer, valid_format], weights=[1.0, 0.0], parser=parser)
    return vf.SingleTurnEnv(dataset=train, eval_dataset=evaluation, parser=parser, rubric=rubric, **env_kwargs)
