"""Atomic outputs: every file or folder the ``countdown`` commands write appears whole or not at all.

- :func:`atomic_file` / :func:`write_bytes` / :func:`write_text`: write to a temporary file beside the target
  (same folder, so the same file system), flush and ``fsync`` it, then ``os.replace`` it onto the target. A crash
  or ``kill -9`` at any point leaves the old file (or none) and at most a hidden ``.NAME.tmp-PID`` file beside it.
- :func:`atomic_dir`: build a folder in a temporary folder beside the target, then rename it into place; an existing
  target (only with ``overwrite=True``) is first renamed aside and removed after the new one is in place. The whole
  build holds :func:`output_claim` on the target (a second writer is refused at once, not at rename time), and
  ``overwrite`` is checked again just before the rename. A kill leaves the old folder, the complete new one, or —
  between the two renames — the old one renamed aside, which the next writer of the target renames back: cleanup
  never deletes the last complete copy.
- :func:`output_claim`: an exclusive claim on an output (a ``flock`` on a hidden ``.NAME.lock`` beside it, removed
  on release), held by every command that writes a folder over time (builds, ``train``, ``compare``, ``demo``,
  ``warm-start``); the kernel drops it when its process dies, so a killed run never leaves a claim behind.
- :func:`check_output`: the checks every writing command runs before any work: the output is not one of the inputs
  (by name, through a symlink or as a hard link), does not contain one and does not lie inside an input folder; an
  existing non-empty output needs ``overwrite``; and a folder is replaced or emptied only when it holds nothing but
  what the writer itself writes (its ``owned`` names: :func:`foreign_entries`, :func:`remove_owned`).

Temporary names start with ``.`` and end with ``.tmp-PID``; leftovers of killed runs are removed by the next run
that writes the same target (when their process is gone). A symlinked target is written where the link points (the
link stays).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

TMP_MARK = ".tmp-"


class OutputError(ValueError):
    """An output that would overwrite or contain an input, or an existing output without ``overwrite``."""


class OutputBusy(OutputError):
    """Another live process holds the output's claim."""


def temporary_path(target: str | os.PathLike, pid: int | None = None) -> Path:
    """The temporary name this module builds ``target`` under (``.NAME.tmp-PID``, ``pid`` default this process's):
    never taken for a user's file, and removed by the next writer of ``target`` once its process is gone."""
    target = _output_path(target)
    return target.with_name(f".{target.name}{TMP_MARK}{os.getpid() if pid is None else pid}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _old_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{TMP_MARK}{os.getpid()}.old")


def remove_stale(target: str | os.PathLike) -> bool:
    """Remove temporary leftovers of ``target`` whose writing process is gone (a killed earlier run).

    A leftover ``.old`` copy while ``target`` itself is missing is a replace killed between its two renames: it is
    the last complete copy, so it is renamed back to ``target`` instead of removed. Returns whether one was."""
    target = _output_path(target)
    folder = target.parent
    if not folder.is_dir():
        return False
    prefix = f".{target.name}{TMP_MARK}"
    stale = []
    for entry in folder.iterdir():
        if not entry.name.startswith(prefix):
            continue
        tail = entry.name[len(prefix) :].split(".")[0]
        if tail.isdigit() and int(tail) != os.getpid() and not _pid_alive(int(tail)):
            stale.append(entry)
    restored = False
    for entry in sorted(stale, key=lambda e: not e.name.endswith(".old")):
        if entry.name.endswith(".old") and not os.path.lexists(target):
            os.replace(entry, target)
            _fsync_dir(folder)
            restored = True
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
    return restored


