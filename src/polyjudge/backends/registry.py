"""Backends by name: the registry, judge specs and the knobs every judge shares.

A judge is written ``BACKEND[:TARGET]`` (``openai:gpt-4o@http://host/v1``,
``anthropic:claude-sonnet-5``, ``llamacpp``, ``replay:run.jsonl``). The
backend name is looked up in :data:`BACKENDS`; the backend class itself says
how its target is split (:meth:`RegisteredBackend.parse_target`) and how it
is built from a spec (:meth:`RegisteredBackend.from_spec`). The built-in
backend modules are imported only when the registry is first used, so
importing this module loads neither aiohttp nor llama.cpp.

Two additions to the target, for backends that take them:

* options, after the model and before the endpoint:
  ``openai:o4-mini?reasoning,key_env=MY_KEY@http://host/v1`` (a bare name is
  ``NAME=true``); each backend lists the ones it takes in ``spec_options``;
* several servers for one judge, comma-separated:
  ``openai:MODEL@http://a:8000/v1,http://b:8000/v1``: the judge becomes a
  :class:`~polyjudge.backends.pool.PoolBackend` over one backend per server
  (option ``per_server=N`` caps the requests in flight on each).

The grammar is strict (:func:`check_server_url`): a server is an ``http://`` or
``https://`` URL with a host and no query string or fragment (the API's path is
appended to it, so a query could never reach the server), and an option written
after the URL (``openai:m@http://host/v1?structured=none``) is refused, saying
where it goes, instead of becoming part of the URL. A key variable's option
(``key_env=``) takes a variable's name: a key pasted there is refused, and the
judge's text is quoted masked in every message.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from polyjudge.backends.base import Backend, check_endpoints, endpoint_from_env
from polyjudge.data.errors import InputError
from polyjudge.data.secrets import MASK, check_env_name, is_env_name, redact, redact_url, register_secret_env
from polyjudge.data.settings import default
from polyjudge.data.shapes import normalise_fields
from polyjudge.registry import Builtin, Registry, UnknownNameError

# ``--api-key-env``'s default. A backend whose provider names its key otherwise (anthropic:
# ANTHROPIC_API_KEY) reads its own variable unless another one was chosen (see key_env_for).
DEFAULT_API_KEY_ENV = default("api_key_env")
# The values ``--reasoning-effort`` takes (OpenAI's ``reasoning_effort``, Anthropic's ``output_config.effort``).
REASONING_EFFORTS = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """Options that apply to every judge of a panel (one ``--timeout`` for all, ...)."""

    api_key_env: str = DEFAULT_API_KEY_ENV  # environment variable holding the API key (http backends)
    timeout: float = default("timeout")  # seconds per request (http backends)
    n_ctx: int = default("n_ctx")  # context size per request (llamacpp)
    # Requests in flight per server when a judge names several servers (None: only --concurrency caps them).
    max_per_server: int | None = None
    # Reasoning budget sent with requests that do not set their own (--reasoning-effort; None: the model's default).
    reasoning_effort: str | None = None
    n_threads: int | None = None  # CPU threads of an embedded model (llamacpp; None: every core)

    def __post_init__(self) -> None:
        try:
            check_env_name(self.api_key_env)
        except ValueError as exc:  # the value may be the key: the message never quotes it
            raise InputError(str(exc), field="api_key_env", setting=True) from None

    def key_env_for(self, backend_default: str) -> str:
        """The key variable for a backend whose provider's own is ``backend_default``.

        ``api_key_env`` when it was changed from :data:`DEFAULT_API_KEY_ENV`
        (the user chose it), else ``backend_default``: a panel of an OpenAI
        and an Anthropic judge reads ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY``
        without any flag. A judge's ``key_env=`` option overrides both.
        """
        return backend_default if self.api_key_env == DEFAULT_API_KEY_ENV else self.api_key_env


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do, declared on its class so the engine asks instead of checking names.

    ``local``: it runs here and costs nothing (the estimate counts it as free,
    ``--max-cost`` needs no price for it). ``context_tokens``: its context size
    when the class knows it (see :meth:`RegisteredBackend.context_tokens`).
    ``batch_formats``: the batch line formats it reads and writes
    (``backends.batch.BATCH_LINE_FORMATS``). ``token_probabilities``: it can return
    top log-probabilities (expected scores). ``samples_per_request``: it
    answers several choices (``n``) in one request. ``gpu_cluster_only``: it
    runs only on a Ray cluster with GPU nodes, driven by the Ray executor
    (``backends.vllm.ClusterBackend``); no other executor can send to it. ``seedless``: its requests
    carry no seed, so runs at temperature 0 are byte-identical requests (the engine judges one).
    """

    local: bool = False
    context_tokens: int | None = None
    batch_formats: tuple[str, ...] = ()
    token_probabilities: bool = False
    samples_per_request: bool = False
    gpu_cluster_only: bool = False
    seedless: bool = False

    _MEANINGS: ClassVar[dict[str, str]] = {
        "local": "runs on the user's own machines and costs nothing (no price needed for --max-cost)",
        "context_tokens": "context size in tokens",
        "batch_formats": "batch line formats it reads and writes (--batch-export/--batch-import)",
        "token_probabilities": "returns top token log-probabilities (score_mode=expected)",
        "samples_per_request": "answers several samples (n) in one request",
        "gpu_cluster_only": "runs only on a Ray cluster with GPU nodes (--executor ray)",
        "seedless": "sends no seed: runs at temperature 0 are one request (judged once)",
    }

    def declared(self) -> list[tuple[str, str, str]]:
        """``(name, value, meaning)`` of every capability set away from its default, for listings."""
        shown: list[tuple[str, str, str]] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            text = ",".join(value) if isinstance(value, tuple) else str(value).lower()
            shown.append((f.name, text, self._MEANINGS.get(f.name, "")))
        return shown


