"""Step labels: a completion's reasoning read as steps over states, each labelled by the exact oracle.

- :mod:`.grammar`: the reasoning cut into units (the project's trace grammar, plain ``a op b = c`` chains);
- :mod:`.labels`: the states the units move through, each step's ``valid``/``solvable_after``, ``first_mistake``;
- :mod:`.label_file`: ``countdown label-steps``'s file work and the process-reward (stepwise-supervision) rows.
"""
