"""Getting the answer out of a completion: tag extraction, the format check, and expression normalisation.

``normalize_expression`` only rewrites notation that has exactly one meaning (the contrastive shaping post's SFT
cleaning maps Unicode operators to ASCII and strips a trailing ``= …``; see docs/references.md). It never
guesses: it does not drop an ``=`` in the middle, join digits, insert operators or remove anything else that
would change which expression is judged. Whatever it leaves that is not plain arithmetic is refused later by the parser.
"""

from __future__ import annotations

import re

__all__ = ["extract_answer", "normalize_expression", "normalize_answer", "has_valid_format"]

_TAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")


def _check_tag(tag: str) -> str:
    if not isinstance(tag, str) or _TAG_NAME.fullmatch(tag) is None:
        raise ValueError(f"tag must be a plain tag name such as 'solution', got {tag!r}")
    return tag


def extract_answer(completion: str, tag: str = "solution") -> str | None:
    """Content of the last complete ``<tag>…</tag>`` block (surrounding whitespace stripped), or ``None``.

    "Last complete" means: the last closing tag, paired with the nearest opening tag before it. An unclosed
    trailing block (a truncated generation) is ignored.

    >>> extract_answer("<solution>1+2</solution> <solution> 3 * 4 </solution><solution>5")
    '3 * 4'
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    _check_tag(tag)
    close = f"</{tag}>"
    end = completion.rfind(close)
    if end < 0:
        return None
    open_ = f"<{tag}>"
    start = completion.rfind(open_, 0, end)
    if start < 0:
        return None
    return completion[start + len(open_) : end].strip()


def has_valid_format(completion: str, reasoning_tag: str = "reasoning", answer_tag: str = "solution") -> bool:
    """True iff the completion is one reasoning block followed by one non-empty answer block, nothing else.

    Only whitespace may surround or separate the blocks; each tag occurs exactly once; the reasoning may be
    empty, the answer may not. The answer's content is not checked here (that is the verifier's job).

    >>> has_valid_format("<reasoning>\\n25-3=22\\n</reasoning>\\n<solution>(25-3)*7</solution>")
    True
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    r_open, r_close = f"<{_check_tag(reasoning_tag)}>", f"</{reasoning_tag}>"
    a_open, a_close = f"<{_check_tag(answer_tag)}>", f"</{answer_tag}>"
    text = completion.strip()
    if not (text.startswith(r_open) and text.endswith(a_close)):
        return False
    if any(text.count(t) != 1 for t in (r_open, r_close, a_open, a_close)):
        return False
    i_r_close = text.find(r_close)
    i_a_open = text.find(a_open)
    if not len(r_open) <= i_r_close < i_a_open:
        return False
    if text[i_r_close + len(r_close) : i_a_open].strip():
        return False
    answer = text[i_a_open + len(a_open) : len(text) - len(a_close)]
    return bool(answer.strip())


# Single characters with exactly one arithmetic meaning.
_CHAR_MAP = {
    "×": "*",  # U+00D7 multiplication sign
    "✕": "*",  # U+2715 multiplication x
    "∗": "*",  # U+2217 asterisk operator
    "·": "*",  # U+00B7 middle dot
    "⋅": "*",  # U+22C5 dot operator
    "÷": "/",  # U+00F7 division sign
    "∕": "/",  # U+2215 division slash
    "−": "-",  # U+2212 minus sign
    "–": "-",  # U+2013 en dash
    "—": "-",  # U+2014 em dash
    "＋": "+",
    "－": "-",
    "＊": "*",
    "／": "/",
    "（": "(",
    "）": ")",
    "＝": "=",
    "\u3000": " ",  # ideographic (full-width) space
    "\u00a0": " ",  # no-break space
    "\u2009": " ",  # thin space
    "\u202f": " ",  # narrow no-break space
}
_CHAR_MAP.update({chr(0xFF10 + d): str(d) for d in range(10)})  # full-width digits
_TRANSLATION = str.maketrans(_CHAR_MAP)

MAX_NORMALIZE_CHARS = 100_000
"""Longest text :func:`normalize_answer` rewrites (the verifier's ``max_length``); longer text is returned as is
(the verifier refuses it as ``too_long`` before normalising; 10 MB took 2.1 s to normalise)."""

