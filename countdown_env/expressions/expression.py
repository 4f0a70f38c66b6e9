"""Safe parser and exact evaluator for Countdown expressions written by a model.

Model text is never handed to ``eval``, ``exec``, ``compile``, ``ast`` or sympy's parsers. The pipeline is

1. length check (before any other work),
2. character whitelist (ASCII digits, ``+ - * /``, parentheses, whitespace) and a few forbidden digraphs
   (``**``, ``//``),
3. a precompiled-regex tokenizer,
4. an iterative shunting-yard parser that emits postfix (RPN) while enforcing the nesting-depth and
   number-count limits, so 10 000 nested parentheses are refused after the first ``max_depth`` of them and
   no Python recursion is involved anywhere,
5. exact evaluation of the postfix form with ``int`` where the result is integral and ``Fraction`` otherwise,
   checking the magnitude of every intermediate.

Every refusal raises :class:`ExpressionError` whose ``reason`` is one of the verifier's reason strings (see
:mod:`countdown_env.expressions.verifier`). The tree types (:class:`Num`, :class:`BinOp`, :class:`Neg`) are for callers
that want structure (``to_infix``, ``canonical_form``); the verifier's hot path works on the postfix form.

Grammar (``-x`` only with ``allow_unary_minus=True``; unary ``+`` is never accepted)::

    expr   := term (("+" | "-") term)*
    term   := factor (("*" | "/") factor)*
    factor := NUMBER | "(" expr ")" | "-" factor
    NUMBER := "0" | [1-9][0-9]*  (a leading zero, e.g. "05", is refused: it is not how a given number is written;
                                  a bare 0 parses and is then an unknown number to the verifier)
"""

from __future__ import annotations

import functools
import math
import re
import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "ExpressionError",
    "Num",
    "BinOp",
    "Neg",
    "Node",
    "Limits",
    "DEFAULT_LIMITS",
    "parse_expression",
    "evaluate",
    "leaves",
    "height",
    "to_infix",
    "canonical_form",
]

# Reason strings shared with verifier.REASONS (kept here so this module has no import cycle).
EMPTY = "empty"
PARSE_ERROR = "parse_error"
FORBIDDEN_TOKEN = "forbidden_token"
DIVISION_BY_ZERO = "division_by_zero"
NON_INTEGER_INTERMEDIATE = "non_integer_intermediate"
NON_POSITIVE_INTERMEDIATE = "non_positive_intermediate"
TOO_LONG = "too_long"
TOO_DEEP = "too_deep"
TOO_LARGE = "too_large"
TOO_MANY_NUMBERS = "too_many_numbers"


