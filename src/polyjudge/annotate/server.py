"""``annotate serve``: the pages and the JSON API in front of one campaign store.

What it promises (tests/annotate/test_annotate_http.py and test_server_hostile.py check every line):

* Every page and API call needs an annotator's token: the page's is in its
  path (``/a/TOKEN``), the API's in ``Authorization: Bearer TOKEN`` (cookies
  are never read). No token: 401; a token no annotator has: 403. Tokens are
  compared in constant time and never logged (aiohttp's access log is off).
* An annotator reads and writes only their own queue: an item of another
  annotator's queue is answered like an item that does not exist.
* ``POST`` needs ``Content-Type: application/json`` (else 415) and, when the
  browser sends an ``Origin``, the server's own origin (else 403), so another
  site cannot post in an annotator's name. Bodies over 64 KiB: 413. A body
  that does not fit the scheme: 422 with one line naming the field.
* An annotation is committed (WAL, ``synchronous=FULL``) before its 200
  leaves: a ``kill -9`` of the server loses nothing it acknowledged.
* A wrong page link (``/a/`` without a token: 401, an unknown token: 403) gets a
  short HTML page that names neither the token given nor any other.
* No request reaches the file system by a path: the three static files are
  read once at start from a fixed list; any other path is 404.
* Every response carries a strict Content-Security-Policy, ``no-referrer``,
  ``nosniff`` and ``no-store``. Segment text is JSON data; the page renders it
  as text.
* Hostile requests get a 4xx, never a traceback: a token of any bytes is only
  a token no annotator has (403), a position is ASCII digits or 404 (``²`` and
  ``٣`` are not positions), a body nested deeper than the JSON parser goes is
  422. A request aiohttp cannot parse (a header over 8190 bytes) is logged in
  one line naming the error's kind: aiohttp's own message quotes the first
  bytes of the line (a token), so it never reaches a log. A handler's bug is
  a JSON 500 logged without the request's text.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import json
import logging
import signal
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources
from typing import Any

from aiohttp import web

from polyjudge.annotate.schemes import AnnotationError, campaign_view, check_annotation
from polyjudge.annotate.store import CampaignStore, ItemRow

MAX_BODY = 64 * 1024
CONTEXT = 2  # segments of the same document in "context" before and after (the page shows "document")
MAX_DOCUMENT = 100  # segments of "document" around the current one, at most
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                "img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                                "frame-ancestors 'none'"),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
MAX_POSITION_DIGITS = 9  # a queue position: ASCII digits, at most this many
LOG = logging.getLogger("polyjudge.annotate.server")
STATIC = {"annotate.js": "text/javascript", "annotate.css": "text/css", "annotate.html": "text/html"}


def _static_files() -> dict[str, bytes]:
    root = resources.files("polyjudge.annotate") / "static"
    return {name: (root / name).read_bytes() for name in STATIC}


def _error(cls: type[web.HTTPException], message: str, **headers: str) -> web.HTTPException:
    return cls(text=json.dumps({"error": message}), content_type="application/json", headers=headers or None)


def _page_error(cls: type[web.HTTPException], message: str) -> web.HTTPException:
    """A short HTML page for a person who opened a wrong link (no token, no segment text in it)."""
    body = ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>polyjudge annotate</title>'
            f"</head><body><h1>{cls.status_code}: {HTTPStatus(cls.status_code).phrase}</h1>"
            f"<p>{html.escape(message)}</p>"
            "</body></html>\n")
    return cls(text=body, content_type="text/html")


def _too_large(size: int) -> web.HTTPException:
    return web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=size, content_type="application/json",
                                         text=json.dumps({"error": f"the body is larger than {MAX_BODY} bytes"}))


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda d: json.dumps(d, ensure_ascii=False))


@dataclass
class _Queue:
    items: list[int]
    position: dict[int, int]


class CampaignApp:
    """The handlers over one open store (all on the event loop's thread: writes are serialised)."""

    def __init__(self, store: CampaignStore, origins: set[str], *, open_host: bool = False) -> None:
        self.store, self.origins, self.open_host = store, origins, open_host
        self.static = _static_files()
        self.tokens = [(t.encode(), n) for n, t in store.annotators()]
        self.queues = {n: _Queue(q, {item: p for p, item in enumerate(q)}) for n, q in store.queues().items()}
        self.items = store.items
        self.documents = _documents(store.items)

    # -- who is asking ------------------------------------------------------------
    def _who(self, token: str) -> str | None:
        # any str encodes (a header's non-UTF-8 bytes arrive as lone surrogates); it then matches no token
        given, found = token.encode("utf-8", "surrogatepass"), None
        for known, name in self.tokens:  # every token compared, in constant time each
            if hmac.compare_digest(given, known):
                found = name
        return found

    def annotator(self, request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _error(web.HTTPUnauthorized, "give the link's token: Authorization: Bearer TOKEN",
                         **{"WWW-Authenticate": "Bearer"})
        name = self._who(token.strip())
        if name is None:
            raise _error(web.HTTPForbidden, "unknown token")
        return name

    # -- views --------------------------------------------------------------------
    def progress(self, name: str) -> dict[str, int]:
        done = {item for (_, item) in self.store.latest(name)}
        q = self.queues[name].items
        return {"done": sum(1 for i in q if i in done), "total": len(q)}

    def item_view(self, name: str, position: int) -> dict[str, Any]:
        item = self.items[self.queues[name].items[position]]
        latest = self.store.latest(name).get((name, item.id))
        annotation = None if latest is None else {"version": latest.version, **latest.body}
        document = self.documents.get(item.id, [])
        k = next((i for i, d in enumerate(document) if d["current"]), 0)
        context = {"before": document[max(0, k - CONTEXT):k], "after": document[k + 1:k + 1 + CONTEXT]}
        view = {**item.to_json(), "position": position, "context": context,
                "document": {"doc_id": item.doc_id, "system": item.system, "segments": document},
                "annotation": annotation, "progress": self.progress(name)}
        if item.prefill is not None:
            view["prefill"] = list(item.prefill)
        return view

    def queue_view(self, name: str) -> list[dict[str, Any]]:
        """The review list: every position of the queue, its ids, a short start of its source, and
        whether (and which version) it is annotated."""
        latest = self.store.latest(name)
        out = []
        for pos, i in enumerate(self.queues[name].items):
            it, ann = self.items[i], latest.get((name, i))
            out.append({"position": pos, "doc_id": it.doc_id, "seg_id": it.seg_id, "doc_pos": it.doc_pos,
                        "src": it.src[:80], "done": ann is not None,
                        "version": None if ann is None else ann.version})
        return out

    # -- routes -------------------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        if self._who(request.match_info["token"]) is None:
            raise _page_error(web.HTTPForbidden, "This link is not one of this campaign's annotator links. "
                                                 "Ask the person running the campaign for yours.")
        return web.Response(body=self.static["annotate.html"], content_type="text/html", charset="utf-8")

    async def no_token(self, request: web.Request) -> web.Response:
        raise _page_error(web.HTTPUnauthorized, "Open your own annotator link: it ends with your token "
                                                "(/a/TOKEN).")

    def static_route(self, name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=self.static[name], content_type=STATIC[name], charset="utf-8")
        return handler

    async def campaign(self, request: web.Request) -> web.Response:
        name = self.annotator(request)
        info = self.store.info
        return _json({"name": info.name, "scheme": info.scheme.name, "annotator": name,
                      **campaign_view(info.scheme, info.task), "guidelines": info.guidelines,
                      "prefill": info.prefill is not None, "progress": self.progress(name)})

    async def queue(self, request: web.Request) -> web.Response:
        name = self.annotator(request)
        return _json({"items": self.queue_view(name), "progress": self.progress(name)})

    async def next_item(self, request: web.Request) -> web.Response:
        name = self.annotator(request)
        done = {item for (_, item) in self.store.latest(name)}
        for pos, item in enumerate(self.queues[name].items):
            if item not in done:
                return _json(self.item_view(name, pos))
        return _json({"done": True, "progress": self.progress(name)})

    async def item_at(self, request: web.Request) -> web.Response:
        name = self.annotator(request)
        return _json(self.item_view(name, self._position(name, request)))

    async def history(self, request: web.Request) -> web.Response:
        """Every version of the annotator's own annotation of the item at that position, newest first."""
        name = self.annotator(request)
        position = self._position(name, request)
        item = self.queues[name].items[position]
        rows = self.store.db.execute("SELECT version, body, created FROM annotations WHERE annotator = ? AND "
                                     "item = ? ORDER BY version DESC", (name, item))
        versions = [{"version": int(v), "saved_at": float(t), **json.loads(b)} for v, b, t in rows]
        return _json({"item_id": self.items[item].item_id, "position": position, "versions": versions})

    def _position(self, name: str, request: web.Request) -> int:
        """The queue position in the path: ASCII digits only (``int`` would also read ``٣`` as 3)."""
        text, q = request.match_info["position"], self.queues[name].items
        if not (0 < len(text) <= MAX_POSITION_DIGITS and text.isascii() and text.isdigit()) or int(text) >= len(q):
            raise _error(web.HTTPNotFound, f"no item at that position (0..{len(q) - 1})")
        return int(text)

    async def annotations(self, request: web.Request) -> web.Response:
        name = self.annotator(request)
        pos = self.queues[name].position
        out = [{"item_id": self.items[a.item].item_id, "position": pos[a.item], "version": a.version, **a.body}
               for (_, _), a in sorted(self.store.latest(name).items(), key=lambda kv: pos[kv[0][1]])]
        return _json({"annotations": out})

    async def post_annotation(self, request: web.Request) -> web.Response:
        origin = request.headers.get("Origin")
        if origin is not None and not self._same_origin(origin, request):
            raise _error(web.HTTPForbidden, "cross-origin request refused")
        name = self.annotator(request)
        if request.content_type != "application/json":
            raise _error(web.HTTPUnsupportedMediaType, "send Content-Type: application/json")
        if request.content_length is not None and request.content_length > MAX_BODY:
            raise _too_large(request.content_length)
        try:
            raw = await request.read()  # aiohttp stops reading at client_max_size (a chunked body too)
        except web.HTTPRequestEntityTooLarge:
            raise _too_large(MAX_BODY + 1) from None
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _error(web.HTTPUnprocessableEntity, "the body is not JSON") from None
        except RecursionError:
            raise _error(web.HTTPUnprocessableEntity, "the body nests deeper than an annotation does") from None
        if not isinstance(body, dict):
            raise _error(web.HTTPUnprocessableEntity, "the body must be a JSON object")
        item = self._own_item(name, body.get("item_id"))
        row = self.items[item]
        try:
            clean = check_annotation(body, self.store.info.scheme, self.store.info.task, row.tgt, src=row.src,
                                     suggestions=row.prefill or ())
        except AnnotationError as exc:
            raise _error(web.HTTPUnprocessableEntity, str(exc)) from None
        version = self.store.save(name, item, clean)  # committed before the answer leaves
        return _json({"saved": True, "version": version, "progress": self.progress(name)})

    def _same_origin(self, origin: str, request: web.Request) -> bool:
        if origin in self.origins:
            return True
        # bound to every interface: the page's origin is the host the browser used
        return self.open_host and origin == f"http://{request.host}"

    def _own_item(self, name: str, item_id: Any) -> int:
        if not isinstance(item_id, str):
            raise _error(web.HTTPUnprocessableEntity, "field 'item_id' must be a string")
        for item in self.queues[name].items:
            if self.items[item].item_id == item_id:
                return item
        raise _error(web.HTTPUnprocessableEntity, "field 'item_id': no such item in your queue")


def _documents(items: list[ItemRow]) -> dict[int, list[dict[str, Any]]]:
    """Each item's document (same system and doc_id; attention checks left out), in document order,
    the item itself marked ``current`` (an attention check stands at its original's place), at most
    MAX_DOCUMENT segments around it. Items without a doc_id have none."""
    docs: dict[tuple[str, str], list[ItemRow]] = {}
    for it in items:
        if it.doc_id and not it.check:
            docs.setdefault((it.system, it.doc_id), []).append(it)
    for seq in docs.values():
        seq.sort(key=lambda r: (r.doc_pos if r.doc_pos is not None else 0, r.id))
    out: dict[int, list[dict[str, Any]]] = {}
    for it in items:
        seq = docs.get((it.system, it.doc_id), []) if it.doc_id else []
        here = it.check_of if it.check and it.check_of is not None else it.id
        k = next((i for i, r in enumerate(seq) if r.id == here), None)
        if k is None:
            continue
        lo = max(0, min(k - MAX_DOCUMENT // 2, len(seq) - MAX_DOCUMENT))
        out[it.id] = [{"doc_pos": r.doc_pos, "src": r.src, "tgt": it.tgt if r.id == here else r.tgt,
                       "current": r.id == here} for r in seq[lo:lo + MAX_DOCUMENT]]
    return out


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)


@web.middleware
async def _contain(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> web.StreamResponse:
    """A handler's unexpected exception: a short JSON 500, logged by route and code lines only.

    The path (a page's token), the headers and the exception's message (which may quote either) are left out."""
    try:
        return await handler(request)
    except (web.HTTPException, ConnectionError):  # an answer, or a client gone mid-body (aiohttp's one line)
        raise
    except Exception as exc:
        route = request.match_info.route.resource
        where = route.canonical if route is not None else "?"
        LOG.error("internal error answering %s %s: %s\n%s", request.method, where, type(exc).__name__,
                  "".join(traceback.format_tb(exc.__traceback__)).rstrip())
        raise _error(web.HTTPInternalServerError, "internal error (the server's log says where)") from None


class _QuoteFree(logging.Filter):
    """Keeps aiohttp's lines about requests it could not parse to one line without the request's bytes.

    aiohttp logs such a request with its parser's exception, whose message quotes the start of the bad line
    ("Got more than 8190 bytes when reading: b'Bearer ..."): an annotator's token. The line keeps aiohttp's
    own text (who sent it) and the exception's kind and status; the message and traceback are dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            status = getattr(exc, "code", None) or getattr(exc, "status", None)
            kind = type(exc).__name__ + (f" (HTTP {status})" if isinstance(status, int) else "")
            record.msg, record.args = "%s: %s", (record.getMessage(), kind)
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def request_logger() -> logging.Logger:
    """The logger aiohttp's request handler writes to while serving (its lines pass :class:`_QuoteFree`)."""
    logger = logging.getLogger("polyjudge.annotate.requests")
    if not any(isinstance(f, _QuoteFree) for f in logger.filters):
        logger.addFilter(_QuoteFree())
    return logger


def build_app(handlers: CampaignApp) -> web.Application:
    """The aiohttp application: exactly the routes of the contract (docs/how-to/annotate.md)."""
    app = web.Application(client_max_size=MAX_BODY, middlewares=[_contain])
    app.on_response_prepare.append(_headers)
    app.router.add_get("/a/{token}", handlers.page)
    app.router.add_get("/a", handlers.no_token)
    app.router.add_get("/a/", handlers.no_token)
    for name in ("annotate.js", "annotate.css"):
        app.router.add_get(f"/static/{name}", handlers.static_route(name))
    app.router.add_get("/api/campaign", handlers.campaign)
    app.router.add_get("/api/next", handlers.next_item)
    app.router.add_get("/api/items/{position}", handlers.item_at)
    app.router.add_get("/api/items/{position}/history", handlers.history)
    app.router.add_get("/api/annotations", handlers.annotations)
    app.router.add_get("/api/queue", handlers.queue)
    app.router.add_post("/api/annotations", handlers.post_annotation)
    return app


def origins_of(host: str, port: int) -> set[str]:
    """The origins a page served at ``host:port`` posts from."""
    if host in ("127.0.0.1", "localhost"):
        return {f"http://127.0.0.1:{port}", f"http://localhost:{port}"}
    if ":" in host:
        return {f"http://[{host}]:{port}"}
    return {f"http://{host}:{port}"}



async def serve_campaign(store: CampaignStore, host: str, port: int,
                         ready: Callable[[int], None], stop: asyncio.Event | None = None) -> None:
    """Serve until SIGINT/SIGTERM (or ``stop``); ``ready(port)`` once listening (port 0: the one picked)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
            pass
    handlers = CampaignApp(store, set(), open_host=host in ("0.0.0.0", "::", ""))
    app = build_app(handlers)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, logger=request_logger())
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or ()
        actual = int(sockets[0].getsockname()[1]) if sockets else port
        handlers.origins = origins_of(host, actual)
        ready(actual)
        await stop.wait()
    finally:
        await runner.cleanup()


__all__ = ["MAX_BODY", "SECURITY_HEADERS", "CampaignApp", "build_app", "origins_of", "request_logger", "serve_campaign"]
