"""Compress an experiment's per-puzzle and per-completion records for committing: every ``*.jsonl`` under the given
folders becomes ``*.jsonl.gz`` (the same rows, checked by reading them back; ``mtime`` 0, so the same rows give the
same bytes) and the plain file is removed. Readers (``countdown_env.helpers.jsonl.records_path``, the statistics
module's ``eval_files``) take either form, so the commands that wrote ``X.jsonl`` still run on the committed
``X.jsonl.gz``::

    python experiments/compress_records.py experiments/r3_smollm2/seed-0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from countdown_env.helpers.jsonl import read_jsonl, write_jsonl  # noqa: E402


def compress(path: Path) -> Path:
    """``path`` (a ``.jsonl``) written as ``path.gz`` and removed once the copy reads back the same rows; a
    ``path.gz`` already there is refused (never over another file)."""
    target = path.with_name(path.name + ".gz")
    if target.exists():
        raise FileExistsError(f"{target} exists: remove one of {path.name} and {target.name} first")
    rows = read_jsonl(path)
    write_jsonl(rows, target)
    if read_jsonl(target) != rows:
        target.unlink()
        raise RuntimeError(f"{target}: the compressed copy does not read back as {path}")
    path.unlink()
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args(argv)
    paths = sorted(p for folder in args.folders for p in folder.rglob("*.jsonl") if p.is_file() and not p.is_symlink())
    for path in paths:
        try:
            compress(path)
        except (OSError, ValueError, RuntimeError) as error:
            parser.exit(2, f"compress_records.py: error: {error}\n")
    print(f"compressed {len(paths)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
