"""Which model a run or an eval loads: ``tiny``, the shipped warm start, an installed pretrained model
(``smollm2-135m``, :mod:`learners.pipeline.models.pretrained`), a checkpoint folder or a Hub id, and the checks that
refuse a model that cannot load in one line, before any work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SHIPPED_DIR = Path(__file__).resolve().parents[1] / "tiny_warm_start"
"""The shipped warm start: ``model.safetensors``, tokenizer files, ``countdown_task.json``, ``recipe.json``,
``eval_report.json`` (:mod:`learners.pipeline.runs.warm_start` builds and measures it)."""

SHIPPED_MULTI_STEP_DIR = Path(__file__).resolve().parents[1] / "tiny_warm_start_multistep"
"""The shipped multi-step warm start (``warm_start.MULTI_STEP_RECIPE``: traces with dead ends and backtracking,
several paragraphs), the same files as :data:`SHIPPED_DIR`."""

MODEL_FILES = {
    "config.json": ("config.json",),
    "tokenizer (tokenizer.json or tokenizer_config.json)": ("tokenizer.json", "tokenizer_config.json"),
    "weights (model.safetensors or pytorch_model.bin)": (
        "model.safetensors",
        "model.safetensors.index.json",
        "pytorch_model.bin",
        "pytorch_model.bin.index.json",
    ),
}


def _looks_like_path(name: str) -> bool:
    """A model string meant as a local path: absolute, ``./``/``../``/``~``, more than one ``/``, a backslash, or a
    first component that exists here (``runs/x``). Hub ids are ``name`` or ``org/name``."""
    if name.startswith((".", "/", "~")) or "\\" in name or name.count("/") > 1 or name.endswith("/"):
        return True
    return "/" in name and Path(name.split("/")[0]).exists()


WARM_START = "warm-start"
"""``model: warm-start``: the SFT'd tiny model shipped in the package (``warm_start.SHIPPED_DIR``)."""

WARM_START_MULTI_STEP = "warm-start-multistep"
"""``model: warm-start-multistep``: the shipped multi-step warm start (``SHIPPED_MULTI_STEP_DIR``)."""


def resolve_model(model: Any) -> Any:
    """``"warm-start"`` / ``"warm-start-multistep"`` → the shipped warm start's folder; the name of an installable
    pretrained model (``"smollm2-135m"``) → its installed folder (one line naming the install command when it is
    missing or damaged); the name of a shipped adapter (``"smollm2-135m-warm-start"``) → the cached folder of it
    merged onto its installed base (:mod:`.adapters`); anything else unchanged."""
    if model == WARM_START:
        return SHIPPED_DIR
    if model == WARM_START_MULTI_STEP:
        return SHIPPED_MULTI_STEP_DIR
    from .adapters import ADAPTERS, merged_model
    from .pretrained import MODELS, installed_model

    if isinstance(model, str) and model in MODELS:
        return installed_model(model)
    if isinstance(model, str) and model in ADAPTERS:
        return merged_model(model)
    return model


def check_model(model: Any, *, allow_hub: bool = True) -> None:
    """Fail at once, with one line, for a ``--model`` that cannot load: a path-like string that does not exist (no
    Hub retry), a folder that misses what a model needs (named), a checkpoint or ``final/`` folder whose files differ
    from its manifest (a truncated ``model.safetensors``), or a Hub id absent from the local cache when
    ``HF_HUB_OFFLINE`` is set or the Hub does not answer (:func:`hub_unreachable`: one request of at most
    :data:`HUB_PROBE_SECONDS`; a cached model is then used offline). ``"tiny"`` (built offline) is always fine."""
    import json as _json
    import os

    if model == "tiny":
        return
    model = resolve_model(model)
    if not isinstance(model, (str, Path)) or not str(model).strip():
        raise ValueError(f"model must be 'tiny', a model folder or a Hub id, got {model!r}")
    name = str(model)
    folder = Path(name).expanduser()
    if folder.exists():
        if not folder.is_dir():
            raise ValueError(f"model {name} is a file, not a model folder")
        present = {p.name for p in folder.iterdir()}
        missing = [what for what, files in MODEL_FILES.items() if not present & set(files)]
        if missing:
            empty = " (the folder is empty)" if not present else ""
            raise ValueError(f"model folder {name} is missing {', '.join(missing)}{empty}")
        try:
            _json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ValueError(f"model folder {name}: config.json is not valid JSON") from None
        from ...core.checkpoints import MANIFEST, checkpoint_problem

        if (folder / MANIFEST).is_file():  # a checkpoint or a run's final/: its files must match their manifest
            problem = checkpoint_problem(folder)
            if problem is not None:
                raise ValueError(f"model folder {name}: {problem}")
        return
    if _looks_like_path(name) or not allow_hub:
        raise FileNotFoundError(f"model folder {name} does not exist")
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return
    cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") or constants.HF_HUB_OFFLINE:
        if not cached:
            raise FileNotFoundError(
                f"model {name!r} is not a local folder and not in the Hugging Face cache (HF_HUB_OFFLINE is set)"
            )
        return
    unreachable = hub_unreachable(constants.ENDPOINT)
    if unreachable is None:
        return
    if not cached:
        raise FileNotFoundError(
            f"model {name!r} is not a local folder and not in the Hugging Face cache, and the Hub at "
            f"{constants.ENDPOINT} cannot be reached ({unreachable}): download it where there is a network "
            f"(`hf download {name}`) or give a model folder"
        )
    # cached, Hub unreachable: use the cache at once instead of letting every file look-up retry the Hub
    import sys

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True
    print(f"countdown: the Hub at {constants.ENDPOINT} cannot be reached ({unreachable}); using the cached {name}",
          file=sys.stderr)  # fmt: skip


HUB_PROBE_SECONDS = 5.0
"""How long :func:`hub_unreachable` waits for the Hub to answer at all (any HTTP status counts as an answer)."""


def hub_unreachable(endpoint: str, timeout: float = HUB_PROBE_SECONDS) -> str | None:
    """``None`` when ``endpoint`` answers an HTTP request within ``timeout`` seconds (any status), else the reason
    (one request, no retries: transformers' own look-ups retry for about a minute before saying the same)."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return " ".join(str(reason).split()) or type(exc).__name__
    return None
