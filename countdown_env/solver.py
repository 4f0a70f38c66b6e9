"""Exact Countdown solver: find one solution or prove there is none, count and list distinct solutions.

Search (``solve``)
------------------
Values are exact non-negative rationals ``p/q`` (int64 numerator and denominator, reduced). Restricting the search
to non-negative intermediates loses nothing: ``|a op b|`` can always be written with non-negative operands
(``|a - b|``, ``|a| + |b|`` ...), so the positive values reachable with signed intermediates are exactly those
reachable without them. The search is a subset-bitmask dynamic programme vectorised with numpy:

1. For every subset ``S`` of at most ``_TABLE_SIZE`` numbers, the set ``V(S)`` of values of expressions using each
   number of ``S`` exactly once is built level by level (all subsets of one size in one batch): every unordered
   split ``S = A | B`` contributes ``a + b``, ``|a - b|``, ``a * b``, ``a / b``, ``b / a`` for ``a`` in ``V(A)``,
   ``b`` in ``V(B)``. Values are deduplicated by a 64-bit hash whose equal-hash groups are checked exactly (a
   collision switches to the pure-Python search, so the proof never rests on a hash), and each value keeps a
   back-pointer to one witness expression.
2. Larger subsets are searched towards the target instead of being tabulated: ``t`` is reachable from ``S`` iff for
   some split ``S = A | B`` (``A`` the smaller side) and some ``a`` in ``V(A)`` the value ``b`` that ``t = a op b``
   demands (``t - a``, ``a - t``, ``t + a``, ``t / a``, ``a / t``, ``t * a``) lies in ``V(B)``; a large ``B`` is
   searched recursively with all those demanded values at once.

This is a complete search, so ``None`` is a proof that no expression reaches the target under the options given.
int64 overflow is ruled out per batch from the operands' magnitudes; when it could occur the solver switches to
the pure-Python search (exact, unbounded integers, slower). ``integer_intermediates=True`` keeps only positive
integers at every node, as the verifier's rule demands.

Counting (``count_solutions``, ``solutions``)
---------------------------------------------
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

Operator subsets: ``operators`` is any non-empty subset of ``+-*/`` that contains ``+`` if it contains ``-`` and
``*`` if it contains ``/`` (without them, regrouped forms such as ``a - (b - c)`` could not be written in canonical
order; such subsets raise ``ValueError``).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from .puzzle import Puzzle, PuzzleError

MAX_SOLVE_NUMBERS = 8
"""Most numbers ``solve`` accepts (a complete search; proving "no solution" for 7-8 numbers takes longer)."""

MAX_COUNT_NUMBERS = 6
"""Most numbers ``count_solutions`` and ``solutions`` accept."""

_TABLE_SIZE = 4  # subsets up to this size are tabulated; larger ones are searched towards the target
_INT64_SAFE = 1 << 62
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}

# Witness trees: an int is a number; (op, left, right) an operation.
Tree = Any

__all__ = [
    "MAX_COUNT_NUMBERS",
    "MAX_SOLVE_NUMBERS",
    "count_solutions",
    "solutions",
    "solve",
    "tree_to_infix",
]


# ----------------------------------------------------------------------------------------------------------
# Options
# ----------------------------------------------------------------------------------------------------------
def _as_puzzle(puzzle: Any) -> Puzzle:
    if isinstance(puzzle, Puzzle):
        return puzzle
    if isinstance(puzzle, dict):
        return Puzzle.from_dict(puzzle)
    raise PuzzleError(f"expected a Puzzle or a mapping with 'numbers' and 'target', got {type(puzzle).__name__}")


def _check_operators(operators: Any) -> frozenset[str]:
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


# ----------------------------------------------------------------------------------------------------------
# Formatting
# ----------------------------------------------------------------------------------------------------------
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


def _tree_value(tree: Tree) -> Fraction:
    if isinstance(tree, int):
        return Fraction(tree)
    op, left, right = tree
    a, b = _tree_value(left), _tree_value(right)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    return a / b


# ----------------------------------------------------------------------------------------------------------
# Vectorised search
# ----------------------------------------------------------------------------------------------------------
class _Fallback(Exception):
    """The int64 search cannot continue exactly (possible overflow or an unresolved hash collision)."""


_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)
_K3 = np.uint64(0x165667B19E3779F9)
_S31 = np.uint64(31)
_S29 = np.uint64(29)
_S8 = np.uint64(8)
_S56 = np.uint64(56)


def _hash(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    h = (p.view(np.uint64) * _K1) ^ (q.view(np.uint64) * _K2)
    h ^= h >> _S31
    h *= _K3
    h ^= h >> _S29
    return h


def _level_key(h: np.ndarray, sid: np.ndarray | int) -> np.ndarray:
    """Sort key inside one level: subset id in the top 8 bits, 56 bits of hash below."""
    return (h >> _S8) | (np.asarray(sid, dtype=np.uint64) << _S56)


def _maxabs(a: np.ndarray) -> int:
    return int(np.abs(a).max()) if a.size else 0


def _check_products(*pairs: tuple[np.ndarray, np.ndarray]) -> None:
    """Raise _Fallback unless the sum of the products of each pair surely fits in int64."""
    total = 0
    for x, y in pairs:
        total += _maxabs(x) * _maxabs(y)
    if total >= _INT64_SAFE:
        raise _Fallback


def _reduce(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g = np.gcd(p, q)
    g[g == 0] = 1
    return p // g, q // g


class _VectorSearch:
    """One puzzle's tables and target-directed search (see the module docstring)."""

    def __init__(self, numbers: tuple[int, ...], ops: frozenset[str], integer: bool) -> None:
        self.numbers = numbers
        self.n = len(numbers)
        self.ops = ops
        self.integer = integer
        self.table_size = min(_TABLE_SIZE, self.n)
        # global arrays over all tabulated values, and per-mask segments
        self.start: dict[int, int] = {}
        self.count: dict[int, int] = {}
        self.sid: dict[int, int] = {}
        self.level_base: dict[int, int] = {}
        self.level_keys: dict[int, np.ndarray] = {}
        self._plans: dict[int, list] = {}
        self._build_tables()

    # -- tables ---------------------------------------------------------------------------------------------
    def _build_tables(self) -> None:
        n = self.n
        p = np.array(self.numbers, dtype=np.int64)
        q = np.ones(n, dtype=np.int64)
        masks = [1 << i for i in range(n)]
        sids = np.arange(n, dtype=np.uint64)
        keys = _level_key(_hash(p, q), sids)
        order = np.argsort(keys, kind="stable")  # n values: cheap
        self.P, self.Q = p[order], q[order]
        self.OP = np.full(n, -1, dtype=np.int8)
        self.LI = np.zeros(n, dtype=np.int64)
        self.RI = np.zeros(n, dtype=np.int64)
        for rank, i in enumerate(order.tolist()):
            self.start[masks[i]] = rank
            self.count[masks[i]] = 1
            self.sid[masks[i]] = i
        self.level_base[1] = 0
        self.level_keys[1] = keys[order]
        by_size: dict[int, list[int]] = defaultdict(list)
        for mask in range(1, 1 << n):
            by_size[mask.bit_count()].append(mask)
        for size in range(2, self.table_size + 1):
            self._build_level(size, by_size[size])

    def _build_level(self, size: int, masks: list[int]) -> None:
        split_a, split_b, split_sid = [], [], []
        for sid, mask in enumerate(masks):
            self.sid[mask] = sid
            low = mask & -mask
            sub = (mask - 1) & mask
            while sub:
                if sub & low:
                    split_a.append(sub)
                    split_b.append(mask ^ sub)
                    split_sid.append(sid)
                sub = (sub - 1) & mask
        start_a = np.array([self.start[m] for m in split_a], dtype=np.int64)
        start_b = np.array([self.start[m] for m in split_b], dtype=np.int64)
        count_a = np.array([self.count[m] for m in split_a], dtype=np.int64)
        count_b = np.array([self.count[m] for m in split_b], dtype=np.int64)
        left, right, seg = _pairs(start_a, count_a, start_b, count_b)
        pair_sid = np.array(split_sid, dtype=np.uint64)[seg]
        ap, aq, bp, bq = self.P[left], self.Q[left], self.P[right], self.Q[right]
        _check_products((ap, bq), (bp, aq))
        _check_products((ap, bp))
        _check_products((aq, bq))
        cp, cq, cop, cpair = _apply_ops(ap, aq, bp, bq, self.ops, self.integer)
        keys = _level_key(_hash(cp, cq), pair_sid[cpair])
        order = np.argsort(keys)
        ks = keys[order]
        first = np.empty(ks.size, dtype=bool)
        first[:1] = True
        np.not_equal(ks[1:], ks[:-1], out=first[1:])
        sp, sq = cp[order], cq[order]
        same = ~first[1:]
        if np.any(same & ((sp[1:] != sp[:-1]) | (sq[1:] != sq[:-1]))):
            raise _Fallback  # two different values share a key: never decide on a hash
        # the witness kept for a value is its first candidate, whatever order the (unstable) sort left
        keep = np.minimum.reduceat(order, np.flatnonzero(first))
        base = self.P.size
        self.level_base[size] = base
        self.level_keys[size] = ks[first]
        self.P = np.concatenate([self.P, cp[keep]])
        self.Q = np.concatenate([self.Q, cq[keep]])
        self.OP = np.concatenate([self.OP, cop[keep]])
        self.LI = np.concatenate([self.LI, left[cpair[keep]]])
        self.RI = np.concatenate([self.RI, right[cpair[keep]]])
        counts = np.bincount((ks[first] >> _S56).astype(np.int64), minlength=len(masks))
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for sid, mask in enumerate(masks):
            self.start[mask] = base + int(offsets[sid])
            self.count[mask] = int(counts[sid])

    def witness(self, index: int) -> Tree:
        code = int(self.OP[index])
        if code < 0:
            return int(self.P[index])
        left = self.witness(int(self.LI[index]))
        right = self.witness(int(self.RI[index]))
        return _tree_of(code, left, right)

    # -- lookups and target-directed search ---------------------------------------------------------------------
    def lookup(self, size: int, sids: np.ndarray | int, tp: np.ndarray, tq: np.ndarray) -> np.ndarray:
        """Global table index of each value tp/tq in V(mask) (masks of one size given by level id), or -1."""
        keys = self.level_keys[size]
        want = _level_key(_hash(tp, tq), sids)
        pos = np.searchsorted(keys, want)
        pos[pos >= keys.size] = keys.size - 1
        glob = pos + self.level_base[size]
        hit = (keys[pos] == want) & (self.P[glob] == tp) & (self.Q[glob] == tq)
        return np.where(hit, glob, -1)

    def find_in_tables(self, target: int) -> Tree:
        """A witness for ``target`` over any tabulated subset (smallest subsets first), or None."""
        for size in range(1, self.table_size + 1):
            n_masks = math.comb(self.n, size)
            tp = np.full(n_masks, target, dtype=np.int64)
            found = self.lookup(size, np.arange(n_masks, dtype=np.uint64), tp, np.ones(n_masks, dtype=np.int64))
            hits = np.flatnonzero(found >= 0)
            if hits.size:
                return self.witness(int(found[hits[0]]))
        return None

    def _plan(self, mask: int) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Splits of ``mask`` grouped by the size of their larger side: (size, small-side value indices,
        level id of the large side per value, large-side mask per value)."""
        plan = self._plans.get(mask)
        if plan is not None:
            return plan
        size = mask.bit_count()
        low = mask & -mask
        groups: dict[int, tuple[list, list, list, list]] = defaultdict(lambda: ([], [], [], []))
        sub = (mask - 1) & mask
        while sub:
            other = mask ^ sub
            small, large = (sub, other) if sub.bit_count() <= other.bit_count() else (other, sub)
            if sub.bit_count() * 2 != size or small & low:
                starts, counts, sids, larges = groups[large.bit_count()]
                starts.append(self.start[small])
                counts.append(self.count[small])
                sids.append(self.sid.get(large, 0))
                larges.append(large)
            sub = (sub - 1) & mask
        plan = []
        for large_size, (starts, counts, sids, larges) in sorted(groups.items()):
            counts_arr = np.array(counts, dtype=np.int64)
            seg = np.repeat(np.arange(counts_arr.size), counts_arr)
            offset = np.arange(seg.size) - (np.cumsum(counts_arr) - counts_arr)[seg]
            a_idx = np.array(starts, dtype=np.int64)[seg] + offset
            sid_arr = np.array(sids, dtype=np.uint64)[seg]
            plan.append((large_size, a_idx, sid_arr, np.array(larges, dtype=np.int64)[seg]))
        self._plans[mask] = plan
        return plan

    def reach(self, mask: int, tp: np.ndarray, tq: np.ndarray, extra: int | None = None) -> tuple[int, Tree] | None:
        """First target (index into tp/tq) reached by an expression over exactly ``mask``, with a witness.

        ``extra``: also look for this value over every proper subset of ``mask`` larger than the tables (reported
        as target index -1); used for ``use_all_numbers=False``.
        """
        for large_size, a_glob, large_sid, large_mask in self._plan(mask):
            k = tp.size
            rows_a = np.repeat(a_glob, k)
            rows_t = np.tile(np.arange(k), a_glob.size)
            ap, aq = self.P[rows_a], self.Q[rows_a]
            t_p, t_q = tp[rows_t], tq[rows_t]
            bp, bq, code, row = _demanded(ap, aq, t_p, t_q, self.ops, self.integer)
            if "*" in self.ops and not self.integer:
                # t = 0 = a * b with a = 0: any b works; the sum of the large side's numbers is one
                zero = np.flatnonzero((t_p == 0) & (ap == 0))
                if zero.size:
                    r = int(zero[0])
                    large = int(large_mask[r // k])
                    return int(rows_t[r]), ("*", self.witness(int(rows_a[r])), _sum_tree(self._numbers_of(large)))
            if bp.size == 0 and (extra is None or large_size <= self.table_size):
                continue
            pair = row // k
            if large_size <= self.table_size:
                found = self.lookup(large_size, large_sid[pair], bp, bq)
                hits = np.flatnonzero(found >= 0)
                if hits.size:
                    j = int(hits[0])
                    return self._joined(j, code, row, rows_a, rows_t, self.witness(int(found[j])))
                continue
            targets_of = large_mask[pair]
            for large in np.unique(large_mask).tolist():
                sel = np.flatnonzero(targets_of == large)
                sub_p, sub_q = bp[sel], bq[sel]
                if extra is not None:  # the extra value is looked for in every large subset, once per visit
                    sub_p = np.append(sub_p, extra)
                    sub_q = np.append(sub_q, 1)
                if sub_p.size == 0:
                    continue
                result = self.reach(large, sub_p, sub_q, extra)
                if result is None:
                    continue
                i, right = result
                if i < 0 or i == sel.size:
                    return -1, right
                return self._joined(int(sel[i]), code, row, rows_a, rows_t, right)
        return None

    def _joined(self, j: int, code, row, rows_a, rows_t, right: Tree) -> tuple[int, Tree]:
        r = int(row[j])
        return int(rows_t[r]), _tree_of(int(code[j]), self.witness(int(rows_a[r])), right)

    def _numbers_of(self, mask: int) -> list[int]:
        return [self.numbers[i] for i in range(self.n) if mask >> i & 1]


def _pairs(start_a, count_a, start_b, count_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All (i, j) with i in [start_a, start_a + count_a), j likewise, for each segment; and the segment ids."""
    lengths = count_a * count_b
    seg = np.repeat(np.arange(lengths.size), lengths)
    seg_start = np.cumsum(lengths) - lengths
    offset = np.arange(int(lengths.sum())) - seg_start[seg]
    nb = count_b[seg]
    return start_a[seg] + offset // nb, start_b[seg] + offset % nb, seg


