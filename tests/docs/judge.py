"""The scripted judge behind the documentation's examples: one answer for any protocol's request.

It reads what the request asks for (the JSON schema of ``response_format`` for OpenAI-compatible
requests, the forced tool's ``input_schema`` for Anthropic's Messages API, else the prompt's own
instructions) and writes a well-formed answer about the translation in the prompt. The answer is a
deterministic function of the translation and the seed, so a page's output is the same on every run:
a quality between 40 and 95 that falls as the translation's length strays from the source's (the
crudest of quality signals, so that a page's judge agrees a little with people), and one error on the
translation's longest word when the quality is below 70 (a minor one from 55, a major one below).
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

_SOURCE = (re.compile(r"Source \([^)]*\):\s*\n?(.+?)(?:\n\n|\nTranslation|\Z)", re.S),
           re.compile(r"source: (.+?)(?:\n|\Z)"),
           re.compile(r"Input:\s*\n(.+?)(?:\n\n|\Z)", re.S))
_TRANSLATION = (re.compile(r"Translation \([^)]*\):\s*\n?(.+?)(?:\n\n|\Z)", re.S),
                re.compile(r"translation: (.+?)(?:\n\n|\Z)", re.S),
                re.compile(r"Text to rate \([^)]*\):\s*\n(.+?)(?:\n\n|\Z)", re.S),
                re.compile(r"Output:\s*\n(.+?)(?:\n\n|\Z)", re.S))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _field(body: dict[str, Any], key: str, patterns: tuple[re.Pattern[str], ...]) -> str | None:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    user = _text(users[-1].get("content")) if users else ""
    try:
        record = json.loads(user)
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get(key), str):
        return str(record[key])
    for pattern in patterns:
        found = pattern.findall(user)
        if found:
            return str(found[-1]).strip()
    return None


def translation_of(body: dict[str, Any]) -> str:
    """The translation the request's last user message asks about (its last line when no label is found)."""
    found = _field(body, "target", _TRANSLATION)
    if found is not None:
        return found
    users = [_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"]
    return users[-1].strip().splitlines()[-1] if users and users[-1].strip() else ""


def quality(body: dict[str, Any]) -> int:
    """A deterministic 40..95 for this translation and seed: lower the more its length strays from the
    source's (by a tenth of the source's length or more), with a little noise that depends on the seed and the model."""
    tgt, src = translation_of(body), _field(body, "source", _SOURCE)
    noise = zlib.crc32(f"{tgt}|{body.get('seed') or 0}|{body.get('model')}".encode()) % 6
    if not src:
        return 40 + zlib.crc32(tgt.encode("utf-8")) % 50 + noise
    stray = max(0.0, abs(len(tgt) / max(len(src), 1) - 0.95) - 0.1)
    return max(40, min(95, round(95 - 150 * stray) - noise))


def _error_word(translation: str) -> str:
    words = re.findall(r"\w+", translation)
    return max(words, key=len) if words else ""


def _severity(q: int) -> str | None:
    return None if q >= 70 else ("minor" if q >= 55 else "major")


def _spans(body: dict[str, Any], item: dict[str, Any]) -> list[dict[str, Any]]:
    q, tgt = quality(body), translation_of(body)
    severity, word = _severity(q), _error_word(tgt)
    if severity is None or not word:
        return []
    props = item.get("properties", {})
    error: dict[str, Any] = {}
    for key, sub in props.items():
        if key == "span":
            error[key] = word
        elif key == "start":
            error[key] = tgt.index(word)
        elif key == "end":
            error[key] = tgt.index(word) + len(word)
        elif key == "severity":
            error[key] = severity
        elif key == "category":
            error[key] = "accuracy/mistranslation"
        else:
            error[key] = _fill(body, sub, key)
    return [error]


def _mqm_errors(body: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    severity = _severity(quality(body))
    word = _error_word(translation_of(body))
    out: dict[str, Any] = {name: [] for name in schema.get("properties", {})}
    if severity in out:
        out[severity] = [{"type": "accuracy/mistranslation", "desc": f"'{word}' does not render the source"}]
    return out


def _fill(body: dict[str, Any], schema: dict[str, Any], key: str = "") -> Any:
    kind, q = schema.get("type"), quality(body)
    if "enum" in schema:
        options = schema["enum"]
        return options[(100 - q) * len(options) // 61 % len(options)]
    if kind == "object":
        if key == "errors":
            return _mqm_errors(body, schema)
        return {k: _fill(body, sub, k) for k, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return _spans(body, schema.get("items", {})) if key == "errors" else []
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 100)
        return low + round((high - low) * q / 100)
    if kind == "boolean":
        return q >= 70
    if key == "annotated_translation":
        tgt, word, severity = translation_of(body), _error_word(translation_of(body)), _severity(q)
        return tgt.replace(word, f"<v0>{word}</v0>", 1) if severity and word else tgt
    return "scripted answer"


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and "json_schema" in fmt:
        return dict(fmt["json_schema"].get("schema") or {})
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and "input_schema" in tool:
            return dict(tool["input_schema"])
    return None


def _free_text(body: dict[str, Any]) -> str:
    prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", [])) + _text(body.get("system"))
    q = quality(body)
    if "<verdict>" in prompt:
        verdict = "correct" if q >= 60 else "incorrect"
        return f"<justification>The scripted judge rates this {q}.</justification>\n<verdict>{verdict}</verdict>"
    if re.search(r"\byes or no\b", prompt, re.I):
        return "yes" if q >= 70 else "no"
    letters: list[str] = re.findall(r"^([A-Z])\. ", prompt, re.M)
    if letters and "EVERY option" in prompt:
        first = (100 - q) * len(letters) // 61 % len(letters)
        return "".join(letters[first:first + 1 + q % 2])
    if letters:
        return letters[(100 - q) * len(letters) // 61 % len(letters)]
    return json.dumps({"score": q})


def answer(body: dict[str, Any]) -> str:
    """The scripted answer to one request (JSON for structured requests, the prompt's form otherwise).

    A model whose name says it thinks aloud (``...-r1...``, as DeepSeek-R1 and its distillations served
    without a reasoning parser do) writes its thinking in ``<think>`` tags before the answer."""
    schema = _schema(body)
    text = _free_text(body) if schema is None else json.dumps(_fill(body, schema), ensure_ascii=False)
    if "r1" in str(body.get("model", "")).lower():
        return f"<think>The translation reads {quality(body)} out of 100 to me.</think>\n{text}"
    return text


__all__ = ["answer", "quality", "translation_of"]