class ExpressionError(ValueError):
    """An expression was refused. ``reason`` is a verifier reason string, ``str(error)`` explains it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """Input limits; exceeding one is a refusal with a reason, never an exception from the verifier.

    - ``max_length``: characters accepted before anything else is looked at (``too_long``). Everything after
      this check is linear in the length, so the limit only bounds work; real answers are far shorter. It is
      generous enough that 10 000 nested parentheses (20 001 characters) are reported as ``too_deep``.
    - ``max_depth``: deepest parenthesis nesting and tallest parse tree (leaf = 1) accepted (``too_deep``).
    - ``max_numbers``: most number literals in one expression (``too_many_numbers``).
    - ``max_magnitude``: bound on ``|numerator|`` and ``denominator`` of every number and intermediate
      (``too_large``); keeps exact arithmetic cheap.
    """

    max_length: int = 100_000
    max_depth: int = 100
    max_numbers: int = 64
    max_magnitude: int = 10**40

    def __post_init__(self) -> None:
        for name in ("max_length", "max_depth", "max_numbers", "max_magnitude"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")

    @functools.cached_property
    def max_digits(self) -> int:
        """Upper bound on the digits of ``max_magnitude``: a longer literal is ``too_large`` without converting
        it (capped below Python's 4300-digit ``int(str)`` limit)."""
        return min(4000, math.ceil(self.max_magnitude.bit_length() * math.log10(2)) + 1)


DEFAULT_LIMITS = Limits()


# ----------------------------------------------------------------------------------------------------------
# Tree
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Num:
    """A number literal (a non-negative integer)."""

    value: int


@dataclass(frozen=True)
class BinOp:
    """``left op right`` with ``op`` one of ``+ - * /``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    """Unary minus (only produced with ``allow_unary_minus=True``)."""

    operand: Node


Node = Num | BinOp | Neg

# Postfix items: an int is a number, a one-character str is an operator; "~" is unary minus.
_NEG = "~"
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, _NEG: 3}
_BOTTOM = "$"  # sentinel at the bottom of the parser's operator stack
_END = ""  # sentinel token appended after the last real token
# Binding strength of operator-stack entries and of the tokens that trigger reductions (")" and the end: 0).
_STACK_PREC = {**_PREC, "(": 0, _BOTTOM: 0}
_TRIGGER_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, ")": 0, _END: 0}  # tokens allowed right after an operand

# ----------------------------------------------------------------------------------------------------------
# Tokenizer + parser (text -> postfix)
# ----------------------------------------------------------------------------------------------------------
_ALLOWED = re.compile(r"[0-9 \t\r\n\f\v+\-*/()]*")
_FIRST_BAD = re.compile(r"[^0-9 \t\r\n\f\v+\-*/()]")
_TOKEN = re.compile(r"[0-9]+|[-+*/()]")
_NAME = re.compile(r"[^\W\d]\w*")

_FORBIDDEN_NAMES = {
    ".": "decimal point or attribute access ('.')",
    ",": "comma (',')",
    "%": "modulo ('%')",
    "^": "power ('^')",
    "!": "factorial ('!')",
    "=": "'=' (only one trailing '= <number>' is stripped, by normalize_expression)",
}


def _forbidden_message(text: str) -> str:
    """Say which token made ``text`` fail the character whitelist (only called on refusal)."""
    if "**" in text:
        return "forbidden token '**' (power is not a Countdown operator)"
    if "//" in text:
        return "forbidden token '//' (floor division is not a Countdown operator)"
    bad = _FIRST_BAD.search(text)
    if bad is None:  # pragma: no cover - only called when the whitelist failed
        return "forbidden token"
    char = bad.group()
    if char in _FORBIDDEN_NAMES:
        return f"forbidden token: {_FORBIDDEN_NAMES[char]}"
    name = _NAME.match(text, bad.start())
    if name is not None:
        word = name.group()
        shown = word if len(word) <= 20 else word[:20] + "..."
        return f"forbidden token: name {shown!r} (names and calls are not allowed)"
    if char.isdigit():
        return f"forbidden token: non-ASCII digit {char!r}"
    return f"forbidden token: {char!r}"


_DIGITS = frozenset("0123456789")
_SMALL_INTS = {str(i): i for i in range(1025)}  # canonical spellings only, so "05" is not found here


def _large_literal(tok: str, max_digits: int) -> int:
    """A number literal outside ``_SMALL_INTS``: refuse leading zeros and huge literals, then convert."""
    if tok[0] == "0":
        raise ExpressionError(FORBIDDEN_TOKEN, f"number {tok!r} has a leading zero")
    if len(tok) > max_digits:  # int() of a huge literal is slow (and refused past 4300 digits)
        raise ExpressionError(TOO_LARGE, f"number with {len(tok)} digits exceeds the magnitude limit")
    return int(tok)


def _parse(text: str, allow_unary_minus: bool, limits: Limits) -> tuple[list, list[int]]:
    """Tokenize and parse ``text`` (shunting-yard) into postfix; also return the number literals in order.

    Evaluation is a separate pass (``_evaluate_postfix``) so that the verifier can check the numbers used
    before spending any arithmetic; measured, that is also faster than evaluating while reducing.
    """
    if len(text) > limits.max_length:
        raise ExpressionError(TOO_LONG, f"expression has {len(text)} characters, the limit is {limits.max_length}")
    if _ALLOWED.fullmatch(text) is None or "**" in text or "//" in text:
        raise ExpressionError(FORBIDDEN_TOKEN, _forbidden_message(text))
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise ExpressionError(EMPTY, "expression is empty")
    tokens.append(_END)

    max_depth = limits.max_depth
    max_numbers = limits.max_numbers
    max_digits = limits.max_digits
    prec = _STACK_PREC
    trigger = _TRIGGER_PREC
    small_ints = _SMALL_INTS
    out: list = []
    numbers: list[int] = []
    stack: list[str] = [_BOTTOM]  # pending operators and "("; the bottom sentinel saves emptiness checks
    depth = 0
    expect_operand = True
    for tok in tokens:
        if expect_operand:
            value = small_ints.get(tok)
            if value is not None or tok[:1] in _DIGITS:  # a number ("" is the end token)
                if len(numbers) >= max_numbers:
                    raise ExpressionError(TOO_MANY_NUMBERS, f"more than {max_numbers} numbers in the expression")
                if value is None:
                    value = _large_literal(tok, max_digits)
                numbers.append(value)
                out.append(value)
                expect_operand = False
            elif tok == "(":
                depth += 1
                if depth > max_depth:
                    raise ExpressionError(TOO_DEEP, f"parentheses nested deeper than {max_depth}")
                stack.append(tok)
            elif tok == "-":
                if not allow_unary_minus:
                    raise ExpressionError(FORBIDDEN_TOKEN, "unary minus is not allowed")
                stack.append(_NEG)
            elif tok == "+":
                raise ExpressionError(FORBIDDEN_TOKEN, "unary plus is not allowed")
            elif tok == ")":
                raise ExpressionError(PARSE_ERROR, "')' where a number or '(' was expected")
            elif tok == _END:
                raise ExpressionError(PARSE_ERROR, "expression ends where a number was expected")
            else:
                raise ExpressionError(PARSE_ERROR, f"operator {tok!r} where a number or '(' was expected")
            continue
        p = trigger.get(tok)
        if p is None:
            if tok == "(":
                raise ExpressionError(
                    PARSE_ERROR, "'(' right after an operand (implicit multiplication is not allowed)"
                )
            raise ExpressionError(
                PARSE_ERROR, f"number {tok!r} right after an operand: missing operator (digits are never joined)"
            )
        # Reduce every pending operator that binds at least as tightly (binary operators are left-associative,
        # unary minus binds tighter than any); ")" and the end reduce everything down to "(" or the bottom.
        floor = p or 1
        while prec[stack[-1]] >= floor:
            out.append(stack.pop())
        if p:
            stack.append(tok)
            expect_operand = True
        elif tok == ")":
            if stack.pop() == _BOTTOM:
                raise ExpressionError(PARSE_ERROR, "unbalanced ')'")
            depth -= 1
        elif depth:  # the end, with "(" left open
            raise ExpressionError(PARSE_ERROR, "unbalanced '('")
    # The tree is at most (operators + 1) tall; only measure it when that bound exceeds the limit.
    if len(out) - len(numbers) + 1 > max_depth and _postfix_height(out) > max_depth:
        raise ExpressionError(TOO_DEEP, f"expression tree is deeper than {max_depth}")
    return out, numbers


def _postfix_height(postfix: list) -> int:
    heights: list[int] = []
    for item in postfix:
        if type(item) is int:
            heights.append(1)
        elif item == _NEG:
            heights[-1] += 1
        else:
            right = heights.pop()
            heights[-1] = 1 + max(heights[-1], right)
    return heights[0]


# ----------------------------------------------------------------------------------------------------------
# Exact evaluation of postfix
# ----------------------------------------------------------------------------------------------------------
def _apply(op: str, a, b, integer_intermediates: bool, max_magnitude: int):
    """``a op b`` exactly (unary minus is ``0 - b``), with the magnitude and integer-intermediate rules.

    Values stay ``int`` while integral and become ``Fraction`` only when needed (ints are much faster).
    """
    if op == "+":
        value = a + b
    elif op == "-" or op == _NEG:
        value = a - b
    elif op == "*":
        value = a * b
    else:
        if not b:
            raise ExpressionError(DIVISION_BY_ZERO, "division by zero")
        if type(a) is int and type(b) is int:
            if a % b:
                if integer_intermediates:
                    raise ExpressionError(
                        NON_INTEGER_INTERMEDIATE, f"{a} / {b} is not an integer (integer intermediates)"
                    )
                value = Fraction(a, b)
            else:
                value = a // b
        else:
            value = Fraction(a) / b
    if type(value) is not int:
        if value.denominator == 1:
            value = value.numerator
        else:
            if integer_intermediates:
                raise ExpressionError(NON_INTEGER_INTERMEDIATE, f"intermediate {value} is not an integer")
            if value.denominator > max_magnitude or not -max_magnitude <= value.numerator <= max_magnitude:
                raise ExpressionError(TOO_LARGE, "an intermediate result exceeds the magnitude limit")
            return value
    if not -max_magnitude <= value <= max_magnitude:
        raise ExpressionError(TOO_LARGE, "an intermediate result exceeds the magnitude limit")
    if integer_intermediates and value <= 0:
        raise ExpressionError(
            NON_POSITIVE_INTERMEDIATE, f"intermediate {value} is not positive (integer intermediates required)"
        )
    return value


def _evaluate_postfix(postfix: list, integer_intermediates: bool, max_magnitude: int) -> int | Fraction:
    """Evaluate postfix exactly; a literal above ``max_magnitude`` is ``too_large`` too."""
    stack: list = []
    for item in postfix:
        if type(item) is int:
            if item > max_magnitude:
                raise ExpressionError(TOO_LARGE, f"number {item} exceeds the magnitude limit")
            stack.append(item)
        else:
            b = stack.pop()
            a = 0 if item == _NEG else stack.pop()
            stack.append(_apply(item, a, b, integer_intermediates, max_magnitude))
    return stack[0]


# ----------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------
def parse_expression(text: str, *, allow_unary_minus: bool = False, limits: Limits | None = None) -> Node:
    """Parse ``text`` (already normalised: see ``answers.normalize_expression``) into a tree.

    Raises :class:`ExpressionError` with reason ``too_long``, ``empty``, ``forbidden_token``, ``parse_error``,
    ``too_deep`` or ``too_many_numbers``. Never recurses, whatever the input.

    >>> to_infix(parse_expression("(25 - 3) * (7)"))
    '(25 - 3) * 7'
    """
    if not isinstance(text, str):
        raise TypeError(f"expression text must be a str, got {type(text).__name__}")
    postfix, _ = _parse(text, allow_unary_minus, limits or DEFAULT_LIMITS)
    return _postfix_to_tree(postfix)


def _postfix_to_tree(postfix: list) -> Node:
    stack: list = []
    for item in postfix:
        if type(item) is int:
            stack.append(Num(item))
        elif item == _NEG:
            stack.append(Neg(stack.pop()))
        else:
            right = stack.pop()
            stack.append(BinOp(item, stack.pop(), right))
    return stack[0]


def _postorder(node: Node):
    """Yield the nodes of ``node`` in post-order, iteratively (trees built by hand may be arbitrarily deep)."""
    stack: list = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded or isinstance(current, Num):
            yield current
        elif isinstance(current, BinOp):
            stack.append((current, True))
            stack.append((current.right, False))
            stack.append((current.left, False))
        elif isinstance(current, Neg):
            stack.append((current, True))
            stack.append((current.operand, False))
        else:
            raise TypeError(f"not an expression node: {current!r}")


def _tree_to_postfix(node: Node) -> list:
    postfix: list = []
    for n in _postorder(node):
        if isinstance(n, Num):
            value = n.value
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Num.value must be an int, got {value!r}")
            postfix.append(value)
        elif isinstance(n, Neg):
            postfix.append(_NEG)
        else:
            if n.op not in "+-*/" or len(n.op) != 1:
                raise ValueError(f"unknown operator {n.op!r}")
            postfix.append(n.op)
    return postfix


def evaluate(node: Node, *, integer_intermediates: bool = False, limits: Limits | None = None) -> Fraction:
    """Exact value of ``node``.

    With ``integer_intermediates=True`` every intermediate result (every operation's result, the final one
    included) must be a positive integer, as in the TV rules: a non-integral division raises reason
    ``non_integer_intermediate``, a zero or negative result ``non_positive_intermediate`` (so ``5 - 5`` is refused
    even as a step). Other reasons: ``division_by_zero``, ``too_large``.

    >>> evaluate(parse_expression("7 / 2 + 1"))
    Fraction(9, 2)
    """
    limits = limits or DEFAULT_LIMITS
    return Fraction(_evaluate_postfix(_tree_to_postfix(node), integer_intermediates, limits.max_magnitude))


def leaves(node: Node) -> list[int]:
    """The number literals of ``node``, left to right."""
    return [n.value for n in _postorder(node) if isinstance(n, Num)]


def height(node: Node) -> int:
    """Height of the tree (a single number has height 1)."""
    return _postfix_height(_tree_to_postfix(node))


def to_infix(node: Node) -> str:
    """Infix text with the fewest parentheses that re-parse to the same tree (binary operators are
    left-associative, so a right operand of equal precedence keeps its parentheses: ``5 - (3 - 1)``)."""
    stack: list[tuple[str, int]] = []  # (text, precedence of its top operator; 4 for a number)
    for n in _postorder(node):
        if isinstance(n, Num):
            stack.append((str(n.value), 4))
        elif isinstance(n, Neg):
            text, p = stack.pop()
            stack.append(("-" + (text if p >= 3 else f"({text})"), 3))
        else:
            right, rp = stack.pop()
            left, lp = stack.pop()
            p = _PREC[n.op]
            if lp < p:
                left = f"({left})"
            if rp <= p:
                right = f"({right})"
            stack.append((f"{left} {n.op} {right}", p))
    return stack[0][0]


def canonical_form(expr: str | Node, *, allow_unary_minus: bool = False) -> str:
    """The solution identity of an expression, as text: two expressions share it iff
    :mod:`countdown_env.solving.distinct_solutions` counts them as the same solution.

    The rewriting (no numbers are folded: ``5 + 11`` and ``4 + 12`` keep different forms):

    - chains of ``+``/``-`` (and unary minus) are flattened into one sum of added and subtracted terms, chains of
      ``*``/``/`` into one product of multiplied and divided factors, each list sorted (numbers by value first,
      then the other terms by their text). So ``5+11``, ``11 + 5`` and ``(5 + 11)`` share a form, as do
      ``a-b-c`` and ``a-(b+c)``, ``a/b/c`` and ``a/(b*c)``, ``a-(b-c)`` and ``a+c-b``;
    - signs move outwards: a sum of negative value is replaced by its negation (added and subtracted swapped) and
      the sign goes to its parent (a term changes side, a product changes sign), so ``(3-5)*(2-9)`` and
      ``(5-3)*(9-2)`` share the form ``(5 - 3) * (9 - 2)``; an expression of negative value keeps a leading
      ``-(...)`` (``3-10`` is ``-(10 - 3)``, not ``10 - 3``). A sum of value 0 keeps its orientation (as the
      solution count does) unless it has no added term; a subexpression that divides by zero is left as written.
    - distributivity, identities (``x * 1``), cancellation and equal values (``2 + 2`` vs ``2 * 2``) distinguish.

    The form is written like the solver's answers (``solutions(p)`` returns canonical forms: ``canonical_form(s) ==
    s``). A string is model text: it is normalised with ``answers.normalize_expression`` (so ``(25 − 3) × 7`` and
    ``(25-3)*7`` share a form) and parsed with :func:`parse_expression` under the default limits; invalid text raises
    :class:`ExpressionError`. The work is linear in the size of the tree times its depth (well under 10 ms at the
    limits: 64 numbers, depth 100); results for strings are cached, bounded in bytes (``CANONICAL_CACHE_BYTES``).

    >>> canonical_form("(3-5)*(2-9)") == canonical_form("(9 - 2) * (5 - 3)") == "(5 - 3) * (9 - 2)"
    True
    """
    if isinstance(expr, str):
        if len(expr) > DEFAULT_LIMITS.max_length:
            raise ExpressionError(
                TOO_LONG, f"expression has {len(expr)} characters, the limit is {DEFAULT_LIMITS.max_length}"
            )
        from .answers import normalize_expression

        key = (normalize_expression(expr), bool(allow_unary_minus))
        found = _CANONICAL_CACHE.get(key)
        if found is None:
            found = _canonical_form_of_tree(parse_expression(key[0], allow_unary_minus=key[1]))
            _CANONICAL_CACHE.put(key, found)
        return found
    if not isinstance(expr, (Num, BinOp, Neg)):
        raise TypeError(f"canonical_form takes expression text or a Node, got {type(expr).__name__}")
    return _canonical_form_of_tree(expr)


CANONICAL_CACHE_BYTES = 32 << 20
"""Bytes (approximate: both strings' ``sys.getsizeof`` plus :data:`CACHE_ENTRY_OVERHEAD`) the ``canonical_form``
cache holds before it drops its oldest entries."""

CACHE_ENTRY_OVERHEAD = 176
"""Bytes of one cache entry beyond its two strings (the key tuple and the ordered dict's node; measured with
tracemalloc: ~283 bytes per entry of two 11-character strings). Counting characters only let 1 M distinct calls
hold ~190 MB."""


def _entry_cost(key: tuple[str, bool], value: str) -> int:
    return sys.getsizeof(key[0]) + sys.getsizeof(value) + CACHE_ENTRY_OVERHEAD


class _ByteBoundedCache:
    """Least-recently-used text -> text cache whose entries total at most ``budget`` bytes (approximately)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self.entries: OrderedDict[tuple[str, bool], str] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[str, bool]) -> str | None:
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def put(self, key: tuple[str, bool], value: str) -> None:
        cost = _entry_cost(key, value)
        if cost > self.budget // 8:  # one huge expression must not flush the cache
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = value
            self.size += cost
            while self.size > self.budget:
                old_key, old_value = self.entries.popitem(last=False)
                self.size -= _entry_cost(old_key, old_value)


