"""Reasoning models: which model names are known to be one, and separating their thinking from the answer.

Open reasoning models (Qwen3, DeepSeek-R1, QwQ ...) served without a
reasoning parser write their thinking into the answer as ``<think>…</think>``
blocks. The thinking is kept (``GenerateResult.reasoning``) but never parsed:
a judge's scratch work may mention every score it considered.
"""

from __future__ import annotations

import os

OPEN, CLOSE = "<think>", "</think>"

# Model-name families known to be reasoning models on OpenAI's API: they take ``max_completion_tokens``
# and only their default temperature, so they are sent that way from the first request (no 400 to learn
# it from). A name matches a family when it is the family or continues it with "-", "." or "_"
# (``o3``, ``o4-mini``, ``gpt-5.1``, ``azure/o1-preview``). Users add families with
# POLYJUDGE_REASONING_MODELS (comma-separated) and exempt a model with the judge option ``?reasoning=false``.
REASONING_MODEL_FAMILIES: tuple[str, ...] = ("o1", "o3", "o4", "gpt-5", "codex-mini")
# Members of those families that are chat models (they take temperature and max_tokens).
NOT_REASONING: tuple[str, ...] = ("gpt-5-chat",)
REASONING_MODELS_ENV = "POLYJUDGE_REASONING_MODELS"


def _in_family(name: str, family: str) -> bool:
    return name == family or (name.startswith(family) and name[len(family)] in "-._")


def reasoning_families() -> tuple[str, ...]:
    """The built-in families and those ``POLYJUDGE_REASONING_MODELS`` adds."""
    extra = os.environ.get(REASONING_MODELS_ENV, "")
    return REASONING_MODEL_FAMILIES + tuple(f.strip().lower() for f in extra.split(",") if f.strip())


def is_known_reasoning_model(model: str) -> bool:
    """True when ``model`` (case-insensitive, any ``provider/`` prefix ignored) is of a reasoning family."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if any(_in_family(name, f) for f in NOT_REASONING):
        return False
    return any(_in_family(name, f) for f in reasoning_families())


def split_reasoning(text: str) -> tuple[str, str | None]:
    """``(answer, thinking)``: the text without its think blocks, and their contents.

    Without any think tag the text is returned unchanged with ``None``. A
    closing tag with no opening one before it (chat templates that open the
    block in the prompt) makes everything before it thinking; an opening tag
    never closed (the answer was cut while thinking) makes the rest thinking,
    so the answer is empty and the cut shows as a truncated answer.
    """
    if OPEN not in text and CLOSE not in text:
        return text, None
    answer: list[str] = []
    thoughts: list[str] = []
    pos = 0
    first_open, first_close = text.find(OPEN), text.find(CLOSE)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        thoughts.append(text[:first_close])
        pos = first_close + len(CLOSE)
    while pos < len(text):
        start = text.find(OPEN, pos)
        if start < 0:
            answer.append(text[pos:])
            break
        answer.append(text[pos:start])
        end = text.find(CLOSE, start + len(OPEN))
        if end < 0:
            thoughts.append(text[start + len(OPEN):])
            break
        thoughts.append(text[start + len(OPEN):end])
        pos = end + len(CLOSE)
    return "".join(answer).strip(), join_reasoning(*thoughts)


def join_reasoning(*parts: str | None) -> str | None:
    """The non-empty parts joined by blank lines, or None when there are none."""
    kept = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


__all__ = ["CLOSE", "OPEN", "REASONING_MODELS_ENV", "REASONING_MODEL_FAMILIES", "is_known_reasoning_model",
           "join_reasoning", "reasoning_families", "split_reasoning"]