def _apply_ops(ap, aq, bp, bq, ops: frozenset[str], integer: bool):
    """Every allowed a op b (non-negative; b - a and b / a included): reduced (p, q), op code, pair index."""
    pair_ids = np.arange(ap.size)
    out_p, out_q, out_code, out_pair = [], [], [], []

    def add(code, pp, qq, valid=None):
        ids = pair_ids
        if valid is not None:
            pp, qq, ids = pp[valid], qq[valid], pair_ids[valid]
            if not np.isscalar(code):
                code = code[valid]
        out_p.append(pp)
        out_q.append(qq)
        out_code.append(np.full(pp.size, code, dtype=np.int8) if np.isscalar(code) else code)
        out_pair.append(ids)

    aqbq = aq * bq
    if "+" in ops:
        add(0, ap * bq + bp * aq, aqbq)
    if "-" in ops:
        d = ap * bq - bp * aq
        add(np.where(d >= 0, 1, 2).astype(np.int8), np.abs(d), aqbq, d != 0 if integer else None)
    if "*" in ops:
        add(3, ap * bp, aqbq)
    if "/" in ops:
        add(4, ap * bq, aq * bp, bp != 0)
        add(5, bp * aq, bq * ap, ap != 0)
    return _joined(out_p, out_q, out_code, out_pair, integer)


