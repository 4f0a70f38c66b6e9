"""The answer bank: correct/incorrect split, truncated rollouts, deduplication, the ground-truth options."""

from __future__ import annotations

import pytest

from learners.contrastive.answer_bank import answer_key, build_answer_bank


def test_split_and_deduplicate_by_canonical_form():
    bank = build_answer_bank(
        ["5+11", "11 + 5", "(5 + 11)", "5*3", "3*5", None, "16-0"],
        [True, True, True, False, False, False, True],
    )
    assert bank.positive == ("5+11", "16-0")  # first surface form kept
    assert bank.negative == ("5*3",)
    assert not bank.homogeneous
    assert bank.answers == ("5+11", "16-0", "5*3")


def test_truncated_rollouts_contribute_nothing():
    bank = build_answer_bank(["1+2", "2+2"], [True, False], [False, True])
    assert bank.positive == ("1+2",) and bank.negative == ()
    assert bank.homogeneous


def test_unparsable_answers_are_incorrect_and_keyed_by_text():
    bank = build_answer_bank(["1 +", "1+", "two", "3"], [False, False, False, True])
    assert bank.negative == ("1 +", "two")
    assert answer_key("1 +") == answer_key("1+") != answer_key("two")


def test_homogeneous_groups():
    assert build_answer_bank(["1+2", "2+1"], [True, True]).homogeneous
    assert build_answer_bank(["1", "2"], [False, False]).homogeneous
    assert build_answer_bank([None, None], [False, False]).homogeneous


def test_ground_truth_options():
    answers, correct = ["1+1", "2*2"], [False, False]
    assert build_answer_bank(answers, correct, ground_truth="3", ground_truth_mode="never").homogeneous
    bank = build_answer_bank(answers, correct, ground_truth="1+2", ground_truth_mode="when_all_wrong")
    assert bank.positive == ("1+2",) and bank.negative == ("1+1", "2*2")
    # with a correct rollout, "when_all_wrong" leaves B+ alone; "always" adds a* unless already there
    mixed = (["1+2", "2*2"], [True, False])
    assert build_answer_bank(*mixed, ground_truth="3*1", ground_truth_mode="when_all_wrong").positive == ("1+2",)
    assert build_answer_bank(*mixed, ground_truth="3*1", ground_truth_mode="always").positive == ("1+2", "3*1")
    assert build_answer_bank(*mixed, ground_truth="2+1", ground_truth_mode="always").positive == ("1+2",)


def test_bad_arguments():
    with pytest.raises(ValueError, match="one entry per rollout"):
        build_answer_bank(["1"], [True, False])
    with pytest.raises(ValueError, match="ground_truth_mode"):
        build_answer_bank(["1"], [True], ground_truth_mode="sometimes")
    with pytest.raises(ValueError, match="needs a ground-truth"):
        build_answer_bank(["1"], [True], ground_truth_mode="always")
