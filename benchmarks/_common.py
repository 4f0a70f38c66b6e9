"""What several benchmarks share: the shapes of the reference models they build with random weights (no Hub), and
where a benchmark's JSON record goes. The record of the CPU a figure was measured on is
``learners.pipeline.machine.cpu_record``."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_record(record: dict, folder: str, cpu_model: str, out: Path | None = None, prefix: str = "") -> Path:
    """Write ``record`` as JSON (atomically) to ``out``, or to ``benchmarks/results/FOLDER/PREFIX<cpu>.json`` named
    after the CPU's model name, and print where."""
    from countdown_env.helpers.atomic import write_text

    slug = re.sub(r"[^a-z0-9]+", "-", cpu_model.lower()).strip("-")
    path = out or ROOT / "benchmarks" / "results" / folder / f"{prefix}{slug}.json"
    write_text(path, json.dumps(record, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path

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
