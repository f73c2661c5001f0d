"""Batch APIs behind one small interface: submit many requests, poll, collect the answers.

Providers answer a batch within a day at about half the price of live
requests. The engine (``polyjudge.engine.batches``) only speaks
:class:`BatchClient`; a provider adds a client class registered under the
name of its backend (``openai`` and ``anthropic`` here), or a plugin adds one through the entry-point
group ``polyjudge.batch_clients``.

A batch file's lines have a format of their own (the request line written by
``--batch-export``, the output line read by ``--batch-import``): a backend
names the formats it reads and writes in ``Capabilities.batch_formats`` and
each format is a :class:`BatchLineFormat` registered in
:data:`BATCH_LINE_FORMATS` (entry-point group ``polyjudge.batch_formats``),
so the engine looks a judge's format up and never imports a provider.

A client never decides what to resend: it submits the lines it is given
(``custom_id`` identifies each one), reports the provider's status, and
turns the provider's output into one :class:`LineResult` per line.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from polyjudge.backends.base import BackendError
from polyjudge.backends.registry import BackendSettings, JudgeSpec, backend_class
from polyjudge.data.chat import GenerateRequest, GenerateResult
from polyjudge.data.secrets import register_secret_env
from polyjudge.registry import Registry, UnknownNameError

# Provider statuses after which a batch changes no more.
ENDED = frozenset({"completed", "failed", "expired", "cancelled", "ended", "canceled"})
# Pages of a provider's batch list read when looking for a lost batch (ours are among the newest).
MAX_LIST_PAGES = 10
# Uploading a large batch or downloading its results may take longer than one chat request.
FILE_DEADLINE_S = 900.0


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when the provider sent an object, else an empty one (a field of the wrong type is absent)."""
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """Most requests and bytes one batch may hold; larger work is split into several batches."""

    max_requests: int = 50_000
    max_bytes: int = 200 * 1_000_000


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One request of a batch; ``custom_id`` comes back with its answer."""

    custom_id: str
    request: GenerateRequest


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """A batch as the provider reports it."""

    batch_id: str
    status: str  # the provider's word: validating, in_progress, finalizing, completed, expired, ...
    total: int = 0
    completed: int = 0
    failed: int = 0
    expires_at: float | None = None  # Unix time after which unfinished lines expire
    output_file: str | None = None
    error_file: str | None = None
    errors: tuple[str, ...] = ()  # why the whole batch failed, when it did
    tag: str | None = None  # the submission tag given to :meth:`BatchClient.submit`
    input_file: str | None = None  # the provider's file of the batch's requests, when it keeps one

    @property
    def ended(self) -> bool:
        return self.status in ENDED


@dataclass(frozen=True, slots=True)
class LineResult:
    """The outcome of one line: an answer or an error (retryable or not), never both."""

    custom_id: str
    result: GenerateResult | None = None
    error: BackendError | None = None


class UnprovenBatches(Exception):
    """Batches that may be a lost submission of the run but cannot be proven its own yet (their requests
    cannot be read until they end): never adopted nor cancelled; the run names them."""

    def __init__(self, seen: Sequence[BatchInfo]) -> None:
        super().__init__(", ".join(f"{b.batch_id} ({b.total} requests, {b.status})" for b in seen))
        self.seen = tuple(seen)


def batch_custom_id(fingerprint: str, key: str) -> str:
    """A request's custom_id in a submitted batch: the run's fingerprint and the task's key, 64 letters,
    digits and dashes at most (Anthropic's limit), so a listed batch's requests prove whose they are."""
    fingerprint = "".join(c for c in fingerprint if c.isalnum())[-16:]
    return f"{fingerprint}-{key[:63 - len(fingerprint)]}"


@runtime_checkable
class BatchClient(Protocol):
    """One judge's Batch API. Failures of the calls themselves raise :class:`BackendError`."""

    model: str
    endpoint: str  # where batches go, credentials masked (shown by ``polyjudge batch status``)
    limits: BatchLimits

    def line_size(self, line: BatchLine) -> int:
        """Bytes the line takes in a batch (for splitting at ``limits.max_bytes``)."""
        ...

    async def submit(self, lines: Sequence[BatchLine], tag: str) -> BatchInfo:
        """Create one batch of ``lines``, labelled with ``tag`` so :meth:`find` can find it again."""
        ...

    async def find(self, tag: str) -> BatchInfo | None:
        """The batch submitted with ``tag``, or None when it was never created."""
        ...

    async def status(self, batch_id: str) -> BatchInfo: ...

    async def results(self, info: BatchInfo) -> list[LineResult]:
        """Every line the provider answered or failed (an ended batch; missing lines are not listed)."""
        ...

    async def cancel(self, batch_id: str) -> BatchInfo: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BatchEndpoint:
    """Where one judge's batches go: its model, its one server and the variable holding its key."""

    model: str
    base_url: str
    key_env: str


def batch_endpoint(spec: JudgeSpec, settings: BackendSettings, default_url: str, default_key_env: str, *,
                   missing_model: str) -> BatchEndpoint:
    """The endpoint of a judge's batches, its key variable registered as a secret.

    Every batch client starts the same way: a model is required (``missing_model``
    is the provider's own message), and a judge's batches are all recorded
    against one server, so a judge naming several servers cannot be batched.
    """
    if not spec.model:
        raise ValueError(missing_model)
    base_url = spec.base_url or default_url
    if "," in base_url:
        raise ValueError(f"--batch sends each judge's batches to one server; {spec.model} names several")
    key_env = spec.option("key_env") or settings.key_env_for(default_key_env)
    register_secret_env(key_env)
    return BatchEndpoint(spec.model, base_url, key_env)


class RegisteredBatchClient(ABC):
    """A batch client class, registered under the name of the backend it serves."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings, limits: BatchLimits) -> BatchClient:
        """The client for one judge; ``ValueError`` when the spec cannot be batched."""


BATCH_CLIENTS: Registry[type[RegisteredBatchClient]] = Registry(
    "batch client", package="polyjudge.backends", pattern="*_batch", entry_point_group="polyjudge.batch_clients")
register_batch_client = BATCH_CLIENTS.register


class BatchLineFormat(ABC):
    """The lines of one provider's batch files, registered under the format's name."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def request_line(cls, model: str, custom_id: str, request: GenerateRequest) -> dict[str, Any]:
        """One line of a batch input file, as a JSON object."""

    @classmethod
    @abstractmethod
    def parse_output_line(cls, obj: Any) -> LineResult:
        """One line of a batch output (or error) file; ``ValueError`` when it is not one."""


BATCH_LINE_FORMATS: Registry[type[BatchLineFormat]] = Registry(
    "batch line format", package="polyjudge.backends", pattern="*_batch",
    entry_point_group="polyjudge.batch_formats")
register_batch_format = BATCH_LINE_FORMATS.register
# The format of a judge whose backend declares none: OpenAI's lines, which self-hosted servers
# (vLLM's run_batch) also read and write, so any judge's requests can be exported for them.
DEFAULT_BATCH_FORMAT = "openai"


def line_format_for(backend: str | None) -> type[BatchLineFormat]:
    """The batch line format of a judge of ``backend``: the first it declares, else the default."""
    declared = backend_class(backend).capabilities.batch_formats if backend else ()
    return BATCH_LINE_FORMATS.get(declared[0] if declared else DEFAULT_BATCH_FORMAT)


def has_batch_client(backend: str) -> bool:
    return backend in BATCH_CLIENTS


def batch_client_for(spec: JudgeSpec, settings: BackendSettings, limits: BatchLimits = BatchLimits()) -> BatchClient:
    """The batch client of a judge; ``ValueError`` when its backend has no Batch API here."""
    try:
        cls = BATCH_CLIENTS.get(spec.backend)
    except UnknownNameError:
        raise ValueError(f"the {spec.backend} backend has no batch client (batching works with "
                         f"{', '.join(BATCH_CLIENTS.names())})") from None
    return cls.from_spec(spec, settings, limits)


__all__ = ["BATCH_CLIENTS", "BATCH_LINE_FORMATS", "DEFAULT_BATCH_FORMAT", "ENDED", "FILE_DEADLINE_S", "MAX_LIST_PAGES",
           "BatchClient", "BatchEndpoint", "BatchInfo", "BatchLimits", "BatchLine", "BatchLineFormat", "LineResult",
           "RegisteredBatchClient", "batch_client_for", "batch_endpoint", "has_batch_client", "json_object",
           "line_format_for", "register_batch_client", "register_batch_format"]