def _demanded(ap, aq, tp, tq, ops: frozenset[str], integer: bool):
    """For each row (a, t): every b with t = a op b (op codes as in _tree_of), reduced; the row of each b."""
    _check_products((tp, aq), (ap, tq))
    _check_products((tp, ap))
    _check_products((tq, aq))
    rows = np.arange(ap.size)
    out_p, out_q, out_code, out_row = [], [], [], []

    def need(code, pp, qq, valid):
        out_p.append(pp[valid])
        out_q.append(qq[valid])
        out_code.append(np.full(int(np.count_nonzero(valid)), code, dtype=np.int8))
        out_row.append(rows[valid])

    tqaq = tq * aq
    if "+" in ops:  # a + b = t
        bp = tp * aq - ap * tq
        need(0, bp, tqaq, bp > 0 if integer else bp >= 0)
    if "-" in ops:
        bp = ap * tq - tp * aq  # a - b = t
        need(1, bp, tqaq, bp > 0 if integer else bp >= 0)
        need(2, tp * aq + ap * tq, tqaq, np.ones(rows.size, dtype=bool))  # b - a = t
    if "*" in ops:  # a * b = t
        need(3, tp * aq, tq * ap, ap != 0)
    if "/" in ops:
        need(4, ap * tq, aq * tp, (tp != 0) & (ap != 0))  # a / b = t
        need(5, tp * ap, tqaq, ap != 0)  # b / a = t
    return _joined(out_p, out_q, out_code, out_row, integer)