_CANONICAL_CACHE = _ByteBoundedCache(CANONICAL_CACHE_BYTES)


@dataclass(frozen=True)
class _Canonical:
    """A canonical subtree: its text, its value (>= 0, or None when it divides by zero), its kind ("num", "sum",
    "product") and the sign moved out of it (+1 or -1)."""

    text: str
    value: int | Fraction | None
    kind: str
    sign: int

    @property
    def sort_key(self) -> tuple:
        """Numbers by value first, then other terms by text (the solver's order)."""
        return (0, self.value, "") if self.kind == "num" else (1, 0, self.text)


def _canonical_form_of_tree(node: Node) -> str:
    if height(node) > DEFAULT_LIMITS.max_depth:
        raise ExpressionError(TOO_DEEP, f"expression tree is deeper than {DEFAULT_LIMITS.max_depth}")
    root = _canonical(node)  # recursion depth is bounded by the height checked above
    if root.sign > 0:
        return root.text
    return f"-{root.text}" if root.kind == "num" else f"-({root.text})"


def _canonical(node: Node) -> _Canonical:
    if isinstance(node, Num):
        return _Canonical(str(node.value), node.value, "num", 1)
    if isinstance(node, Neg):
        inner = _canonical(node.operand)
        return _Canonical(inner.text, inner.value, inner.kind, -inner.sign)
    if node.op in "+-":
        return _canonical_sum(node)
    return _canonical_product(node)


