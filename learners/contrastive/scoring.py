"""Scorer engines for the shaping post's potential: ℓ(a | x, s_1:n) for every rollout × scoring point × answer.

What is scored
--------------
A :class:`ScoringJob` is one rollout: its ``tokens`` (prompt ids followed by completion ids), the prefix lengths
``cuts`` at which the potential is measured (prompt + completion[:k] for each paragraph boundary k), the
``bridge`` the policy writes between its reasoning and its answer (``"</reasoning>\\n<solution>"``) and the
``answers`` of the group's bank, each tokenized as ``answer + "</solution>"`` (the answer verbatim). For every
cut c and answer a the engines return

    ℓ(a | x, s_1:n) = Σ_{t ∈ span} log p_φ(y_t | y_<t),    y = tokens[:c] ++ bridge ++ span(a)

i.e. the summed log-probability of the answer's tokens *and its closing tag* as the policy would write them right
after the prefix. The closing tag makes ℓ the probability of exactly ``a`` (not of any answer starting with
``a``). The bridge tokens are conditioned on but not summed: they are the same for every answer at a given
prefix, so log p(bridge) would add one constant to all of them, which LSE_τ passes through and Φ cancels.

Engines (all return, per job, a float64 array of shape ``(len(cuts), len(answers))``)
-------------------------------------------------------------------------------------
(a) :class:`NaiveScorer` — one forward pass per rollout × cut × answer over the whole sequence. The reference.
(b) :class:`PrefixSharedScorer` — one forward per rollout (batched, right-padded) builds the KV cache of the
    longest prefix needed; then every (cut, answer-set) continuation is scored against that cache without
    recomputing any prefix token. A continuation is a small tree: the bridge once, then the answers as a token
    trie (answers sharing leading tokens share them); it is fed as one row whose 4-D attention mask lets each
    node see the cached prefix up to its cut and its own ancestors, with position ids ``cut + depth``. Rows are
    sorted by cut and batched (a batch holds prefixes within ``kv_slack`` of each other, since its rows attend
    over its longest one); each batch copies its rows' cached prefixes once into a KV buffer that the
    continuation's keys and values are written after. Identical (prefix, answers) pieces — the empty-prefix
    point Φ_0 of every rollout of a group — are scored once. Needs a full-attention model with ``sdpa`` or
    ``eager`` attention.
(c) :class:`VLLMScorer` — batched vLLM ``prompt_logprobs`` requests (``max_tokens=1``, ``prompt_logprobs=0``,
    ``detokenize=False``) with ``skip_reading_prefix_cache=False``: vLLM turns prefix-cache reads off for any
    request asking for prompt logprobs (``SamplingParams.__post_init__`` sets the flag to
    ``prompt_logprobs is not None`` when left unset), because the logits of cached tokens are never computed —
    their rows of the prompt-logprob tensor are left unfilled (``gpu_model_runner._get_prompt_logprobs_dict``
    fills from ``num_computed_tokens`` on). Only the span's logprobs are needed, so reads are allowed: the
    longest prefix of each rollout is sent first to warm the cache, the rest follow, and a request whose cache
    hit reached into its span (``RequestOutput.num_cached_tokens`` ≥ span start, possible when two answers
    share a full cache block) is re-run with reads off. Only the span's summed logprob is returned.
    Requests are deduplicated. vLLM is imported lazily (GPU only); :func:`build_span_requests` and
    :func:`span_logprob_sum` are pure and unit-tested on CPU.

Engines (a) and (b) take any ``transformers`` causal LM; the scorer is *frozen* (a separate model, e.g. the SFT
checkpoint) or *moving* (the policy itself) — the engines only run it under ``torch.no_grad`` in eval mode.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ENGINES = ("naive", "prefix_shared", "vllm")


@dataclass(frozen=True)
class ScoringJob:
    """One rollout's scoring work (see the module docstring)."""

    tokens: tuple[int, ...]
    cuts: tuple[int, ...]
    bridge: tuple[int, ...]
    answers: tuple[tuple[int, ...], ...]

    def __post_init__(self):
        object.__setattr__(self, "tokens", tuple(int(t) for t in self.tokens))
        object.__setattr__(self, "cuts", tuple(int(c) for c in self.cuts))
        object.__setattr__(self, "bridge", tuple(int(t) for t in self.bridge))
        object.__setattr__(self, "answers", tuple(tuple(int(t) for t in a) for a in self.answers))
        if not self.bridge:
            raise ValueError("the bridge must hold at least one token (e.g. the answer's opening tag)")
        if any(len(a) == 0 for a in self.answers):
            raise ValueError("every answer span must hold at least one token")
        for c in self.cuts:
            if not 1 <= c <= len(self.tokens):
                raise ValueError(f"cut {c} outside [1, {len(self.tokens)}] (a prefix needs at least one token)")


