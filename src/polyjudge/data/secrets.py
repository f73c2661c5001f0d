"""Keeping secrets out of every text polyjudge writes or prints.

:func:`redact` is applied where text leaves the process or reaches disk
(backend error messages, store rows, manifests, reports, the CLI's error
lines): API keys found in the environment, credentials in URLs
(``https://user:pass@host``), ``Authorization``/``Bearer`` tokens and strings
shaped like provider keys become ``[REDACTED]``.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

MASK = "[REDACTED]"
# Environment variables whose values are secrets, by name.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
# Values never treated as secrets even when a variable's name says so (too short to matter, or flags).
_MIN_SECRET_LEN = 8
_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|x-api-key|authorization|token|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&]{6,}"),
    re.compile(r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_-]{16,}"),
    re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"),
)


def _env_secrets() -> list[str]:
    vals = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def redact(text: str | None, extra: tuple[str, ...] = ()) -> str | None:
    """``text`` with every secret it contains replaced by ``[REDACTED]`` (None stays None)."""
    if not text:
        return text
    for secret in (*extra, *_env_secrets()):
        if secret and len(secret) >= _MIN_SECRET_LEN and secret in text:
            text = text.replace(secret, MASK)
    for pat in _PATTERNS:
        text = pat.sub(lambda m: m.group(1) + MASK + ("@" if m.group(0).endswith("@") else ""), text)
    return text


def redact_url(url: str | None) -> str | None:
    """A URL without the credentials of its authority (``user:pass@`` becomes ``[REDACTED]@``)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.username is None and parts.password is None:
        return redact(url)
    host = parts.hostname or ""
    netloc = f"{MASK}@{host}" + (f":{parts.port}" if parts.port else "")
    return redact(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))


__all__ = ["MASK", "redact", "redact_url"]
