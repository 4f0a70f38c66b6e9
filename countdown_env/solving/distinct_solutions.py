"""Counting and listing the distinct solutions of a Countdown puzzle (``count_solutions``, ``solutions``).

Two expressions are the *same solution* iff they have the same **canonical form**:

- chains of ``+``/``-`` are flattened into one sum node holding a multiset of added terms and a multiset of
  subtracted terms, and chains of ``*``/``/`` into one product node holding a multiset of multiplied and a multiset
  of divided factors. So commutativity (``a + b`` = ``b + a``), associativity (``(a + b) + c`` = ``a + (b + c)``)
  and regrouping (``a - (b - c)`` = ``a + c - b``, ``a / (b / c)`` = ``a * c / b``) do not make new solutions;
- signs are moved outwards: a subexpression of negative value is replaced by its negation with the sign absorbed
  by the parent, so ``(3 - 5) * (2 - 9)`` is the same solution as ``(5 - 3) * (9 - 2)``. Every canonical node has
  a value >= 0 (> 0 and integral under ``integer_intermediates``);
- leaves are numbers by value: with a repeated number, which copy is used does not matter, and identical terms
  in a multiset are not ordered (``2 * 3 + 2 * 3`` is one solution, as is ``2 + 2 + 3``).

Everything else distinguishes solutions: distributivity (``a * (b + c)`` vs ``a * b + a * c``), identities
(``x * 1``, ``x / 1`` and ``x`` differ), cancellation (``x + y - y``), different numbers or values that happen to be
equal (``2 + 2`` vs ``2 * 2``). With ``use_all_numbers=False`` solutions over every sub-multiset of the numbers
count, including a single number equal to the target.

The count is a dynamic programme over sub-multisets of the numbers with one dictionary value -> count per
sub-multiset and node kind (number, sum, product): a sum is a multiset of >= 2 signed non-sum terms (at least one
added, value >= 0), a product a multiset of >= 2 multiplied/divided non-product factors (at least one multiplied,
no zero divisor). Multisets of terms are counted exactly, including identical terms: by the term holding the
single copy of a number that occurs once, or, when every number of the sub-multiset is repeated, by the
cycle-index (Polya) formula over blocks in a fixed order. ``solutions`` enumerates the same canonical forms with
the same recursion, so ``len(solutions(p)) == count_solutions(p)``.

Cost. Sub-multisets of up to ``n - 2`` numbers (at least 3) get full tables; the larger ones are only asked for the
values they are needed at (each split enumerates the smaller side's table and looks the complementary values up in
the larger side, whose ``items``/``chain_full`` tables are never built), so 6 numbers never build the ~10^4-value
tables of 5-number sub-multisets. Values are exact: ``int`` when integral, else a reduced ``(numerator,
denominator)`` pair (``Fraction`` hashing and arithmetic were ~60 % of the time); sub-multisets are mixed-radix
``int`` codes (a part's complement is a subtraction). Measured with ``benchmarks/bench_solution_count.py`` (numbers
1..100, loaded machine): 6 numbers ~18 ms median per puzzle against ~175 ms for the Fraction version in the same run
(~9.5x); ~13 ms of it builds the chain tables of the fifteen 4-number sub-multisets (~20 000 value pairs combined,
three quarters of the values non-integral), ~4 ms answers the point questions. A full table for 3-number
sub-multisets only (more point questions) measured ~45 ms, for 5-number ones ~140 ms.

Solution identity and ``canonical_form``: :func:`countdown_env.expressions.expression.canonical_form` computes the same
identity for any expression text, so for every puzzle ``{canonical_form(s) for s in solutions(p)}`` has
``count_solutions(p)`` members, and a correct answer's ``canonical_form`` is one of them. Search
(``solve``) lives in :mod:`countdown_env.solving.solver`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from math import gcd

from ..puzzle import Puzzle, as_puzzle
from .solver_common import Tree, check_operators, tree_to_infix

MAX_COUNT_NUMBERS = 6
"""Most numbers ``count_solutions`` and ``solutions`` accept."""

__all__ = ["MAX_COUNT_NUMBERS", "count_solutions", "solutions"]


# ----------------------------------------------------------------------------------------------------------
# Exact values: an ``int`` when integral, else a ``(numerator, denominator)`` pair in lowest terms with
# denominator >= 2. The form is unique, so equal values are equal dictionary keys; ints (most values) keep native
# arithmetic, and pairs hash in C (``Fraction.__hash__`` alone took ~40 % of the time).
# ----------------------------------------------------------------------------------------------------------
Value = int | tuple[int, int]


def _ratio(p: int, q: int) -> Value:
    """The value p / q (q > 0)."""
    g = gcd(p, q)
    if g == q:
        return p // q
    return (p // g, q // g)


def _add(a: Value, b: Value) -> Value:
    if type(a) is int:
        if type(b) is int:
            return a + b
        p, q = b
        return (p + a * q, q)  # already in lowest terms
    p, q = a
    if type(b) is int:
        return (p + b * q, q)
    r, s = b
    return _ratio(p * s + r * q, q * s)


def _neg(a: Value) -> Value:
    return -a if type(a) is int else (-a[0], a[1])


def _sub(a: Value, b: Value) -> Value:
    if type(a) is int and type(b) is int:
        return a - b
    return _add(a, _neg(b))


def _mul(a: Value, b: Value) -> Value:
    if type(a) is int:
        if type(b) is int:
            return a * b
        p, q = b
        return _ratio(a * p, q)
    p, q = a
    if type(b) is int:
        return _ratio(b * p, q)
    r, s = b
    return _ratio(p * r, q * s)


def _inv(a: Value) -> Value:
    """1 / a (a != 0)."""
    if type(a) is int:
        p, q = 1, a
    else:
        q, p = a
    if q < 0:
        p, q = -p, -q
    return p if q == 1 else (p, q)


def _div(a: Value, b: Value) -> Value:
    """a / b (b != 0)."""
    if type(a) is int and type(b) is int:
        return _ratio(a, b) if b > 0 else _ratio(-a, -b)
    return _mul(a, _inv(b))


def _times(a: Value, k: int) -> Value:
    """a + a + ... + a (k terms)."""
    return a * k if type(a) is int else _ratio(a[0] * k, a[1])


def _power(a: Value, k: int) -> Value:
    return a**k if type(a) is int else (a[0] ** k, a[1] ** k)


# ----------------------------------------------------------------------------------------------------------
# Counting distinct solutions (canonical forms; see the module docstring)
# ----------------------------------------------------------------------------------------------------------
class _Counter:
    """Counts of canonical forms per sub-multiset and value (dynamic programme over sub-multisets).

    A sub-multiset is an ``int`` code: the counts over the distinct numbers in mixed radix (``counts[code]`` gives
    them back), so a part's complement is ``sub - part``. ``leaf``, ``sums`` and ``prods`` map value -> number of
    canonical forms whose root is a number, a sum node, a product node. Sub-multisets of up to ``table_size``
    numbers get full tables (value -> count); larger ones are asked for single values (``*_at``), each split
    looking one side's values up in the other side.
    """

    def __init__(self, numbers: tuple[Value, ...], ops: frozenset[str], integer: bool, sort_key=None) -> None:
        # numbers are ints for a puzzle; the step oracle also passes fractions as (numerator, denominator) pairs
        # (values of a partial state), with a ``sort_key`` that orders the mixed types
        self.values = sorted(set(numbers), key=sort_key)
        self.mult = tuple(numbers.count(v) for v in self.values)
        self.ops = ops
        self.integer = integer
        self._radix = []
        radix = 1
        for m in self.mult:
            self._radix.append(radix)
            radix *= m + 1
        self.counts: list[tuple[int, ...]] = [()] * radix
        in_order = []
        for counts in itertools.product(*(range(m + 1) for m in self.mult)):
            in_order.append(self.code(counts))
            self.counts[in_order[-1]] = counts
        self.size = [sum(counts) for counts in self.counts]
        # the index of a number held once (its holder in a chain is unique), None when every number is repeated
        self.pivot = [counts.index(1) if 1 in counts else None for counts in self.counts]
        self.full = self.code(self.mult)
        self.subs = sorted((code for code in in_order if code), key=lambda code: self.size[code])
        # sub-multisets up to this size get full tables; larger ones are asked for single values (measured best)
        self.table_size = max(3, len(numbers) - 2)
        self._parts: dict[int, list[int]] = {}
        self._splits: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self._nodes: dict[int, tuple[dict, dict, dict]] = {}
        self._chains: dict[tuple, dict] = {}
        self._bounded: dict[tuple, dict] = {}
        self._at: dict[tuple, int] = {}

    def code(self, counts: tuple[int, ...]) -> int:
        return sum(c * r for c, r in zip(counts, self._radix, strict=True))

    def parts(self, sub: int) -> list[int]:
        """Non-empty proper sub-multisets of ``sub``."""
        found = self._parts.get(sub)
        if found is None:
            codes = (self.code(part) for part in itertools.product(*(range(c + 1) for c in self.counts[sub])))
            found = [part for part in codes if part and part != sub]
            self._parts[sub] = found
        return found

    def splits(self, sub: int, index: int) -> list[tuple[int, int]]:
        """(part, rest): the non-empty proper parts of ``sub`` holding a copy of number ``index``, and the rest."""
        key = (sub, index)
        found = self._splits.get(key)
        if found is None:
            found = [(part, sub - part) for part in self.parts(sub) if self.counts[part][index]]
            self._splits[key] = found
        return found

    def leaf(self, sub: int) -> int:
        """The number of a one-number sub-multiset."""
        return self.values[self.counts[sub].index(1)]

    # -- nodes ----------------------------------------------------------------------------------------------
    def nodes(self, sub: int) -> tuple[dict, dict, dict]:
        """(leaf, sums, prods) value -> count for canonical forms over exactly ``sub``."""
        found = self._nodes.get(sub)
        if found is not None:
            return found
        leaf: dict = {}
        if self.size[sub] == 1:
            leaf[self.leaf(sub)] = 1
            sums: dict = {}
            prods: dict = {}
        else:
            sums = self._node_values(self.chain_multi(sub, "+", False), self.chain_multi(sub, "+", True))
            prods = self._node_values(self.chain_multi(sub, "*", False), self.chain_multi(sub, "*", True))
        found = (leaf, sums, prods)
        self._nodes[sub] = found
        return found

    def _node_values(self, chains: dict, negative_only: dict) -> dict:
        """Chains of >= 2 items minus those without a positive (+ or *) item, at valid node values."""
        out = {}
        for value, count in chains.items():
            count -= negative_only.get(value, 0)
            if count and self._valid_node(value):
                out[value] = count
        return out

    def _valid_node(self, value: Value) -> bool:
        if type(value) is int:
            return value > 0 if self.integer else value >= 0
        return not self.integer and value[0] > 0

    def items(self, sub: int, kind: str, negative_only: bool) -> dict:
        """Chain items over exactly ``sub`` as contribution -> count: for sums the signed term value (terms are
        non-sum forms), for products the factor or its inverse (factors are non-product forms)."""
        key = (sub, kind, negative_only, "items")
        found = self._chains.get(key)
        if found is not None:
            return found
        leaf, sums, prods = self.nodes(sub)
        out: dict = defaultdict(int)
        inner = prods if kind == "+" else sums
        for source in (leaf, inner):
            for value, count in source.items():
                if kind == "+":
                    if not negative_only:
                        out[value] += count
                        if "-" in self.ops:
                            out[_neg(value)] += count
                    elif "-" in self.ops and value == 0:
                        # a chain of subtracted terms only is <= 0, and 0 only when every term is: the only value
                        # its tables are asked for (a node's value is >= 0), so the others are never built
                        out[0] += count
                else:
                    if not negative_only:
                        out[value] += count
                    if "/" in self.ops and value != 0:
                        out[_inv(value)] += count
        out = dict(out)
        self._chains[key] = out
        return out

    # -- chains (multisets of items) ------------------------------------------------------------------------
    def chain_full(self, sub: int, kind: str, negative_only: bool) -> dict:
        """Multisets of >= 1 items exactly covering ``sub``: combined value -> count."""
        key = (sub, kind, negative_only, "full")
        found = self._chains.get(key)
        if found is None:
            found = dict(self.items(sub, kind, negative_only))
            for value, count in self.chain_multi(sub, kind, negative_only).items():
                found[value] = found.get(value, 0) + count
            self._chains[key] = found
        return found

    def chain_multi(self, sub: int, kind: str, negative_only: bool) -> dict:
        """Multisets of >= 2 items exactly covering ``sub``."""
        key = (sub, kind, negative_only, "multi")
        found = self._chains.get(key)
        if found is not None:
            return found
        out: dict = defaultdict(int)
        if kind in self.ops and self.size[sub] >= 2:
            pivot = self.pivot[sub]
            if pivot is not None:
                # the item holding the single copy of this number is unique: pick it, then the rest
                for part, rest in self.splits(sub, pivot):
                    _convolve_into(
                        out, self.items(part, kind, negative_only), self.chain_full(rest, kind, negative_only), kind
                    )
            else:
                for part in self.parts(sub):
                    self._bounded_into(out, sub, part, kind, negative_only)
        found = {v: c for v, c in out.items() if c}
        self._chains[key] = found
        return found

    def _bounded_into(self, out: dict, sub: int, block: int, kind: str, negative_only: bool) -> None:
        """Multisets whose largest block type (by code) is ``block``, taken k >= 1 times (k blocks of that type
        holding a multiset of k items over ``block``), the rest using smaller block types only."""
        items = self.items(block, kind, negative_only)
        k = 1
        while all(k * b <= s for b, s in zip(self.counts[block], self.counts[sub], strict=True)):
            rest = sub - k * block
            _convolve_into(out, _multiset_k(items, k, kind), self.bounded(rest, block - 1, kind, negative_only), kind)
            k += 1

    def bounded(self, sub: int, bound: int, kind: str, negative_only: bool) -> dict:
        """Multisets of items covering ``sub`` whose blocks all have code <= bound (the empty multiset: identity)."""
        if not sub:
            return {0 if kind == "+" else 1: 1}
        if bound >= sub:
            return self.chain_full(sub, kind, negative_only)
        key = (sub, bound, kind, negative_only)
        found = self._bounded.get(key)
        if found is not None:
            return found
        out: dict = defaultdict(int)
        for part in self.parts(sub):
            if part <= bound:
                self._bounded_into(out, sub, part, kind, negative_only)
        found = {v: c for v, c in out.items() if c}
        self._bounded[key] = found
        return found

    # -- counting at one value (the target) -----------------------------------------------------------------
    # The same recursion as above, asked for one value: each split of a large sub-multiset looks the values of
    # one side up in the other, so large sub-multisets never get full tables. On tabled sub-multisets the
    # ``*_at`` answers are table look-ups (the tables hold every value these questions are asked for).
    def count(self, target: int, use_all: bool) -> int:
        subs = [self.full] if use_all else self.subs
        return sum(self.node_at(sub, target, "any") for sub in subs)

    def tabled(self, sub: int) -> bool:
        return self.size[sub] <= self.table_size

    def node_at(self, sub: int, value: Value, kind: str) -> int:
        """Canonical forms over ``sub`` with this value whose root is a number or (kind "+": a product; kind "*":
        a sum; kind "any": either)."""
        if not self._valid_node(value):
            return 0
        if self.size[sub] == 1:
            return int(self.leaf(sub) == value)
        total = 0
        if kind != "+" and "+" in self.ops:
            total += self.multi_at(sub, "+", False, value) - self.multi_at(sub, "+", True, value)
        if kind != "*" and "*" in self.ops:
            total += self.multi_at(sub, "*", False, value) - self.multi_at(sub, "*", True, value)
        return total

    def items_at(self, sub: int, contribution: Value, kind: str, negative_only: bool) -> int:
        """``items(sub, kind, negative_only)[contribution]`` without building that table."""
        # terms of a sum are non-sums (numbers or products), factors of a product non-products
        if kind == "+":
            if negative_only:  # see items(): only 0 is kept
                return self.node_at(sub, 0, kind) if "-" in self.ops and contribution == 0 else 0
            total = self.node_at(sub, contribution, kind)
            if "-" in self.ops:
                total += self.node_at(sub, _neg(contribution), kind)
            return total
        total = 0 if negative_only else self.node_at(sub, contribution, kind)
        if "/" in self.ops and contribution != 0:
            total += self.node_at(sub, _inv(contribution), kind)
        return total

    def full_at(self, sub: int, value: Value, kind: str, negative_only: bool) -> int:
        """``chain_full(sub, kind, negative_only)[value]`` without building that table."""
        return self.items_at(sub, value, kind, negative_only) + self.multi_at(sub, kind, negative_only, value)

    def multi_at(self, sub: int, kind: str, negative_only: bool, value: Value) -> int:
        """``chain_multi(sub, kind, negative_only)[value]``, from the table on tabled sub-multisets."""
        if kind == "+" and negative_only and value != 0:
            return 0  # subtracted terms only: every such chain is 0 (see items())
        pivot = self.pivot[sub]
        if self.tabled(sub) or pivot is None or kind not in self.ops:
            return self.chain_multi(sub, kind, negative_only).get(value, 0)
        key = (sub, kind, negative_only, value)
        found = self._at.get(key)
        if found is not None:
            return found
        total = 0
        small = self.table_size - 1  # items and chain_full tables are built up to this size
        for part, rest in self.splits(sub, pivot):
            if self.size[part] <= small and self.size[rest] <= small:
                items = self.items(part, kind, negative_only)
                total += _pairs_at(items, self.chain_full(rest, kind, negative_only), value, kind)
            elif self.size[part] <= self.size[rest]:
                for c, count in self.items(part, kind, negative_only).items():
                    other = _uncombine(value, c, kind)
                    if other is not None:
                        total += count * self.full_at(rest, other, kind, negative_only)
                    elif value == 0:  # 0 = x * 0 for any chain x over the rest
                        total += count * sum(self.chain_full(rest, kind, negative_only).values())
            else:
                for x, count in self.chain_full(rest, kind, negative_only).items():
                    other = _uncombine(value, x, kind)
                    if other is not None:
                        total += count * self.items_at(part, other, kind, negative_only)
                    elif value == 0:
                        total += count * sum(self.items(part, kind, negative_only).values())
        self._at[key] = total
        return total


def _uncombine(value: Value, known: Value, kind: str) -> Value | None:
    """The y with known (+ or *) y == value; None for a product with known == 0 (any y, or none)."""
    if kind == "+":
        return _sub(value, known)
    if known == 0:
        return None
    return _div(value, known)


def _pairs_at(left: dict, right: dict, value: Value, kind: str) -> int:
    """Sum of left[a] * right[b] over a (+ or *) b == value, going through the smaller table."""
    if len(left) > len(right):
        left, right = right, left
    total = 0
    if kind == "+":
        for a, ca in left.items():
            cb = right.get(value - a if type(a) is int and type(value) is int else _sub(value, a))
            if cb:
                total += ca * cb
    else:
        for a, ca in left.items():
            if a == 0:
                if value == 0:
                    total += ca * sum(right.values())
                continue
            cb = right.get(_div(value, a))
            if cb:
                total += ca * cb
    return total


def _convolve_into(out: dict, left: dict, right: dict, kind: str) -> None:
    if kind == "+":
        for a, ca in left.items():
            for b, cb in right.items():
                out[a + b if type(a) is int and type(b) is int else _add(a, b)] += ca * cb
    else:
        for a, ca in left.items():
            for b, cb in right.items():
                out[a * b if type(a) is int and type(b) is int else _mul(a, b)] += ca * cb


def _multiset_k(items: dict, k: int, kind: str) -> dict:
    """Value -> number of multisets of k items (Polya: k H_k = sum_j P_j * H_{k-j}, P_j = items taken j times)."""
    identity = 0 if kind == "+" else 1
    h: list[dict] = [{identity: 1}]
    for size in range(1, k + 1):
        acc: dict = defaultdict(int)
        for j in range(1, size + 1):
            merged: dict = defaultdict(int)  # the items taken j times (several may share a value)
            for v, c in items.items():
                merged[_times(v, j) if kind == "+" else _power(v, j)] += c
            _convolve_into(acc, merged, h[size - j], kind)
        h.append({v: c // size for v, c in acc.items() if c})
    return h[k]


def count_solutions(
    puzzle: Puzzle,
    *,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    operators: str = "+-*/",
) -> int:
    """Number of distinct solutions: canonical forms (see the module docstring) whose value is the target.

    Commutativity, associativity and regrouping of ``+``/``-`` chains and of ``*``/``/`` chains, signs moved out of
    subexpressions and which copy of a repeated number is used do not make solutions distinct; distributivity,
    identities (``x * 1``, ``x / 1``) and cancellation do. At most ``MAX_COUNT_NUMBERS`` numbers.

    >>> count_solutions(Puzzle([1, 2, 3], 6))  # 2 * 3, 1 + 2 + 3, 1 * 2 * 3, 2 * 3 / 1
    4
    """
    puzzle = as_puzzle(puzzle)
    ops = check_operators(operators)
    if puzzle.n_numbers > MAX_COUNT_NUMBERS:
        raise ValueError(f"count_solutions handles at most {MAX_COUNT_NUMBERS} numbers, got {puzzle.n_numbers}")
    counter = _Counter(puzzle.numbers, ops, bool(integer_intermediates))
    return counter.count(puzzle.target, bool(use_all_numbers))


# ----------------------------------------------------------------------------------------------------------
# Listing distinct solutions: the counting recursion, descending only where the counts are non-zero
# ----------------------------------------------------------------------------------------------------------
class _Lister:
    """Canonical forms as trees (sum: added terms then subtracted ones; product: multiplied then divided)."""

    def __init__(self, counter: _Counter) -> None:
        self.c = counter

    def forms(self, sub: int, value: Value, kind: str) -> Iterator[Tree]:
        c = self.c
        if not c._valid_node(value) or c.node_at(sub, value, kind) == 0:
            return
        if c.size[sub] == 1:
            yield c.leaf(sub)
            return
        for chain_kind in "+*":
            if chain_kind not in c.ops or kind == chain_kind:  # kind "+" asks for non-sums, "*" for non-products
                continue
            for items in self.chains(sub, chain_kind, value, 2):
                if any(sign in "+*" for sign, _ in items):
                    yield _chain_tree(items, chain_kind)

    def items_at(self, sub: int, contribution: Value, kind: str) -> Iterator[tuple[str, Tree]]:
        c = self.c
        if kind == "+":
            for tree in self.forms(sub, contribution, "+"):
                yield "+", tree
            if "-" in c.ops:
                for tree in self.forms(sub, _neg(contribution), "+"):
                    yield "-", tree
        else:
            for tree in self.forms(sub, contribution, "*"):
                yield "*", tree
            if "/" in c.ops and contribution != 0:
                for tree in self.forms(sub, _inv(contribution), "*"):
                    yield "/", tree

    def chains(self, sub: int, kind: str, value: Value, min_items: int) -> Iterator[list]:
        """Multisets (as lists) of >= min_items items exactly covering ``sub`` with combined ``value``."""
        c = self.c
        if min_items <= 1:
            for item in self.items_at(sub, value, kind):
                yield [item]
        if c.size[sub] < 2:
            return
        # the item holding the single copy of a number is unique; when every number is repeated, an item holding
        # a copy of the first one is chosen, and multisets reached through several such choices are deduplicated
        unique = c.pivot[sub] is not None
        pivot = c.pivot[sub] if unique else next(i for i, x in enumerate(c.counts[sub]) if x)
        seen: set = set()
        for part, rest in c.splits(sub, pivot):
            for contribution in list(c.items(part, kind, False)):
                other = _uncombine(value, contribution, kind)
                if other is None:
                    if value != 0:
                        continue
                    others = list(c.chain_full(rest, kind, False))
                else:
                    if c.full_at(rest, other, kind, False) == 0:
                        continue
                    others = [other]
                for item in self.items_at(part, contribution, kind):
                    for other_value in others:
                        for tail in self.chains(rest, kind, other_value, 1):
                            chain = [item, *tail]
                            if not unique:
                                key = tuple(sorted(_canonical_item_key(i) for i in chain))
                                if key in seen:
                                    continue
                                seen.add(key)
                            yield chain


def _canonical_item_key(item: tuple[str, Tree]) -> tuple:
    sign, tree = item
    return sign, tree_to_infix(tree)


def _chain_tree(items: list, kind: str) -> Tree:
    positive, negative = ("+", "-") if kind == "+" else ("*", "/")
    first = sorted((tree for sign, tree in items if sign == positive), key=_sort_key)
    second = sorted((tree for sign, tree in items if sign == negative), key=_sort_key)
    tree = first[0]
    for other in first[1:]:
        tree = (positive, tree, other)
    for other in second:
        tree = (negative, tree, other)
    return tree


def _sort_key(tree: Tree) -> tuple:
    return (0, tree, "") if isinstance(tree, int) else (1, 0, tree_to_infix(tree))


def solutions(
    puzzle: Puzzle,
    limit: int | None = None,
    *,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    operators: str = "+-*/",
) -> list[str]:
    """Distinct solutions as ASCII infix, one per canonical form (see the module docstring), at most ``limit``.

    ``len(solutions(p)) == count_solutions(p)``; every string passes ``verify`` with the same options. Sums are
    written with added terms first, products with multiplied factors first, so intermediates stay non-negative
    (positive integers under ``integer_intermediates``).

    >>> solutions(Puzzle([1, 2, 3], 6))
    ['2 * 3', '1 + 2 + 3', '1 * 2 * 3', '2 * 3 / 1']
    """
    puzzle = as_puzzle(puzzle)
    ops = check_operators(operators)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or a non-negative integer, got {limit!r}")
    if puzzle.n_numbers > MAX_COUNT_NUMBERS:
        raise ValueError(f"solutions handles at most {MAX_COUNT_NUMBERS} numbers, got {puzzle.n_numbers}")
    counter = _Counter(puzzle.numbers, ops, bool(integer_intermediates))
    lister = _Lister(counter)
    subs = [counter.full] if use_all_numbers else counter.subs
    out: list[str] = []
    for sub in subs:
        for tree in lister.forms(sub, puzzle.target, "any"):
            if limit is not None and len(out) >= limit:
                return out
            out.append(tree_to_infix(tree))
    return out