def answer_format(tokenizer, reasoning_tag: str = "reasoning", answer_tag: str = "solution"):
    """``(bridge_ids, encode_answer)`` for the tag format: the bridge ``</reasoning>\\n<solution>`` and a function
    mapping an answer string, verbatim (whitespace as the policy wrote it inside the tags), to the ids of
    ``answer + "</solution>"`` (tokenized without special tokens)."""
    bridge = tuple(tokenizer.encode(f"</{reasoning_tag}>\n<{answer_tag}>", add_special_tokens=False))
    close = f"</{answer_tag}>"

    def encode_answer(answer: str) -> tuple[int, ...]:
        return tuple(tokenizer.encode(answer + close, add_special_tokens=False))

    return bridge, encode_answer


# --------------------------------------------------------------------------------------------- helpers
def _network(model):
    """The module to call: a PEFT wrapper's base model (its LoRA layers live inside it), else the model itself."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def _forward_names(model) -> tuple[str, bool]:
    """The cache keyword of ``model.forward`` (transformers ≥ 5.2x says ``cache``, older ``past_key_values``) and
    whether it accepts ``logits_to_keep``."""
    params = inspect.signature(model.forward).parameters
    name = "cache" if "cache" in params else "past_key_values"
    return name, "logits_to_keep" in params


def _output_cache(output):
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _cache_layers(cache) -> list[tuple[Any, Any]]:
    return [(layer.keys, layer.values) for layer in cache.layers]


def _check_attention(model) -> None:
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in (None, "sdpa", "eager"):
        raise ValueError(
            f"PrefixSharedScorer needs 'sdpa' or 'eager' attention (custom 4-D masks), the model uses {impl!r}; "
            "load it with attn_implementation='sdpa'"
        )


class _EvalMode:
    """Run a model in eval mode (no dropout) and restore its training flag afterwards."""

    def __init__(self, model):
        self.model, self.was_training = model, model.training

    def __enter__(self):
        self.model.eval()

    def __exit__(self, *exc):
        self.model.train(self.was_training)


def _span_logprob(logits, ids, span_start: int) -> float:
    """Σ log p(ids[t] | ids[<t]) for t ≥ span_start, from (T, V) logits of the whole sequence."""
    import torch

    target = ids[span_start:]
    lp = torch.log_softmax(logits[span_start - 1 : len(ids) - 1].float(), dim=-1)
    return float(lp.gather(1, target[:, None]).sum())


# --------------------------------------------------------------------------------------------- engine (a)
class NaiveScorer:
    """Engine (a): one forward pass per rollout × cut × answer over the full sequence (the reference)."""

    name = "naive"

    def __init__(self, model):
        self.model = model

    def score(self, jobs: Sequence[ScoringJob]) -> list[np.ndarray]:
        import torch

        device = next(self.model.parameters()).device
        results = []
        with torch.no_grad(), _EvalMode(self.model):
            for job in jobs:
                out = np.zeros((len(job.cuts), len(job.answers)))
                for i, cut in enumerate(job.cuts):
                    for k, answer in enumerate(job.answers):
                        seq = job.tokens[:cut] + job.bridge + answer
                        ids = torch.tensor(seq, device=device)
                        logits = self.model(input_ids=ids[None], use_cache=False).logits[0]
                        out[i, k] = _span_logprob(logits, ids, len(seq) - len(answer))
                results.append(out)
        return results


# --------------------------------------------------------------------------------------------- engine (b)
@dataclass
class _Piece:
    """The continuation tree of one (prefix, answers) pair: bridge chain, then the answer trie below it."""

    job: int
    cut: int
    tokens: list[int]
    parents: list[int]  # index of the parent node, −1 for the first bridge token (its parent is the prefix)
    depths: list[int]
    answer_paths: list[list[int]]  # node indices of each answer's span tokens


def _build_piece(job_index: int, cut: int, bridge: Sequence[int], answers: Sequence[Sequence[int]]) -> _Piece:
    tokens, parents, depths = [], [], []
    for depth, tok in enumerate(bridge):
        tokens.append(tok)
        parents.append(depth - 1)
        depths.append(depth)
    root = len(bridge) - 1
    children: dict[tuple[int, int], int] = {}
    paths = []
    for answer in answers:
        node, path = root, []
        for tok in answer:
            key = (node, tok)
            if key not in children:
                children[key] = len(tokens)
                tokens.append(tok)
                parents.append(node)
                depths.append(depths[node] + 1)
            node = children[key]
            path.append(node)
        paths.append(path)
    return _Piece(job_index, cut, tokens, parents, depths, paths)


def _spliced_cache(prefix_kv, sources: list[int], kv_len: int, q: int):
    """A ``DynamicCache`` for a continuation batch, built with one copy of the cached prefixes.

    Each layer holds a (rows, heads, kv_len + q, dim) buffer whose first ``kv_len`` positions are row
    ``sources[r]``'s cached prefix; the forward pass writes the continuation's keys/values after them (instead of
    ``DynamicLayer``'s gather-then-concatenate, which copies the prefix twice).
    """
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class SplicedLayer(DynamicLayer):
        def __init__(self, keys, values):
            super().__init__()
            self.keys, self.values, self.is_initialized = keys, values, True
            self.device, self.dtype = keys.device, keys.dtype

        def update(self, key_states, value_states, *args, **kwargs):
            self.keys[:, :, kv_len:] = key_states
            self.values[:, :, kv_len:] = value_states
            return self.keys, self.values

        def get_seq_length(self) -> int:
            return kv_len

    device = prefix_kv[0][0].device
    groups: dict[int, list[int]] = {}
    for row, src in enumerate(sources):
        groups.setdefault(src, []).append(row)
    groups_t = {src: torch.tensor(rows, device=device) for src, rows in groups.items()}
    layers = []
    for k, v in prefix_kv:
        rows, heads, _, dim = len(sources), k.shape[1], k.shape[2], k.shape[3]
        keys = k.new_empty((rows, heads, kv_len + q, dim))
        values = v.new_empty((rows, v.shape[1], kv_len + q, v.shape[3]))
        for src, idx in groups_t.items():
            keys[idx, :, :kv_len] = k[src, :, :kv_len]
            values[idx, :, :kv_len] = v[src, :, :kv_len]
        layers.append(SplicedLayer(keys, values))
    cache = DynamicCache()
    cache.layers, cache.layer_class_to_replicate = layers, None
    return cache


class PrefixSharedScorer:
    """Engine (b): KV cache of each rollout built once, continuations scored from cached prefixes in batches.

    Args:
        model: a ``transformers`` causal LM with full attention and ``sdpa``/``eager`` attention.
        prefix_batch_size: rollouts whose prefixes are encoded in one forward pass (and whose cache is held).
        max_batch_tokens: bound on Σ over a continuation batch's rows of (cached prefix + continuation) tokens,
            which bounds the gathered KV copy and the logits of one batch.
        kv_slack: a continuation batch holds prefixes of lengths within ``(1 + kv_slack)`` × its shortest one
            (plus one continuation), since all its rows attend over its longest prefix.
    """

    name = "prefix_shared"

    def __init__(self, model, *, prefix_batch_size: int = 16, max_batch_tokens: int = 32768, kv_slack: float = 0.25):
        if prefix_batch_size < 1 or max_batch_tokens < 1 or kv_slack < 0:
            raise ValueError("prefix_batch_size and max_batch_tokens must be >= 1, kv_slack >= 0")
        self.model = model
        self.kv_slack = kv_slack
        self.prefix_batch_size = prefix_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.stats = {"prefix_tokens": 0, "continuation_tokens": 0, "forward_calls": 0, "pieces": 0}

    def score(self, jobs: Sequence[ScoringJob]) -> list[np.ndarray]:
        import torch

        _check_attention(_network(self.model))
        results = [np.zeros((len(j.cuts), len(j.answers))) for j in jobs]
        # Deduplicate (prefix, bridge, answers): every rollout of a group shares its empty-prefix point.
        unique: dict[tuple, int] = {}
        owners: list[list[tuple[int, int]]] = []  # piece -> [(job, cut row)]
        pieces: list[_Piece] = []
        for j, job in enumerate(jobs):
            for i, cut in enumerate(job.cuts):
                key = (job.tokens[:cut], job.bridge, job.answers)
                p = unique.get(key)
                if p is None:
                    p = unique[key] = len(pieces)
                    pieces.append(_build_piece(j, cut, job.bridge, job.answers))
                    owners.append([])
                owners[p].append((j, i))
        self.stats["pieces"] += len(pieces)

        by_job: dict[int, list[int]] = {}
        for p, piece in enumerate(pieces):
            by_job.setdefault(piece.job, []).append(p)
        job_ids = sorted(by_job)
        with torch.no_grad(), _EvalMode(self.model):
            for start in range(0, len(job_ids), self.prefix_batch_size):
                chunk = job_ids[start : start + self.prefix_batch_size]
                values = self._score_chunk(jobs, pieces, chunk, by_job)
                for p, vals in values.items():
                    for j, i in owners[p]:
                        results[j][i] = vals
        return results

    def _plan_batches(self, pieces: list[_Piece], members: list[int]) -> list[list[int]]:
        """Group pieces into continuation batches: sorted by cut, each batch charged rows × (longest cut + longest
        continuation) against ``max_batch_tokens``. A batch also closes when a cut exceeds its first cut by more
        than ``kv_slack``: every row attends over the batch's longest cut (masked beyond its own), so mixing short
        and long prefixes would waste attention."""
        batches: list[list[int]] = []
        current: list[int] = []
        longest_q = 0
        for p in sorted(members, key=lambda p: pieces[p].cut):
            cut, q = pieces[p].cut, len(pieces[p].tokens)
            if current:
                first = pieces[current[0]].cut
                too_big = (len(current) + 1) * (cut + max(q, longest_q)) > self.max_batch_tokens
                if too_big or cut > first * (1 + self.kv_slack) + q:
                    batches.append(current)
                    current, longest_q = [], 0
            current.append(p)
            longest_q = max(longest_q, q)
        if current:
            batches.append(current)
        return batches

    # one prefix forward for the chunk's rollouts, then their continuation batches
    def _score_chunk(self, jobs, pieces, chunk, by_job) -> dict[int, np.ndarray]:
        import torch

        model = _network(self.model)
        device = next(model.parameters()).device
        cache_kw, has_keep = _forward_names(model)
        lengths = [max(pieces[p].cut for p in by_job[j]) for j in chunk]
        width = max(lengths)
        ids = torch.zeros((len(chunk), width), dtype=torch.long, device=device)
        mask = torch.zeros((len(chunk), width), dtype=torch.long, device=device)
        for r, (j, n) in enumerate(zip(chunk, lengths, strict=True)):
            ids[r, :n] = torch.tensor(jobs[j].tokens[:n], device=device)
            mask[r, :n] = 1
        kwargs = {"logits_to_keep": 1} if has_keep else {}
        out = model(input_ids=ids, attention_mask=mask, use_cache=True, **kwargs)
        prefix_kv = _cache_layers(_output_cache(out))
        del out
        self.stats["prefix_tokens"] += int(sum(lengths))
        self.stats["forward_calls"] += 1
        row_of_job = {j: r for r, j in enumerate(chunk)}

        batches = self._plan_batches(pieces, [p for j in chunk for p in by_job[j]])

        dtype = prefix_kv[0][0].dtype
        values: dict[int, np.ndarray] = {}
        for batch in batches:
            rows = [pieces[p] for p in batch]
            n_rows, q = len(rows), max(len(r.tokens) for r in rows)
            kv_len = max(r.cut for r in rows)
            cache = _spliced_cache(prefix_kv, [row_of_job[r.job] for r in rows], kv_len, q)
            allowed = np.zeros((n_rows, q, kv_len + q), dtype=bool)
            input_ids = np.zeros((n_rows, q), dtype=np.int64)
            positions = np.zeros((n_rows, q), dtype=np.int64)
            for r, piece in enumerate(rows):
                n = len(piece.tokens)
                allowed[r, :, : piece.cut] = True
                ancestors = np.zeros((n, n), dtype=bool)
                for i, parent in enumerate(piece.parents):  # parents precede children
                    if parent >= 0:
                        ancestors[i] = ancestors[parent]
                    ancestors[i, i] = True
                allowed[r, :n, kv_len : kv_len + n] = ancestors
                pad = np.arange(n, q)
                allowed[r, pad, :] = False
                allowed[r, pad, kv_len + pad] = True  # padding rows attend to themselves only (no NaN)
                input_ids[r, :n] = piece.tokens
                positions[r, :n] = piece.cut + np.asarray(piece.depths)
                positions[r, n:] = piece.cut
            bias = torch.zeros(allowed.shape, dtype=dtype, device=device)
            bias.masked_fill_(~torch.from_numpy(allowed).to(device), torch.finfo(dtype).min)
            logits = model(
                input_ids=torch.from_numpy(input_ids).to(device),
                attention_mask=bias[:, None],
                position_ids=torch.from_numpy(positions).to(device),
                use_cache=True,
                **{cache_kw: cache},
            ).logits
            self.stats["continuation_tokens"] += int(sum(len(r.tokens) for r in rows))
            self.stats["forward_calls"] += 1
            # log p(node) is read from its parent's output; only answer-span nodes are scored
            row_idx, parent_idx, token_idx, node_slots = [], [], [], []
            for r, piece in enumerate(rows):
                scored = sorted({node for path in piece.answer_paths for node in path})
                slot = {node: len(row_idx) + s for s, node in enumerate(scored)}
                row_idx += [r] * len(scored)
                parent_idx += [piece.parents[node] for node in scored]
                token_idx += [piece.tokens[node] for node in scored]
                node_slots.append(slot)
            sel = logits[torch.tensor(row_idx, device=device), torch.tensor(parent_idx, device=device)].float()
            tok = torch.tensor(token_idx, device=device)
            node_lp = (sel.gather(1, tok[:, None])[:, 0] - torch.logsumexp(sel, dim=-1)).double().cpu().numpy()
            for p, piece, slot in zip(batch, rows, node_slots, strict=True):
                values[p] = np.array([node_lp[[slot[n] for n in path]].sum() for path in piece.answer_paths])
            del logits, sel, cache
        return values


# --------------------------------------------------------------------------------------------- engine (c)
@dataclass(frozen=True)
class SpanRequest:
    """One vLLM prompt: ``token_ids`` = prefix ++ bridge ++ span; the span is ``token_ids[span_start:]``."""

    token_ids: tuple[int, ...]
    span_start: int

    @property
    def span_length(self) -> int:
        return len(self.token_ids) - self.span_start


@dataclass(frozen=True)
class SpanRequestPlan:
    """The deduplicated requests of a scoring call: ``requests[:warm]`` (each rollout's longest prefix) are sent
    first to fill vLLM's prefix cache; ``index[j][i, k]`` is the request scoring answer k at cut i of job j."""

    requests: list[SpanRequest]
    index: list[np.ndarray]
    warm: int


def build_span_requests(jobs: Sequence[ScoringJob]) -> SpanRequestPlan:
    """Deduplicated requests for all jobs, the longest prefix of each rollout first (see :class:`SpanRequestPlan`)."""
    seen: dict[tuple[int, ...], int] = {}
    requests: list[SpanRequest] = []
    index = [np.zeros((len(j.cuts), len(j.answers)), dtype=np.int64) for j in jobs]
    # warm-up order: each job's longest cut (with its first answer) before everything else
    order = [(j, int(np.argmax(job.cuts)), 0) for j, job in enumerate(jobs) if job.cuts and job.answers]
    rest = [(j, i, k) for j, job in enumerate(jobs) for i in range(len(job.cuts)) for k in range(len(job.answers))]
    warm = 0
    for n, (j, i, k) in enumerate(order + rest):
        if n == len(order):
            warm = len(requests)
        job = jobs[j]
        prefix = job.tokens[: job.cuts[i]] + job.bridge
        ids = prefix + job.answers[k]
        r = seen.get(ids)
        if r is None:
            r = seen[ids] = len(requests)
            requests.append(SpanRequest(ids, len(prefix)))
        index[j][i, k] = r
    return SpanRequestPlan(requests, index, warm if rest else len(requests))


def vllm_sampling_kwargs(*, read_prefix_cache: bool = True) -> dict[str, Any]:
    """``vllm.SamplingParams`` keywords of a scoring request: one dummy output token, the logprob of each prompt
    token (``prompt_logprobs=0``: the actual token only), no detokenization (cached rows are never decoded)."""
    return dict(
        max_tokens=1,
        temperature=0.0,
        prompt_logprobs=0,
        detokenize=False,
        skip_reading_prefix_cache=not read_prefix_cache,
    )


def span_logprob_sum(prompt_logprobs, request: SpanRequest, num_cached_tokens: int | None = 0) -> float | None:
    """The summed logprob of the request's span from a vLLM ``RequestOutput.prompt_logprobs`` list.

    ``prompt_logprobs[t]`` maps token ids to objects with a ``.logprob`` (entry 0 is ``None``). Returns ``None``
    when the span cannot be trusted: the prefix-cache hit reached the span (its rows were never computed), the
    list is too short, or an entry lacks the prompt token — the caller then re-runs the request with reads off.
    """
    if num_cached_tokens is None or num_cached_tokens > request.span_start - 1:
        return None
    if prompt_logprobs is None or len(prompt_logprobs) < len(request.token_ids):
        return None
    total = 0.0
    for t in range(request.span_start, len(request.token_ids)):
        entry = prompt_logprobs[t]
        lp = None if entry is None else entry.get(request.token_ids[t])
        if lp is None:
            return None
        total += float(getattr(lp, "logprob", lp))
    return total


class VLLMScorer:
    """Engine (c): deduplicated, batched vLLM prompt-logprob requests that read the prefix cache.

    ``llm`` is a ``vllm.LLM`` created with ``enable_prefix_caching=True`` (the policy's colocated engine for a
    moving scorer, or a second engine on the frozen checkpoint).
    """

    name = "vllm"

    def __init__(self, llm):
        self.llm = llm
        self.stats = {"requests": 0, "reruns": 0}

    def _run(self, requests: Sequence[SpanRequest], read_prefix_cache: bool):
        from vllm import SamplingParams

        params = SamplingParams(**vllm_sampling_kwargs(read_prefix_cache=read_prefix_cache))
        prompts = [{"prompt_token_ids": list(r.token_ids)} for r in requests]
        return self.llm.generate(prompts, params, use_tqdm=False)

    def score(self, jobs: Sequence[ScoringJob]) -> list[np.ndarray]:
        plan = build_span_requests(jobs)
        requests, index = plan.requests, plan.index
        if not requests:
            return [np.zeros((len(j.cuts), len(j.answers))) for j in jobs]
        outputs = list(self._run(requests[: plan.warm], True))
        if plan.warm < len(requests):
            outputs += list(self._run(requests[plan.warm :], True))
        sums: list[float | None] = [
            span_logprob_sum(o.prompt_logprobs, r, getattr(o, "num_cached_tokens", None))
            for o, r in zip(outputs, requests, strict=True)
        ]
        redo = [i for i, s in enumerate(sums) if s is None]
        if redo:
            for i, o in zip(redo, self._run([requests[i] for i in redo], False), strict=True):
                sums[i] = span_logprob_sum(o.prompt_logprobs, requests[i], 0)
                if sums[i] is None:
                    raise RuntimeError("vLLM returned no prompt logprobs for a scoring request with cache reads off")
        self.stats["requests"] += len(requests)
        self.stats["reruns"] += len(redo)
        table = np.asarray(sums, dtype=np.float64)
        return [table[ix] for ix in index]


def make_scorer(engine: str, model=None, *, llm=None, **kwargs):
    """Build an engine by name: ``"naive"``, ``"prefix_shared"`` (needs ``model``) or ``"vllm"`` (needs ``llm``)."""
    if engine == "naive":
        return NaiveScorer(model)
    if engine == "prefix_shared":
        return PrefixSharedScorer(model, **kwargs)
    if engine == "vllm":
        if llm is None:
            raise ValueError("the vllm scorer needs a vllm.LLM instance")
        return VLLMScorer(llm)
    raise ValueError(f"unknown scorer engine {engine!r}; choose one of {ENGINES}")
