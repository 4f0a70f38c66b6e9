"""The embedded tiny model: a ~1 M-parameter Qwen2 causal LM and a character-level tokenizer, built offline.

No Hub access is needed: :func:`build_tiny_model` writes an ordinary Hugging Face checkpoint directory
(``config.json``, weights, ``tokenizer.json``, ``tokenizer_config.json`` with a ChatML chat template) that
``AutoModelForCausalLM.from_pretrained`` and ``AutoTokenizer.from_pretrained`` load like any other model.

Tokenizer: one token per printable ASCII character plus newline and tab, the answer-format tags
(``<reasoning>`` … ``</answer>``) and the ChatML markers as single tokens, ``<|pad|>`` and ``<|unk|>``.
The end-of-turn marker ``<|im_end|>`` is the eos token, so HF and TRL generation stop at the end of the
assistant turn. The tags are *added* (matched whole) but not *special*: decoding with
``skip_special_tokens=True`` keeps them and drops only the ChatML/pad markers.

Trap avoided : a folder whose model config says ``qwen2`` would otherwise reload as a Qwen2
tokenizer with a byte-level pre-tokenizer that silently drops spaces and newlines. The tokenizer config
therefore names ``PreTrainedTokenizerFast`` explicitly, and :func:`check_round_trip` verifies encode/decode
after reload (``build_tiny_model`` calls it).

Size calibration (measured on 2 CPU cores): hidden 128, 4 layers, 4 heads, intermediate 512, tied
embeddings ≈ 1.06 M parameters, ~13 k tokens/s training in fp32.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

TAGS: tuple[str, ...] = (
    "<reasoning>",
    "</reasoning>",
    "<solution>",
    "</solution>",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
)
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
PAD = "<|pad|>"
UNK = "<|unk|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, UNK, IM_START, IM_END)
CHARACTERS: tuple[str, ...] = tuple(dict.fromkeys(string.printable.replace("\x0b", "").replace("\x0c", "")))

# ChatML. The {% generation %} block marks assistant tokens so that TRL's SFTTrainer can build an
# assistant-only loss mask (``assistant_only_loss=True``); the end-of-turn marker belongs to the assistant turn
# so that the model learns to stop.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{ '<|im_start|>assistant\\n' }}{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{ '\\n' }}"
    "{%- else %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)

ROUND_TRIP_TEXT = (
    "Using the numbers [3, 7, 11], reach 21.\n<reasoning>\n11 + 7 = 18\n18 + 3 = 21\n</reasoning>\n"
    "<solution>(11 + 7) + 3</solution>  \t<answer>1 / 2</answer>"
)


def vocabulary() -> dict[str, int]:
    """Token -> id: special tokens first (pad = 0), then tags, then the characters."""
    tokens = [*SPECIAL_TOKENS, *TAGS, *CHARACTERS]
    return {tok: i for i, tok in enumerate(tokens)}


def build_char_tokenizer():
    """A ``PreTrainedTokenizerFast`` with one token per character, the tags and ChatML markers as single tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(vocab=vocabulary(), unk_token=UNK))
    # Every character is its own word; [\s\S] also matches newlines.
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    backend.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        unk_token=UNK,
        eos_token=IM_END,
        bos_token=None,
        padding_side="left",
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def check_round_trip(tokenizer, text: str = ROUND_TRIP_TEXT) -> None:
    """Raise ``ValueError`` unless ``tokenizer`` is character-level and reproduces ``text`` exactly.

    Guards against the reload trap above (spaces and newlines silently dropped by a byte-level tokenizer).
    """
    ids = tokenizer.encode(text, add_special_tokens=False)
    decoded = tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    if decoded != text:
        raise ValueError(
            f"tokenizer {type(tokenizer).__name__} does not round-trip: {text!r} -> {decoded!r}; "
            "load the folder with PreTrainedTokenizerFast.from_pretrained"
        )
    for tag in TAGS:
        if len(tokenizer.encode(tag, add_special_tokens=False)) != 1:
            raise ValueError(f"tag {tag!r} is not a single token in {type(tokenizer).__name__}")


def tiny_config(
    vocab_size: int,
    *,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int = 512,
    max_position_embeddings: int = 2048,
):
    """The Qwen2 config of the tiny model (ids of pad/eos taken from :func:`vocabulary`)."""
    from transformers import Qwen2Config

    vocab = vocabulary()
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size {hidden_size} must be divisible by num_heads {num_heads}")
    return Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=vocab[PAD],
        eos_token_id=vocab[IM_END],
        bos_token_id=None,  # as the tokenizer (no BOS): else every trainer "aligns" the two and says so on each load
        use_cache=True,
    )


def build_tiny_model(
    out_dir: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int = 512,
    max_position_embeddings: int = 2048,
) -> Path:
    """Build the randomly initialised tiny model and its tokenizer, save both to ``out_dir``, return the path.

    Deterministic for a given ``seed``. The folder loads with ``AutoModelForCausalLM.from_pretrained`` and
    ``AutoTokenizer.from_pretrained`` (which returns a ``PreTrainedTokenizerFast``).
    """
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_char_tokenizer()
    config = tiny_config(
        len(tokenizer),
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
    )
    devices = []  # fork_rng wants an explicit (empty) device list on CPU-only machines
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, bos_token_id=config.bos_token_id
    )
    model.save_pretrained(out)
    save_tokenizer(tokenizer, out)
    check_round_trip(AutoTokenizer.from_pretrained(out))
    return out


def save_tokenizer(tokenizer, out_dir: str | Path) -> None:
    """Save ``tokenizer`` so that ``AutoTokenizer``/``AutoProcessor`` reload it as itself next to a qwen2 config.

    transformers 5 maps model type ``qwen2`` to ``Qwen2Tokenizer`` whatever ``tokenizer_class`` says; only an
    ``auto_map`` entry bypasses that mapping (without remote code: the class named is a built-in one).
    """
    import json

    tokenizer.save_pretrained(out_dir)
    path = Path(out_dir) / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config["auto_map"] = {"AutoTokenizer": [None, "PreTrainedTokenizerFast"]}
    path.write_text(json.dumps(config, indent=2) + "\n")


def count_parameters(model) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def tiny_cpu_kwargs(output_dir: str | os.PathLike[str], **overrides: Any) -> dict[str, Any]:
    """Keyword arguments for ``GRPOConfig`` (or a learner's config) for a fast, deterministic CPU run of the tiny
    model: the ``tiny-smoke`` preset's trainer section with ``output_dir`` set; ``overrides`` replace or add keys."""
    from ..runs.config import load_config

    return {**load_config("tiny-smoke")["trainer"], "output_dir": str(output_dir), **overrides}