def _joined(out_p, out_q, out_code, out_index, integer: bool):
    """The per-operator pieces concatenated, fractions reduced; under integer rules only positive whole values."""
    p, q = _reduce(np.concatenate(out_p), np.concatenate(out_q))
    code = np.concatenate(out_code)
    index = np.concatenate(out_index)
    if integer:
        ok = (q == 1) & (p > 0)
        p, q, code, index = p[ok], q[ok], code[ok], index[ok]
    return p, q, code, index


def _tree_of(code: int, a: Tree, b: Tree) -> Tree:
    return (
        ("+", a, b),
        ("-", a, b),
        ("-", b, a),
        ("*", a, b),
        ("/", a, b),
        ("/", b, a),
    )[code]


def _sum_tree(values: list[int]) -> Tree:
    tree: Tree = values[0]
    for v in values[1:]:
        tree = ("+", tree, v)
    return tree


def _vector_solve(numbers: tuple[int, ...], target: int, ops: frozenset[str], use_all: bool, integer: bool) -> Tree:
    search = _VectorSearch(numbers, ops, integer)
    n = len(numbers)
    full = (1 << n) - 1
    if n <= search.table_size:
        if use_all:
            found = search.lookup(n, 0, np.array([target], dtype=np.int64), np.ones(1, dtype=np.int64))
            return search.witness(int(found[0])) if found[0] >= 0 else None
        return search.find_in_tables(target)
    if not use_all:
        tree = search.find_in_tables(target)
        if tree is not None:
            return tree
    result = search.reach(
        full, np.array([target], dtype=np.int64), np.ones(1, dtype=np.int64), None if use_all else target
    )
    return None if result is None else result[1]


