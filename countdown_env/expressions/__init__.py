"""Expressions: reading a model's answer and judging it.

- :mod:`.answers`: the answer out of a completion (tags, the format check, notation normalisation);
- :mod:`.expression`: the safe parser, exact evaluator and canonical form of an arithmetic expression;
- :mod:`.verifier`: one exact verdict for an answer to a puzzle, with a reason from a fixed vocabulary.
"""
