"""What the solver's search (``solver.py``) and its counting (``distinct_solutions.py``) share: the tuple
expression tree they build (an ``int`` is a number, ``(op, left, right)`` an operation), its infix text and exact
value, and the checks of their inputs.

Operator subsets: ``operators`` is any non-empty subset of ``+-*/`` that contains ``+`` if it contains ``-`` and
``*`` if it contains ``/`` (without them, regrouped forms such as ``a - (b - c)`` could not be written in canonical
order; such subsets raise ``ValueError``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

# Witness trees: an int is a number; (op, left, right) an operation.
Tree = Any

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}

__all__ = ["Tree", "check_operators", "tree_to_infix", "tree_value"]


def check_operators(operators: Any) -> frozenset[str]:
    """The operator set of an ``operators`` string (see the module docstring for the subsets allowed)."""
    if not isinstance(operators, str) or not operators:
        raise ValueError(f"operators must be a non-empty string over '+-*/', got {operators!r}")
    ops = frozenset(operators)
    if not ops <= frozenset("+-*/"):
        raise ValueError(f"operators may only contain '+-*/', got {operators!r}")
    if "-" in ops and "+" not in ops:
        raise ValueError("operators with '-' must include '+' (canonical forms such as a + c - b need it)")
    if "/" in ops and "*" not in ops:
        raise ValueError("operators with '/' must include '*' (canonical forms such as a * c / b need it)")
    return ops


def tree_to_infix(tree: Tree) -> str:
    """ASCII infix with the parentheses that matter: ``(a + b) * c``, ``a - (b + c)``, ``a * b / c``.

    A right operand of the same precedence keeps its parentheses under ``-`` and ``/`` only; under ``+`` and ``*``
    they are dropped (``a + (b - c)`` is written ``a + b - c``, whose intermediates are valid whenever the
    original's are non-negative, resp. positive integers).
    """
    if isinstance(tree, int):
        return str(tree)
    op, left, right = tree
    text_left = tree_to_infix(left)
    if not isinstance(left, int) and _PREC[left[0]] < _PREC[op]:
        text_left = f"({text_left})"
    text_right = tree_to_infix(right)
    if not isinstance(right, int) and (_PREC[right[0]] < _PREC[op] or (_PREC[right[0]] == _PREC[op] and op in "-/")):
        text_right = f"({text_right})"
    return f"{text_left} {op} {text_right}"


def tree_value(tree: Tree) -> Fraction:
    """The exact value of a tree."""
    if isinstance(tree, int):
        return Fraction(tree)
    op, left, right = tree
    a, b = tree_value(left), tree_value(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b
