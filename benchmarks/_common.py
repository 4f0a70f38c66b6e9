"""What several benchmarks share: the shape of the GPU reference model, built with random weights (no Hub), and the
record of the CPU a figure was measured on."""

from __future__ import annotations

import os
import platform
from pathlib import Path

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


def cpu_record(cpuinfo: str | None = None) -> dict:
    """The CPU behind a figure: architecture, cores, model name and vector extensions (the ``avx*`` and ``amx*`` flags
    of ``/proc/cpuinfo``; read from ``cpuinfo`` when given). The extensions belong in every record because the model
    name does not tell machines apart: two 2-core machines that both report "AMD EPYC" ran identical SmolLM2 training
    steps about 4x apart, the slower one with AVX2 only (experiments/r2_smollm2/amended/README.md)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.is_file() else ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    flags = fields.get("flags", "").split()
    return {
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "model": fields.get("model name") or platform.processor() or "unknown",
        "vector_extensions": sorted(f for f in set(flags) if f.startswith(("avx", "amx"))),
    }
