"""What several benchmarks share: the shapes of the reference models they build with random weights (no Hub). The
record of the CPU a figure was measured on is ``learners.pipeline.machine.cpu_record``."""

from __future__ import annotations

# Qwen3-0.6B's architecture (config values of the released model); benchmarks build it with random weights,
# since the cost of a forward/backward does not depend on the weights.
QWEN3_0_6B: dict = dict(
    vocab_size=151936,
    hidden_size=1024,
    intermediate_size=3072,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    rope_theta=1_000_000.0,
    rms_norm_eps=1e-6,
)

# A random-init Qwen2 of ~43.7 M parameters (vocabulary 32 000, tied embeddings): the "~30-100 M" CPU model of the
# generation and scoring benchmarks.
MID_43M: dict = dict(
    vocab_size=32000,
    hidden_size=512,
    intermediate_size=1536,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=8,
    max_position_embeddings=2048,
    tie_word_embeddings=True,
)
