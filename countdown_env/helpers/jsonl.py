"""jsonl files, the project's one row format on disk: compact UTF-8 lines written atomically with their sha256
(:func:`write_jsonl`), read lazily with errors that name the bad line (:func:`iter_jsonl`, :func:`read_jsonl`).

A path ending in ``.gz`` is gzip-compressed on write (no timestamp in the header, so the same rows give the same
bytes) and decompressed on read. Committed experiment records are stored that way (``X.jsonl.gz``) while the
commands that wrote them named ``X.jsonl``: :func:`records_path` resolves such a name to the file that exists, and
every reader here goes through it.

Used by the split and SFT builders, the committed eval sets, the cleaner and every ``--exclude``/``--split`` reader.
:func:`jsonl_line` is the exact bytes of one row (keys in row order, no spaces, non-ASCII kept), so a rebuilt file
compares byte for byte.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .atomic import atomic_file


def jsonl_line(row: dict) -> bytes:
    """One row as written: compact JSON (keys in row order, non-ASCII kept), a newline, UTF-8."""
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def records_path(path: str | os.PathLike) -> Path:
    """``path`` when it exists; else its compressed form ``path.gz`` when that exists; else ``path`` (so that the
    caller's error names what was asked for)."""
    path = Path(path)
    if path.exists() or path.suffix == ".gz":
        return path
    compressed = path.with_name(path.name + ".gz")
    return compressed if compressed.exists() else path


def write_jsonl(rows: Iterable[dict], path: str | os.PathLike) -> str:
    """Write rows as compact UTF-8 jsonl (keys in row order), atomically, gzip-compressed when ``path`` ends in
    ``.gz`` (``gzip.compress(..., mtime=0)``: the same rows give the same bytes); returns the sha256 of the rows."""
    digest = hashlib.sha256()
    compressed = str(path).endswith(".gz")
    with atomic_file(path, "wb") as fh:
        lines = []
        for row in rows:
            line = jsonl_line(row)
            digest.update(line)
            if compressed:
                lines.append(line)
            else:
                fh.write(line)
        if compressed:
            fh.write(gzip.compress(b"".join(lines), mtime=0))
    return digest.hexdigest()


def _open_rows(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def iter_jsonl(path: str | os.PathLike, *, bad_json: str = "raise") -> Iterator[Any]:
    """The objects of a jsonl file, lazily (blank lines skipped); a line that is not UTF-8 or not JSON raises a
    ``ValueError`` naming it, unless ``bad_json="none"``: then each such line yields ``None`` (a bad row for the
    caller to count), except that a file none of whose lines is UTF-8 is still refused (a binary file). ``path`` goes
    through :func:`records_path` (a ``.gz`` file is decompressed)."""
    path = records_path(path)
    with _open_rows(path) as fh:
        yield from _rows(fh, path, bad_json)


def parse_jsonl(data: bytes, name: str) -> list[dict]:
    """Rows of jsonl ``data`` already in memory, read as :func:`read_jsonl` reads a file (``name``: what its errors
    call the data)."""
    return list(_rows(io.BytesIO(data), name, "raise"))


def _rows(fh, path: str | os.PathLike, bad_json: str) -> Iterator[Any]:
    """The objects of the binary line source ``fh`` (:func:`iter_jsonl`'s rules; ``path`` names it in errors)."""
    decoded = 0
    for lineno, raw in enumerate(fh, 1):
        try:
            line = raw.decode("utf-8")
            decoded += 1
        except UnicodeDecodeError:
            if bad_json != "none" or (decoded == 0 and _binary_after(fh)):
                raise ValueError(f"{path}:{lineno}: not UTF-8 text (a binary file?)") from None
            yield None
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if "\\u" in line:  # an escaped lone surrogate loads, then fails every UTF-8 write later
                json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except (ValueError, RecursionError, UnicodeEncodeError) as exc:
            # JSONDecodeError, a 100 000-deep array (RecursionError), a 5 000-digit integer (ValueError)
            if bad_json != "none":
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
                raise ValueError(f"{path}:{lineno}: not valid JSON for this reader ({why})") from None
            yield None
            continue
        yield obj


def _binary_after(fh) -> bool:
    """Whether no later line of ``fh`` is UTF-8 either (reads on; the caller stops at this line anyway when so)."""
    position = fh.tell()
    for raw in fh:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        fh.seek(position)
        return False
    return True


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """Rows of a jsonl file (blank lines skipped); a clear error names the bad line."""
    return list(iter_jsonl(path))
