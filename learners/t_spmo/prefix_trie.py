"""Per-group prefix tries over sampled completions and T-SPMO's token-level advantages.

Seed 002 (T-SPMO, Sec. 3.3, Eqs. 7-9). For one prompt with a group G of sampled completions, every completion is a
path through a prefix trie whose nodes are token prefixes p. Let G_p be the completions that pass through p and
R(y) their rewards. The advantage of the transition "emit token v after prefix p" is

    A(v | p) = mean_{y in G_{p∘v}} R(y)  -  mean_{y in G_p} R(y)                     (arXiv 2504.20834, Eq. 9)

(the root p = ∅ is the whole group, so A(v | ∅) = mean over completions starting with v - group mean). Each unique
(prefix, next-token) pair — i.e. each trie node below the root — enters the loss exactly once: positions of
completions that merely repeat an already-counted transition are masked out. A group whose rewards are all equal
gives A = 0 everywhere (computed exactly: rewards are shifted by the group minimum first).

Replayed completions (T-SPMO's replay, see ``learners/replay.py``) restart generation after a prefix q taken from an
earlier completion. Their tokens before the restart were not sampled from the current policy given the prompt, so
such a row contributes its reward only to nodes at depth >= |q| (q itself and its descendants): ``start_positions``
holds |q| per row (0 for ordinary completions). With it the estimate of E[R | q] and below gains samples, while the
shallower estimates stay on-policy.

Algorithm (exact, no hashing, vectorised with numpy): sort the rows lexicographically by (group, token_0, token_1,
...); rows that share the prefix y_0..y_t are then contiguous, so a new trie node starts at (row, t) exactly where
the row's first t+1 tokens differ from the previous row's. A cumulative sum over these "new node" flags in
column-major order numbers the nodes; reward sums and counts are ``np.bincount`` over node ids; one representative
per node (the lowest original row index among contributing rows) is found with ``np.minimum.reduceat`` over the
contiguous runs. Cost: one ``np.lexsort`` with T keys over B rows plus O(B·T) array work.

The statistics of the estimator (the referee's fourth objection asks for trie coverage: how many transitions rest
on a single completion, where the paths stop branching) come back as :class:`TrieStats`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

__all__ = ["PrefixAdvantages", "TrieStats", "prefix_advantages"]


@dataclass(frozen=True)
class TrieStats:
    """Coverage statistics of the per-group prefix tries of one batch.

    Attributes:
        num_groups: groups (prompts) in the batch.
        num_completions: completions that contribute a finite reward.
        num_tokens: valid completion tokens (sum of the completion mask).
        num_transitions: unique (prefix, next token) transitions with a defined advantage = tokens in the loss.
        loss_token_share: ``num_transitions / num_tokens`` (the token efficiency of arXiv 2504.20834's Table 3).
        singleton_share: share of those transitions that rest on exactly one completion (|G_{p∘v}| = 1).
        mean_node_count: mean |G_{p∘v}| over those transitions.
        zero_advantage_share: share of those transitions with A(v|p) == 0 exactly.
        mean_abs_advantage: mean |A(v|p)| over those transitions.
        max_branch_depth: depth (prefix length) of the deepest node with >= 2 distinct next tokens, over all groups;
            -1 when no group branches at all.
        mean_max_branch_depth: mean over the branching groups of their deepest branching depth (nan if none).
        max_depth: longest completion (tokens).
    """

    num_groups: int
    num_completions: int
    num_tokens: int
    num_transitions: int
    loss_token_share: float
    singleton_share: float
    mean_node_count: float
    zero_advantage_share: float
    mean_abs_advantage: float
    max_branch_depth: int
    mean_max_branch_depth: float
    max_depth: int

    def as_dict(self) -> dict[str, float]:
        """The statistics as a flat dict of floats (for logging)."""
        return {key: float(value) for key, value in asdict(self).items()}


@dataclass(frozen=True)
class PrefixAdvantages:
    """Result of :func:`prefix_advantages`; all tensors are (B, T) on the device of ``completion_ids``.

    Attributes:
        advantages: A(v|p) for the transition at each position (float32); 0 where undefined (padding, or a
            replayed row's prefix whose statistics have no contributing completion).
        loss_mask: 1 on exactly one representative position per unique transition with a defined advantage, else 0
            (int64, the same dtype as TRL's masks).
        node_counts: |G_{p∘v}| for the transition at each position (int64), 0 where undefined.
        parent_counts: |G_p| for the transition at each position (int64), 0 where undefined.
        stats: coverage statistics, see :class:`TrieStats`.
    """

    advantages: torch.Tensor
    loss_mask: torch.Tensor
    node_counts: torch.Tensor
    parent_counts: torch.Tensor
    stats: TrieStats


def _to_numpy(name: str, value, ndim: int) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        array = value.detach().to("cpu").numpy()
    else:
        array = np.asarray(value)
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(array.shape)}")
    return array


def _validated_inputs(completion_ids, rewards, completion_mask, group_size, group_ids, start_positions):
    ids = _to_numpy("completion_ids", completion_ids, 2)
    if ids.dtype.kind not in "iu":
        raise ValueError(f"completion_ids must hold integer token ids, got dtype {ids.dtype}")
    batch, length = ids.shape
    reward = _to_numpy("rewards", rewards, 1).astype(np.float64)
    if reward.shape[0] != batch:
        raise ValueError(f"rewards has {reward.shape[0]} entries for {batch} completions")
    if np.isinf(reward).any():
        raise ValueError("rewards must be finite (NaN marks an unscorable completion that is left out)")
    if completion_mask is None:
        valid = np.ones((batch, length), dtype=bool)
    else:
        mask = _to_numpy("completion_mask", completion_mask, 2)
        if mask.shape != ids.shape:
            raise ValueError(f"completion_mask shape {tuple(mask.shape)} != completion_ids shape {tuple(ids.shape)}")
        if not np.isin(mask, (0, 1)).all():
            raise ValueError("completion_mask must hold only 0 and 1")
        valid = mask.astype(bool)
        if (valid[:, 1:] & ~valid[:, :-1]).any():
            raise ValueError("completion_mask must be a prefix mask per row (ones, then zeros): right padding only")
    if group_ids is not None and group_size is not None:
        raise ValueError("pass group_size or group_ids, not both")
    if group_ids is not None:
        groups = _to_numpy("group_ids", group_ids, 1)
        if groups.shape[0] != batch or groups.dtype.kind not in "iu":
            raise ValueError(f"group_ids must be {batch} integers, got shape {groups.shape} dtype {groups.dtype}")
    elif group_size is not None:
        if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < 1:
            raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
        if batch % group_size:
            raise ValueError(f"batch of {batch} completions is not a whole number of groups of {group_size}")
        groups = np.arange(batch) // group_size
    else:
        groups = np.zeros(batch, dtype=np.int64)
    if start_positions is None:
        starts = np.zeros(batch, dtype=np.int64)
    else:
        starts = _to_numpy("start_positions", start_positions, 1)
        if starts.shape[0] != batch or starts.dtype.kind not in "iu":
            raise ValueError(f"start_positions must be {batch} integers, got shape {starts.shape}")
        lengths = valid.sum(axis=1)
        if (starts < 0).any() or (starts > lengths).any():
            raise ValueError("start_positions must lie in [0, completion length]")
    return ids.astype(np.int64), reward, valid, groups.astype(np.int64), starts.astype(np.int64)


def prefix_advantages(
    completion_ids,
    rewards,
    completion_mask=None,
    *,
    group_size: int | None = None,
    group_ids=None,
    start_positions=None,
) -> PrefixAdvantages:
    """Token-level advantages A(v|p) from per-group prefix tries, one loss position per unique transition.

    Args:
        completion_ids: (B, T) integer token ids (torch tensor or array), right-padded.
        rewards: (B,) rewards; NaN marks an unscorable completion, left out of every statistic and of the loss.
        completion_mask: (B, T) 0/1 prefix mask of the valid tokens (TRL's ``completion_mask``); all ones if None.
        group_size: rows ``[k*group_size, (k+1)*group_size)`` form group k (TRL's contiguous ``num_generations``).
        group_ids: (B,) integer group label per row, for groups of unequal size or in any order (e.g. with replayed
            rows appended). Give ``group_size`` or ``group_ids``; with neither the whole batch is one group.
        start_positions: (B,) restart position |q| of replayed rows (0 for ordinary rows); a row contributes its
            reward to the nodes at depth >= its start position only (see the module docstring).

    Returns:
        :class:`PrefixAdvantages` with (B, T) ``advantages``, ``loss_mask``, ``node_counts``, ``parent_counts``
        and the batch's :class:`TrieStats`.

    Raises:
        ValueError: on shapes, dtypes or masks that do not fit the description above.
    """
    ids, reward, valid, groups, starts = _validated_inputs(
        completion_ids, rewards, completion_mask, group_size, group_ids, start_positions
    )
    device = completion_ids.device if isinstance(completion_ids, torch.Tensor) else torch.device("cpu")
    batch, length = ids.shape
    finite = ~np.isnan(reward)
    group_index, group_of_row = np.unique(groups, return_inverse=True)
    num_groups = len(group_index)
    # Shift by the group minimum so that a group of equal rewards yields exact zeros (A is shift-invariant).
    group_min = np.full(num_groups, np.inf)
    np.minimum.at(group_min, group_of_row[finite], reward[finite])
    group_min[~np.isfinite(group_min)] = 0.0
    shifted = np.where(finite, reward - group_min[group_of_row], 0.0)

    positions = np.arange(length)
    tokens = np.where(valid, ids, -1)
    order = np.lexsort(np.vstack([tokens[:, ::-1].T, group_of_row[None, :]])) if batch else np.arange(0)
    s_tokens, s_valid, s_group = tokens[order], valid[order], group_of_row[order]
    s_contrib = s_valid & (positions[None, :] >= starts[order, None] - 1) & finite[order, None]

    same_as_previous = np.zeros((batch, length), dtype=bool)
    if batch > 1:
        same_as_previous[1:] = (
            (s_tokens[1:] == s_tokens[:-1]) & s_valid[1:] & s_valid[:-1] & (s_group[1:] == s_group[:-1])[:, None]
        )
    new_node = ~np.logical_and.accumulate(same_as_previous, axis=1) if length else same_as_previous
    flags = new_node.T.ravel()  # column-major: nodes of one depth are contiguous runs of sorted rows
    node = (np.cumsum(flags) - 1).reshape(length, batch).T if flags.size else np.zeros((batch, length), np.int64)
    num_nodes = int(flags.sum())

    root_rows = finite & (starts == 0)
    counts = np.concatenate(
        [
            np.bincount(node[s_contrib], minlength=num_nodes),
            np.bincount(group_of_row[root_rows], minlength=num_groups),
        ]
    )
    sums = np.concatenate(
        [
            np.bincount(
                node[s_contrib],
                weights=np.broadcast_to(shifted[order, None], node.shape)[s_contrib],
                minlength=num_nodes,
            ),
            np.bincount(group_of_row[root_rows], weights=shifted[root_rows], minlength=num_groups),
        ]
    ).astype(np.float64)  # bincount of nothing is int64 even with weights
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    parent = np.empty_like(node)
    if length:
        parent[:, 0] = num_nodes + s_group
        parent[:, 1:] = node[:, :-1]
    node_count, parent_count = counts[node], counts[parent]
    defined = s_valid & (node_count > 0) & (parent_count > 0)
    s_adv = np.where(defined, means[node] - means[parent], 0.0)

    # One representative per node: the lowest original row index among the rows contributing to it.
    candidate = np.where(s_contrib, order[:, None], batch)
    first_of_run = np.minimum.reduceat(candidate.T.ravel(), np.flatnonzero(flags)) if num_nodes else np.zeros(0, int)
    s_loss = defined & s_contrib & (order[:, None] == first_of_run[node])

    stats = _trie_stats(
        s_adv,
        s_loss,
        node_count,
        new_node & s_valid,
        node,
        parent,
        s_group,
        num_nodes,
        num_groups,
        valid,
        int(finite.sum()),
    )
    out = {}
    for name, sorted_array in (
        ("advantages", s_adv),
        ("loss_mask", s_loss),
        ("node_counts", np.where(defined, node_count, 0)),
        ("parent_counts", np.where(defined, parent_count, 0)),
    ):
        unsorted = np.empty_like(sorted_array)
        unsorted[order] = sorted_array
        out[name] = unsorted
    return PrefixAdvantages(
        advantages=torch.from_numpy(out["advantages"].astype(np.float32)).to(device),
        loss_mask=torch.from_numpy(out["loss_mask"].astype(np.int64)).to(device),
        node_counts=torch.from_numpy(out["node_counts"].astype(np.int64)).to(device),
        parent_counts=torch.from_numpy(out["parent_counts"].astype(np.int64)).to(device),
        stats=stats,
    )


def _trie_stats(adv, loss, node_count, node_start, node, parent, group, num_nodes, num_groups, valid, n_done):
    """Coverage statistics; all (B, T) arguments are in sorted row order."""
    selected_adv, selected_count = adv[loss], node_count[loss]
    n_transitions = int(loss.sum())
    # Each trie node once (its first row in sorted order): its parent and depth give the branching structure.
    depth = np.broadcast_to(np.arange(node.shape[1]) + 1, node.shape)
    children = np.bincount(parent[node_start], minlength=num_nodes + num_groups)
    node_depth = np.zeros(num_nodes + num_groups, dtype=np.int64)
    node_group = np.empty(num_nodes + num_groups, dtype=np.int64)
    node_depth[node[node_start]] = depth[node_start]
    node_group[node[node_start]] = np.broadcast_to(group[:, None], node.shape)[node_start]
    node_group[num_nodes:] = np.arange(num_groups)
    branching = np.flatnonzero(children >= 2)
    deepest = np.full(num_groups, -1, dtype=np.int64)
    np.maximum.at(deepest, node_group[branching], node_depth[branching])
    branched = deepest[deepest >= 0]
    return TrieStats(
        num_groups=num_groups,
        num_completions=n_done,
        num_tokens=int(valid.sum()),
        num_transitions=n_transitions,
        loss_token_share=n_transitions / max(int(valid.sum()), 1),
        singleton_share=float((selected_count == 1).mean()) if n_transitions else 0.0,
        mean_node_count=float(selected_count.mean()) if n_transitions else 0.0,
        zero_advantage_share=float((selected_adv == 0.0).mean()) if n_transitions else 0.0,
        mean_abs_advantage=float(np.abs(selected_adv).mean()) if n_transitions else 0.0,
        max_branch_depth=int(deepest.max()) if num_groups else -1,
        mean_max_branch_depth=float(branched.mean()) if branched.size else float("nan"),
        max_depth=int(valid.sum(axis=1).max()) if valid.size else 0,
    )
