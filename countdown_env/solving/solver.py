"""Exact Countdown solver: find one solution or prove there is none.

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

Counting and listing distinct solutions (``count_solutions``, ``solutions``) live in
:mod:`countdown_env.solving.distinct_solutions`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from ..puzzle import Puzzle, as_puzzle
from .distinct_solutions import MAX_COUNT_NUMBERS
from .solver_common import Tree, check_operators, tree_to_infix, tree_value

MAX_SOLVE_NUMBERS = 8
"""Most numbers ``solve`` accepts (a complete search; proving "no solution" for 7-8 numbers takes longer)."""

_TABLE_SIZE = 4  # subsets up to this size are tabulated; larger ones are searched towards the target
_INT64_SAFE = 1 << 62

_check_operators = check_operators  # the name the benchmarks import

__all__ = [
    "MAX_COUNT_NUMBERS",
    "MAX_SOLVE_NUMBERS",
    "check_operators",
    "solve",
    "tree_to_infix",
]


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
    ``countdown_env.expressions.verifier.verify`` with the same options. Deterministic: the same puzzle gives the same
    string. Unless ``use_all_numbers``, solutions with at most 4 numbers are looked for first (smallest first); beyond
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
    puzzle = as_puzzle(puzzle)
    ops = check_operators(operators)
    if puzzle.n_numbers > MAX_SOLVE_NUMBERS:
        raise ValueError(f"solve handles at most {MAX_SOLVE_NUMBERS} numbers, got {puzzle.n_numbers}")
    numbers, target = puzzle.numbers, puzzle.target
    use_all, integer = bool(use_all_numbers), bool(integer_intermediates)
    try:
        tree = _vector_solve(numbers, target, ops, use_all, integer)
    except _Fallback:
        tree = _python_solve(numbers, target, ops, use_all, integer)
    if tree is not None and tree_value(tree) != target:  # cheap exact confirmation of the witness
        raise AssertionError(f"solver witness {tree_to_infix(tree)} does not reach {target}")
    return tree
