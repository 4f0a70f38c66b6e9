"""The keys of TRL's generation batch (trl 1.16 ``_generate_and_score_completions``) that the learners reshape."""

PROMPT_KEYS = ("prompt_ids", "prompt_mask")
"""(B, P) entries whose columns follow the (left-padded) prompt tokens."""

PER_TOKEN_KEYS = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "importance_sampling_ratio",
    "advantages",
)
"""(B, T) entries whose columns follow the completion tokens (``advantages`` when a learner made it per-token)."""
