"""Scorer engines: prefix-shared (b) and vLLM (c, against a simulated engine) agree with the naive reference (a)."""

from __future__ import annotations

import random
import sys
import types
from dataclasses import dataclass

import numpy as np
import pytest

from learners.contrastive.scoring import (
    AnswerSpan,
    NaiveScorer,
    PrefixSharedScorer,
    ScoringJob,
    SpanRequest,
    VLLMScorer,
    answer_span_encoder,
    build_span_requests,
    make_scorer,
    span_logprob_sum,
    vllm_sampling_kwargs,
)

ANSWERS = ["(10*9)-42", "10*9-42", "(10*9)-4", "42+6", "9*10-42", "48"]


@pytest.fixture(scope="module")
def tiny_model(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir)


def _jobs(tokenizer, n_rollouts=4, seed=0):
    """Rollouts of different lengths sharing one prompt; cuts at paragraph ends, the first cut shared by all."""
    from learners.contrastive.paragraphs import split_paragraphs, token_texts

    rng = random.Random(seed)
    prompt = tokenizer.encode("Numbers: 42 10 9\nTarget: 48", add_special_tokens=False)
    encode = answer_span_encoder(tokenizer)
    answers = tuple(encode(a) for a in ANSWERS)
    jobs = []
    for _ in range(n_rollouts):
        paragraphs = [
            "".join(rng.choice("0123456789+-*= try") for _ in range(rng.randint(3, 40)))
            for _ in range(rng.randint(1, 5))
        ]
        text = "<reasoning>\n" + "\n\n".join(paragraphs) + "\n</reasoning>\n<solution>48</solution>"
        completion = tokenizer.encode(text, add_special_tokens=False)
        para = split_paragraphs(token_texts(tokenizer, completion), max_paragraph_len=16)
        cuts = tuple(len(prompt) + k for k in para.scoring_points)
        jobs.append(ScoringJob(tuple(prompt + completion), cuts, (), answers))
    return jobs


