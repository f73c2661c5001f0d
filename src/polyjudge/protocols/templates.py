"""Prompt templates as replaceable Jinja2 files, rendered in a sandbox.

A template renders to a chat. A line of the template that holds only a role
marker (``<|system|>``, ``<|user|>`` or ``<|assistant|>``) starts a new
message, so one file can hold a system instruction and few-shot turns (a
marker line inside a ``{% for %}`` loop starts one message per pass). Users
pass their own file with ``--prompt-template`` to run the exact published
prompt.

Templates are untrusted (published prompts are loaded from anywhere), and the
texts they are filled with are untrusted too:

* Only marker lines written in the template split the chat. Before compiling,
  each one is replaced by a private token (a random number drawn per template,
  never shown to anyone), and the rendered text is split at those tokens
  alone. A value that contains ``<|system|>``, Jinja syntax or JSON is copied
  into its message byte for byte and can never start, end or reorder messages.
* Every value printed by ``{{ ... }}`` is framed by two more private tokens,
  so the blank lines trimmed around a message are the template's own and a
  value keeps its leading and trailing newlines.
* Rendering runs in Jinja's immutable sandbox with no globals at all (no
  ``range``, ``lipsum``, ``cycler``, ``namespace``, ``dict`` ...): a template
  sees the variables the protocol documents and Jinja's filters, nothing else.
  Reading an attribute that starts with ``_`` raises at once, and so does
  anything else the sandbox forbids; every such error, like any other
  failure of a template, is an :class:`InputError` naming the template file.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from polyjudge.data.chat import Message, Role
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import redact
from polyjudge.data.textio import read_text
from polyjudge.protocols.template_shapes import ShapeMemo, slot_variables

if TYPE_CHECKING:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

# A template line that starts a message: the marker alone (trailing blanks allowed).
_MARKER_LINE = re.compile(r"^<\|(system|user|assistant)\|>[ \t]*$", re.MULTILINE)
# Token kinds: the three roles by index, then the frame around a printed value.
_ROLES: tuple[Role, ...] = ("system", "user", "assistant")
_OPEN, _CLOSE = 3, 4
# Errors a template can cause while rendering (besides Jinja's own).
# What follows a token's prefix: its kind digit and the closing character.
_TOKEN_KINDS = {f"{kind}\ue001": kind for kind in range(5)}
_RENDER_ERRORS = (ArithmeticError, AttributeError, LookupError, RecursionError, TypeError, ValueError)


@cache
def _sandbox_environment() -> type[ImmutableSandboxedEnvironment]:
    """The environment class templates are built with, made on first use (jinja2 is imported when a
    template is built, not when the protocols are listed by ``--help``)."""
    from jinja2.exceptions import SecurityError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _SandboxEnvironment(ImmutableSandboxedEnvironment):
        """Jinja's immutable sandbox, failing at once on a forbidden attribute.

        The stock sandbox returns an undefined value that fails only when used;
        raising on access makes ``{% if x.__class__ is defined %}`` fail too.
        """

        def unsafe_undefined(self, obj: Any, attribute: str) -> NoReturn:
            raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} "
                                f"object is not allowed")

    return _SandboxEnvironment


class _Tokens:
    """The private tokens of one template: role markers and value frames.

    Digits only between two private-use characters, so case filters leave
    them intact; the random part makes them impossible to guess from data.
    """

    def __init__(self) -> None:
        self.prefix = f"\ue000{secrets.randbelow(10**32):032d}"
        self.pattern = re.compile(re.escape(self.prefix) + "([0-4])\ue001")

    def token(self, kind: int) -> str:
        return f"{self.prefix}{kind}\ue001"

    def frame(self, value: object) -> str:
        """``value`` as text between the value tokens.

        Text that already holds a token was rendered by the template itself
        (a macro, a ``{% set %}`` block): it keeps its own tokens unframed.
        """
        text = str(value)  # a StrictUndefined raises here, as in plain rendering
        if self.prefix in text:
            return text
        return f"{self.token(_OPEN)}{text}{self.token(_CLOSE)}"

    def mark_source(self, source: str) -> str:
        """The template source with every marker line replaced by its role token."""
        return _MARKER_LINE.sub(lambda m: self.token(_ROLES.index(m.group(1))), source)

    def unmark(self, text: str) -> str:
        """``text`` (an error message) with role tokens written as markers again, frames dropped."""
        def show(m: re.Match[str]) -> str:
            kind = int(m.group(1))
            return f"<|{_ROLES[kind]}|>" if kind < _OPEN else ""
        return self.pattern.sub(show, text)


class PromptTemplate:
    """One prompt template: its source, where it came from and its hash.

    ``hash`` is the first 10 hex digits of the SHA-256 of the source as
    written; run signatures name it.
    """

    def __init__(self, text: str, origin: str) -> None:
        self.text, self.origin = text, origin
        import jinja2
        import jinja2.meta

        self._tokens = _Tokens()
        env = _sandbox_environment()(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                  autoescape=False, finalize=self._tokens.frame)
        env.globals.clear()  # range, lipsum, cycler, joiner, namespace, dict
        marked = self._tokens.mark_source(text)
        try:
            self._template = env.from_string(marked)
            ast = env.parse(marked)
            self._variables = frozenset(jinja2.meta.find_undeclared_variables(ast))
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"template syntax error: {self._tokens.unmark(exc.message or '')}",
                             path=origin, line=exc.lineno) from None
        self.hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        self._shapes = ShapeMemo(self._render_text, self._variables, slot_variables(ast))

    def uses(self, name: str) -> bool:
        """Whether the template reads the variable ``name`` at all (on any branch)."""
        return name in self._variables

    @classmethod
    def load(cls, user_path: str | None, builtin: str) -> PromptTemplate:
        """The user's file if given, else the packaged template ``builtin``
        (a path relative to ``polyjudge/templates``)."""
        if user_path:
            path = Path(user_path)
            if not path.is_file():
                raise InputError("prompt template not found", path=str(path))
            return cls(_read_source(path), str(path))
        res = resources.files("polyjudge").joinpath("templates").joinpath(builtin)
        return cls(res.read_text(encoding="utf-8"), f"polyjudge:templates/{builtin}")

    def render(self, /, **variables: object) -> list[Message]:
        """The chat for these variables; any failure of the template is an InputError.

        Rendered once per shape of the variables and filled in (:mod:`.template_shapes`):
        the same messages as :meth:`render_directly`, without running the template per item.
        """
        found = self._shapes.render(variables)
        return found if found is not None else self._render_text(variables)

    def render_directly(self, /, **variables: object) -> list[Message]:
        """The chat for these variables, running the template (what :meth:`render` must equal)."""
        return self._render_text(variables)

    def _render_text(self, variables: Mapping[str, object]) -> list[Message]:
        import jinja2
        from jinja2.exceptions import SecurityError

        try:
            text = self._template.render(variables)
        except SecurityError as exc:
            raise self._error(f"template does something the sandbox forbids: {exc.message}") from None
        except jinja2.UndefinedError as exc:
            raise self._error(f"template uses an undefined variable: {exc.message}") from None
        except jinja2.TemplateError as exc:
            raise self._error(f"template failed: {exc.message or type(exc).__name__}") from None
        except _RENDER_ERRORS as exc:
            raise self._error(f"template failed: {type(exc).__name__}: {exc}") from None
        return self._split(text)

    def _error(self, message: str) -> InputError:
        return InputError(redact(self._tokens.unmark(message)) or message, path=self.origin)

    def _split(self, text: str) -> list[Message]:
        """Messages at the template's role tokens; text before the first one is a user message."""
        messages: list[Message] = []
        role: Role = "user"
        chunks = text.split(self._tokens.prefix)
        pieces: list[tuple[bool, str]] = [(False, chunks[0])]  # (is a printed value, text)
        depth = 0
        for chunk in chunks[1:]:
            kind = _TOKEN_KINDS.get(chunk[:2])
            if kind is None:  # not one of this template's tokens (it cannot come from data): text
                pieces.append((depth > 0, self._tokens.prefix + chunk))
                continue
            if kind == _OPEN:
                depth += 1
            elif kind == _CLOSE:
                depth = max(0, depth - 1)
            else:
                _append_message(messages, role, pieces)
                role, pieces = _ROLES[kind], []
            pieces.append((depth > 0, chunk[2:]))
        _append_message(messages, role, pieces)
        return messages


def _append_message(messages: list[Message], role: Role, pieces: list[tuple[bool, str]]) -> None:
    """Add the message made of ``pieces`` unless it is blank.

    Newlines at either end are trimmed only from the template's own text:
    a printed value is kept exactly as given.
    """
    kept = [p for p in pieces if p[1]]
    while kept and not kept[0][0]:
        rest = kept[0][1].lstrip("\n")
        if rest:
            kept[0] = (False, rest)
            break
        kept.pop(0)
    while kept and not kept[-1][0]:
        rest = kept[-1][1].rstrip("\n")
        if rest:
            kept[-1] = (False, rest)
            break
        kept.pop()
    content = "".join(text for _, text in kept)
    if content.strip():
        messages.append(Message(role, content))


def _read_source(path: Path) -> str:
    """A template file's text through the text-input layer, keeping whether it ends with a newline
    (the template hash is taken over the source as written)."""
    text = read_text(path)
    with path.open("rb") as fh:
        if fh.seek(0, 2) == 0:
            return text
        fh.seek(-1, 2)
        ends_with_newline = fh.read(1) == b"\n"
    return text if ends_with_newline else text[:-1]


__all__ = ["PromptTemplate"]
