"""One refusal for unknown option names: a one-line ``ValueError`` with a "did you mean" per unknown key.

Used wherever a typo would otherwise change behaviour silently: task dicts, YAML config sections and keys, the
``verifiers`` environment's keyword arguments.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_LISTED = 24
"""Known names listed in the message at most (a TRL config has ~200: the line would run to thousands of characters)."""


def refuse_unknown(what: str, given: Iterable, known: Iterable) -> None:
    """Raise ``ValueError("unknown <what> 'x' (did you mean 'y'?); known: ...")`` when ``given`` has names outside
    ``known``; the known names are listed when there are at most :data:`MAX_LISTED` of them."""
    known = sorted({str(k) for k in known})
    unknown = sorted({str(k) for k in given} - set(known))
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    plural = "s" if len(unknown) > 1 else ""
    listed = ", ".join(known) if len(known) <= MAX_LISTED else f"{len(known)} names (see the class's documentation)"
    raise ValueError(f"unknown {what}{plural} {', '.join(parts)}; known: {listed}")