def special_file(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists as neither a regular file nor a folder (``"a device node"``, ``"a FIFO"``,
    ``"a socket"``; through a symlink, what it points to), else ``None``. A writer never replaces one: renaming a file
    onto ``/dev/null`` would turn the machine's device node into a regular file."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def refuse_special(path: str | os.PathLike, what: str = "output") -> None:
    """:class:`OutputError` in one line when ``path`` is a device node, FIFO or socket (:func:`special_file`)."""
    kind = special_file(path)
    if kind is not None:
        raise OutputError(f"{what} {path} is {kind}, not a file; refusing to write over it (give a file path)")


def _output_path(target: str | os.PathLike) -> Path:
    """The absolute path an output is written at: symlinks resolved (the link is kept, its target written), and
    ``.`` given a name to build a temporary sibling beside."""
    return Path(os.path.realpath(target))


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` with ``path`` named (a full disk raised by ``write`` names no file)."""
    if exc.filename is None and exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """``with atomic_file(path) as fh:`` writes ``fh`` to a temporary file and moves it onto ``path`` on success
    (on an exception the temporary file is removed and ``path`` is untouched)."""
    if "w" not in mode:
        raise ValueError(f"atomic_file writes whole files: mode must contain 'w', got {mode!r}")
    refuse_special(path)
    path = _output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(path)
    tmp = temporary_path(path)
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    try:
        with open(tmp, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _named(exc, path) from exc
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


CLAIM_POLL_SECONDS = 0.25
"""How often a waiting :func:`output_claim` tries the lock again."""

_HELD: set[Path] = set()
"""The lock files this process holds (claims are re-entrant within a process)."""


def claim_path(target: str | os.PathLike) -> Path:
    """The hidden lock file beside ``target`` that :func:`output_claim` holds."""
    target = _output_path(target)
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def output_claim(
    target: str | os.PathLike, *, wait: float = 0.0, on_wait: Callable[[str], None] | None = None
) -> Iterator[Path]:
    """Hold an exclusive claim on the output ``target`` for the ``with`` block; a claim on the same target by
    another process raises :class:`OutputBusy` at once, or after ``wait`` seconds of polling for its release (for a
    shared cache entry that two runs may build at once: the second waits for the first's folder, then reads it);
    ``on_wait`` is told once, in one line, that the claim is waiting.
    Re-entrant in one process (a command that claims its output and then builds it with :func:`atomic_dir` holds one
    claim).

    The claim is a ``flock`` on ``.NAME.lock`` beside the target, so a killed holder releases it with its process
    (its lock file stays until the next claim of the target removes it). The holder removes the file while it still
    holds the lock; a claimer that locked a file removed under it sees its inode gone and tries again, so two
    claims never hold two different files. On a system without ``fcntl`` the claim is a no-op."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no claim
        yield _output_path(target)
        return
    lock = claim_path(target)
    if lock in _HELD:
        yield _output_path(target)
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + max(0.0, wait)
    races = 0
    while races < 100:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            if time.monotonic() < deadline:
                if on_wait is not None:
                    on_wait(f"{_output_path(target)} is being written by process {holder}: waiting up to {wait:g} s")
                    on_wait = None
                time.sleep(CLAIM_POLL_SECONDS)
                continue
            waited = f" after waiting {wait:g} s" if wait > 0 else ""
            raise OutputBusy(
                f"{_output_path(target)} is being written by another process (PID {holder}){waited}; "
                "wait for it to finish or write elsewhere"
            ) from None
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # locked a file its holder had just removed: claim the new one
        races += 1
    else:
        raise OutputBusy(f"{_output_path(target)}: could not claim {lock}")
    _HELD.add(lock)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield _output_path(target)
    finally:
        _HELD.discard(lock)
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)  # closing the descriptor releases the flock


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike, *, overwrite: bool = False, owned: Iterable[str] | None = None
) -> Iterator[Path]:
    """``with atomic_dir(out) as tmp:`` build the folder's files under ``tmp``; on success ``tmp`` becomes ``out``.

    The build holds :func:`output_claim` on ``out`` from the first check to the rename. An existing non-empty
    ``out`` is refused unless ``overwrite`` — checked at the start and again just before the rename, so a folder
    that appeared meanwhile is never replaced without it. Given ``owned`` (glob patterns of the names this writer
    writes: every command passes its own), ``overwrite`` replaces only a folder holding nothing else, checked at both
    points too. With ``overwrite`` the old folder is renamed aside, the
    new one renamed in, and only then the old one removed (a kill between the renames leaves the old one aside,
    and the next writer of ``out`` renames it back). On an exception the temporary folder is removed and ``out``
    untouched.
    """
    path = _output_path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} exists and is not a folder")
    if Path.cwd() == path or path in Path.cwd().parents:
        raise OutputError(
            f"{path} is the current folder (or holds it): the output is built beside it and renamed into place; "
            "give a new folder name, e.g. --out ./splits"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    owned = None if owned is None else tuple(owned)
    with output_claim(path):
        recovered = remove_stale(path)
        _refuse_existing(path, overwrite, recovered, owned)
        tmp = temporary_path(path)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        try:
            yield tmp
            _fsync_dir(tmp)
            _refuse_existing(path, overwrite, recovered, owned)
            move_dir_into_place(tmp, path)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise _named(exc, path) from exc
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def move_dir_into_place(built: str | os.PathLike, target: str | os.PathLike) -> Path:
    """Rename the finished folder ``built`` onto ``target`` (same file system). An existing ``target`` is renamed aside
    first (``.NAME.tmp-PID.old``) and removed only once the new one is in place: a kill between the two renames
    leaves the old copy aside, which :func:`remove_stale` renames back."""
    built, target = Path(built), _output_path(target)
    if target.exists():
        old = _old_path(target)
        if old.exists():
            shutil.rmtree(old)
        os.replace(target, old)
        os.replace(built, target)
        _fsync_dir(target.parent)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(built, target)
        _fsync_dir(target.parent)
    return target


def _refuse_existing(path: Path, overwrite: bool, recovered: bool, owned: tuple[str, ...] | None = None) -> None:
    if _non_empty(path) and not overwrite:
        note = " (recovered from an interrupted replace)" if recovered else ""
        raise OutputError(f"{path} exists and is not empty{note}; pass --overwrite to replace it")
    if owned is not None and path.is_dir():
        refuse_foreign(path, owned)


def _non_empty(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.exists() and path.stat().st_size > 0


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _same_file(a: Path, b: Path) -> bool:
    """Whether two existing paths are one file (a hard link or a bind mount of it)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _ours(name: str) -> bool:
    """A claim's lock file or a writer's temporary (``.NAME.lock``, ``.NAME.tmp-PID``): never the user's."""
    return name.startswith(".") and (name.endswith(".lock") or TMP_MARK in name)


def foreign_entries(folder: str | os.PathLike, owned: Iterable[str]) -> list[str]:
    """The entries of ``folder`` that a writer whose outputs are the glob patterns ``owned`` did not write (sorted
    names; locks and temporaries of this module excluded)."""
    import fnmatch

    folder = Path(folder)
    if not folder.is_dir():
        return []
    patterns = tuple(owned)
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if not _ours(entry.name) and not any(fnmatch.fnmatchcase(entry.name, pattern) for pattern in patterns)
    )


def refuse_foreign(folder: str | os.PathLike, owned: Iterable[str], *, flag: str = "--overwrite") -> None:
    """:class:`OutputError` in one line when ``folder`` holds anything but the writer's own outputs (``owned``)."""
    foreign = foreign_entries(folder, owned)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputError(
            f"{flag}: {folder} holds {shown}, which this command never writes; refusing to delete what it did not "
            "write (move them, or give a new folder)"
        )


def remove_owned(folder: str | os.PathLike, owned: Iterable[str]) -> None:
    """Empty ``folder`` of the writer's own outputs after :func:`refuse_foreign` (so nothing else is in it)."""
    folder = Path(folder)
    refuse_foreign(folder, owned)
    for entry in folder.iterdir():
        if _ours(entry.name):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def check_output(
    out: str | os.PathLike,
    inputs: Iterable[str | os.PathLike] = (),
    *,
    overwrite: bool = False,
    what: str = "output",
    owned: Iterable[str] | None = None,
) -> Path:
    """The one check of every writer's output, before any work. Refuses (:class:`OutputError`, one line):

    - a device node, FIFO or socket (:func:`refuse_special`);
    - an output that is one of ``inputs`` (by path, through a symlink, or the same file under another name), that
      contains one (a folder holding an input), or that lies inside an input folder;
    - an existing non-empty output without ``overwrite`` (a command that rewrites its report on every run passes
      ``overwrite=True``);
    - with ``overwrite``, a folder that holds anything but the writer's own outputs (``owned``: glob patterns of the
      names it writes), when ``owned`` is given.

    ``inputs`` that do not exist are skipped. Returns ``out`` as a ``Path``."""
    out = Path(out)
    refuse_special(out, what)
    resolved = out.resolve()
    if resolved == Path(resolved.anchor):
        raise OutputError(f"{what} {out} is the file system's root; give a folder of its own")
    for item in inputs:
        inp = Path(item).resolve()
        if _inside(inp, resolved) or _same_file(inp, resolved):
            raise OutputError(f"{what} {out} is (or contains) the input {item}; write somewhere else")
        if _inside(resolved, inp) and inp.is_dir():
            raise OutputError(f"{what} {out} lies inside the input folder {item}; write somewhere else")
    if _non_empty(out) and not overwrite:
        raise OutputError(f"{what} {out} exists and is not empty; pass --overwrite to replace it")
    if owned is not None and overwrite and out.is_dir():
        refuse_foreign(out, owned)
    return out


@contextlib.contextmanager
def scratch_dir(target: str | os.PathLike) -> Iterator[Path]:
    """``with scratch_dir(target) as tmp:`` a temporary folder beside ``target`` for intermediate work (an unpacked
    archive, a download), removed when the block ends. It is named like this module's temporaries
    (``.NAME.tmp-PID``), so one that a killed process left is removed by the next ``scratch_dir`` or
    :func:`atomic_dir` of the same ``target`` (:func:`remove_stale`), and it never counts as a user's file. Give each
    kind of scratch work its own ``target`` name: ``atomic_dir(target)`` builds in ``.NAME.tmp-PID`` too."""
    target = _output_path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    tmp = temporary_path(target)
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