# ----------------------------------------------------------------------------------------------------------
# Pure-Python exact search (fallback when int64 might overflow; also an independent reference)
# ----------------------------------------------------------------------------------------------------------
def _python_values(numbers: tuple[int, ...], ops: frozenset[str], integer: bool) -> dict[int, dict[Fraction, Tree]]:
    """V(S) for every subset mask: value -> one witness, non-negative values only (positive integers if integer)."""
    n = len(numbers)
    table: dict[int, dict[Fraction, Tree]] = {1 << i: {Fraction(x): x} for i, x in enumerate(numbers)}
    for mask in sorted(range(1, 1 << n), key=int.bit_count):
        if mask.bit_count() < 2:
            continue
        values: dict[Fraction, Tree] = {}
        low = mask & -mask
        sub = (mask - 1) & mask
        while sub:
            if sub & low:
                for a, ta in table[sub].items():
                    for b, tb in table[mask ^ sub].items():
                        for value, tree in _combine(a, ta, b, tb, ops):
                            if integer and (value.denominator != 1 or value <= 0):
                                continue
                            values.setdefault(value, tree)
            sub = (sub - 1) & mask
        table[mask] = values
    return table


def _combine(a: Fraction, ta: Tree, b: Fraction, tb: Tree, ops: frozenset[str]) -> Iterator[tuple[Fraction, Tree]]:
    if "+" in ops:
        yield a + b, ("+", ta, tb)
    if "-" in ops:
        yield (a - b, ("-", ta, tb)) if a >= b else (b - a, ("-", tb, ta))
    if "*" in ops:
        yield a * b, ("*", ta, tb)
    if "/" in ops:
        if b:
            yield a / b, ("/", ta, tb)
        if a:
            yield b / a, ("/", tb, ta)


def _python_solve(numbers: tuple[int, ...], target: int, ops: frozenset[str], use_all: bool, integer: bool) -> Tree:
    table = _python_values(numbers, ops, integer)
    full = (1 << len(numbers)) - 1
    masks = [full] if use_all else sorted(range(1, full + 1), key=lambda m: (m.bit_count(), m))
    goal = Fraction(target)
    for mask in masks:
        tree = table[mask].get(goal)
        if tree is not None:
            return tree
    return None


