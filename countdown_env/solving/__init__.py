"""Solving: the exact search and counting over a puzzle's expressions, and the seeded draws that use them.

- :mod:`.solver`: find one solution or prove there is none (``solve``);
- :mod:`.distinct_solutions`: count and list the distinct solutions (``count_solutions``, ``solutions``);
- :mod:`.oracle`: the value of any partial state (reachable, solutions left, fewest further steps), memoised;
- :mod:`.solver_common`: the expression tree and input checks the two share;
- :mod:`.generator`: the seeded, index-addressable draws of puzzles and their solution-count difficulty labels.
"""