class RegisteredBackend(ABC):
    """A backend class that can be named in a judge spec.

    Subclasses set ``name`` and implement :meth:`from_spec`; the first line of
    the class docstring is the backend's one-line ``--help`` summary.
    """

    name: ClassVar[str]
    # What the backend can do (a paid API without batches, n or log-probabilities unless it says so).
    capabilities: ClassVar[Capabilities] = Capabilities()
    # Options the judge spec may give after the model (``MODEL?name=value,flag``): name -> help text.
    spec_options: ClassVar[Mapping[str, str]] = {}

    # True for HTTP backends: ``MODEL@BASE_URL`` names the endpoint after the first ``@``.
    url_after_at: ClassVar[bool] = False
    # The endpoint used when the spec names none (an HTTP backend's official API), shown in the plan.
    default_endpoint: ClassVar[str | None] = None

    @classmethod
    def parse_target(cls, rest: str) -> tuple[str | None, str | None]:
        """Split the text after ``NAME:`` into ``(model, base_url)``: all model, or ``MODEL@URL``
        for backends with :attr:`url_after_at`."""
        model = rest or None
        if cls.url_after_at and model and "@" in model:
            name, url = model.split("@", 1)
            return name or None, url
        return model, None

    @classmethod
    @abstractmethod
    def from_spec(cls, spec: JudgeSpec, settings: BackendSettings) -> Backend:
        """Build the backend; ``ValueError`` when the spec lacks something it needs."""

    @classmethod
    def preflight(cls, spec: JudgeSpec, settings: BackendSettings, *, network: bool = True) -> JudgeSpec:
        """Check what can be checked without paying or loading a model (a key, a host, a model file),
        before any request: ``PreflightError`` (a ``ValueError``, one line) for a judge that cannot work.
        Returns the spec the run uses (e.g. with the endpoint an environment variable names filled in).
        ``network`` False (batch files, nothing is sent): no host is resolved. Default: nothing to check."""
        return spec

    @classmethod
    def endpoint(cls, spec: JudgeSpec) -> JudgeSpec:
        """``spec`` with the endpoint its environment names filled in (``OPENAI_BASE_URL``), checking nothing:
        what batch files (export, import) use, so their answers are keyed under the server a live run with
        the same variables sends to. :meth:`preflight` returns the same endpoint. Default: ``spec``."""
        return spec

    @classmethod
    def unreachable(cls, spec: JudgeSpec) -> tuple[str, ...]:
        """One line per self-hosted server of ``spec`` (after :meth:`preflight`) whose port takes no TCP
        connection now (``unreachable: HOST:PORT ...``); none when the judge sends to no server of its own
        (an official endpoint, an embedded model, a recording)."""
        from urllib.parse import urlsplit

        from polyjudge.backends.base import PreflightError

        if not cls.url_after_at:
            return ()
        official = (urlsplit(cls.default_endpoint or "").hostname or "").lower()
        found: list[str] = []
        for url in spec.servers:
            try:
                check_port_open(url, official_host=official)
            except PreflightError as exc:
                found.append(str(exc))
        return tuple(found)

    @classmethod
    def deferred(cls, spec: JudgeSpec, settings: BackendSettings) -> dict[str, Any] | None:
        """The judge's manifest fields (``model`` first, then :meth:`manifest_fields`' own) when they are
        known without building it, so building can wait for the first request (see ``backends.lazy``);
        None (the default): build it at once. Only worth it where building is costly."""
        return None

    @classmethod
    def context_tokens(cls, settings: BackendSettings) -> int | None:
        """The judge's context size in tokens when this class knows it (an embedded model: ``n_ctx``)."""
        return cls.capabilities.context_tokens

    @classmethod
    def manifest_fields(cls, backend: Backend) -> dict[str, Any]:
        """Fields added to the judge's manifest entry after ``backend``, ``model`` and ``base_url``."""
        return {}