def _sum_terms(node: Node, sign: int, out: list[tuple[int, Node]]) -> None:
    """Flatten a chain of + / - / unary minus into signed terms (none of them a sum)."""
    if isinstance(node, BinOp) and node.op in "+-":
        _sum_terms(node.left, sign, out)
        _sum_terms(node.right, sign if node.op == "+" else -sign, out)
    elif isinstance(node, Neg) and _is_sum(node.operand):
        _sum_terms(node.operand, -sign, out)
    else:
        out.append((sign, node))


def _canonical_sum(node: Node) -> _Canonical:
    signed: list[tuple[int, Node]] = []
    _sum_terms(node, 1, signed)
    added: list[_Canonical] = []
    subtracted: list[_Canonical] = []
    value: int | Fraction | None = 0
    for sign, term in signed:
        part = _canonical(term)
        sign *= part.sign
        (added if sign > 0 else subtracted).append(part)
        value = None if value is None or part.value is None else value + sign * part.value
    sign = 1
    if value is not None and (value < 0 or (value == 0 and not added)):
        added, subtracted, value, sign = subtracted, added, -value, -1
    added.sort(key=lambda c: c.sort_key)
    subtracted.sort(key=lambda c: c.sort_key)
    text = " + ".join(c.text for c in added) + "".join(f" - {c.text}" for c in subtracted)
    return _Canonical(text.lstrip(), value, "sum", sign)