# ----------------------------------------------------------------------------------------------------------
# Public: find one
# ----------------------------------------------------------------------------------------------------------
def solve(
    puzzle: Puzzle,
    *,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
    operators: str = "+-*/",
) -> str | None:
    """One solution of ``puzzle`` as ASCII infix (e.g. ``"(25 - 3) * 4 + 7"``), or ``None`` if there is none.

    The search is complete (see the module docstring), so ``None`` proves that no expression over the numbers
    (each at most once; exactly once with ``use_all_numbers``) with the given ``operators`` reaches the target
    (with ``integer_intermediates``: every intermediate a positive integer). The answer passes
    ``countdown_env.verifier.verify`` with the same options. Deterministic: the same puzzle gives the same string.
    Unless ``use_all_numbers``, solutions with at most 4 numbers are looked for first (smallest first); beyond
    that the first one found is returned, not necessarily the shortest.

    >>> solve(Puzzle([25, 3, 7], 82))
    '25 * 3 + 7'
    >>> solve(Puzzle([2, 3], 7)) is None
    True
    """
    tree = _solve_tree(
        puzzle, use_all_numbers=use_all_numbers, integer_intermediates=integer_intermediates, operators=operators
    )
    return None if tree is None else tree_to_infix(tree)


def _solve_tree(puzzle: Any, *, use_all_numbers: bool, integer_intermediates: bool, operators: str) -> Tree:
    puzzle = _as_puzzle(puzzle)
    ops = _check_operators(operators)
    if puzzle.n_numbers > MAX_SOLVE_NUMBERS:
        raise ValueError(f"solve handles at most {MAX_SOLVE_NUMBERS} numbers, got {puzzle.n_numbers}")
    numbers, target = puzzle.numbers, puzzle.target
    use_all, integer = bool(use_all_numbers), bool(integer_intermediates)
    try:
        tree = _vector_solve(numbers, target, ops, use_all, integer)
    except _Fallback:
        tree = _python_solve(numbers, target, ops, use_all, integer)
    if tree is not None and _tree_value(tree) != target:  # cheap exact confirmation of the witness
        raise AssertionError(f"solver witness {tree_to_infix(tree)} does not reach {target}")
    return tree


# ----------------------------------------------------------------------------------------------------------
# Counting distinct solutions (canonical forms; see the module docstring)
# ----------------------------------------------------------------------------------------------------------
def _norm(x):
    """Keep integral values as ``int`` (fast arithmetic; equal keys either way)."""
    if type(x) is Fraction and x.denominator == 1:
        return x.numerator
    return x