# The built-ins as ``--help`` lists them (name, class, summary), so listing them imports no backend
# module (nor the HTTP, batch and pool machinery behind them); tests/architecture/test_startup.py fails
# when an entry differs from what its module registers.
BUILTIN_BACKENDS: dict[str, Builtin] = {
    "anthropic": Builtin("polyjudge.backends.anthropic:AnthropicBackend",
        "Anthropic Messages API (Claude) over HTTP: anthropic:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]]."),
    "llamacpp": Builtin("polyjudge.backends.llamacpp:LlamaCppBackend",
        "Embedded llama.cpp, offline: llamacpp[:MODEL_OR_GGUF_PATH] (default: the bundled model)."),
    "openai": Builtin("polyjudge.backends.openai:OpenAIBackend",
        "OpenAI-compatible chat completions over HTTP: openai:MODEL[?OPTIONS][@BASE_URL[,BASE_URL...]]."),
    "replay": Builtin("polyjudge.backends.replay:ReplayBackend",
        "Answers recorded with --record, offline and exact: replay:RECORDING.jsonl."),
    "vllm": Builtin("polyjudge.backends.vllm:VllmBackend",
        "vLLM on a Ray cluster's GPU nodes, through ray.data.llm: vllm:HF_MODEL (--executor ray only)."),
}

BACKENDS: Registry[type[RegisteredBackend]] = Registry(
    "backend",
    package="polyjudge.backends",  # every module of the package: a new backend is a new module (and an entry above)
    entry_point_group="polyjudge.backends",
    builtins=BUILTIN_BACKENDS,
)
register_backend = BACKENDS.register


class UnknownBackendError(UnknownNameError, ValueError):
    """A judge spec names no registered backend.

    A ``ValueError`` too, so callers that reject bad specs with one ``except
    ValueError`` (the CLI) catch it with the other spec errors.
    """


def backend_class(name: str, *, judge: str | None = None) -> type[RegisteredBackend]:
    """The registered class for ``name``; ``judge`` (the spec's text) is quoted in the error."""
    try:
        return BACKENDS.get(name)
    except UnknownNameError:
        where = f" in judge '{judge}'" if judge is not None else ""
        raise UnknownBackendError(f"unknown backend '{name}'{where}; use one of "
                                  f"{', '.join(sorted(BACKENDS.names()))}") from None


_TRUE, _FALSE = frozenset({"true", "yes", "on", "1"}), frozenset({"false", "no", "off", "0"})


