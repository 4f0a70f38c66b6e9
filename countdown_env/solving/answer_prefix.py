"""The exact value of an answer prefix: can the text written so far still become an answer the verifier accepts?

:func:`prefix_solvable` answers, for a puzzle, the task's rules and a prefix of the answer expression (the text inside
the answer tags), whether **some** string starting with that prefix is accepted by
:func:`~countdown_env.expressions.verifier.verify`. It is the token-level ground truth below the step oracle
(:mod:`countdown_env.solving.oracle`), which values whole reasoning steps: after ``(25 - 3`` the answer to
``[25, 3, 7] -> 154`` is still reachable (``(25 - 3) * 7``), after ``(25 + 3`` it is not.

What counts as open: a number written up to the prefix's last character may still grow (the ``1`` of ``12``); a space
or an operator after it closes it. The prefix is read as the verifier reads the whole answer: the one-character
notation map of :func:`~countdown_env.expressions.answers.normalize_expression` (``×``, ``−``, full-width digits, ...),
``$``/backtick delimiters (what was opened must be closed in reverse order), and one trailing ``= <number>``, which
must state the target. LaTeX commands (``\\times``, ``\\frac``) are not followed: a prefix holding a backslash raises
``ValueError`` (their rewriting is not a per-character map, so no prefix rule is exact for them).

The search, exact in ``int``/``Fraction``: the prefix is parsed as the verifier's shunting-yard parser would, reducing
every operation it has already fixed; what remains is a stack of open parenthesis levels, each holding the value of its
finished terms ``a`` with a pending ``+``/``-``, the value ``p`` of its current product with a pending ``*``/``/`` and,
innermost, the operand being written. From there, each level can only (1) receive an operand: a number still unused
or any sub-expression of unused numbers (a parenthesised group: every expression tree over them, the set ``E(M)``
computed once per sub-multiset ``M``), (2) extend its product by ``* y`` or ``/ y``, (3) close its term and add or
subtract a new one, (4) close. The values each level can close with, keyed by the numbers left, become the operand of
the level around it; the prefix is solvable iff the outermost level can end at the target (with every number used,
under ``use_all_numbers``). Each operation is checked as the verifier checks it (division by zero, magnitude, and
under ``integer_intermediates`` a positive integer), in the order the verifier evaluates it: a product continued as
``p * y / z`` is searched as written, not as ``p * (y / z)``, whose intermediate differs.

A new term after ``+``/``-`` is taken whole from ``E(M)`` (a term ``y * z / w`` is itself a tree over its numbers,
with the same intermediates), which keeps the search exact and smaller. Without ``integer_intermediates``, and when
no intermediate can pass the magnitude bound (every value over ``n`` numbers has numerator and denominator at most
``2^(n-1) * prod(numbers)``), chains fold further: ``p * y1 / y2 = p * (y1 / y2)`` and ``x + t1 - t2 = x + (t1 - t2)``
are refused or accepted together (division by zero either way), so one factor and one term suffice; and the outermost
level is met backwards: the set of products from which the target is reachable is built once per numbers-left, and
each value the level inside can close with is looked up in it. With no number written yet the question is whether
the puzzle is solvable at all, which :class:`~countdown_env.solving.oracle.StepOracle` answers.

Speed (``benchmarks/bench_answer_prefix.py``, one core, a fresh oracle per puzzle, every character prefix of eight
answers per puzzle): about 15 000 prefixes/s on 3-number puzzles, 2 300 on 4, 90 on 5 (each five-number puzzle's
nested prefixes cost tenths of a second), against the verifier's 115 000-150 000 judgements/s on the same text.

Bounds, as the oracle's (:class:`~countdown_env.solving.oracle.OracleLimits`): at most ``max_values`` numbers, at most
``max_states`` search states and ``max_seconds`` per question, else :class:`OracleLimitError` with one line. A prefix
longer than the verifier's ``max_length`` is not solvable (every string that starts with it is too long); one nested
so deep that a completion could hit ``max_depth`` raises ``ValueError`` rather than guess. :class:`AnswerPrefixOracle`
keeps the memo for one puzzle; :func:`prefix_solvable` keeps the last few puzzles' oracles.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import time
from collections.abc import Sequence
from fractions import Fraction

from ..expressions.answers import _TRANSLATION
from ..expressions.expression import DEFAULT_LIMITS
from ..expressions.verifier import _states, verify
from ..puzzle import Puzzle
from .oracle import OracleLimitError, OracleLimits, StepOracle, Value, _exact, combine_step

__all__ = ["AnswerPrefixOracle", "prefix_solvable"]

_WRAPPERS = "$`"
_OPS = frozenset("+-*/")
_DIGITS = frozenset("0123456789")
_PARSER_SPACE = " \t\r\n\f\v"  # the whitespace the verifier's parser skips inside an expression
_TOKEN = re.compile(r"[0-9]+|[^0-9 \t\r\n\f\v]")
Counts = tuple[int, ...]  # a sub-multiset of the puzzle's numbers: how many of each distinct number


class _Level:
    """One open parenthesis level: finished terms ``a`` (``None`` before the first) with pending ``add``, the current
    product ``p`` with pending ``mul``; ``p`` is ``None`` while the level waits for its first operand."""

    __slots__ = ("a", "add", "p", "mul")

    def __init__(self) -> None:
        self.a: Value | None = None
        self.add = ""
        self.p: Value | None = None
        self.mul = ""


class AnswerPrefixOracle:
    """:func:`prefix_solvable` for one puzzle and rule set, memoised across prefixes.

    >>> oracle = AnswerPrefixOracle(Puzzle([25, 3, 7], 154))
    >>> [oracle.solvable(p) for p in ("(25 - 3", "(25 + 3", "(2", "(25 - 3) * 7 = 15", "(25 - 3) * 7 = 16")]
    [True, False, True, True, False]
    """

    def __init__(
        self,
        puzzle: Puzzle,
        *,
        use_all_numbers: bool = False,
        integer_intermediates: bool = False,
        limits: OracleLimits | None = None,
    ) -> None:
        if not isinstance(puzzle, Puzzle):
            raise TypeError(f"puzzle must be a Puzzle, got {type(puzzle).__name__}")
        self.puzzle = puzzle
        self.use_all = bool(use_all_numbers)
        self.integer = bool(integer_intermediates)
        self.limits = limits or OracleLimits()
        if len(puzzle.numbers) > self.limits.max_values:
            raise OracleLimitError(
                f"prefix_solvable takes at most {self.limits.max_values} numbers, got {len(puzzle.numbers)}"
            )
        self._distinct = tuple(sorted(set(puzzle.numbers)))
        self._all = tuple(puzzle.numbers.count(n) for n in self._distinct)
        self._answers: dict[str, bool] = {}
        self._trees: dict[Counts, frozenset[Value]] = {}
        self._memo: dict[tuple, dict[Counts, set[Value]]] = {}  # products and sums, by their start and numbers left
        self._goals: dict[tuple, tuple[frozenset[Value], bool]] = {}
        # Every intermediate of an expression over n numbers has |numerator| and denominator at most
        # 2^(n-1) * prod(numbers) (by induction over the tree), so below the magnitude bound no refusal but division
        # by zero depends on how a chain of factors or terms is grouped: chains fold into one operand (see _products).
        self._closed = not self.integer and 2 ** (len(puzzle.numbers) - 1) * math.prod(puzzle.numbers) <= (
            self.limits.max_magnitude
        )
        self._puzzle_solvable: bool | None = None
        self._deadline = 0.0

    # -- public ---------------------------------------------------------------------------------------------
    def solvable(self, prefix: str) -> bool:
        """Whether some answer starting with ``prefix`` is accepted for the puzzle (see the module docstring)."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        if len(prefix) > DEFAULT_LIMITS.max_length:
            return False
        found = self._answers.get(prefix)
        if found is None:
            self._deadline = time.monotonic() + self.limits.max_seconds
            found = self._answers[prefix] = self._solvable(prefix)
        return found

    # -- the text around the expression: delimiters and a stated result --------------------------------------
    def _solvable(self, prefix: str) -> bool:
        text = prefix if prefix.isascii() else prefix.translate(_TRANSLATION)
        if "\\" in text:
            raise ValueError("prefix_solvable does not follow LaTeX notation (a backslash in the prefix)")
        opened, i = _wrappers_from(text, 0)
        end = i
        while end < len(text) and text[end] not in _WRAPPERS:
            end += 1
        body = text[i:end]
        if end == len(text):  # no delimiter closed yet: the completion will close what was opened
            return self._body_solvable(body)
        if not opened or not body.strip():
            return False  # a delimiter never opened cannot be stripped; an empty answer is refused
        closing = opened[::-1]
        inner, rest = _wrappers_from(text, end)
        if rest == len(text):
            return inner == closing[: len(inner)] and self._accepted(body)
        # After closing the inner delimiters, only "= <number>" and the outer ones may follow ("$$1+2$ = 3$").
        if inner != closing[: len(inner)] or "=" in body or text[rest] != "=":
            return False
        digits_end = rest + 1
        while digits_end < len(text) and (text[digits_end].isspace() or text[digits_end] in _DIGITS):
            digits_end += 1
        outer, stop = _wrappers_from(text, digits_end)
        if stop != len(text) or outer != closing[len(inner) :][: len(outer)]:
            return False
        stated = text[rest + 1 : digits_end]
        return self._accepted(body) and _may_state(stated, self.puzzle.target, closed=bool(outer))

    def _accepted(self, expression: str) -> bool:
        return verify(expression, self.puzzle, use_all_numbers=self.use_all, integer_intermediates=self.integer).correct

    def _body_solvable(self, body: str) -> bool:
        at = body.rfind("=")
        if at < 0:
            return self._expression_solvable(body)
        expression, stated = body[:at], body[at + 1 :]
        return "=" not in expression and self._accepted(expression) and _may_state(stated, self.puzzle.target)

    # -- the expression: parse what is fixed, then search the completions ------------------------------------
    def _expression_solvable(self, text: str) -> bool:
        for at, char in enumerate(text):
            if char.isspace() and char not in _PARSER_SPACE:
                # Only stripped at the ends: nothing but whitespace (or "= N" and delimiters) may follow it.
                return not text[at:].strip() and self._accepted(text[:at])
        tokens = _TOKEN.findall(text)
        open_digits = tokens.pop() if text and text[-1] in _DIGITS else None
        levels = [_Level()]
        used = [0] * len(self._distinct)
        depth = deepest = 0
        for token in tokens:
            if token[0] in _DIGITS:
                value = self._literal(token, used)
                if value is None or not self._operand(levels, value):
                    return False
                continue
            level = levels[-1]
            waiting = level.p is None or bool(level.mul)
            if token == "(":
                if not waiting:
                    return False  # implicit multiplication
                depth += 1
                deepest = max(deepest, depth)
                levels.append(_Level())
            elif token == ")":
                if waiting or depth == 0:
                    return False
                value = self._close(levels.pop())
                depth -= 1
                if value is None or not self._operand(levels, value):
                    return False
            elif token in _OPS:
                if waiting:
                    return False  # an operator where an operand belongs (unary signs are refused)
                if token in "*/":
                    level.mul = token
                else:
                    total = self._close(level)
                    if total is None:
                        return False
                    level.a, level.add, level.p, level.mul = total, token, None, ""
            else:
                return False  # the verifier's whitelist refuses every other character
        if open_digits is not None:
            level = levels[-1]
            if not (level.p is None or level.mul) or (open_digits[0] == "0" and len(open_digits) > 1):
                return False  # digits right after an operand, or a leading zero
        if deepest > DEFAULT_LIMITS.max_depth:
            return False
        if depth + len(self.puzzle.numbers) + 1 > DEFAULT_LIMITS.max_depth:
            raise ValueError(
                f"prefix nests {depth} parentheses; prefix_solvable decides only below "
                f"{DEFAULT_LIMITS.max_depth - len(self.puzzle.numbers) - 1}"
            )
        left = _rest(self._all, tuple(used))
        return self._finish(levels, left, open_digits)

    def _literal(self, digits: str, used: list[int]) -> int | None:
        """The value of a finished literal, counted as used; ``None`` if the verifier would refuse it."""
        if digits[0] == "0" and len(digits) > 1 or len(digits) > 12:
            return None
        value = int(digits)
        try:
            k = self._distinct.index(value)
        except ValueError:
            return None
        if used[k] == self._all[k]:
            return None
        used[k] += 1
        return value

    def _operand(self, levels: list[_Level], value: Value) -> bool:
        """Give the innermost level a finished operand; False when the operation it completes is refused."""
        level = levels[-1]
        if level.p is None:
            level.p = value
            return True
        if not level.mul:
            return False  # two operands in a row
        level.p = self._op(level.p, level.mul, value)
        level.mul = ""
        return level.p is not None

    def _close(self, level: _Level) -> Value | None:
        return level.p if level.a is None else self._op(level.a, level.add, level.p)

    def _op(self, a: Value | None, op: str, b: Value | None) -> Value | None:
        if a is None or b is None:
            return None
        return combine_step(a, op, b, ops=_OPS, integer=self.integer, max_magnitude=self.limits.max_magnitude)

    # -- the completions ---------------------------------------------------------------------------------
    def _finish(self, levels: list[_Level], left: Counts, open_digits: str | None) -> bool:
        """Whether the parsed state can end at the target; ``open_digits`` is a literal that may still grow."""
        if open_digits is None and left == self._all and all(lv.p is None and lv.a is None for lv in levels):
            return self._solvable_puzzle()
        innermost = levels[-1]
        if open_digits is not None:
            products: dict[Counts, set[Value]] = {}
            for k, n in enumerate(self._distinct):
                if left[k] and str(n).startswith(open_digits):
                    product = n if innermost.p is None else self._op(innermost.p, innermost.mul, n)
                    if product is not None:
                        _merge(products, self._products(product, _minus(left, k)))
        elif innermost.p is not None and not innermost.mul:
            products = self._products(innermost.p, left)
        else:
            products = self._operand_products(innermost.p, innermost.mul, left)
        for inner, level in zip(levels[::-1], levels[-2::-1], strict=False):
            values = self._level_values(inner, products)
            if level is levels[0] and self._closed:
                return self._meets(level, values)
            products = self._closing_products(values, level)
        return self._reaches(levels[0], products)

    def _meets(self, level: _Level, values: dict[Counts, set[Value]]) -> bool:
        """Whether the outermost level reaches the target once the level inside it closed with one of ``values``:
        each value against the set of products from which the target is reachable (``_goal``), not by enumerating
        every product of every value."""
        for rest, closed in values.items():
            goal, anything = self._goal(level.a, level.add, rest)
            for value in closed:
                product = value if level.p is None else self._op(level.p, level.mul, value)
                if product is not None and (anything or product in goal):
                    return True
        return False

    def _goal(self, a: Value | None, add: str, left: Counts) -> tuple[frozenset[Value], bool]:
        """The products ``P`` from which ``a add P * q ± t`` (q, t trees over disjoint parts of ``left``, each
        optional; all of ``left`` under use_all) can equal the target, found backwards; ``True`` second when every
        ``P`` can (``P * q`` with ``q = 0`` and a zero needed). Only used when ``_closed``."""
        key = ("goal", a, add, left)
        found = self._goals.get(key)
        if found is not None:
            return found
        self._tick()
        goal: set[Value] = set()
        anything = False
        empty = tuple(0 for _ in left)
        for m2 in (empty, *_sub_multisets(left)):
            rest = _rest(left, m2)
            sums = (0,) if m2 == empty else [v for t in self._tree_values(m2) for v in (t, -t)]
            for sigma in sums:
                needed = self.puzzle.target - sigma
                base = needed if a is None else (needed - a if add == "+" else a - needed)
                if not (self.use_all and any(rest)):
                    goal.add(base)
                for m1 in (rest,) if self.use_all else _sub_multisets(rest):
                    if not any(m1):
                        continue
                    for q in self._tree_values(m1):
                        if q == 0:
                            anything = anything or base == 0
                            continue
                        goal.add(_exact(Fraction(base) / q))
                        goal.add(_exact(base * q))
        found = self._goals[key] = (frozenset(goal), anything)
        return found

    def _closing_products(self, values: dict[Counts, set[Value]], level: _Level) -> dict[Counts, set[Value]]:
        """The products of ``level`` once the level inside it closed with one of ``values``."""
        return self._combine_then(values, level.p, level.mul, self._products)

    def _level_values(self, level: _Level, products: dict[Counts, set[Value]]) -> dict[Counts, set[Value]]:
        """The values ``level`` can close with, by numbers left, from its possible current products."""
        return self._combine_then(products, level.a, level.add, self._sums)

    def _combine_then(self, values, pending: Value | None, op: str, extend) -> dict[Counts, set[Value]]:
        """For each value, ``pending op value`` (the value itself when nothing is pending), then ``extend``ed with
        the numbers left, merged by numbers left."""
        out: dict[Counts, set[Value]] = {}
        for rest, found in values.items():
            for value in found:
                combined = value if pending is None else self._op(pending, op, value)
                if combined is not None:
                    _merge(out, extend(combined, rest))
        return out

    def _reaches(self, level: _Level, products: dict[Counts, set[Value]]) -> bool:
        """Whether the outermost level ends at the target from one of its possible current products."""
        target = self.puzzle.target
        for rest, found in products.items():
            for product in found:
                total = product if level.a is None else self._op(level.a, level.add, product)
                if total is None:
                    continue
                if self._closed:  # total, or total ± one term over unused numbers (see _sums)
                    if total == target and not (self.use_all and any(rest)):
                        return True
                    needed = (target - total, total - target)
                    subs = (rest,) if self.use_all else _sub_multisets(rest)
                    if any(any(t in self._tree_values(sub) for t in needed) for sub in subs if any(sub)):
                        return True
                else:
                    sums = self._sums(total, rest)
                    if self.use_all:
                        if target in sums.get(tuple(0 for _ in rest), ()):
                            return True
                    elif any(target in closed for closed in sums.values()):
                        return True
        return False

    def _operand_products(self, p: Value | None, mul: str, left: Counts) -> dict[Counts, set[Value]]:
        """Products of a level waiting for an operand (``p mul`` pending, or nothing yet when ``p`` is None)."""
        products: dict[Counts, set[Value]] = {}
        for sub in _sub_multisets(left):
            rest = _rest(left, sub)
            for y in self._tree_values(sub):
                product = y if p is None else self._op(p, mul, y)
                if product is None:
                    continue
                if self._closed and mul != "/":  # later factors fold into the operand: p * y / z = p * (y / z)
                    products.setdefault(rest, set()).add(product)  # (p / y * 0 = 0 has no p / w form: not folded)
                else:
                    _merge(products, self._products(product, rest))
        return products

    def _products(self, p: Value, left: Counts) -> dict[Counts, set[Value]]:
        """``p`` and ``p * y1 / y2 ...`` with each factor a tree over unused numbers, by numbers left.

        Without integer intermediates (and below the magnitude bound, ``_closed``) a chain of factors equals one
        factor or its inverse, ``p * (y1 / y2)``, so one step suffices; otherwise the chain is searched as written."""
        return self._chain("*/", p, left)

    def _sums(self, total: Value, left: Counts) -> dict[Counts, set[Value]]:
        """``total`` and ``total ± t1 ± t2 ...`` with each term a tree over unused numbers, by numbers left (one term
        suffices when ``_closed``: ``x + t1 - t2 = x + (t1 - t2)``)."""
        return self._chain("+-", total, left)

    def _chain(self, ops: str, start: Value, left: Counts) -> dict[Counts, set[Value]]:
        """``start`` continued by ``op y`` for ``op`` in ``ops`` and ``y`` a tree over unused numbers, as often as
        the numbers allow (once when ``_closed``), by numbers left; memoised."""
        key = (ops, start, left)
        found = self._memo.get(key)
        if found is not None:
            return found
        self._tick()
        found = {left: {start}}
        for sub in _sub_multisets(left):
            rest = _rest(left, sub)
            for y in self._tree_values(sub):
                for op in ops:
                    value = self._op(start, op, y)
                    if value is None:
                        continue
                    if self._closed:
                        found.setdefault(rest, set()).add(value)
                    else:
                        _merge(found, self._chain(ops, value, rest))
        self._memo[key] = found
        return found

    def _tree_values(self, sub: Counts) -> frozenset[Value]:
        """``E(sub)``: the values of every expression using exactly the numbers of ``sub`` (memoised)."""
        found = self._trees.get(sub)
        if found is not None:
            return found
        self._tick()
        if sum(sub) == 1:
            found = frozenset({self._distinct[sub.index(1)]})
        else:
            values: set[Value] = set()
            for part in _sub_multisets(sub):
                other = _rest(sub, part)
                if not any(other) or part > other:
                    continue  # each unordered split once; both orders of - and / are tried below
                for x in self._tree_values(part):
                    for y in self._tree_values(other):
                        for a, op, b in ((x, "+", y), (x, "*", y), (x, "-", y), (y, "-", x), (x, "/", y), (y, "/", x)):
                            value = self._op(a, op, b)
                            if value is not None:
                                values.add(value)
            found = frozenset(values)
        self._trees[sub] = found
        return found

    def _solvable_puzzle(self) -> bool:
        if self._puzzle_solvable is None:
            oracle = StepOracle(
                self.puzzle.target, use_all_numbers=self.use_all, integer_intermediates=self.integer, limits=self.limits
            )
            self._puzzle_solvable = oracle.reachable(self.puzzle.numbers)
        return self._puzzle_solvable

    def _tick(self) -> None:
        states = len(self._memo) + len(self._trees) + len(self._goals)
        if states >= self.limits.max_states:
            raise OracleLimitError(f"prefix_solvable gave up after {self.limits.max_states} states")
        if time.monotonic() > self._deadline:
            raise OracleLimitError(f"prefix_solvable gave up after {self.limits.max_seconds} s")


