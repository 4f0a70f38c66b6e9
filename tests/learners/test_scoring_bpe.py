"""Scoring spans under a byte-level BPE whose merges cross the bridge/answer boundary (``>(``), as Qwen's do.

The tokenizer is trained offline with ``tokenizers`` on Countdown-format text. For each engine (naive,
prefix-shared, vLLM request building) the scored span is checked against a reference built here by hand: the
joint text is encoded once and the answer's tokens are located by reading the token strings.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from learners.contrastive.scoring import (
    NaiveScorer,
    PrefixSharedScorer,
    ScoringJob,
    answer_span,
    build_span_requests,
)

BRIDGE = "</reasoning>\n<solution>"
CLOSE = "</solution>"


@pytest.fixture(scope="module")
def bpe_tokenizer():
    return make_bpe_tokenizer()


def make_bpe_tokenizer():
    """A byte-level BPE trained offline on Countdown-format text (merges like ``>(`` cross the bridge)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(0)
    texts = []
    for _ in range(400):
        a, b, c = rng.randint(1, 99), rng.randint(1, 99), rng.randint(1, 99)
        texts.append(f"<reasoning>\n{a} + {b} = {a + b}\n\n{a} * {c} = {a * c}\n{BRIDGE}({a} + {b}) * {c}{CLOSE}")
        texts.append(f"<reasoning>\ntry {a}\n{BRIDGE}{a} - {b}{CLOSE}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|im_end|>"]
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|im_end|>")


@pytest.fixture(scope="module")
def bpe_model(bpe_tokenizer):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(bpe_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512, attn_implementation="sdpa",
    )  # fmt: skip
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config).eval()


def _pieces(tokenizer, ids):
    return [tokenizer.decode([i]) for i in ids]


def test_merges_cross_the_boundary_and_the_span_follows_the_joint_split(bpe_tokenizer):
    tok = bpe_tokenizer
    joint = tok.encode(BRIDGE + "(10 + 9) * 42" + CLOSE, add_special_tokens=False)
    pieces = _pieces(tok, joint)
    assert ">(" in pieces  # the merge crosses from the bridge into the answer
    separate = tok.encode(BRIDGE, add_special_tokens=False) + tok.encode(
        "(10 + 9) * 42" + CLOSE, add_special_tokens=False
    )
    assert separate != joint  # tokenizing the parts apart gives a split the policy never writes

    span = answer_span(tok, "(10 + 9) * 42")
    first = pieces.index(">(")
    assert span.context == tuple(joint[:first])  # ends with "<solution", without ">"
    assert "".join(_pieces(tok, span.context)) == "</reasoning>\n<solution"
    assert span.span[0] == joint[first]
    assert "".join(_pieces(tok, span.span)) == ">(10 + 9) * 42"  # the straddling token, then the answer's tokens
    assert span.context + span.span == tuple(joint[: len(span.context) + len(span.span)])
    assert "solution" not in "".join(_pieces(tok, span.span))  # </solution> is not scored

    plain = answer_span(tok, "7 - 2")  # no merge across the boundary: the bridge ends with ">"
    assert "".join(_pieces(tok, plain.context)) == BRIDGE and "".join(_pieces(tok, plain.span)) == "7 - 2"
    newline = answer_span(tok, "\n(3 + 4)\n")  # verbatim whitespace belongs to the answer
    assert "".join(_pieces(tok, newline.span)).strip("\n") == "(3 + 4)"
    assert "".join(_pieces(tok, newline.context + newline.span)).startswith(BRIDGE)


ANSWERS = ["(10 + 9) * 42", "10 * 9", "(42 - 9) + 10", "7"]


def _job(tok):
    prompt = tok.encode("Numbers: 42 10 9\nTarget: 48\n", add_special_tokens=False)
    completion = tok.encode(
        "<reasoning>\n10 + 9 = 19\n\n19 * 42 = 798\n" + BRIDGE + "7" + CLOSE, add_special_tokens=False
    )
    cuts = (len(prompt) + 3, len(prompt) + 9, len(prompt) + 15)
    return ScoringJob(tuple(prompt + completion), cuts, (), tuple(answer_span(tok, a) for a in ANSWERS))


def _reference(model, tok, job):
    """ℓ by hand: encode the joint text, find the first token carrying an answer character by its string, sum the
    log-probabilities of the tokens from there to the last one before "</solution>" begins."""
    import torch

    out = np.zeros((len(job.cuts), len(ANSWERS)))
    for k, answer in enumerate(ANSWERS):
        joint = tok.encode(BRIDGE + answer + CLOSE, add_special_tokens=False)
        text = ""
        first = last = None
        for n, piece in enumerate(_pieces(tok, joint)):
            before, text = len(text), text + piece
            if first is None and len(text) > len(BRIDGE):
                first = n
            if before < len(BRIDGE) + len(answer):
                last = n
        for i, cut in enumerate(job.cuts):
            ids = list(job.tokens[:cut]) + joint[: last + 1]
            start = cut + first
            with torch.no_grad():
                lp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
            out[i, k] = sum(float(lp[t - 1, ids[t]]) for t in range(start, len(ids)))
    return out


def test_naive_and_prefix_shared_score_the_joint_span(bpe_model, bpe_tokenizer):
    job = _job(bpe_tokenizer)
    reference = _reference(bpe_model, bpe_tokenizer, job)
    (naive,) = NaiveScorer(bpe_model).score([job])
    (shared,) = PrefixSharedScorer(bpe_model, max_batch_tokens=200).score([job])
    np.testing.assert_allclose(naive, reference, atol=1e-4, rtol=0)
    np.testing.assert_allclose(shared, reference, atol=1e-4, rtol=0)


def test_vllm_requests_carry_the_joint_split(bpe_tokenizer):
    tok = bpe_tokenizer
    job = _job(tok)
    plan = build_span_requests([job])
    for i, cut in enumerate(job.cuts):
        for k, answer in enumerate(ANSWERS):
            request = plan.requests[plan.index[0][i, k]]
            joint = tok.encode(BRIDGE + answer + CLOSE, add_special_tokens=False)
            assert request.token_ids == job.tokens[:cut] + tuple(joint[: len(request.token_ids) - cut])
            span_text = "".join(_pieces(tok, request.token_ids[request.span_start :]))
            expected = ">" + answer if answer.startswith("(") else answer  # ">(" is one token
            assert span_text == expected
