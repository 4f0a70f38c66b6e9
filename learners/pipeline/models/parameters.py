"""The size of a model folder, read from its safetensors headers: no tensor is loaded, no heavy import."""

from __future__ import annotations

import json
from pathlib import Path


def parameter_count(model_dir: str | Path) -> int | None:
    """Parameters stored in the folder's ``*.safetensors`` files, read from their headers (no tensor is loaded);
    ``None`` when it has none (e.g. ``pytorch_model.bin`` only) or a header cannot be read (a damaged file is
    reported by the loader, after the cheaper checks: this count only sizes defaults)."""
    import math
    import struct

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for file in files:
        try:
            with open(file, "rb") as handle:
                (size,) = struct.unpack("<Q", handle.read(8))
                if size > MAX_SAFETENSORS_HEADER:
                    return None
                header = json.loads(handle.read(size))
            total += sum(math.prod(entry["shape"]) for key, entry in header.items() if key != "__metadata__")
        except (OSError, struct.error, ValueError, TypeError, KeyError, AttributeError):
            return None
    return total


MAX_SAFETENSORS_HEADER = 100 * 2**20
"""safetensors' own cap on a header (100 MB): a larger length field is a damaged or hostile file."""