_PLAIN = re.compile(r"[0-9 +\-*/()]*")  # already-normal text: only needs stripping
_LATEX_WORD = re.compile(r"\\(times|cdot|div)(?![A-Za-z])")
_LATEX_WORD_MAP = {"times": "*", "cdot": "*", "div": "/"}
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_MAX_FRAC_PASSES = 32  # innermost \frac first; deeper nesting is left alone (then refused by the parser)
_NUMBER = re.compile(r"\s*[0-9]+\s*")
_WRAPPERS = ("$", "`")


def _strip_wrappers(text: str) -> str:
    """Strip whitespace, and ``$``/backtick delimiters present at both ends (``$…$``, ``$$…$$``, ```` `…` ````)."""
    text = text.strip()
    if not text or text[0] not in _WRAPPERS:
        return text
    # Index arithmetic rather than repeated slicing: a string of 50 000 '$' must not cost quadratic time.
    i, j = 0, len(text)
    while True:
        while i < j and text[i].isspace():
            i += 1
        while j > i and text[j - 1].isspace():
            j -= 1
        if j - i >= 2 and text[i] == text[j - 1] and text[i] in _WRAPPERS:
            i += 1
            j -= 1
        else:
            return text[i:j]


def _split_trailing_result(text: str) -> tuple[str, str | None]:
    """``(text without one trailing "= <number>", the number's digits)``, or ``(text, None)`` when there is none
    (found with ``rfind``, not a backtracking regex)."""
    at = text.rfind("=")
    if at >= 0 and _NUMBER.fullmatch(text, at + 1) is not None:
        return text[:at], text[at + 1 :].strip()
    return text, None


def normalize_expression(text: str) -> str:
    """Rewrite notation with a single meaning into plain ASCII arithmetic.

    Rules, applied in this order:

    1. strip surrounding whitespace and matching ``$`` / backtick delimiters;
    2. ``× ✕ ∗ · ⋅`` -> ``*``; ``÷ ∕`` -> ``/``; ``− – —`` -> ``-``; full-width digits, ``＋ － ＊ ／ （ ） ＝``
       and the full-width, no-break and thin spaces -> their ASCII forms;
    3. LaTeX: ``\\times`` ``\\cdot`` -> ``*``, ``\\div`` -> ``/``, ``\\left(`` -> ``(``, ``\\right)`` -> ``)``,
       ``\\frac{a}{b}`` (also ``\\dfrac``, ``\\tfrac``) -> ``(a)/(b)``, innermost first;
    4. strip one trailing ``= <number>`` (the stated result), then the delimiters of rule 1 again.

    Anything else is left as it is, so that invalid answers stay invalid. The stated result is dropped here;
    :func:`normalize_answer` returns it too (the verifier checks it against the expression's value).

    >>> normalize_expression("$ (25 − 3) \\\\times 7 = 154 $")
    '(25 - 3) * 7'
    """
    return normalize_answer(text)[0]


def normalize_answer(text: str) -> tuple[str, str | None]:
    """:func:`normalize_expression`'s text and the digits of the trailing ``= <number>`` it stripped (``None``
    when the answer states no result).

    >>> normalize_answer("25*3+7 = 83")
    ('25*3+7', '83')
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if len(text) > MAX_NORMALIZE_CHARS:  # bounded work on model text: beyond the verifier's limit, left as it is
        return text, None
    if _PLAIN.fullmatch(text) is not None:
        return text.strip(), None
    text = _strip_wrappers(text)
    if not text.isascii():
        text = text.translate(_TRANSLATION)
    if "\\" in text:
        text = _LATEX_WORD.sub(lambda m: _LATEX_WORD_MAP[m.group(1)], text)
        text = text.replace("\\left(", "(").replace("\\right)", ")")
        for _ in range(_MAX_FRAC_PASSES):
            text, n = _FRAC.subn(r"(\1)/(\2)", text)
            if not n:
                break
    stated = None
    if "=" in text:
        text, stated = _split_trailing_result(text)
    return _strip_wrappers(text), stated
