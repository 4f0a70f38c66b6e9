"""Solver-derived reasoning traces for supervised warm starts, in the contrastive shaping post's answer format
(see docs/references.md: contrastive potential advantage shaping on Countdown).

That post warms its policy up with a short SFT stage on traces that "try different approaches" before submitting
an answer inside ``<solution>`` tags, with the reasoning inside ``<reasoning>`` tags and nothing outside them.
Here the traces come from an exact search instead of a teacher model, so every one is correct by construction:

* a paragraph per attempt (the contrastive shaping scores reasoning at paragraph ends, ``\\n\\n``);
* dead ends are first combinations proven (by exhaustive search) to lead nowhere, each shown with a few of its
  nearest misses ("too high", "too low") before giving it up;
* the successful attempt may itself backtrack once (a wrong step, "Back up.", the right step);
* a final paragraph checks the expression against the target.

All arithmetic is exact (``fractions.Fraction``). Intermediates are positive whole numbers whenever the puzzle
allows it; fractions are used only for puzzles that need them (never when ``integer_intermediates=True``).
Traces are deterministic given ``(puzzle, style, seed)``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from ..expressions.expression import leaves, parse_expression
from ..prompts import PromptTemplate, format_completion
from ..puzzle import Puzzle


class TraceError(ValueError):
    """Raised when no trace can be built (the puzzle has no solution under the given rules)."""


@dataclass(frozen=True)
class TraceStyle:
    """How a trace reads.

    ``dead_ends`` and ``misses`` are inclusive ``(low, high)`` ranges drawn per trace: how many failed first
    combinations are shown, and how many near misses each one lists. ``backtrack`` is the probability that the
    successful attempt shows one wrong step and backs up. ``restate`` opens with the numbers and the target;
    ``full_check`` replays every step in the check instead of the one-line expression check.
    """

    name: str
    dead_ends: tuple[int, int] = (0, 1)
    misses: tuple[int, int] = (1, 2)
    backtrack: float = 0.0
    restate: bool = False
    full_check: bool = False

    def __post_init__(self) -> None:
        for field_name in ("dead_ends", "misses"):
            low, high = getattr(self, field_name)
            if not (0 <= low <= high <= 16):
                raise ValueError(f"TraceStyle.{field_name} must satisfy 0 <= low <= high <= 16, got {(low, high)}")
        if not 0.0 <= self.backtrack <= 1.0:
            raise ValueError(f"TraceStyle.backtrack must be a probability, got {self.backtrack}")


STYLES: dict[str, TraceStyle] = {
    s.name: s
    for s in (
        TraceStyle("direct", dead_ends=(0, 0), misses=(0, 0)),
        TraceStyle("short", dead_ends=(0, 1), misses=(1, 2), backtrack=0.25),
        TraceStyle("search", dead_ends=(1, 2), misses=(1, 2), backtrack=0.5, restate=True, full_check=True),
        TraceStyle("long", dead_ends=(2, 4), misses=(2, 3), backtrack=0.75, restate=True, full_check=True),
    )
}
"""Preset styles, shortest first. ``"mixed"`` (see :func:`resolve_style`) draws one of them per trace."""

MIXED = "mixed"


def resolve_style(style: str | TraceStyle, rng: random.Random | None = None) -> TraceStyle:
    """A preset by name, ``"mixed"`` (a preset drawn with ``rng``), or a :class:`TraceStyle` passed through."""
    if isinstance(style, TraceStyle):
        return style
    if style == MIXED:
        return (rng or random.Random(0)).choice(list(STYLES.values()))
    try:
        return STYLES[style]
    except KeyError:
        raise ValueError(f"unknown trace style {style!r}; choose one of {[*STYLES, MIXED]}") from None


@dataclass(frozen=True)
class Trace:
    """A reasoning text and the expression it arrives at (``solution`` uses each number at most once)."""

    reasoning: str
    solution: str
    style: str

    def completion(self, template: str | PromptTemplate | None = None) -> str:
        """The assistant answer: ``<reasoning>…</reasoning>`` then ``<solution>…</solution>``, nothing else."""
        return format_completion(self.reasoning, self.solution, template)


# --- exact search over multisets of values -------------------------------------------------------------------

# An item is (value, expression text, precedence): 3 for a number, 2 for * and /, 1 for + and -.
_Item = tuple[Fraction, str, int]
Value = int | Fraction


@dataclass(frozen=True)
class _Move:
    i: int
    j: int
    op: str
    left: Value
    right: Value
    result: Value

    @property
    def text(self) -> str:
        return f"{_fmt(self.left)} {self.op} {_fmt(self.right)} = {_fmt(self.result)}"


def _fmt(value: Value) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _combine(a: _Item, b: _Item, op: str) -> _Item:
    """Join two expressions with minimal parentheses (exact arithmetic makes * and / associative)."""
    (va, ea, pa), (vb, eb, pb) = a, b
    if op in "*/" and pa == 1:
        ea = f"({ea})"
    if (op == "-" and pb == 1) or (op == "*" and pb == 1) or (op == "/" and pb <= 2):
        eb = f"({eb})"
    value = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb if vb else None}[op]
    return value, f"{ea} {op} {eb}", 1 if op in "+-" else 2


MAX_STATES = 250_000
"""Most multisets one search may visit (a whole-number search of 6 numbers visits about 60 000; a search with
fractions of an unsolvable 6-number puzzle would take about 700 000, over 10 s, so it stops with an error)."""


class _Search:
    """Moves and memoised reachability for one puzzle under one rule set.

    Values are ``int`` while intermediates must stay whole (fast), ``Fraction`` otherwise.
    """

    def __init__(self, target: int, *, use_all_numbers: bool, fractions: bool, max_states: int = MAX_STATES) -> None:
        self.target: Value = Fraction(target) if fractions else target
        self.use_all = use_all_numbers
        self.fractions = fractions
        self.max_states = max_states
        self._memo: dict[tuple[Value, ...], bool] = {}

    def results(self, a: Value, b: Value) -> list[tuple[str, Value, Value, Value]]:
        """``(op, left, right, result)`` for every useful combination of ``a >= b``; results stay positive."""
        out = [("+", a, b, a + b)]
        if a != b:
            out.append(("-", a, b, a - b))
        # x * 1 and x / 1 change nothing; they are only needed when every number must be used.
        if b != 1 or self.use_all:
            out.append(("*", a, b, a * b))
            if self.fractions:
                out.append(("/", a, b, a / b))
            elif a % b == 0:
                out.append(("/", a, b, a // b))
        if self.fractions and a != b:
            out.append(("/", b, a, b / a))
        return out

    def moves(self, values: list[Value]) -> Iterator[_Move]:
        """Every useful combination of two values (larger operand first)."""
        for i in range(len(values)):
            for j in range(i + 1, len(values)):
                if values[i] < values[j]:
                    i_, j_ = j, i
                else:
                    i_, j_ = i, j
                for op, left, right, result in self.results(values[i_], values[j_]):
                    if left == values[i_]:
                        yield _Move(i_, j_, op, left, right, result)
                    else:  # the smaller value divided by the larger (fractions only)
                        yield _Move(j_, i_, op, left, right, result)

    @staticmethod
    def apply(values: list[Value], move: _Move) -> list[Value]:
        rest = [v for k, v in enumerate(values) if k not in (move.i, move.j)]
        return [*rest, move.result]

    def solved(self, values: list[Value] | tuple[Value, ...]) -> bool:
        if self.use_all:
            return len(values) == 1 and values[0] == self.target
        return self.target in values

    def reachable(self, values: list[Value] | tuple[Value, ...]) -> bool:
        """Whether the target can still be reached from ``values`` (exhaustive, memoised on the multiset)."""
        return self._reachable(tuple(sorted(values)))

    def _reachable(self, key: tuple[Value, ...]) -> bool:
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        if len(self._memo) >= self.max_states:
            raise TraceError(f"search gave up after {self.max_states} states (use fewer numbers)")
        hit = self.solved(key)
        n = len(key)
        for i in range(n):
            if hit:
                break
            for j in range(i + 1, n):
                rest = key[:i] + key[i + 1 : j] + key[j + 1 :]
                if any(self.reachable((*rest, r)) for _, _, _, r in self.results(key[j], key[i])):
                    hit = True
                    break
        self._memo[key] = hit
        return hit

    def pick(self, values: list[Value], rng: random.Random, n_bad: int) -> tuple[_Move | None, list[_Move]]:
        """One move that still reaches the target (``None`` if none) and up to ``n_bad`` moves that cannot.

        Moves are tried in random order and classified only until both quotas are met: a failing move costs an
        exhaustive search of its subtree, so the 5- and 6-number cases never classify every move.
        """
        options = list(self.moves(values))
        rng.shuffle(options)
        good, bad = None, []
        for move in options:
            if good is not None and len(bad) >= n_bad:
                break
            if self.reachable(self.apply(values, move)):
                good = good or move
            elif len(bad) < n_bad:
                bad.append(move)
        return good, bad


# --- narration -------------------------------------------------------------------------------------------------


def _apply_items(items: list[_Item], move: _Move) -> list[_Item]:
    rest = [it for k, it in enumerate(items) if k not in (move.i, move.j)]
    return [*rest, _combine(items[move.i], items[move.j], move.op)]


def _verdict(value: Value, target: Value) -> str:
    if value == target:
        return f"that is {_fmt(target)}"
    return "too high" if value > target else "too low"


def _random_finish(search: _Search, values: list[Value], rng: random.Random) -> list[_Move]:
    """A random chain of moves from ``values`` down to one value (the chain an unlucky guess would take)."""
    chain: list[_Move] = []
    while len(values) > 1:
        options = list(search.moves(values))
        if not options:
            break
        move = rng.choice(options)
        chain.append(move)
        values = search.apply(values, move)
    return chain


def _near_misses(search: _Search, values: list[Value], count: int, rng: random.Random) -> list[list[_Move]]:
    """Up to ``count`` random finishing chains with distinct end values, nearest the target first."""
    if count == 0 or len(values) < 2:
        return []
    chains: dict[Value, list[_Move]] = {}
    for _ in range(6 * count + 6):
        chain = _random_finish(search, values, rng)
        if chain and chain[-1].result != search.target:
            chains.setdefault(chain[-1].result, chain)
    nearest = sorted(chains, key=lambda v: (abs(v - search.target), v))[:count]
    return [chains[v] for v in nearest]


def _miss_text(chain: list[_Move], target: Value) -> str:
    return ", ".join(m.text for m in chain) + f", {_verdict(chain[-1].result, target)}."


def _path(search: _Search, values: list[Value], rng: random.Random) -> list[_Move]:
    """One solving sequence of moves from ``values`` (random among the good moves at each step)."""
    path: list[_Move] = []
    while not search.solved(values):
        move, _ = search.pick(values, rng, 0)
        path.append(move)
        values = search.apply(values, move)
    return path


def make_trace(
    puzzle: Puzzle,
    *,
    style: str | TraceStyle = "short",
    seed: int = 0,
    use_all_numbers: bool = False,
    integer_intermediates: bool = False,
) -> Trace:
    """A search-shaped reasoning trace and its verified-by-construction solution for ``puzzle``.

    Deterministic in ``(puzzle.numbers, puzzle.target, style, seed)``. Raises :class:`TraceError` when the
    puzzle has no solution under the rules (``use_all_numbers``: every number exactly once;
    ``integer_intermediates``: every intermediate a positive whole number).
    """
    if not isinstance(puzzle, Puzzle):
        raise TypeError(f"make_trace expects a Puzzle, got {type(puzzle).__name__}")
    style_key = style.name if isinstance(style, TraceStyle) else str(style)
    rng = random.Random(f"trace:{seed}:{puzzle.numbers}:{puzzle.target}:{style_key}")
    chosen = resolve_style(style, rng)
    values: list[Value] = list(puzzle.numbers)
    search = _Search(puzzle.target, use_all_numbers=use_all_numbers, fractions=False)
    if not search.reachable(values) and not integer_intermediates:
        values = [Fraction(n) for n in puzzle.numbers]
        search = _Search(puzzle.target, use_all_numbers=use_all_numbers, fractions=True)
    if not search.reachable(values):
        rules = "every number exactly once" if use_all_numbers else "each number at most once"
        raise TraceError(f"puzzle {puzzle} has no solution ({rules}, integer_intermediates={integer_intermediates})")
    target = search.target
    items: list[_Item] = [(Fraction(n), str(n), 3) for n in puzzle.numbers]
    paragraphs: list[str] = []
    if chosen.restate:
        paragraphs.append(f"Numbers {', '.join(map(str, puzzle.numbers))}. Target {puzzle.target}.")

    if search.solved(values):  # the target is one of the numbers (or the only number)
        paragraphs.append(f"{puzzle.target} is already one of the numbers.")
        paragraphs.append(f"Check: {puzzle.target} = {puzzle.target}.")
        return Trace("\n\n".join(paragraphs), str(puzzle.target), chosen.name)

    first, dead_ends = search.pick(values, rng, rng.randint(*chosen.dead_ends))
    for move in dead_ends:
        misses = _near_misses(search, search.apply(values, move), rng.randint(*chosen.misses), rng)
        if misses:
            lines = [f"Try {move.text}.", *(_miss_text(chain, target) for chain in misses)]
        else:
            lines = [f"Try {move.text}, {_verdict(move.result, target)}."]
        lines.append("Dead end.")
        paragraphs.append(" ".join(lines))

    path = [first, *_path(search, search.apply(values, first), rng)]
    backtrack_at = rng.randrange(1, len(path)) if len(path) > 1 and rng.random() < chosen.backtrack else None
    lines, state = [], values
    for depth, move in enumerate(path):
        if depth == backtrack_at:
            _, wrong = search.pick(state, rng, 1)
            if wrong:
                chain = [wrong[0], *_random_finish(search, search.apply(state, wrong[0]), rng)]
                lines += [_miss_text(chain, target), "Back up."]
        lines.append(f"{'Try ' if depth == 0 else ''}{move.text}.")
        state = search.apply(state, move)
        items = _apply_items(items, move)
    lines.append(f"Reached {puzzle.target}.")
    paragraphs.append(" ".join(lines))

    solution = next(expr for value, expr, _ in reversed(items) if value == target)
    if chosen.full_check:
        used = leaves(parse_expression(solution))
        paragraphs.append(f"Check: {'; '.join(m.text for m in path)}. Uses {', '.join(map(str, used))}.")
    else:
        paragraphs.append(f"Check: {solution} = {puzzle.target}.")
    return Trace("\n\n".join(paragraphs), solution, chosen.name)