@pytest.mark.slow
def test_prefix_shared_equals_naive(tiny_model, tiny_tokenizer):
    jobs = _jobs(tiny_tokenizer)
    reference = NaiveScorer(tiny_model).score(jobs)
    # small budgets force several prefix chunks and continuation batches
    engine = PrefixSharedScorer(tiny_model, prefix_batch_size=3, max_batch_tokens=400)
    shared = engine.score(jobs)
    for ref, got, job in zip(reference, shared, jobs, strict=True):
        assert got.shape == ref.shape == (len(job.cuts), len(ANSWERS))
        np.testing.assert_allclose(got, ref, atol=1e-4, rtol=0)
    assert np.isfinite(np.concatenate([r.ravel() for r in reference])).all()
    # the empty-prefix point is shared by every rollout: scored once
    n_points = sum(len(j.cuts) for j in jobs)
    assert engine.stats["pieces"] == n_points - (len(jobs) - 1)
    # answers differ, so the scores carry information (not a constant)
    assert np.ptp(reference[0][0]) > 0.1


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_prefix_shared_equals_naive_with_grouped_query_attention(tiny_tokenizer, attn):
    """Qwen3 layout (q/k norms, 2 KV heads for 4 query heads), both attention kernels that take 4-D masks."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tiny_tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=1024,
        attn_implementation=attn,
    )  # fmt: skip
    torch.manual_seed(1)
    model = Qwen3ForCausalLM(config)
    jobs = _jobs(tiny_tokenizer, n_rollouts=2, seed=3)
    reference = NaiveScorer(model).score(jobs)
    shared = PrefixSharedScorer(model, max_batch_tokens=300).score(jobs)
    for ref, got in zip(reference, shared, strict=True):
        np.testing.assert_allclose(got, ref, atol=1e-4, rtol=0)


def test_prefix_shared_equals_naive_on_a_lora_model(tiny_model_dir, tiny_tokenizer):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    jobs = _jobs(tiny_tokenizer, n_rollouts=2, seed=4)
    reference = NaiveScorer(model).score(jobs)
    with torch.no_grad(), model.disable_adapter():
        without_lora = NaiveScorer(model).score(jobs)
    assert np.abs(reference[0] - without_lora[0]).max() > 1e-3  # the adapter matters, so it must be used
    for ref, got in zip(reference, PrefixSharedScorer(model).score(jobs), strict=True):
        np.testing.assert_allclose(got, ref, atol=1e-4, rtol=0)


def test_prefix_shared_scores_each_prefix_token_once(tiny_model, tiny_tokenizer):
    jobs = _jobs(tiny_tokenizer, n_rollouts=3, seed=1)
    engine = PrefixSharedScorer(tiny_model)
    engine.score(jobs)
    assert engine.stats["prefix_tokens"] == sum(max(j.cuts) for j in jobs)
    # the continuation of a point is the token trie of the answers' context + span (shared leading tokens once)
    answers = [a.context + a.span for a in jobs[0].answers]
    trie = {a[:k] for a in answers for k in range(1, len(a) + 1)}
    assert engine.stats["continuation_tokens"] == engine.stats["pieces"] * len(trie)
    assert len(trie) < sum(len(a) for a in answers)


def test_engines_leave_the_training_flag_alone(tiny_model, tiny_tokenizer):
    jobs = _jobs(tiny_tokenizer, n_rollouts=1)
    tiny_model.train()
    a = PrefixSharedScorer(tiny_model).score(jobs)
    assert tiny_model.training
    tiny_model.eval()
    b = PrefixSharedScorer(tiny_model).score(jobs)
    assert not tiny_model.training
    np.testing.assert_allclose(a[0], b[0], atol=1e-6)


def test_scoring_job_validation():
    with pytest.raises(ValueError, match="bridge or context"):
        ScoringJob((1, 2, 3), (2,), (), ((4,),))
    with pytest.raises(ValueError, match="bridge or context"):
        ScoringJob((1, 2, 3), (2,), (), (AnswerSpan((), (4,)),))
    with pytest.raises(ValueError, match="answer span"):
        ScoringJob((1, 2, 3), (2,), (5,), ((),))
    job = ScoringJob((1, 2, 3), (2,), (), (AnswerSpan((5,), (4,)), AnswerSpan((5, 6), (7, 8))))
    assert job.continuation(1) == ((5, 6, 7, 8), 2)
    with pytest.raises(ValueError, match="cut 4 outside"):
        ScoringJob((1, 2, 3), (4,), (5,), ((4,),))
    with pytest.raises(ValueError, match="cut 0 outside"):
        ScoringJob((1, 2, 3), (0,), (5,), ((4,),))


def test_make_scorer_and_attention_check(tiny_model):
    assert isinstance(make_scorer("naive", tiny_model), NaiveScorer)
    assert isinstance(make_scorer("prefix_shared", tiny_model, max_batch_tokens=100), PrefixSharedScorer)
    with pytest.raises(ValueError, match="unknown scorer engine"):
        make_scorer("fast", tiny_model)
    with pytest.raises(ValueError, match="vllm.LLM"):
        make_scorer("vllm")

    class Flash:
        config = types.SimpleNamespace(_attn_implementation="flash_attention_2")

    with pytest.raises(ValueError, match="sdpa"):
        PrefixSharedScorer(Flash()).score([])


def test_answer_span_is_the_answer_without_the_closing_tag(tiny_tokenizer):
    encode = answer_span_encoder(tiny_tokenizer)
    one = encode("1+2")
    assert tiny_tokenizer.decode(list(one.context)) == "</reasoning>\n<solution>"
    assert tiny_tokenizer.decode(list(one.span)) == "1+2"
    assert tiny_tokenizer.decode(list(encode("\n1 + 2\n").span)) == "\n1 + 2\n"  # verbatim
    assert encode("7").context == one.context  # a character tokenizer never merges across the boundary


# ------------------------------------------------------------------------------------------------ vLLM engine
def test_span_requests_are_deduplicated_and_warm_the_cache_first():
    bridge = (90,)
    a = ScoringJob((1, 2, 3, 4, 5, 6), (2, 4, 6), bridge, ((7,), (8, 9)))
    b = ScoringJob((1, 2, 3, 3), (2, 4), bridge, ((7,), (8, 9)))  # shares the cut-2 prefix with a
    plan = build_span_requests([a, b])
    assert plan.warm == 2
    assert plan.requests[0] == SpanRequest((1, 2, 3, 4, 5, 6, 90, 7), 7)  # a's longest prefix first
    assert plan.requests[1] == SpanRequest((1, 2, 3, 3, 90, 7), 5)
    assert len(plan.requests) == 3 * 2 + 2 * 2 - 2  # the shared cut-2 pair is sent once
    assert plan.index[0][0, 0] == plan.index[1][0, 0]
    for job, ix in zip([a, b], plan.index, strict=True):
        for i, cut in enumerate(job.cuts):
            for k, ans in enumerate(job.answers):
                req = plan.requests[ix[i, k]]
                assert req.token_ids == job.tokens[:cut] + bridge + ans.span
                assert req.span_length == len(ans.span)


def test_sampling_kwargs_allow_prefix_cache_reads():
    kwargs = vllm_sampling_kwargs()
    assert kwargs["skip_reading_prefix_cache"] is False
    assert kwargs["prompt_logprobs"] == 0 and kwargs["max_tokens"] == 1 and kwargs["detokenize"] is False
    assert vllm_sampling_kwargs(read_prefix_cache=False)["skip_reading_prefix_cache"] is True


@dataclass
class _Logprob:
    logprob: float


def test_span_logprob_sum_reads_only_the_span():
    req = SpanRequest((5, 6, 7, 8, 9), 3)
    plp = [None, {6: _Logprob(-1.0)}, {7: _Logprob(-2.0)}, {8: _Logprob(-0.5)}, {9: _Logprob(-0.25)}]
    assert span_logprob_sum(plp, req, num_cached_tokens=2) == pytest.approx(-0.75)
    # a cache hit reaching the span: its rows were never computed
    assert span_logprob_sum(plp, req, num_cached_tokens=3) is None
    assert span_logprob_sum(plp, req, num_cached_tokens=None) is None
    # an unfilled row carries some other token id
    assert span_logprob_sum(plp[:3] + [{123: _Logprob(-0.1)}, plp[4]], req) is None
    assert span_logprob_sum(plp[:4], req) is None


class _FakeLLM:
    """A stand-in for ``vllm.LLM``: prompt logprobs from a HF model, with a block prefix cache that behaves like
    vLLM's (full blocks only, at most n−1 tokens, rows of cached tokens left unfilled)."""

    def __init__(self, model, block_size=4):
        self.model, self.block_size = model, block_size
        self.blocks: set[tuple[int, ...]] = set()
        self.calls = []

    def generate(self, prompts, params, use_tqdm=True):
        import torch

        params = params if isinstance(params, list) else [params] * len(prompts)
        self.calls.append((len(prompts), [p.kwargs["skip_reading_prefix_cache"] for p in params]))
        outputs = []
        for prompt, param in zip(prompts, params, strict=True):
            ids = prompt["prompt_token_ids"]
            hit = 0
            if not param.kwargs["skip_reading_prefix_cache"]:
                while hit + self.block_size <= len(ids) - 1 and tuple(ids[: hit + self.block_size]) in self.blocks:
                    hit += self.block_size
            with torch.no_grad():
                logits = self.model(input_ids=torch.tensor([ids])).logits[0].float()
            lp = torch.log_softmax(logits, dim=-1)
            plp = [None] + [
                {-1: _Logprob(0.0)} if t - 1 < hit else {ids[t]: _Logprob(float(lp[t - 1, ids[t]]))}
                for t in range(1, len(ids))
            ]
            for end in range(self.block_size, len(ids) + 1, self.block_size):
                self.blocks.add(tuple(ids[:end]))
            outputs.append(types.SimpleNamespace(prompt_logprobs=plp, num_cached_tokens=hit))
        return outputs


