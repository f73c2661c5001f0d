"""Separating a reasoning model's thinking from its answer.

Open reasoning models (Qwen3, DeepSeek-R1, QwQ ...) served without a
reasoning parser write their thinking into the answer as ``<think>…</think>``
blocks. The thinking is kept (``GenerateResult.reasoning``) but never parsed:
a judge's scratch work may mention every score it considered.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


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


__all__ = ["CLOSE", "OPEN", "join_reasoning", "split_reasoning"]
