"""Recording and replaying judge answers.

``RecordingBackend`` wraps any backend and appends each request/answer pair
to a JSONL file; ``ReplayBackend`` answers from such a file, so a published or
shared run can be re-scored exactly and tests run without a model.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict, deque
from pathlib import Path
from typing import Any, ClassVar

from polyjudge.backends.base import Backend, BackendError
from polyjudge.backends.registry import (
    BackendSettings,
    Capabilities,
    JudgeSpec,
    RegisteredBackend,
    register_backend,
)
from polyjudge.data.chat import GenerateRequest, GenerateResult, TokenLogprob, Usage
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.secrets import Redactor, mask_token_rows, redact


def request_fingerprint(request: GenerateRequest | dict[str, Any]) -> str:
    canonical = request.canonical() if isinstance(request, GenerateRequest) else request
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _recorded(result: GenerateResult) -> dict[str, Any]:
    """An answer as a recording line holds it; what 0.1.0 did not have is written only when set,
    so recordings of ordinary answers keep their exact form."""
    usage: dict[str, int] = {"prompt_tokens": result.usage.prompt_tokens,
                             "completion_tokens": result.usage.completion_tokens}
    if result.usage.cached_prompt_tokens:
        usage["cached_prompt_tokens"] = result.usage.cached_prompt_tokens
    if result.usage.reasoning_tokens:
        usage["reasoning_tokens"] = result.usage.reasoning_tokens
    out: dict[str, Any] = {"text": result.text, "finish_reason": result.finish_reason, "usage": usage,
                           "latency_s": result.latency_s}
    if result.choices:
        out["choices"] = list(result.choices)
        out["choice_finish_reasons"] = list(result.choice_finish_reasons)
    if result.logprobs:
        rows = [[t.token, t.logprob, [list(a) for a in t.top]] for t in result.logprobs]
        out["logprobs"] = mask_token_rows(Redactor(patterns=False), rows)  # tokens joined never spell a key
    if result.reasoning is not None:
        out["reasoning"] = result.reasoning
    return out


def _replayed(resp: dict[str, Any], model: str) -> GenerateResult:
    """A recorded answer back as a result (see :func:`_recorded`)."""
    usage = resp.get("usage") or {}
    return GenerateResult(
        text=resp["text"], finish_reason=resp.get("finish_reason", "stop"),
        usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
                    cached_prompt_tokens=usage.get("cached_prompt_tokens", 0),
                    reasoning_tokens=usage.get("reasoning_tokens", 0)),
        latency_s=0.0, model=model,
        choices=tuple(resp.get("choices") or ()), choice_finish_reasons=tuple(resp.get("choice_finish_reasons") or ()),
        logprobs=tuple(TokenLogprob(str(t[0]), float(t[1]), tuple((str(a[0]), float(a[1])) for a in t[2]))
                       for t in resp.get("logprobs") or ()),
        reasoning=resp.get("reasoning"))


class RecordingBackend:
    """Passes requests to ``inner`` and appends every answer to ``path``.

    Nothing secret is written: every secret value of the environment (the
    API key, ``--api-key-env``) is masked in each line. Masking goes by value
    only, never by shape, so a recording of ordinary texts replays byte for
    byte.
    """

    def __init__(self, inner: Backend, path: str | Path) -> None:
        self.inner, self.model = inner, inner.model
        self._fh = open(path, "a", encoding="utf-8")

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        result = await self.inner.generate(request)
        line = json.dumps({"model": self.model, "request": request.canonical(), "response": _recorded(result)},
                          ensure_ascii=False)
        self._fh.write(redact(line, patterns=False) + "\n")
        self._fh.flush()
        return result

    @property
    def adaptations(self) -> dict[str, str]:
        """The wrapped backend's adaptations (see ``OpenAIBackend.adaptations``)."""
        found = getattr(self.inner, "adaptations", None)
        return dict(found) if isinstance(found, dict) else {}

    def server_counts(self) -> dict[str, int] | None:
        """The wrapped backend's requests per server when it is a pool, else None."""
        counts = getattr(self.inner, "server_counts", None)
        return counts() if callable(counts) else None

    async def aclose(self) -> None:
        self._fh.close()
        await self.inner.aclose()


@register_backend()
class ReplayBackend(RegisteredBackend):
    """Answers recorded with --record, offline and exact: replay:RECORDING.jsonl.

    A request that was never recorded is a (non-retryable) failure.
    Identical requests recorded several times are answered in recorded order.
    ``model`` defaults to the recorded model name so cache keys and signatures match.
    """

    name: ClassVar[str] = "replay"
    # Recorded answers, logprobs included, replayed here for free.
    capabilities: ClassVar[Capabilities] = Capabilities(local=True, token_probabilities=True)

    @classmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        if not spec.model:
            raise ValueError("the replay backend needs a recording: replay:FILE.jsonl")
        return cls(spec.model)

    def __init__(self, path: str | Path, model: str | None = None) -> None:
        self._answers: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        models: set[str] = set()
        if not Path(path).is_file():
            raise InputError("recording not found", path=str(path))
        for n, rec in iter_jsonl(path):
            try:
                fp = request_fingerprint(rec["request"])
                resp = rec["response"]
                resp["text"]
            except (KeyError, TypeError) as exc:
                raise InputError(f"not a recorded request/response ({type(exc).__name__}: {exc})",
                                 path=str(path), line=n) from None
            self._answers[fp].append(resp)
            models.add(rec.get("model", "replay"))
        self.model = model or (models.pop() if len(models) == 1 else "replay")

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        queue = self._answers.get(request_fingerprint(request))
        if not queue:
            raise BackendError("no recorded answer for this request", retryable=False)
        resp = queue.popleft() if len(queue) > 1 else queue[0]
        return _replayed(resp, self.model)

    async def aclose(self) -> None:
        return None
