"""The answer bank: every surface form kept, identical answers once, order-independent; truncation; ground truth."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from learners.contrastive.answer_bank import answer_key, build_answer_bank
from learners.contrastive.potential import contrastive_potential

# one group: surface forms of 16 (three of them correct), two wrong answers, one rollout without an answer
GROUP = [
    ("5+11", True),
    ("11 + 5", True),
    ("\n5+11\n", True),  # the same surface form as "5+11" (whitespace only)
    ("5*3", False),
    ("3*5", False),
    (None, False),
    ("16-0", True),
    ("5+11", True),
]


def test_every_surface_form_is_kept_and_identical_answers_once():
    answers, correct = zip(*GROUP, strict=True)
    bank = build_answer_bank(answers, correct)
    # sorted by whitespace-normalised text; "5+11" written twice verbatim and once with newlines: the frequent one
    assert bank.positive == ("11 + 5", "16-0", "5+11")
    assert bank.negative == ("3*5", "5*3")  # 5*3 and 3*5 are two surface forms
    assert not bank.homogeneous
    assert bank.answers == bank.positive + bank.negative
    assert answer_key(" 5 +\t11\n") == "5 + 11" != answer_key("5+11")


def test_the_scored_text_is_one_the_policy_wrote():
    bank = build_answer_bank(["\n7*3\n", "\n7*3\n", "7*3", "1"], [True, True, True, False])
    assert bank.positive == ("\n7*3\n",)  # the most frequent verbatim form, surrounding newlines included
    bank = build_answer_bank(["7*3", "\n7*3\n", "1"], [True, True, False])
    assert bank.positive == ("\n7*3\n",)  # a tie: the smallest string ("\n" < "7"), whatever the order


# hand-made log-likelihoods ℓ(a | prefix) at two prefixes, keyed by the verbatim text scored
LOGLIK = {
    "11 + 5": (-2.0, -1.0),
    "16-0": (-4.0, -3.0),
    "5+11": (-1.0, -2.0),
    "\n5+11\n": (-9.0, -9.0),  # never scored: "5+11" is the form chosen for that surface form
    "3*5": (-3.0, -5.0),
    "5*3": (-5.0, -4.0),
}


def _phi(group):
    answers, correct = zip(*group, strict=True)
    bank = build_answer_bank(answers, correct)
    table = np.array([LOGLIK[a] for a in bank.answers]).T  # (prefixes, answers), as the scorers return it
    n_pos = len(bank.positive)
    return contrastive_potential(table[:, :n_pos], table[:, n_pos:], tau=1.0, clip=5.0)


def _lse(values):
    return math.log(sum(math.exp(v) for v in values) / len(values))


def test_potential_does_not_depend_on_rollout_order():
    expected = np.array(
        [
            _lse([-2.0, -4.0, -1.0]) - _lse([-3.0, -5.0]),  # ≈ 1.8167
            _lse([-1.0, -3.0, -2.0]) - _lse([-5.0, -4.0]),  # ≈ 2.6202
        ]
    )
    reference = _phi(GROUP)
    np.testing.assert_allclose(reference, expected, rtol=1e-12)
    rng = random.Random(0)
    for _ in range(200):
        group = GROUP[:]
        rng.shuffle(group)
        assert np.array_equal(_phi(group), reference)  # bit for bit


def test_truncated_rollouts_contribute_nothing():
    bank = build_answer_bank(["1+2", "2+2"], [True, False], [False, True])
    assert bank.positive == ("1+2",) and bank.negative == ()
    assert bank.homogeneous


def test_unparsable_answers_are_kept_as_written():
    bank = build_answer_bank(["1 +", "1  +", "two", "3"], [False, False, False, True])
    assert bank.negative == ("1  +", "two")  # one surface form; a tie, so the smaller string is scored
    assert bank.positive == ("3",)


def test_homogeneous_groups():
    assert build_answer_bank(["1+2", "2+1"], [True, True]).homogeneous
    assert build_answer_bank(["1", "2"], [False, False]).homogeneous
    assert build_answer_bank([None, None], [False, False]).homogeneous
    assert build_answer_bank(["  ", "1"], [True, False]).homogeneous  # a blank answer is no answer


def test_ground_truth_options():
    answers, correct = ["1+1", "2*2"], [False, False]
    assert build_answer_bank(answers, correct, ground_truth="3", ground_truth_mode="never").homogeneous
    bank = build_answer_bank(answers, correct, ground_truth="1+2", ground_truth_mode="when_all_wrong")
    assert bank.positive == ("1+2",) and bank.negative == ("1+1", "2*2")
    # with a correct rollout, "when_all_wrong" leaves B+ alone; "always" adds a* unless that surface form is there
    mixed = (["1+2", "2*2"], [True, False])
    assert build_answer_bank(*mixed, ground_truth="3*1", ground_truth_mode="when_all_wrong").positive == ("1+2",)
    assert build_answer_bank(*mixed, ground_truth="3*1", ground_truth_mode="always").positive == ("1+2", "3*1")
    assert build_answer_bank(*mixed, ground_truth=" 1+2 ", ground_truth_mode="always").positive == ("1+2",)
    assert build_answer_bank(*mixed, ground_truth="2+1", ground_truth_mode="always").positive == ("1+2", "2+1")


def test_bad_arguments():
    with pytest.raises(ValueError, match="one entry per rollout"):
        build_answer_bank(["1"], [True, False])
    with pytest.raises(ValueError, match="ground_truth_mode"):
        build_answer_bank(["1"], [True], ground_truth_mode="sometimes")
    with pytest.raises(ValueError, match="needs a ground-truth"):
        build_answer_bank(["1"], [True], ground_truth_mode="always")