class _Counter:
    """Counts of canonical forms per sub-multiset and value (dynamic programme over sub-multisets).

    A sub-multiset is a tuple of counts over the distinct numbers. ``leaf``, ``sums`` and ``prods`` map value ->
    number of canonical forms whose root is a number, a sum node, a product node.
    """

    def __init__(self, numbers: tuple[int, ...], ops: frozenset[str], integer: bool) -> None:
        self.values = sorted(set(numbers))
        self.mult = tuple(numbers.count(v) for v in self.values)
        self.ops = ops
        self.integer = integer
        self.full = self.mult
        self.subs = [c for c in itertools.product(*(range(m + 1) for m in self.mult)) if any(c)]
        self.subs.sort(key=sum)
        self._nodes: dict[tuple, tuple[dict, dict, dict]] = {}
        self._chains: dict[tuple, dict] = {}
        self._bounded: dict[tuple, dict] = {}
        self._at: dict[tuple, int] = {}
        # sub-multisets up to this size get full tables; larger ones are asked for single values (measured best)
        self.table_size = max(3, len(numbers) - 2)
        radix = 1
        self._radix = []
        for m in self.mult:
            self._radix.append(radix)
            radix *= m + 1

    def code(self, sub: tuple[int, ...]) -> int:
        return sum(c * r for c, r in zip(sub, self._radix, strict=True))

    def parts(self, sub: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """Non-empty proper sub-multisets of ``sub``."""
        for part in itertools.product(*(range(c + 1) for c in sub)):
            if any(part) and part != sub:
                yield part

    # -- nodes ----------------------------------------------------------------------------------------------
    def nodes(self, sub: tuple[int, ...]) -> tuple[dict, dict, dict]:
        """(leaf, sums, prods) value -> count for canonical forms over exactly ``sub``."""
        found = self._nodes.get(sub)
        if found is not None:
            return found
        leaf: dict = {}
        if sum(sub) == 1:
            leaf[self.values[sub.index(1)]] = 1
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

    def _valid_node(self, value) -> bool:
        if self.integer:
            return type(value) is int and value > 0
        return value >= 0

    def items(self, sub: tuple[int, ...], kind: str, negative_only: bool) -> dict:
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
                        out[-value] += count
                else:
                    if not negative_only:
                        out[value] += count
                    if "/" in self.ops and value != 0:
                        out[_norm(1 / Fraction(value))] += count
        out = dict(out)
        self._chains[key] = out
        return out

    # -- chains (multisets of items) ------------------------------------------------------------------------
    def chain_full(self, sub: tuple[int, ...], kind: str, negative_only: bool) -> dict:
        """Multisets of >= 1 items exactly covering ``sub``: combined value -> count."""
        key = (sub, kind, negative_only, "full")
        found = self._chains.get(key)
        if found is None:
            found = defaultdict(int)
            for value, count in self.items(sub, kind, negative_only).items():
                found[value] += count
            for value, count in self.chain_multi(sub, kind, negative_only).items():
                found[value] += count
            found = dict(found)
            self._chains[key] = found
        return found

    def chain_multi(self, sub: tuple[int, ...], kind: str, negative_only: bool) -> dict:
        """Multisets of >= 2 items exactly covering ``sub``."""
        key = (sub, kind, negative_only, "multi")
        found = self._chains.get(key)
        if found is not None:
            return found
        out: dict = defaultdict(int)
        if kind in self.ops and sum(sub) >= 2:
            if 1 in sub:
                # the item holding the single copy of this number is unique: pick it, then the rest
                pivot = sub.index(1)
                for part in self.parts(sub):
                    if part[pivot]:
                        rest = tuple(a - b for a, b in zip(sub, part, strict=True))
                        _convolve_into(
                            out, self.items(part, kind, negative_only), self.chain_full(rest, kind, negative_only), kind
                        )
            else:
                for part in self.parts(sub):
                    self._bounded_into(out, sub, part, kind, negative_only)
        found = {v: c for v, c in out.items() if c}
        self._chains[key] = found
        return found

    def _bounded_into(self, out: dict, sub: tuple, block: tuple, kind: str, negative_only: bool) -> None:
        """Multisets whose largest block type (by code) is ``block``, taken k >= 1 times (k blocks of that type
        holding a multiset of k items over ``block``), the rest using smaller block types only."""
        items = self.items(block, kind, negative_only)
        k = 1
        while all(k * b <= s for b, s in zip(block, sub, strict=True)):
            rest = tuple(s - k * b for s, b in zip(sub, block, strict=True))
            _convolve_into(
                out, _multiset_k(items, k, kind), self.bounded(rest, self.code(block) - 1, kind, negative_only), kind
            )
            k += 1

    def bounded(self, sub: tuple, bound: int, kind: str, negative_only: bool) -> dict:
        """Multisets of items covering ``sub`` whose blocks all have code <= bound (the empty multiset: identity)."""
        if not any(sub):
            return {0 if kind == "+" else 1: 1}
        if bound >= self.code(sub):
            return self.chain_full(sub, kind, negative_only)
        key = (sub, bound, kind, negative_only)
        found = self._bounded.get(key)
        if found is not None:
            return found
        out: dict = defaultdict(int)
        for part in itertools.product(*(range(c + 1) for c in sub)):
            if any(part) and self.code(part) <= bound:
                self._bounded_into(out, sub, part, kind, negative_only)
        found = {v: c for v, c in out.items() if c}
        self._bounded[key] = found
        return found

    # -- counting at one value (the target) -----------------------------------------------------------------
    # The same recursion as above, asked for one value: each split enumerates the smaller side's full table and
    # looks the complementary values up in the larger side, so large sub-multisets never get full tables.
    def count(self, target: int, use_all: bool) -> int:
        subs = [self.full] if use_all else self.subs
        return sum(self.node_at(sub, target, "any") for sub in subs)

    def node_at(self, sub: tuple, value, kind: str) -> int:
        """Canonical forms over ``sub`` with this value whose root is a number or (kind "+": a product; kind "*":
        a sum; kind "any": either)."""
        if not self._valid_node(value):
            return 0
        if sum(sub) == 1:
            return int(self.values[sub.index(1)] == value)
        total = 0
        if kind in ("*", "any") and "+" in self.ops:
            total += self.multi_at(sub, "+", False, value) - self.multi_at(sub, "+", True, value)
        if kind in ("+", "any") and "*" in self.ops:
            total += self.multi_at(sub, "*", False, value) - self.multi_at(sub, "*", True, value)
        return total

    def items_at(self, sub: tuple, contribution, kind: str, negative_only: bool) -> int:
        # terms of a sum are non-sums (numbers or products), factors of a product non-products
        total = 0 if negative_only else self.node_at(sub, contribution, kind)
        if kind == "+":
            if "-" in self.ops:
                total += self.node_at(sub, -contribution, kind)
        elif "/" in self.ops and contribution != 0:
            total += self.node_at(sub, _norm(1 / Fraction(contribution)), kind)
        return total

    def full_at(self, sub: tuple, value, kind: str, negative_only: bool) -> int:
        if sum(sub) <= 2:
            return self.chain_full(sub, kind, negative_only).get(value, 0)
        return self.items_at(sub, value, kind, negative_only) + self.multi_at(sub, kind, negative_only, value)

    def multi_at(self, sub: tuple, kind: str, negative_only: bool, value) -> int:
        key = (sub, kind, negative_only, value)
        found = self._at.get(key)
        if found is not None:
            return found
        if sum(sub) <= self.table_size or 1 not in sub or kind not in self.ops:
            total = self.chain_multi(sub, kind, negative_only).get(value, 0)
        else:
            total = 0
            pivot = sub.index(1)
            for part in self.parts(sub):
                if not part[pivot]:
                    continue
                rest = tuple(a - b for a, b in zip(sub, part, strict=True))
                if sum(part) <= sum(rest):
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


def _uncombine(value, known, kind: str):
    """The y with known (+ or *) y == value; None for a product with known == 0 (any y, or none)."""
    if kind == "+":
        return value - known
    if known == 0:
        return None
    return _norm(Fraction(value) / known)


def _convolve_into(out: dict, left: dict, right: dict, kind: str) -> None:
    if kind == "+":
        for a, ca in left.items():
            for b, cb in right.items():
                out[a + b] += ca * cb
    else:
        for a, ca in left.items():
            for b, cb in right.items():
                out[_norm(a * b)] += ca * cb


def _multiset_k(items: dict, k: int, kind: str) -> dict:
    """Value -> number of multisets of k items (Polya: k H_k = sum_j P_j * H_{k-j}, P_j = items taken j times)."""
    identity = 0 if kind == "+" else 1
    h: list[dict] = [{identity: 1}]
    for size in range(1, k + 1):
        acc: dict = defaultdict(int)
        for j in range(1, size + 1):
            merged: dict = defaultdict(int)  # the items taken j times (several may share a value)
            for v, c in items.items():
                merged[_norm(v * j) if kind == "+" else _norm(v**j)] += c
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
    puzzle = _as_puzzle(puzzle)
    ops = _check_operators(operators)
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

    def forms(self, sub: tuple, value, kind: str) -> Iterator[Tree]:
        c = self.c
        if not c._valid_node(value) or c.node_at(sub, value, kind) == 0:
            return
        if sum(sub) == 1:
            yield c.values[sub.index(1)]
            return
        for chain_kind in "+*":
            if chain_kind not in c.ops or kind == chain_kind:  # kind "+" asks for non-sums, "*" for non-products
                continue
            for items in self.chains(sub, chain_kind, value, 2):
                if any(sign in "+*" for sign, _ in items):
                    yield _chain_tree(items, chain_kind)

    def items_at(self, sub: tuple, contribution, kind: str) -> Iterator[tuple[str, Tree]]:
        c = self.c
        if kind == "+":
            for tree in self.forms(sub, contribution, "+"):
                yield "+", tree
            if "-" in c.ops:
                for tree in self.forms(sub, -contribution, "+"):
                    yield "-", tree
        else:
            for tree in self.forms(sub, contribution, "*"):
                yield "*", tree
            if "/" in c.ops and contribution != 0:
                for tree in self.forms(sub, _norm(1 / Fraction(contribution)), "*"):
                    yield "/", tree

    def chains(self, sub: tuple, kind: str, value, min_items: int) -> Iterator[list]:
        """Multisets (as lists) of >= min_items items exactly covering ``sub`` with combined ``value``."""
        c = self.c
        if min_items <= 1:
            for item in self.items_at(sub, value, kind):
                yield [item]
        if sum(sub) < 2:
            return
        # the item holding the single copy of a number is unique; when every number is repeated, an item holding
        # a copy of the first one is chosen, and multisets reached through several such choices are deduplicated
        unique = 1 in sub
        pivot = sub.index(1) if unique else next(i for i, x in enumerate(sub) if x)
        seen: set = set()
        for part in c.parts(sub):
            if not part[pivot]:
                continue
            rest = tuple(a - b for a, b in zip(sub, part, strict=True))
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
    puzzle = _as_puzzle(puzzle)
    ops = _check_operators(operators)
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
