"""Prompt templates as replaceable Jinja2 files.

A template renders to a chat. Lines that consist only of a role marker
(``<|system|>``, ``<|user|>`` or ``<|assistant|>``) start a new message, so
one file can hold a system instruction and few-shot turns. Users pass their
own file with ``--prompt-template`` to run the exact published prompt.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path

import jinja2

from polyjudge.backends.base import Message, Role
from polyjudge.data.errors import InputError

_ROLE_LINE = re.compile(r"^<\|(system|user|assistant)\|>[ \t]*$", re.MULTILINE)
_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant"}
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                          autoescape=False)


class PromptTemplate:
    def __init__(self, text: str, origin: str) -> None:
        self.text, self.origin = text, origin
        try:
            self._template = _ENV.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"template syntax error: {exc.message}", path=origin,
                             line=exc.lineno) from None
        self.hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]

    @classmethod
    def load(cls, user_path: str | None, builtin: str) -> PromptTemplate:
        """The user's file if given, else the packaged template ``builtin``
        (a path relative to ``polyjudge/templates``)."""
        if user_path:
            path = Path(user_path)
            if not path.is_file():
                raise InputError("prompt template not found", path=str(path))
            return cls(path.read_text(encoding="utf-8"), str(path))
        res = resources.files("polyjudge").joinpath("templates").joinpath(builtin)
        return cls(res.read_text(encoding="utf-8"), f"polyjudge:templates/{builtin}")

    def render(self, **variables: object) -> list[Message]:
        try:
            text = self._template.render(**variables)
        except jinja2.UndefinedError as exc:
            raise InputError(f"template uses an undefined variable: {exc.message}",
                             path=self.origin) from None
        return split_chat(text)


def split_chat(text: str) -> list[Message]:
    """Split rendered text at role-marker lines into messages.

    Text before the first marker is a user message. Leading/trailing blank
    lines of each message are stripped; empty messages are dropped.
    """
    parts = _ROLE_LINE.split(text)
    messages: list[Message] = []
    head = parts[0].strip("\n")
    if head.strip():
        messages.append(Message("user", head))
    for role, body in zip(parts[1::2], parts[2::2]):
        body = body.strip("\n")
        if body.strip():
            messages.append(Message(_ROLES[role], body))
    return messages