@pytest.mark.slow
@pytest.mark.parametrize("planned", [True, False])
def test_vllm_scorer_matches_naive_with_a_simulated_engine(tiny_model, tiny_tokenizer, monkeypatch, planned):
    """With the cache plan, no request reads into its span (no re-run); without it (every request reads), the
    ``num_cached_tokens`` guard catches the ones that did and re-runs them: the scores are right either way."""
    import learners.contrastive.scoring as scoring

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=SamplingParams))
    if not planned:
        monkeypatch.setattr(scoring, "plan_cache_reads", lambda requests, *a, **k: [True] * len(requests))
    jobs = _jobs(tiny_tokenizer, n_rollouts=3, seed=2)
    llm = _FakeLLM(tiny_model)
    llm.llm_engine = types.SimpleNamespace(
        vllm_config=types.SimpleNamespace(cache_config=types.SimpleNamespace(block_size=llm.block_size))
    )
    scorer = VLLMScorer(llm)
    got = scorer.score(jobs)
    reference = NaiveScorer(tiny_model).score(jobs)
    for ref, g in zip(reference, got, strict=True):
        np.testing.assert_allclose(g, ref, atol=1e-4, rtol=0)
    assert llm.calls[0][0] == len(jobs)  # the warm-up call: each rollout's longest prefix
    stats = scorer.last_stats
    assert 0 < stats["cached_tokens"] < stats["prompt_tokens"]
    if planned:
        assert stats["reruns"] == 0 and 0 < stats["reads_off"] < stats["requests"]
    else:
        assert stats["reads_off"] == 0 and 0 < stats["reruns"] < stats["requests"]
        assert all(skip for skip in llm.calls[-1][1])  # the re-runs read nothing


def test_cache_plan_turns_reads_off_only_where_a_hit_could_reach_the_span():
    from learners.contrastive.scoring import plan_cache_reads

    shared = tuple(range(10, 18))  # two full blocks of 4
    a = SpanRequest(shared + (1, 2), 8)  # span (1, 2) after the shared 8 tokens
    b = SpanRequest(shared + (1, 3), 9)  # its span starts at 9; a cached the block ending at 8, hit 8 <= 8: fine
    c = SpanRequest(shared + (1, 2, 3, 4, 5), 6)  # span starts at 6: the hit of 8 tokens reaches it
    assert plan_cache_reads([a, b, c], block_size=4) == [True, True, False]
    # resident sequences (what the engine generated) count as cached
    assert plan_cache_reads([a], block_size=4, resident=[shared + (1, 2, 9, 9)]) == [False]  # 8 cached > 8 - 1
    assert plan_cache_reads([a], block_size=4, resident=[shared[:4] + (7, 7, 7, 7)]) == [True]  # 4 cached
    assert plan_cache_reads([SpanRequest(shared, 5)], block_size=4, resident=[shared]) == [True]  # hit capped at 4
    assert plan_cache_reads([SpanRequest(shared + (0,), 5)], block_size=4, resident=[shared]) == [False]
