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

from polyjudge.backends.base import Backend, BackendError, GenerateRequest, GenerateResult, Usage
from polyjudge.backends.registry import BackendSettings, JudgeSpec, RegisteredBackend, register_backend
from polyjudge.data.errors import InputError
from polyjudge.data.readers import iter_jsonl
from polyjudge.data.secrets import redact


def request_fingerprint(request: GenerateRequest | dict[str, Any]) -> str:
    canonical = request.canonical() if isinstance(request, GenerateRequest) else request
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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
        line = json.dumps({
            "model": self.model, "request": request.canonical(),
            "response": {"text": result.text, "finish_reason": result.finish_reason,
                         "usage": {"prompt_tokens": result.usage.prompt_tokens,
                                   "completion_tokens": result.usage.completion_tokens},
                         "latency_s": result.latency_s},
        }, ensure_ascii=False)
        self._fh.write(redact(line, patterns=False) + "\n")
        self._fh.flush()
        return result

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
        usage = resp.get("usage") or {}
        return GenerateResult(text=resp["text"], finish_reason=resp.get("finish_reason", "stop"),
                              usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
                              latency_s=0.0, model=self.model)

    async def aclose(self) -> None:
        return None
