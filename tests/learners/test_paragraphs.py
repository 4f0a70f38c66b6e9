"""Paragraph boundaries in token space: blank lines, the max_paragraph_len cap, tags and token ownership."""

from __future__ import annotations

import numpy as np
import pytest

from learners.contrastive.paragraphs import split_paragraphs


def chars(text: str) -> list[str]:
    return list(text)


def test_blank_lines_split_the_reasoning_body():
    body = "aaa\n\nbb\n\ncccc\n"
    text = "<reasoning>\n" + body + "</reasoning>\n<solution>1+2</solution>"
    para = split_paragraphs(chars(text))
    start = len("<reasoning>\n")
    assert para.reasoning_start == start
    # each paragraph ends after its blank line; the last at the closing tag
    assert para.ends == (start + 5, start + 9, start + len(body))
    assert "".join(chars(text)[start : para.ends[0]]) == "aaa\n\n"
    assert text[para.ends[-1] :].startswith("</reasoning>")
    assert para.scoring_points == (start, *para.ends)


def test_token_ownership_covers_the_whole_completion():
    text = "<reasoning>\nab\n\ncd\n</reasoning>\n<solution>3</solution>"
    para = split_paragraphs(chars(text))
    owner = para.paragraph_of_token()
    assert owner.shape == (len(text),)
    assert (owner[: para.ends[0]] == 0).all()  # the opening tag belongs to paragraph 1
    assert (owner[para.ends[0] :] == 1).all()  # the answer tail belongs to the last paragraph
    assert set(owner.tolist()) == {0, 1}


def test_the_cap_splits_long_paragraphs_every_max_len_tokens():
    body = "x" * 25 + "\n\n" + "y" * 7 + "\n"
    text = "<reasoning>\n" + body + "</reasoning>"
    start = len("<reasoning>\n")
    para = split_paragraphs(chars(text), max_paragraph_len=10)
    assert para.ends == (start + 10, start + 20, start + 27, start + len(body))
    lengths = np.diff((para.reasoning_start, *para.ends))
    assert lengths.max() <= 10
    # no cap: only the blank line splits
    assert split_paragraphs(chars(text), max_paragraph_len=None).ends == (start + 27, start + len(body))


def test_default_cap_is_128_tokens():
    text = "<reasoning>\n" + "z" * 300 + "\n</reasoning>"
    para = split_paragraphs(chars(text))
    assert np.diff((para.reasoning_start, *para.ends)).max() == 128
    assert para.count == 3


def test_multi_character_tokens_keep_boundaries_on_token_edges():
    pieces = [
        "<reasoning>",
        "\n",
        "Try",
        " 3+4",
        ".\n\n",
        "Then",
        " 7",
        "\n",
        "</reasoning>",
        "\n",
        "<solution>",
        "7",
        "</solution>",
        "",
    ]
    para = split_paragraphs(pieces)
    assert para.reasoning_start == 2
    assert para.ends == (5, 8)  # the ".\n\n" token stays whole in the paragraph it closes
    assert para.paragraph_of_token().tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]


def test_runs_of_blank_lines_make_one_break():
    text = "<reasoning>\na\n\n\n\nb\n</reasoning>"
    para = split_paragraphs(chars(text))
    assert para.count == 2


def test_completion_without_tags_and_without_reasoning():
    para = split_paragraphs(chars("just text\n\nmore"))
    assert para.reasoning_start == 0 and para.ends == (11, 15)
    # truncated: no closing tag, the body runs to the end
    cut = split_paragraphs(chars("<reasoning>\nabc\n\ndef"))
    assert cut.ends[-1] == len("<reasoning>\nabc\n\ndef")
    empty = split_paragraphs(chars("<reasoning>\n</reasoning>\n<solution>1</solution>"))
    assert empty.ends == () and empty.scoring_points == ()
    assert (empty.paragraph_of_token() == -1).all()
    assert split_paragraphs([]).ends == ()


def test_answer_tag_ends_the_body_when_the_closing_tag_is_missing():
    text = "<reasoning>\nabc\n<solution>1</solution>"
    para = split_paragraphs(chars(text))
    assert para.ends == (text.index("<solution>"),)


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_paragraph_len"):
        split_paragraphs(["a"], max_paragraph_len=0)
    with pytest.raises(TypeError, match="sequence of per-token strings"):
        split_paragraphs("abc")
    with pytest.raises(TypeError, match="must be str"):
        split_paragraphs(["a", 3])


def test_real_tokenizer_round_trip(tiny_tokenizer):
    from learners.contrastive.paragraphs import token_texts

    text = "<reasoning>\n3+4=7\n\n7*2=14\n</reasoning>\n<solution>(3+4)*2</solution>"
    ids = tiny_tokenizer.encode(text, add_special_tokens=False)
    pieces = token_texts(tiny_tokenizer, ids)
    assert "".join(pieces) == text
    para = split_paragraphs(pieces)
    assert para.count == 2
    assert tiny_tokenizer.decode(ids[para.reasoning_start : para.ends[0]]) == "3+4=7\n\n"