def _looks_like_options(text: str) -> bool:
    """``key=value[&...]`` (``flag`` alone counts when it is the whole tail and has no dot, as in ``?reasoning``):
    a model path may itself hold a ``?`` (``/models/a?b.gguf``)."""
    return all("=" in part or ("." not in part and "/" not in part) for part in text.split("&")) and bool(text)


def _parse_options(text: str, cls: type[RegisteredBackend], judge: str) -> tuple[tuple[str, str], ...]:
    """``name=value,flag`` (or ``&``-separated, as :func:`~polyjudge.backends.spec.describe_judge` writes
    them) -> sorted pairs, each name checked against ``cls.spec_options`` (``judge`` is the spec's text as
    messages quote it, masked); ``key_env`` must name a variable."""
    pairs: dict[str, str] = {}
    for part in text.replace("&", ",").split(","):
        name, eq, value = (p.strip() for p in part.partition("="))
        if not name:
            continue
        if name not in cls.spec_options:
            valid = ", ".join(sorted(cls.spec_options))
            raise ValueError(f"unknown option '{name}' in judge '{judge}'; the {cls.name} backend takes {valid}")
        if name == "key_env":
            check_env_name(value, f"option key_env of judge '{judge}'")
        pairs[name] = value if eq else "true"
    return tuple(sorted(pairs.items()))


_URL_SCHEMES = ("http", "https")


def check_server_url(url: str, cls: type[RegisteredBackend], *, judge: str) -> None:
    """``ValueError`` (one line, credentials and query values never quoted) unless ``url`` is a server a
    judge of ``cls`` can send to: ``http://`` or ``https://``, a host, a valid port, no query string and no
    fragment. A query naming an option of ``cls`` says the option goes before the ``@``; another query is
    refused too, since the API's path (``/chat/completions``) is appended to the URL and would end up
    inside it. ``judge`` is the spec's text as messages quote it (masked)."""
    from urllib.parse import urlsplit

    base = url.split("?", 1)[0].split("#", 1)[0]
    shown = redact_url(base)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"server '{shown}' of judge '{judge}' is not a valid URL (bad host or port)") from None
    if parts.scheme.lower() not in _URL_SCHEMES or "://" not in url:
        what = f"its scheme is '{parts.scheme}'" if "://" in url and parts.scheme else "it has no scheme"
        raise ValueError(f"server '{shown}' of judge '{judge}' is not an http:// or https:// URL ({what}); "
                         "a judge sends to http(s) servers only")
    if not parts.hostname or port == 0:
        raise ValueError(f"server '{shown}' of judge '{judge}' names no host" if not parts.hostname else
                         f"server '{shown}' of judge '{judge}' has port 0")
    if "?" in url:
        names = [p.partition("=")[0].strip() for p in url.split("?", 1)[1].split("#", 1)[0].replace("&", ",")
                 .split(",")]
        options = [n for n in names if n in cls.spec_options]
        if options:
            raise ValueError(f"option '{options[0]}' is written after the URL in judge '{judge}'; options go "
                             f"between the model and the '@': {cls.name}:MODEL?{options[0]}=VALUE@{shown}")
        raise ValueError(f"server '{shown}' of judge '{judge}' has a query string ('?...'); a server URL takes "
                         f"none (the API's path is appended to it), and judge options go before the '@'")
    if "#" in url:
        raise ValueError(f"server '{shown}' of judge '{judge}' has a fragment ('#...'); a server URL takes none")


def split_servers(base_url: str | None) -> tuple[str, ...]:
    """The servers of a comma-separated endpoint list (one for a plain URL, none for None)."""
    if not base_url:
        return ()
    servers = tuple(u.strip() for u in base_url.split(","))
    if len(servers) > 1:
        if not all(servers):
            raise ValueError(f"empty server in '{redact_servers(base_url)}'")
        if len(set(servers)) != len(servers):
            raise ValueError(f"a server is named twice in '{redact_servers(base_url)}'")
    return servers


def redact_servers(base_url: str | None) -> str | None:
    """An endpoint (or comma-separated list) with the credentials of every URL masked."""
    if not base_url or "," not in base_url:
        return redact_url(base_url)
    return ",".join(redact_url(u.strip()) for u in base_url.split(","))


