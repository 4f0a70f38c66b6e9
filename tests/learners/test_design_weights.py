"""PS-PPO's forward-only design weights: score-norm proxy, head capture, reward-uncertainty bound."""

from __future__ import annotations

import pytest
import torch

from learners.ps_ppo.design_weights import design_weights, head_statistics, reward_uncertainty_bound, score_norm_proxy


def test_score_norm_proxy_equals_output_head_gradient_norm():
    torch.manual_seed(0)
    n, d, v = 7, 5, 11
    hidden = torch.randn(n, d, dtype=torch.float64)
    weight = torch.randn(v, d, dtype=torch.float64) * 2
    tokens = torch.randint(0, v, (n,))
    expected = []
    for i in range(n):
        w = weight.clone().requires_grad_(True)
        torch.log_softmax(hidden[i] @ w.T, dim=-1)[tokens[i]].backward()
        expected.append(w.grad.pow(2).sum())
    proxy = score_norm_proxy(hidden, hidden @ weight.T, tokens)
    torch.testing.assert_close(proxy, torch.stack(expected), rtol=1e-10, atol=1e-12)


def test_sum_of_squared_probabilities_is_stable_for_large_logits():
    logits = torch.tensor([[300.0, 299.0, -50.0, 10.0]])
    hidden = torch.ones(1, 2)
    p = torch.softmax(logits.double(), dim=-1)
    expected = 2 * (1 - 2 * p[0, 1] + p.pow(2).sum())
    proxy = score_norm_proxy(hidden, logits, torch.tensor([1]))
    assert torch.isfinite(proxy).all()
    torch.testing.assert_close(proxy.double()[0], expected, rtol=1e-4, atol=1e-6)  # float32 arithmetic


