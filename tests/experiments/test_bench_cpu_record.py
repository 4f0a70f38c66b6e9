"""The CPU record every benchmark writes beside its figures (benchmarks/_common.py), on hand-written cpuinfo text."""

from __future__ import annotations

from tests.scripts import load_script

# two logical CPUs of one machine, as /proc/cpuinfo lists them (fields trimmed); the flags repeat per CPU
CPUINFO = """processor\t: 0
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw amx_tile aes avx

processor\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw amx_tile aes avx
"""


def test_the_record_names_the_model_and_only_the_vector_extensions_once_each():
    record = load_script("benchmarks/_common.py").cpu_record(CPUINFO)
    assert record["model"] == "AMD EPYC"
    assert record["vector_extensions"] == ["amx_tile", "avx", "avx2", "avx512bw", "avx512f"]
    assert record["cores"] >= 1


def test_an_avx2_only_machine_shows_no_avx512():
    text = CPUINFO.replace(" avx512f avx512bw amx_tile", "")
    assert load_script("benchmarks/_common.py").cpu_record(text)["vector_extensions"] == ["avx", "avx2"]


def test_no_cpuinfo_gives_an_empty_list_not_an_error():
    record = load_script("benchmarks/_common.py").cpu_record("")
    assert record["vector_extensions"] == [] and record["model"]
