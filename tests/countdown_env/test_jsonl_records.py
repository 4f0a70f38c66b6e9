"""The jsonl helper's compressed form: ``X.jsonl.gz`` written with the same rows gives the same bytes, reads back as
the rows, and a reader asked for ``X.jsonl`` finds the committed ``X.jsonl.gz``."""

from __future__ import annotations

import gzip
import json

import pytest

from countdown_env.helpers.jsonl import parse_jsonl, read_jsonl, records_path, write_jsonl

ROWS = [{"numbers": [3, 4, 5], "target": 12, "correct": [True, False]}, {"numbers": [1, 2], "target": 3, "n": "é"}]


def test_a_gz_path_is_compressed_and_reads_back(tmp_path):
    digest = write_jsonl(ROWS, tmp_path / "a.jsonl.gz")
    plain = write_jsonl(ROWS, tmp_path / "a.jsonl")
    assert digest == plain  # the sha256 of the rows, whatever the container
    raw = gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()).decode("utf-8")
    assert [json.loads(line) for line in raw.splitlines()] == ROWS == read_jsonl(tmp_path / "a.jsonl.gz")
    write_jsonl(ROWS, tmp_path / "b.jsonl.gz")  # no timestamp or name in the header: the same bytes
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()


def test_a_plain_name_finds_its_compressed_record(tmp_path):
    write_jsonl(ROWS, tmp_path / "evals.jsonl.gz")
    assert records_path(tmp_path / "evals.jsonl") == tmp_path / "evals.jsonl.gz"
    assert read_jsonl(tmp_path / "evals.jsonl") == ROWS
    write_jsonl(ROWS[:1], tmp_path / "evals.jsonl")  # the plain file wins where both exist
    assert read_jsonl(tmp_path / "evals.jsonl") == ROWS[:1]
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "missing.jsonl")


def test_a_corrupt_gz_names_the_file(tmp_path):
    (tmp_path / "bad.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n{not json\n'))
    with pytest.raises(ValueError, match=r"bad.jsonl.gz:2: not valid JSON"):
        read_jsonl(tmp_path / "bad.jsonl.gz")


def test_rows_in_memory_read_as_a_file_reads(tmp_path):
    data = b"".join(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n" for row in ROWS) + b"\n"
    assert parse_jsonl(data, "mem") == ROWS  # the blank last line is skipped, as in a file
    with pytest.raises(ValueError, match=r"^mem:2: not valid JSON"):
        parse_jsonl(b'{"a": 1}\n{"a": \n', "mem")
    with pytest.raises(ValueError, match=r"^mem:1: not UTF-8"):
        parse_jsonl(b'{"a": "\xff"}\n', "mem")
