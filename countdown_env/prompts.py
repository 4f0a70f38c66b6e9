"""Prompt templates and chat messages: the one place where the task's wording lives.

The default follows the contrastive potential advantage shaping post (see docs/references.md: contrastive potential
advantage shaping on Countdown): reasoning inside ``<reasoning>…</reasoning>``, then the bare expression inside
``<solution>…</solution>``, nothing outside the tags. ``TINYZERO`` is the ``<think>``/``<answer>`` variant.
``COMPACT`` asks with the numbers and target only (no system turn, no instructions, the default's tags): the
prompt of the embedded character-level model, where every prompt character is a token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .puzzle import Puzzle


@dataclass(frozen=True)
class PromptTemplate:
    """How a puzzle is asked and which tags the answer goes in.

    ``user`` is a ``str.format`` template with the fields ``numbers`` (comma separated), ``target``,
    ``reasoning_tag``, ``answer_tag`` and ``rule`` (the use-each-number sentence).
    """

    name: str
    system: str | None
    user: str
    reasoning_tag: str = "reasoning"
    answer_tag: str = "solution"

    def with_system(self, system: str | None) -> PromptTemplate:
        return replace(self, system=system)


_AT_MOST_ONCE = "Each number may be used at most once."
_EXACTLY_ONCE = "Each number must be used exactly once."

DEFAULT = PromptTemplate(
    name="default",
    system=(
        "You solve arithmetic puzzles. Think step by step inside <reasoning> </reasoning> tags, "
        "then write only the final expression inside <solution> </solution> tags."
    ),
    user=(
        "Using the numbers [{numbers}], create an equation that equals {target}. "
        "You can use + - * / and parentheses. {rule} "
        "Show your reasoning in <{reasoning_tag}> </{reasoning_tag}> tags and write only the expression "
        "in <{answer_tag}> </{answer_tag}> tags, for example <{answer_tag}>(1 + 2) / 3</{answer_tag}>."
    ),
)

TINYZERO = PromptTemplate(
    name="tinyzero",
    system="You are a helpful assistant. You first think about the reasoning process and then give the answer.",
    user=(
        "Using the numbers [{numbers}], create an equation that equals {target}. "
        "You can use basic arithmetic operations (+, -, *, /) and parentheses. {rule} "
        "Show your work in <{reasoning_tag}> </{reasoning_tag}> tags and return the final equation in "
        "<{answer_tag}> </{answer_tag}> tags, for example <{answer_tag}> (1 + 2) / 3 </{answer_tag}>."
    ),
    reasoning_tag="think",
    answer_tag="answer",
)

COMPACT = PromptTemplate(
    name="compact",
    system=None,
    user="Numbers: {numbers}\nTarget: {target}",
)
"""No rule sentence: the rules a compact-prompted model follows are those it was trained under."""

TEMPLATES: dict[str, PromptTemplate] = {t.name: t for t in (DEFAULT, TINYZERO, COMPACT)}


def get_template(template: str | PromptTemplate | None = None) -> PromptTemplate:
    """Resolve a template by name (``"default"``, ``"tinyzero"``, ``"compact"``) or pass one through."""
    if template is None:
        return DEFAULT
    if isinstance(template, PromptTemplate):
        return template
    try:
        return TEMPLATES[template]
    except KeyError:
        raise ValueError(f"unknown prompt template {template!r}; choose one of {sorted(TEMPLATES)}") from None


def user_prompt(puzzle: Puzzle, template: str | PromptTemplate | None = None, *, use_all_numbers: bool = False) -> str:
    """The user turn for ``puzzle``."""
    t = get_template(template)
    return t.user.format(
        numbers=", ".join(str(n) for n in puzzle.numbers),
        target=puzzle.target,
        reasoning_tag=t.reasoning_tag,
        answer_tag=t.answer_tag,
        rule=_EXACTLY_ONCE if use_all_numbers else _AT_MOST_ONCE,
    )


def chat_messages(
    puzzle: Puzzle, template: str | PromptTemplate | None = None, *, use_all_numbers: bool = False
) -> list[dict[str, str]]:
    """Chat messages (system when the template has one, then user), ready for ``apply_chat_template``."""
    t = get_template(template)
    messages = [{"role": "system", "content": t.system}] if t.system else []
    messages.append({"role": "user", "content": user_prompt(puzzle, t, use_all_numbers=use_all_numbers)})
    return messages


def format_completion(reasoning: str, expression: str, template: str | PromptTemplate | None = None) -> str:
    """An assistant answer in the template's format: reasoning tags, then answer tags, nothing outside."""
    t = get_template(template)
    return (
        f"<{t.reasoning_tag}>\n{reasoning.strip()}\n</{t.reasoning_tag}>\n"
        f"<{t.answer_tag}>{expression.strip()}</{t.answer_tag}>"
    )


def prompt_text(puzzle: Puzzle, template: str | PromptTemplate | None = None, *, use_all_numbers: bool = False) -> str:
    """The whole prompt as one plain string (system turn, blank line, user turn) for models without a chat
    template; the user turn alone when the template has no system prompt."""
    t = get_template(template)
    user = user_prompt(puzzle, t, use_all_numbers=use_all_numbers)
    return f"{t.system}\n\n{user}" if t.system else user
