"""countdown_env: the Countdown puzzle as a reinforcement-learning environment.

One task definition (:class:`CountdownTask`), puzzles, an exact solver and seeded generator, a safe verifier for
untrusted model answers, reward functions, prompts, Gymnasium environments and dataset builders. Imports no torch,
transformers or trl.
"""

from __future__ import annotations

from .helpers.lazy_exports import lazy_exports
from .puzzle import Puzzle, PuzzleError, is_trivial

__version__ = "0.1.0"

# Public names resolved lazily so that `import countdown_env` stays cheap (sympy, datasets load on first use).
_EXPORTS = {
    "CountdownTask": "task",
    "PromptTemplate": "prompts",
    "chat_messages": "prompts",
    "parse_expression": "expressions.expression",
    "evaluate": "expressions.expression",
    "canonical_form": "expressions.expression",
    "ExpressionError": "expressions.expression",
    "verify": "expressions.verifier",
    "Verification": "expressions.verifier",
    "verify_completion": "expressions.verifier",
    "REASONS": "expressions.verifier",
    "to_infix": "expressions.expression",
    "Limits": "expressions.expression",
    "extract_answer": "expressions.answers",
    "normalize_expression": "expressions.answers",
    "normalize_answer": "expressions.answers",
    "has_valid_format": "expressions.answers",
    "score_completion": "rewards",
    "make_reward_function": "rewards",
    "solve": "solving.solver",
    "solutions": "solving.distinct_solutions",
    "count_solutions": "solving.distinct_solutions",
    "StepOracle": "solving.oracle",
    "prefix_solvable": "solving.answer_prefix",
    "label_completion": "steps.labels",
    "PuzzleGenerator": "task",
    "GeneratedPuzzle": "solving.generator",
    "difficulty_label": "solving.generator",
    "RewardConfig": "rewards",
    "countdown_reward": "rewards",
    "Trajectory": "trajectory",
    "score_trajectories": "trajectory",
    "CountdownEnv": "envs",
    "CountdownTokensEnv": "envs",
}

__all__ = ["Puzzle", "PuzzleError", "__version__", "is_trivial", *_EXPORTS]


def _register_envs() -> None:
    """Register the Gymnasium envs (their modules load on the first gym.make; see envs/registration.py)."""
    from .envs.registration import register_envs

    register_envs()


_register_envs()


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