def test_score_norm_proxy_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="shape mismatch"):
        score_norm_proxy(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


def test_head_statistics_without_rows_leaves_no_hook_behind():
    # A process may hold no rows of the groups that need proxies; the head must not keep capturing afterwards.
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm_head = torch.nn.Linear(4, 10, bias=False)

        def get_output_embeddings(self):
            return self.lm_head

    model = Head()
    empty = torch.zeros(0, 6, dtype=torch.long)
    proxy, top_probs, top_ids = head_statistics(model, empty[:, :3], empty[:, :3], empty, empty, top_k=4)
    assert proxy.shape == (0, 6) and top_probs.shape == (0, 6, 4) and top_ids.shape == (0, 6, 4)
    assert not model.lm_head._forward_hooks


@pytest.mark.slow
def test_head_statistics_on_tiny_model_match_autograd(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    torch.manual_seed(0)
    prompt_ids = torch.randint(3, 80, (3, 5))
    completion_ids = torch.randint(3, 80, (3, 9))
    prompt_mask = torch.ones_like(prompt_ids)
    completion_mask = torch.ones_like(completion_ids)
    completion_mask[1, 6:] = 0
    completion_mask[2, 2:] = 0
    proxy, top_probs, top_ids = head_statistics(
        model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=0.7, top_k=4, batch_size=2
    )
    assert proxy.shape == (3, 9) and top_probs.shape == (3, 9, 4) and top_ids.shape == (3, 9, 4)
    # A tiny logit budget forces one row per forward and 3-position chunks: same numbers.
    chunked = head_statistics(
        model,
        prompt_ids,
        prompt_mask,
        completion_ids,
        completion_mask,
        temperature=0.7,
        top_k=4,
        max_logit_elements=330,
    )
    for a, b in zip(chunked, (proxy, top_probs, top_ids), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert (proxy[completion_mask == 0] == 0).all() and (top_probs[completion_mask == 0] == 0).all()
    sums = top_probs.sum(-1)[completion_mask == 1]
    torch.testing.assert_close(sums, torch.ones_like(sums))

    # Reference: the last hidden state (input of lm_head) and autograd through the head weight only.
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    with torch.no_grad():
        out = model(
            input_ids=input_ids, attention_mask=torch.cat([prompt_mask, completion_mask], 1), output_hidden_states=True
        )
    hidden = out.hidden_states[-1][:, 4:-1]  # positions predicting the completion tokens
    head = model.get_output_embeddings().weight.detach()
    for row, t in [(0, 0), (0, 8), (1, 5), (2, 1)]:
        w = head.clone().requires_grad_(True)
        logp = torch.log_softmax((hidden[row, t] @ w.T) / 0.7, dim=-1)[completion_ids[row, t]]
        logp.backward()
        # head_statistics leaves out the uniform 1/τ² factor of the score (it does not change ξ).
        expected = w.grad.pow(2).sum() * 0.7**2
        torch.testing.assert_close(proxy[row, t], expected, rtol=1e-4, atol=1e-6)
        reference = torch.softmax(out.logits[row, 4 + t] / 0.7, dim=-1).topk(4)
        torch.testing.assert_close(top_ids[row, t], reference.indices)
        torch.testing.assert_close(top_probs[row, t], reference.values / reference.values.sum())


def test_uncertainty_bound_on_exact_two_step_process():
    # a1 ~ U{0,1}; P(a2 = 1 | a1=0) = 3/4, P(a2 = 1 | a1=1) = 1/4; R = [a2 = 1]. Eight rows in exact proportion.
    rows = [(0, 1), (0, 1), (0, 1), (0, 0), (1, 1), (1, 0), (1, 0), (1, 0)]
    probs = torch.zeros(8, 3, 2)
    for i, (a1, _) in enumerate(rows):
        probs[i, 0] = torch.tensor([0.5, 0.5])
        probs[i, 1] = torch.tensor([0.25, 0.75]) if a1 == 0 else torch.tensor([0.75, 0.25])
    ids = torch.tensor([0, 1]).expand(8, 3, 2).clone()
    mask = torch.tensor([[1.0, 1.0, 0.0]]).expand(8, 3)  # two tokens, then ended
    success = torch.tensor([a2 == 1 for _, a2 in rows])
    bound = reward_uncertainty_bound(probs, ids, success, mask, num_generations=8)
    # t=1: ½(1 − 0) = 0.5 ≥ Var R = 0.25; t=2: ½(1 − 2/8) = 0.375 ≥ E Var(R|a1) = 0.1875; ended: 0 = 0.
    torch.testing.assert_close(bound, torch.tensor([[0.5, 0.375, 0.0]]))
    exact = torch.tensor([0.25, 0.1875, 0.0])
    assert (bound[0] >= exact).all()


def test_uncertainty_bound_is_zero_for_homogeneous_groups():
    torch.manual_seed(1)
    probs = torch.rand(8, 6, 4)
    ids = torch.randint(0, 50, (8, 6, 4))
    mask = torch.ones(8, 6)
    mask[3, 4:] = 0
    for value in (True, False):
        bound = reward_uncertainty_bound(probs, ids, torch.full((8,), value), mask, num_generations=4)
        torch.testing.assert_close(bound, torch.zeros(2, 6))


def _dense_bound(probs, ids, success, mask, k):
    """Loop reference: per group and step, L1 of signed sums of the renormalised top-k distributions."""
    n, width, _ = probs.shape
    vocab = int(ids.max()) + 3
    out = torch.zeros(n // k, width)
    for g in range(n // k):
        for t in range(width):
            dense = torch.zeros(vocab, dtype=torch.float64)
            for i in range(g * k, (g + 1) * k):
                sign = 1.0 if success[i] else -1.0
                if mask[i, t]:
                    p = probs[i, t].double() / probs[i, t].double().sum()
                    for j in range(probs.size(2)):
                        dense[ids[i, t, j]] += sign * p[j]
                else:
                    dense[vocab - 2 if success[i] else vocab - 1] += sign
            out[g, t] = max(0.0, 0.5 * (1 - dense.abs().sum().item() / k))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_uncertainty_bound_matches_dense_reference(seed):
    gen = torch.Generator().manual_seed(seed)
    n, width, k, top = 12, 5, 4, 3
    probs = torch.rand(n, width, top, generator=gen)
    ids = torch.stack([torch.randperm(9, generator=gen)[:top] for _ in range(n * width)]).view(n, width, top)
    mask = (torch.arange(width).unsqueeze(0) < torch.randint(1, width + 1, (n, 1), generator=gen)).float()
    success = torch.rand(n, generator=gen) < 0.5
    bound = reward_uncertainty_bound(probs, ids, success, mask, num_generations=k)
    torch.testing.assert_close(bound, _dense_bound(probs, ids, success, mask, k), rtol=1e-5, atol=1e-6)
    assert (bound >= 0).all() and (bound <= 0.5).all()


def test_uncertainty_bound_rejects_bad_groups():
    with pytest.raises(ValueError, match="groups of 3"):
        reward_uncertainty_bound(
            torch.rand(4, 2, 2), torch.zeros(4, 2, 2, dtype=torch.long), torch.ones(4), torch.ones(4, 2), 3
        )


def test_design_weights_average_running_rows_per_group():
    proxy = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    uncertainty = torch.tensor([[0.5, 0.25], [0.0, 1.0]])
    w = design_weights(proxy, uncertainty, mask, num_generations=2)
    torch.testing.assert_close(w, torch.tensor([[0.5 * 2.0, 0.25 * 1.0], [0.0, 7.0]]))