def _product_factors(node: Node, exponent: int, out: list[tuple[int, Node]]) -> int:
    """Flatten a chain of * and / into factors with exponent +-1 (none of them a product); returns the sign pulled
    out of unary minus."""
    if isinstance(node, BinOp) and node.op in "*/":
        sign = _product_factors(node.left, exponent, out)
        return sign * _product_factors(node.right, exponent if node.op == "*" else -exponent, out)
    if isinstance(node, Neg):
        return -_product_factors(node.operand, exponent, out)
    out.append((exponent, node))
    return 1


def _canonical_product(node: Node) -> _Canonical:
    factors: list[tuple[int, Node]] = []
    sign = _product_factors(node, 1, factors)
    multiplied: list[_Canonical] = []
    divided: list[_Canonical] = []
    value: int | Fraction | None = 1
    for exponent, factor in factors:
        part = _canonical(factor)
        sign *= part.sign
        (multiplied if exponent > 0 else divided).append(part)
        if value is None or part.value is None or (exponent < 0 and part.value == 0):
            value = None
        else:
            value = value * part.value if exponent > 0 else Fraction(value, part.value)
    if isinstance(value, Fraction) and value.denominator == 1:
        value = value.numerator
    multiplied.sort(key=lambda c: c.sort_key)
    divided.sort(key=lambda c: c.sort_key)

    def written(c: _Canonical) -> str:
        return f"({c.text})" if c.kind == "sum" else c.text

    text = " * ".join(written(c) for c in multiplied) + "".join(f" / {written(c)}" for c in divided)
    return _Canonical(text.lstrip(), value, "product", sign)


def _is_sum(n: Node) -> bool:
    while isinstance(n, Neg):
        n = n.operand
    return isinstance(n, BinOp) and n.op in "+-"
