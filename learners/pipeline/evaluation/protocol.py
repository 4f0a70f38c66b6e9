"""The eval protocol's defaults, held once: every eval of the project (``countdown eval``, a run's ``eval`` section,
``countdown compare``, the demo, a warm start's report) samples at :data:`EVAL_TEMPERATURE` with
:data:`EVAL_SAMPLES` completions per puzzle unless told otherwise. T = 0.8 is where the warm starts were calibrated
(docs/warm_start.md) and where R1-R3 measure pass@1; four samples give pass@4 beside it."""

EVAL_TEMPERATURE = 0.8
EVAL_SAMPLES = 4
