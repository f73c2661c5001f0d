"""The form of a judge's requests as the user asked for it: what a run's keys and resume check rest on.

Two judges of one model may write different requests: ``?structured=none`` sends
no JSON schema, ``?reasoning`` another token field, Anthropic's ``?version=``
another header. Their answers are other answers, so the store's task keys, the
shared cache's keys and a run's resume check must tell them apart.

The form is read from the backend itself, not from a list of option names: a
fixed probe request is written by a backend built from the judge's spec and by
one built without its options (:func:`request_form`); when the two write the
same body and headers, the judge's form is the default one and its keys stay
what they always were. Credentials (headers carrying a key) are left out.

The form is taken from freshly built backends, so what a backend later learns
from its server (:mod:`.adaptation`: a schema the server rejects, a token field
it renames) never counts as a change of form: a resumed run after adaptation
finds the same keys.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from polyjudge.backends.base import Backend
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class
from polyjudge.data.chat import GenerateRequest, Message

# A request using every field a backend may write (schema, token probabilities, seed, system prompt).
_PROBE = GenerateRequest(messages=(Message("system", "s"), Message("user", "u")), temperature=0.5, max_tokens=7,
                         seed=3, json_schema={"type": "object", "properties": {"score": {"type": "integer"}},
                                              "required": ["score"]}, top_logprobs=2)
# Headers that carry a credential: never part of a form (nor of anything kept).
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


@dataclass(frozen=True, slots=True)
class RequestForm:
    """A judge's request form: ``token`` ("" for the default form, else a digest of what it writes) and
    ``options`` (the judge options that change what is written, as given)."""

    token: str = ""
    options: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"form": self.token, "options": dict(sorted(self.options.items()))}


def _written(backend: Backend) -> dict[str, Any] | None:
    """What ``backend`` writes for the probe request (body and credential-free headers), or None when it
    writes no HTTP request of its own."""
    body = getattr(backend, "_body", None)
    if not callable(body):
        return None
    headers = getattr(backend, "_headers", None)
    found = headers() if callable(headers) else {}
    kept = {str(k).lower(): str(v) for k, v in dict(found).items() if str(k).lower() not in _SECRET_HEADERS}
    return {"body": body(_PROBE), "headers": kept}


def _build(spec: JudgeSpec, settings: BackendSettings, options: tuple[tuple[str, str], ...]) -> Backend:
    """One server's backend for ``spec`` with ``options`` instead of its own (a pool's first server)."""
    servers = spec.servers
    one = dataclasses.replace(spec, options=options, base_url=servers[0] if servers else spec.base_url)
    return backend_class(spec.backend).from_spec(one, settings)


def request_form(spec: JudgeSpec, settings: BackendSettings) -> RequestForm:
    """The form of ``spec``'s requests (the default form: ``RequestForm()``). Local judges (which load a
    model to be built) and backends that write no HTTP request have the default form."""
    cls = backend_class(spec.backend)
    if cls.capabilities.local or not spec.options:
        return RequestForm()
    default = _written(_build(spec, settings, ()))
    given = _written(_build(spec, settings, spec.options))
    if given is None or given == default:
        return RequestForm()
    shaping = {k: v for k, v in spec.options if _written(_build(spec, settings, ((k, v),))) != default}
    blob = json.dumps(given, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return RequestForm(hashlib.sha256(blob.encode()).hexdigest()[:32], shaping)


def request_forms(specs: Sequence[JudgeSpec], judges: Sequence[str],
                  settings: BackendSettings) -> dict[str, RequestForm]:
    """Each judge's request form (judge name -> form), in spec order."""
    return {judge: request_form(spec, settings) for spec, judge in zip(specs, judges)}


def describe_change(judge: str, before: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """How a judge's request form changed, option by option (e.g. ``structured: json_schema → none``)."""
    old, new = dict(before.get("options") or {}), dict(now.get("options") or {})
    parts = [f"{k}: {old.get(k, '(default)')} → {new.get(k, '(default)')}"
             for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return f"judge {judge} writes its requests otherwise: {', '.join(parts) if parts else 'another request form'}"


__all__ = ["RequestForm", "describe_change", "request_form", "request_forms"]