def _wrappers_from(text: str, start: int) -> tuple[list[str], int]:
    """The delimiter characters from ``start`` on (whitespace skipped) and where they stop."""
    found, i = [], start
    while i < len(text) and (text[i].isspace() or text[i] in _WRAPPERS):
        if text[i] in _WRAPPERS:
            found.append(text[i])
        i += 1
    return found, i


def _may_state(stated: str, target: int, *, closed: bool = False) -> bool:
    """Whether the text after ``=`` can still become digits stating ``target`` (``closed``: nothing may follow)."""
    digits = stated.strip()
    if not all(c in _DIGITS for c in digits):
        return False
    if closed or (digits and stated.rstrip() != stated):  # a space after the digits ends them
        return bool(digits) and _states(target, digits)
    return str(target).startswith(digits.lstrip("0"))


def _rest(counts: Counts, sub: Counts) -> Counts:
    """``counts`` without the sub-multiset ``sub``."""
    return tuple(x - y for x, y in zip(counts, sub, strict=True))


def _minus(counts: Counts, k: int) -> Counts:
    return counts[:k] + (counts[k] - 1,) + counts[k + 1 :]


@functools.lru_cache(maxsize=4096)
def _sub_multisets(counts: Counts) -> tuple[Counts, ...]:
    """Every non-empty sub-multiset of ``counts``."""
    subs = itertools.product(*(range(c + 1) for c in counts))
    return tuple(sub for sub in subs if any(sub))


def _merge(into: dict[Counts, set[Value]], more: dict[Counts, set[Value]]) -> None:
    for rest, values in more.items():
        into.setdefault(rest, set()).update(values)


@functools.lru_cache(maxsize=16)
def _oracle(numbers: tuple[int, ...], target: int, use_all: bool, integer: bool) -> AnswerPrefixOracle:
    return AnswerPrefixOracle(Puzzle(numbers, target), use_all_numbers=use_all, integer_intermediates=integer)


def prefix_solvable(numbers: Sequence[int], target: int, prefix: str, task=None) -> bool:
    """True iff some answer starting with ``prefix`` is accepted for ``numbers -> target`` under ``task``'s rules
    (a :class:`~countdown_env.task.CountdownTask`; the default task's when ``None``). See the module docstring.

    >>> prefix_solvable([25, 3, 7], 154, "(25 - 3) *"), prefix_solvable([25, 3, 7], 154, "25 * 3")
    (True, False)
    """
    use_all = bool(getattr(task, "use_all_numbers", False))
    integer = bool(getattr(task, "integer_intermediates", False))
    puzzle = Puzzle(numbers, target)
    return _oracle(puzzle.numbers, puzzle.target, use_all, integer).solvable(prefix)
