"""Tests of learners.t_spmo.prefix_trie: hand-built tries with known advantages, a dict-based reference, validation."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.t_spmo.prefix_trie import prefix_advantages

PAD = 0


def _batch(rows: list[list[int]]):
    """Right-padded (B, T) ids and prefix mask from ragged rows."""
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids, mask


def _reference(rows, rewards, groups, starts):
    """Plain dict trie: node statistics, advantages, representative = lowest contributing row index."""
    count, total = defaultdict(int), defaultdict(float)
    for i, row in enumerate(rows):
        if math.isnan(rewards[i]):
            continue
        for depth in range(starts[i], len(row) + 1):
            key = (groups[i], tuple(row[:depth]))
            count[key] += 1
            total[key] += rewards[i]
    adv, loss = {}, set()
    seen = set()
    for i, row in enumerate(rows):
        for t in range(len(row)):
            node, parent = (groups[i], tuple(row[: t + 1])), (groups[i], tuple(row[:t]))
            if count[node] and count[parent]:
                adv[i, t] = total[node] / count[node] - total[parent] / count[parent]
                contributes = not math.isnan(rewards[i]) and t + 1 >= starts[i]
                if contributes and node not in seen:
                    seen.add(node)
                    loss.add((i, t))
    return adv, loss


def _check_against_reference(rows, rewards, groups, starts=None):
    starts = starts or [0] * len(rows)
    ids, mask = _batch(rows)
    result = prefix_advantages(
        ids,
        torch.tensor(rewards, dtype=torch.float64),
        mask,
        group_ids=torch.tensor(groups),
        start_positions=torch.tensor(starts),
    )
    adv, loss = _reference(rows, rewards, groups, starts)
    got_loss = {tuple(x) for x in torch.nonzero(result.loss_mask).tolist()}
    assert got_loss == loss
    for i in range(len(rows)):
        for t in range(ids.shape[1]):
            expected = adv.get((i, t), 0.0)
            assert result.advantages[i, t].item() == pytest.approx(expected, abs=1e-6), (i, t)
    return result


def test_shared_prefix_hand_built():
    # a b c (R=1), a b d (R=0), a e (R=0): root mean 1/3
    rows = [[5, 6, 7], [5, 6, 8], [5, 9]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor([1.0, 0.0, 0.0]), mask)
    expected = torch.tensor([[0.0, 1 / 6, 1 / 2], [0.0, 1 / 6, -1 / 2], [0.0, -1 / 3, 0.0]])
    torch.testing.assert_close(result.advantages, expected)
    # each unique transition once: (∅,a) (a,b) (ab,c) by row 0, (ab,d) by row 1, (a,e) by row 2
    assert result.loss_mask.tolist() == [[1, 1, 1], [0, 0, 1], [0, 1, 0]]
    assert result.node_counts.tolist() == [[3, 2, 1], [3, 2, 1], [3, 1, 0]]
    assert result.parent_counts.tolist() == [[3, 3, 2], [3, 3, 2], [3, 3, 0]]
    stats = result.stats
    assert stats.num_transitions == 5 and stats.num_tokens == 8
    assert stats.singleton_share == pytest.approx(3 / 5)
    assert stats.zero_advantage_share == pytest.approx(1 / 5)
    assert stats.max_branch_depth == 2  # node "a b" has two children
    assert stats.loss_token_share == pytest.approx(5 / 8)


def test_all_equal_rewards_give_exact_zeros():
    rows = [[1, 2, 3], [1, 2, 4], [1, 5], [6]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.full((4,), 0.1), mask)  # 0.1 is not exact in binary
    assert torch.count_nonzero(result.advantages) == 0
    assert result.loss_mask.sum().item() == 6  # nodes 1, 12, 123, 124, 15, 6
    assert result.stats.zero_advantage_share == 1.0


def test_singletons_are_reward_minus_group_mean():
    rows = [[1, 2], [3, 4], [5, 6, 7], [8]]
    rewards = [1.0, 0.0, 0.5, 0.0]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor(rewards), mask)
    mean = sum(rewards) / 4
    for i, row in enumerate(rows):
        assert result.advantages[i, 0].item() == pytest.approx(rewards[i] - mean)
        assert torch.all(result.advantages[i, 1 : len(row)] == 0)  # deeper nodes: same single completion
    assert result.stats.singleton_share == 1.0
    assert result.stats.max_branch_depth == 0  # only the root branches


def test_shorter_completion_that_is_a_prefix_of_another():
    rows = [[1, 2], [1, 2, 3]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor([0.0, 1.0]), mask)
    assert result.node_counts[1].tolist() == [2, 2, 1]
    assert result.advantages[1, 2].item() == pytest.approx(0.5)
    assert result.loss_mask.tolist() == [[1, 1, 0], [0, 0, 1]]


def test_groups_are_separate_tries():
    rows = [[1, 2], [1, 3], [1, 2], [1, 3]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor([1.0, 0.0, 0.0, 1.0]), mask, group_size=2)
    assert result.advantages[:, 1].tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5])
    assert result.loss_mask.sum().item() == 6  # 3 transitions per group
    assert result.stats.num_groups == 2


def test_group_ids_in_any_order_match_contiguous_groups():
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(1, 4, size=rng.integers(1, 6))) for _ in range(12)]
    rewards = rng.random(12)
    ids, mask = _batch(rows)
    base = prefix_advantages(ids, torch.tensor(rewards), mask, group_size=4)
    perm = rng.permutation(12)
    shuffled = prefix_advantages(
        ids[perm], torch.tensor(rewards[perm]), mask[perm], group_ids=torch.tensor(np.arange(12) // 4)[perm]
    )
    torch.testing.assert_close(shuffled.advantages, base.advantages[perm])
    torch.testing.assert_close(shuffled.node_counts, base.node_counts[perm])
    assert shuffled.loss_mask.sum() == base.loss_mask.sum()


def test_nan_reward_rows_are_left_out():
    rows = [[1, 2], [1, 3], [1, 4]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor([1.0, 0.0, float("nan")]), mask)
    assert result.loss_mask[2].sum().item() == 0
    assert result.advantages[0, 1].item() == pytest.approx(0.5)
    assert result.node_counts[0, 0].item() == 2
    assert result.stats.num_completions == 2


def test_replayed_rows_contribute_from_their_restart_depth():
    # row 2 replays prefix [1, 2] (start 2) and continues with 5; it counts for node "1 2" and below only
    rows = [[1, 2, 3], [1, 4], [1, 2, 5]]
    rewards = [0.0, 0.0, 1.0]
    result = _check_against_reference(rows, rewards, [0, 0, 0], [0, 0, 2])
    assert result.node_counts[0].tolist() == [2, 2, 1]  # node "1": rows 0, 1; node "1 2": rows 0, 2
    assert result.advantages[0, 1].item() == pytest.approx(0.5 - 0.0)  # E[R|12] - E[R|1]
    assert result.advantages[2, 2].item() == pytest.approx(0.5)  # E[R|125] - E[R|12]
    assert result.loss_mask[2].tolist() == [0, 0, 1]


def test_replayed_row_alone_on_its_prefix_has_no_defined_prefix_transitions():
    rows = [[7, 8, 9], [1]]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor([1.0, 0.0]), mask, start_positions=torch.tensor([2, 0]))
    assert result.loss_mask[0].tolist() == [0, 0, 1]
    assert result.advantages[0, :2].tolist() == [0.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.lists(st.integers(1, 3), min_size=0, max_size=6),
            st.sampled_from([0.0, 1.0, 0.25, float("nan")]),
            st.integers(0, 2),
            st.integers(0, 3),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_matches_dict_reference(data):
    rows = [list(r) for r, _, _, _ in data]
    rewards = [w for _, w, _, _ in data]
    groups = [g for _, _, g, _ in data]
    starts = [min(s, len(r)) for r, _, _, s in data]
    if not any(rows):
        rows[0] = [1]
    _check_against_reference(rows, rewards, groups, starts)


def test_each_unique_transition_once_on_random_batch():
    rng = np.random.default_rng(1)
    rows = [list(rng.integers(1, 3, size=8)) for _ in range(64)]
    ids, mask = _batch(rows)
    result = prefix_advantages(ids, torch.tensor(rng.random(64)), mask, group_size=16)
    keys = [(i // 16, tuple(rows[i][: t + 1])) for i, t in torch.nonzero(result.loss_mask).tolist()]
    assert len(keys) == len(set(keys))
    every = {(i // 16, tuple(rows[i][: t + 1])) for i in range(64) for t in range(8)}
    assert set(keys) == every


def test_device_and_dtypes():
    ids, mask = _batch([[1, 2], [1]])
    result = prefix_advantages(ids, torch.tensor([1.0, 0.0]), mask)
    assert result.advantages.dtype == torch.float32 and result.loss_mask.dtype == torch.int64
    assert result.advantages.shape == ids.shape


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"completion_ids": torch.ones(3, dtype=torch.long)}, "2 dimension"),
        ({"completion_ids": torch.ones(2, 3)}, "integer token ids"),
        ({"rewards": torch.ones(3)}, "3 entries for 2"),
        ({"rewards": torch.tensor([1.0, float("inf")])}, "finite"),
        ({"completion_mask": torch.tensor([[0, 1, 1], [1, 1, 1]])}, "prefix mask"),
        ({"completion_mask": torch.tensor([[2, 1, 1], [1, 1, 1]])}, "only 0 and 1"),
        ({"completion_mask": torch.ones(2, 2)}, "shape"),
        ({"group_size": 3}, "whole number of groups"),
        ({"group_size": 0}, "positive integer"),
        ({"group_size": 1, "group_ids": torch.tensor([0, 1])}, "not both"),
        ({"start_positions": torch.tensor([4, 0])}, r"\[0, completion length\]"),
    ],
)
def test_bad_input_raises_clear_errors(kwargs, message):
    args = {
        "completion_ids": torch.ones(2, 3, dtype=torch.long),
        "rewards": torch.tensor([1.0, 0.0]),
        "completion_mask": torch.ones(2, 3, dtype=torch.long),
    }
    args.update(kwargs)
    extra = {k: args.pop(k) for k in ("group_size", "group_ids", "start_positions") if k in args}
    with pytest.raises(ValueError, match=message):
        prefix_advantages(args["completion_ids"], args["rewards"], args["completion_mask"], **extra)
