"""Atomic outputs: every file or folder the ``countdown`` commands write appears whole or not at all.

- :func:`atomic_file` / :func:`write_bytes` / :func:`write_text`: write to a temporary file beside the target
  (same folder, so the same file system), flush and ``fsync`` it, then ``os.replace`` it onto the target. A crash
  or ``kill -9`` at any point leaves the old file (or none) and at most a hidden ``.NAME.tmp-PID`` file beside it.
- :func:`atomic_dir`: build a folder in a temporary folder beside the target, then rename it into place; an existing
  target (only with ``overwrite=True``) is first renamed aside and removed after the new one is in place, so a kill
  leaves the old folder, no folder, or the complete new one, never a mix.
- :func:`check_output`: the checks every writing command runs before any work: the output is not one of the inputs
  and does not contain one, and an existing non-empty output needs ``overwrite``.

Temporary names start with ``.`` and end with ``.tmp-PID``; leftovers of killed runs are removed by the next run
that writes the same target (when their process is gone).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

TMP_MARK = ".tmp-"


class OutputError(ValueError):
    """An output that would overwrite or contain an input, or an existing output without ``overwrite``."""


def _tmp_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{TMP_MARK}{os.getpid()}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(target: str | os.PathLike) -> None:
    """Remove temporary leftovers of ``target`` whose writing process is gone (a killed earlier run)."""
    target = Path(os.path.abspath(target))  # "." has no name to build a temporary one beside
    folder = target.parent
    if not folder.is_dir():
        return
    prefix = f".{target.name}{TMP_MARK}"
    for entry in folder.iterdir():
        if not entry.name.startswith(prefix):
            continue
        tail = entry.name[len(prefix) :].split(".")[0]
        if tail.isdigit() and int(tail) != os.getpid() and not _pid_alive(int(tail)):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """``with atomic_file(path) as fh:`` writes ``fh`` to a temporary file and moves it onto ``path`` on success
    (on an exception the temporary file is removed and ``path`` is untouched)."""
    if "w" not in mode:
        raise ValueError(f"atomic_file writes whole files: mode must contain 'w', got {mode!r}")
    path = Path(os.path.abspath(path))  # "." has no name to build a temporary one beside
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    tmp = _tmp_path(path)
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    try:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """``with atomic_dir(out) as tmp:`` build the folder's files under ``tmp``; on success ``tmp`` becomes ``out``.

    An existing non-empty ``out`` is refused unless ``overwrite`` (then it is replaced whole: renamed aside, the new
    folder renamed in, the old one removed). On an exception the temporary folder is removed and ``out`` untouched.
    """
    path = Path(os.path.abspath(path))  # "." has no name to build a temporary one beside
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} exists and is not a folder")
    if Path.cwd() == path or path in Path.cwd().parents:
        raise OutputError(
            f"{path} is the current folder (or holds it): the output is built beside it and renamed into place; "
            "give a new folder name, e.g. --out ./splits"
        )
    if _non_empty(path) and not overwrite:
        raise OutputError(f"{path} exists and is not empty; pass --overwrite to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    tmp = _tmp_path(path)
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_dir(tmp)
        if path.exists():
            old = path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}.old")
            if old.exists():
                shutil.rmtree(old)
            os.replace(path, old)
            os.replace(tmp, path)
            _fsync_dir(path.parent)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
            _fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _non_empty(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.exists() and path.stat().st_size > 0


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output(
    out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), *, overwrite: bool = False, what: str = "output"
) -> Path:
    """Refuse an output that is one of ``inputs``, contains one (a folder holding an input), or sits inside an input
    folder; and an existing non-empty output without ``overwrite``. Returns ``out`` as a ``Path``."""
    out = Path(out)
    resolved = out.resolve()
    for item in inputs:
        inp = Path(item).resolve()
        if _inside(inp, resolved):
            raise OutputError(f"{what} {out} is (or contains) the input {item}; write somewhere else")
        if _inside(resolved, inp) and inp.is_dir():
            raise OutputError(f"{what} {out} lies inside the input folder {item}; write somewhere else")
    if _non_empty(out) and not overwrite:
        raise OutputError(f"{what} {out} exists and is not empty; pass --overwrite to replace it")
    return out