@dataclass(frozen=True, slots=True, repr=False)
class JudgeSpec:
    """One judge: a backend name and what it needs (a model, an endpoint, options).

    ``base_url`` is kept as given (the backend needs its credentials); what
    the spec shows of itself (:meth:`describe`, ``repr``) has them masked.
    It may name several servers, comma-separated (see :attr:`servers`).
    """

    backend: str
    model: str | None = None
    base_url: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        normalise_fields(self)  # options given as a list of pairs keep a tuple

    @classmethod
    def parse(cls, text: str) -> JudgeSpec:
        """``BACKEND[:TARGET]`` -> spec; an unknown backend or option raises ``ValueError``
        (:class:`UnknownBackendError` for the backend)."""
        shown = redact(text)  # what messages quote: a key pasted into key_env= is masked
        name, _, rest = text.partition(":")
        backend = backend_class(name, judge=shown)
        model, base_url = backend.parse_target(rest)
        options: tuple[tuple[str, str], ...] = ()
        if backend.spec_options and model and "?" in model and _looks_like_options(model.rpartition("?")[2]):
            model, _, opts = model.rpartition("?")
            options = _parse_options(opts, backend, shown)
            model = model or None
        for url in split_servers(base_url):
            check_server_url(url, backend, judge=shown)
        return cls(name, model, base_url, options)

    @property
    def servers(self) -> tuple[str, ...]:
        """Every server ``base_url`` names (several make the judge a pool)."""
        return split_servers(self.base_url)

    def option(self, name: str) -> str | None:
        """The value of option ``name`` (``"true"`` for a bare flag), or None when not given."""
        return dict(self.options).get(name)

    def flag(self, name: str) -> bool | None:
        """Option ``name`` as a yes/no setting (None when not given); ``ValueError`` for another value."""
        value = self.option(name)
        if value is None:
            return None
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ValueError(f"option '{name}' of judge {self.backend}:{self.model} takes true or false, got '{value}'")

    def int_option(self, name: str) -> int | None:
        """Option ``name`` as a positive integer (None when not given); ``ValueError`` otherwise."""
        value = self.option(name)
        if value is None:
            return None
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"option '{name}' of judge {self.backend}:{self.model} takes a positive integer, "
                             f"got '{value}'")
        return int(value)

    def describe(self) -> dict[str, Any]:
        """The judge's manifest entry; credentials in ``base_url`` are masked."""
        entry: dict[str, Any] = {"backend": self.backend, "model": self.model,
                                 "base_url": redact_servers(self.base_url)}
        if self.options:  # a key pasted into key_env= (refused before a run) is never shown
            entry["options"] = {k: v if k != "key_env" or is_env_name(v) else MASK for k, v in self.options}
        return entry

    def __repr__(self) -> str:
        opts = f", options={self.options!r}" if self.options else ""
        return (f"JudgeSpec(backend={self.backend!r}, model={self.model!r}, "
                f"base_url={redact_servers(self.base_url)!r}{opts})")


def _describe(spec: JudgeSpec) -> str:
    """``BACKEND:MODEL`` of ``spec`` for messages (its servers are quoted by the message itself)."""
    return spec.backend + (f":{spec.model}" if spec.model else "")


def build_judge(spec: JudgeSpec, settings: BackendSettings) -> Backend:
    """One judge's backend; a spec naming several servers gives a pool over one backend per server."""
    cls = backend_class(spec.backend)
    servers = spec.servers
    if len(servers) <= 1:
        return cls.from_spec(spec, settings)
    from polyjudge.backends.pool import PoolBackend

    members = [cls.from_spec(dataclasses.replace(spec, base_url=url), settings) for url in servers]
    cap = spec.int_option("per_server") if "per_server" in cls.spec_options else None
    return PoolBackend(members, servers, max_per_server=cap or settings.max_per_server)


