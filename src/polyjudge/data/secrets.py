"""Keeping secrets out of every text polyjudge writes or prints.

:func:`redact` is applied where text leaves the process or reaches disk
(backend error messages, store rows, manifests, reports, the CLI's error
lines). It replaces with ``[REDACTED]``:

* the value of every environment variable that holds a secret: one whose
  name says so (``OPENAI_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD`` ...) or one
  registered with :func:`register_secret_env` (the ``--api-key-env`` of a
  run), also when it appears JSON- or URL-escaped, or cut short at the end of
  a truncated message;
* credentials in URLs (``https://user:pass@host``, ``?api_key=...``);
* ``Authorization``/``Bearer`` headers and ``api_key=``/``password:`` values;
* a value written where the *name* of a key's variable belongs (``key_env=``,
  ``api_key_env``, ``--api-key-env``) that is no variable name: the key itself,
  pasted in the wrong place (see :func:`check_env_name`);
* strings shaped like provider keys (``sk-...``, ``hf_...``, ``ghp_...``,
  ``AIza...``, ``AKIA...``, JSON web tokens).

The shapes are chosen so that ordinary prose, numbers, hex digests (run
signatures, prompt hashes) and language codes are left alone: a value must
follow an explicit key name, or have a provider's prefix and contain a digit.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, overload
from urllib.parse import quote

MASK = "[REDACTED]"
# Shortest value treated as a secret: shorter ones would mask ordinary words.
MIN_SECRET_LEN = 8
# Shortest start of a secret masked where a message was cut ("sk-proj-" alone is no secret).
_MIN_CUT = 12
# Environment variables whose values are secrets, by a word of their name.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS")
# Values of such variables that are settings, not secrets.
_FLAG_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled"})
# Names registered at run time (``--api-key-env``), whatever they are called.
_registered: set[str] = set()

_KEY_CHARS = r"[A-Za-z0-9._~+/=-]"
# (substrings of the lower-cased text one of which must occur, pattern, replacement)
_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    # scheme://user:pass@host, scheme://token@host
    (("://",), re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#\"'<>\\]+@"), rf"\g<1>{MASK}@"),
    # ?api_key=... &token=... in a query string
    (("=",), re.compile(r"(?i)([?&](?:api[_-]?key|key|access[_-]?token|token|auth|sig|secret|client[_-]?secret"
                        r"|password)=)[^&#\s\"'<>\\]+"), rf"\g<1>{MASK}"),
    # Authorization: Bearer X / Basic X / X
    (("authorization",),
     re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)"
                r"[^\s\"',;&\\]{6,}"), rf"\g<1>{MASK}"),
    # Bearer X anywhere (a token has a digit, so "the bearer instruments" stays)
    (("bearer",), re.compile(rf"(?i)\b(bearer\s+)(?={_KEY_CHARS}*\d){_KEY_CHARS}{{12,}}"), rf"\g<1>{MASK}"),
    # api_key=X, "password": "X", client_secret: X: 8+ characters with a digit, or 16+;
    # never all digits ("max_token: 40960" stays)
    (("key", "token", "secret", "passw"),
     re.compile(r"(?i)\b((?:[a-z0-9]+[_-])*(?:api[_-]?key|apikey|token|secret|password|passwd)[\"']?\s*[:=]\s*"
                r"[\"']?)(?![0-9]+\b)(?:(?=[^\s\"',;&\\]*[0-9])[^\s\"',;&\\]{8,}|[^\s\"',;&\\]{16,})"),
     rf"\g<1>{MASK}"),
    # Provider key shapes, each with a digit somewhere.
    (("sk-", "sk_", "rk-", "rk_"), re.compile(r"\b(?:sk|rk)[-_](?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{32,}"), MASK),
    (("hf", "gh", "glpat", "xox"),
     re.compile(r"\b(?:hf|gh[pousr]|github_pat|glpat|xox[abprs])[_-](?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
     MASK),
    # key_env=X, "api_key_env": "X", --api-key-env X where X is no variable's name (the key itself)
    (("key_env", "key-env"),
     re.compile(r"(?i)((?:\bapi[_-]?key[_-]env|\bkey[_-]env)[\"']?\s*[:=]\s*[\"']?|--api-key-env[= ]\s*)"
                r"(?![A-Za-z_][A-Za-z0-9_]*(?:[\s\"',;&\\@)\]}]|$))[^\s\"',;&\\@]+"), rf"\g<1>{MASK}"),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), MASK),
    (("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), MASK),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Longest variable name taken: a longer "name" is a pasted value (POSIX sets no limit; no provider's is near it).
MAX_ENV_NAME = 64


def is_env_name(value: str) -> bool:
    """Whether ``value`` can be the name of a key's environment variable: letters, digits and ``_``, not
    starting with a digit, at most :data:`MAX_ENV_NAME` long, and not shaped like a provider's key
    (``sk_live_...``, ``hf_...`` and ``ghp_...`` keys are valid names by the letters alone)."""
    if not _ENV_NAME.fullmatch(value) or len(value) > MAX_ENV_NAME:
        return False
    if any(pattern.search(value) for _, pattern, _ in _PATTERNS):
        return False
    # A long run of mixed-case letters and digits without one '_' is a token, not a name.
    return not (len(value) >= 24 and "_" not in value and any(c.isdigit() for c in value)
                and value.upper() != value and value.lower() != value)


def check_env_name(value: str, what: str | None = None) -> None:
    """``ValueError`` (one line that never quotes ``value``) unless ``value`` :func:`is_env_name`: ``what``
    (``option key_env of judge 'openai:m'``; None when the caller's error names the setting itself) takes
    the variable's name, and the value given may be the key itself."""
    if not is_env_name(value):
        raise ValueError(f"{what + ': ' if what else ''}expected the name of the environment variable that "
                         "holds the API key (like OPENAI_API_KEY), not the key itself; the value given is no "
                         "variable name (not shown: it may be a key)")


def register_secret_env(name: str) -> None:
    """Treat the value of environment variable ``name`` as a secret from now on."""
    if name:
        _registered.add(name)


@functools.lru_cache(maxsize=1024)
def _is_secret(name: str, value: str) -> bool:
    if len(value) < MIN_SECRET_LEN or value.isdigit() or value.lower() in _FLAG_VALUES:
        return False
    # A short plain word ("development") would mask prose; keys have digits or length.
    if value.isalpha() and len(value) < 16:
        return False
    # A path to a credentials file is not itself the secret (and masking it garbles messages).
    if value.startswith(("/", "~", ".")) and os.path.exists(os.path.expanduser(value)):
        return False
    return any(word.endswith(_SECRET_WORDS) for word in re.split(r"[^A-Za-z0-9]+", name.upper()) if word)


def env_secrets() -> list[str]:
    """Secret values from the environment, longest first."""
    values = {v for k, v in os.environ.items()
              if (k in _registered and len(v) >= MIN_SECRET_LEN) or _is_secret(k, v)}
    return sorted(values, key=len, reverse=True)


@functools.lru_cache(maxsize=256)
def _spellings(secret: str) -> tuple[str, ...]:
    """The ways a secret is written in text: as is, JSON-escaped, URL-encoded."""
    forms = [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             secret.replace("/", "\\/"), quote(secret, safe="")]
    return tuple(dict.fromkeys(forms))


def _mask_cut_secret(text: str, secret: str) -> str:
    """Mask a secret cut short where ``text`` was truncated (at its end, or before an ellipsis)."""
    for tail in ("…", "...", ""):
        if tail and not text.endswith(tail):
            continue
        body = text[: len(text) - len(tail)]
        if secret[:_MIN_CUT] not in body:
            continue
        for k in range(min(len(secret) - 1, len(body)), _MIN_CUT - 1, -1):
            if body.endswith(secret[:k]):
                return body[: len(body) - k] + MASK + tail
    return text


class Redactor:
    """Masks secrets in many texts with one snapshot of the secret values (a report, a file).

    ``extra``: more secret values to mask. ``patterns=False`` masks only known
    values (environment, ``extra``), never a shape: for texts that must stay
    byte-exact unless they really hold a secret (recorded requests).
    """

    def __init__(self, extra: Iterable[str] = (), *, patterns: bool = True) -> None:
        values = {v for v in extra if v and len(v) >= MIN_SECRET_LEN} | set(env_secrets())
        self.secrets = sorted(values, key=len, reverse=True)  # read only: the lookups below are made of it
        self.patterns = patterns
        # Each secret with its spellings and the start that a copy of it cut short must contain (a text
        # without that start holds no cut copy: _mask_cut_secret would return it as it is), looked up once.
        self._lookups = [(secret, _spellings(secret), secret[:_MIN_CUT]) for secret in self.secrets]

    @overload
    def __call__(self, text: str) -> str: ...
    @overload
    def __call__(self, text: None) -> None: ...
    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        for secret, forms, start in self._lookups:
            for form in forms:
                if form in text:
                    text = text.replace(form, MASK)
            if start in text:
                text = _mask_cut_secret(text, secret)
        if self.patterns:
            lower = text.lower()
            for triggers, pattern, replacement in _PATTERNS:
                if any(t in lower for t in triggers):
                    text = pattern.sub(replacement, text)
                    lower = text.lower()
        return text


def secret_spans(mask: Redactor, text: str) -> list[tuple[int, int]]:
    """Where in ``text`` the known secret values of ``mask`` are written (start, end), in any spelling."""
    spans = []
    for secret in mask.secrets:
        for form in _spellings(secret):
            at = text.find(form)
            while at >= 0:
                spans.append((at, at + len(form)))
                at = text.find(form, at + 1)
    return spans


def mask_tokens(mask: Redactor, tokens: Sequence[str]) -> list[str]:
    """``tokens`` (an answer's pieces, in order) with every secret masked over their joined text: the
    first token a secret touches becomes ``[REDACTED]``, the others it touches become empty, so
    joining the tokens again never gives the secret back, however the tokens cut it."""
    joined = "".join(tokens)
    spans = secret_spans(mask, joined) if mask.secrets and joined else []
    if not spans:
        return list(tokens)
    out, start, masked_until = [], 0, -1
    for tok in tokens:
        end = start + len(tok)
        hit = [b for a, b in spans if a < end and b > start] if tok else []
        if hit:
            out.append("" if start < masked_until else MASK)
            masked_until = max(masked_until, *hit)
        elif start < masked_until:
            out.append("")
        else:
            out.append(tok)
        start = end
    return out


def mask_token_rows(mask: Redactor, rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Token probabilities as kept on disk (``[token, logprob, alternatives]`` rows) masked by
    :func:`mask_tokens`; a masked position loses its alternatives too (they may spell the secret)."""
    tokens = [str(r[0]) for r in rows]
    masked = mask_tokens(mask, tokens)
    return [[m, *r[1:]] if m == t else [m, r[1], []] for m, t, r in zip(masked, tokens, rows)]


@overload
def redact(text: str, extra: Iterable[str] = (), *, patterns: bool = True) -> str: ...
@overload
def redact(text: None, extra: Iterable[str] = (), *, patterns: bool = True) -> None: ...
def redact(text: str | None, extra: Iterable[str] = (), *, patterns: bool = True) -> str | None:
    """``text`` with every secret it contains replaced by ``[REDACTED]`` (None stays None).

    Arguments as for :class:`Redactor`; to redact many texts, make one Redactor.
    """
    if not text:
        return text
    return Redactor(extra, patterns=patterns)(text)


@overload
def redact_url(url: str) -> str: ...
@overload
def redact_url(url: None) -> None: ...
def redact_url(url: str | None) -> str | None:
    """A URL without the credentials of its authority (``user:pass@`` becomes ``[REDACTED]@``)."""
    if not url:
        return url
    scheme, sep, rest = url.partition("://")
    if sep:
        end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority = rest[:end]
        if "@" in authority:
            url = f"{scheme}{sep}{MASK}@{authority.rpartition('@')[2]}{rest[end:]}"
    return redact(url)


__all__ = ["MASK", "MAX_ENV_NAME", "MIN_SECRET_LEN", "Redactor", "check_env_name", "env_secrets", "is_env_name",
           "mask_token_rows", "mask_tokens", "redact",
           "redact_url", "register_secret_env", "secret_spans"]