def make_backend(spec: JudgeSpec, settings: BackendSettings | None = None, *, api_key_env: str | None = None,
                 timeout: float | None = None, n_ctx: int | None = None) -> Backend:
    """Build one judge's backend.

    The keyword knobs are the older call form; each one given replaces the
    corresponding field of ``settings``.
    """
    base = settings if settings is not None else BackendSettings()
    chosen = dataclasses.replace(
        base,
        api_key_env=api_key_env if api_key_env is not None else base.api_key_env,
        timeout=timeout if timeout is not None else base.timeout,
        n_ctx=n_ctx if n_ctx is not None else base.n_ctx,
    )
    register_secret_env(chosen.api_key_env)
    return build_judge(spec, chosen)



@dataclass(frozen=True, slots=True)
class HostedEndpoint:
    """A provider's own API as its official clients know it: the default URL, its host, the variable
    naming another endpoint (``OPENAI_BASE_URL``) and the key's variable."""

    default_url: str
    official_host: str
    base_url_env: str
    key_env: str

    def filled(self, spec: JudgeSpec) -> JudgeSpec:
        """The base-URL variable fills in the endpoint when the spec names none (an ``@URL`` wins)."""
        import dataclasses

        if spec.base_url is None and (from_env := endpoint_from_env(self.base_url_env)) is not None:
            spec = dataclasses.replace(spec, base_url=from_env)
        return spec

    def preflight(self, spec: JudgeSpec, settings: BackendSettings, *, network: bool) -> JudgeSpec:
        """The key the official endpoint needs (a self-hosted server may be keyless), each host resolves;
        the base-URL variable fills in the endpoint when the spec names none (an ``@URL`` wins)."""
        from polyjudge.backends.base import PreflightError

        spec = self.filled(spec)
        cls = backend_class(spec.backend)
        try:  # an endpoint from --base-url or the environment, options given in code: the grammar's checks
            for url in spec.servers:
                check_server_url(url, cls, judge=redact(_describe(spec)))
            if (named := spec.option("key_env")) is not None:
                check_env_name(named, f"option key_env of judge '{redact(_describe(spec))}'")
        except ValueError as exc:
            raise PreflightError(str(exc)) from None
        key_env = spec.option("key_env") or settings.key_env_for(self.key_env)
        check_endpoints(spec.servers or (self.default_url,), key_env=key_env, official_host=self.official_host,
                        network=network)
        return spec


# Seconds the preflight waits for a self-hosted server's port to take a connection. A port that neither
# takes nor refuses one within it (a firewall dropping packets, a slow network) is not a failure: the run
# tries, and its own requests find out, as for a slow name resolver.
CONNECT_TIMEOUT_S = 2.0


def check_port_open(url: str, *, official_host: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`~polyjudge.backends.base.PreflightError` ("unreachable: HOST:PORT") when nothing takes a
    TCP connection at ``url``'s host and port (refused, or no route to the host).

    Only self-hosted servers are checked (vLLM, SGLang, a llama.cpp server, ...: a server not started
    yet is the usual mistake); the official endpoint's host and a URL a proxy reaches for us
    (``HTTPS_PROXY`` and friends) are left to the run.
    """
    import errno
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    from polyjudge.backends.base import PreflightError

    parts = urlsplit(url)
    host = parts.hostname
    if not host or parts.scheme not in ("http", "https") or host.lower() == official_host:
        return
    proxies = urllib.request.getproxies()
    if (proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(host):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return  # the transport says what is wrong with the URL itself
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except (TimeoutError, socket.gaierror, UnicodeError):
        return  # slow, or a name the resolver check already judged: the run finds out
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ECONNRESET):
            return
        shown = f"[{host}]" if ":" in host else host
        raise PreflightError(f"unreachable: {shown}:{port} ({redact_url(url)}: {exc.strerror or exc}); "
                             "nothing takes a connection there: start the server, or fix the URL or port"
                             ) from None


__all__ = ["BACKENDS", "BUILTIN_BACKENDS", "DEFAULT_API_KEY_ENV", "REASONING_EFFORTS", "BackendSettings",
           "Capabilities", "HostedEndpoint", "JudgeSpec", "RegisteredBackend",
           "UnknownBackendError", "backend_class", "build_judge", "check_port_open", "check_server_url",
           "make_backend", "redact_servers",
           "register_backend", "split_servers"]
