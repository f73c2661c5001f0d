"""Hostile requests against a real ``annotate serve`` subprocess on 127.0.0.1 (issue 43, item 9).

Each answer is a 4xx with a short JSON error (or aiohttp's own 400 for a request it cannot parse), never a
traceback; the server's log (its stderr) holds no traceback and nothing of a token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.annotate.campaign_helpers import Served, auth, call, make, serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    folder, tokens = make(tmp_path)
    s = serve(folder, len(tokens))
    yield s
    s.stop()


def _log(s: Served) -> str:
    """The server's stderr, once it has stopped."""
    s.stop()
    assert s.proc.stderr is not None
    return s.proc.stderr.read()


def _short_json_error(status: int, headers: dict[str, str], body: object, expected: int) -> str:
    assert status == expected, (status, body)
    assert headers.get("Content-Type", "").startswith("application/json")
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, str) and len(error) < 120 and "Traceback" not in error
    return error


async def _raw(base: str, head: bytes) -> bytes:
    """One request sent byte for byte (a client library would refuse or re-encode a non-ASCII header)."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(head)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


def _split(data: bytes) -> tuple[int, dict[str, str], object]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    parsed = json.loads(body) if headers.get("Content-Type", "").startswith("application/json") else body
    return int(lines[0].split(" ")[1]), headers, parsed


def test_a_non_ascii_byte_in_the_token_is_an_unknown_token(served):
    token = served.tokens["ana"].encode()
    for bad in (b"caf\xe9", token[:-1] + b"\xff", b"\xc3\xa9" + token):
        head = (b"GET /api/next HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + bad
                + b"\r\nConnection: close\r\n\r\n")
        status, headers, body = _split(asyncio.run(_raw(served.base, head)))
        assert _short_json_error(status, headers, body, 403) == "unknown token"
    log = _log(served)
    assert "Traceback" not in log and "caf" not in log and served.tokens["ana"][:8] not in log


@pytest.mark.parametrize("position", ["²", "٣", "३", "𝟘", "1" * 5000, "+1", " 1", "1_0"])
def test_a_position_is_ascii_digits_or_404(served, position):
    ana = auth(served.tokens["ana"])
    assert call("GET", f"{served.base}/api/items/3", headers=ana)[0] == 200  # ana has 4 items
    for suffix in ("", "/history"):
        status, headers, body = call("GET", f"{served.base}/api/items/{position}{suffix}", headers=ana)
        assert _short_json_error(status, headers, body, 404).startswith("no item at that position")
    assert "Traceback" not in _log(served)


def test_json_nested_20000_deep_is_422(served):
    for body in ("[" * 20_000 + "]" * 20_000, '{"item_id": "sys0:doc0:0", "x": ' + "[" * 20_000 + "]" * 20_000 + "}"):
        status, headers, answer = call("POST", f"{served.base}/api/annotations", data=body.encode(),
                                       headers={"Content-Type": "application/json", **auth(served.tokens["ana"])})
        assert "nests deeper" in _short_json_error(status, headers, answer, 422)
    assert call("GET", f"{served.base}/api/annotations", headers=auth(served.tokens["ana"]))[2] == {"annotations": []}
    assert "Traceback" not in _log(served)


def test_an_oversized_authorization_header_leaves_no_token_in_the_log(served):
    token = served.tokens["ana"]
    head = (b"GET /api/next HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode() + b"A" * 9000
            + b"\r\nConnection: close\r\n\r\n")
    status, _, body = _split(asyncio.run(_raw(served.base, head)))
    assert status == 400 and b"Traceback" not in (body if isinstance(body, bytes) else b"")
    assert call("GET", f"{served.base}/api/next", headers=auth(token))[0] == 200  # still serving
    log = _log(served)
    assert "LineTooLong" in log  # the refusal is logged, in one line ...
    assert "Traceback" not in log and "Bearer" not in log and token[:6] not in log and "AAAA" not in log  # ... bare


def test_a_handler_bug_is_a_json_500_logged_without_the_requests_text(tmp_path, caplog):
    """In process (the bug is planted): the answer names no exception text, the log no path, token or message."""
    from aiohttp.test_utils import TestClient, TestServer

    from polyjudge.annotate.server import CampaignApp, build_app
    from polyjudge.annotate.store import CampaignStore

    folder, tokens = make(tmp_path)
    store = CampaignStore(folder)
    handlers = CampaignApp(store, set())

    def broken(annotator: str | None = None) -> dict:
        raise ValueError(tokens["ana"])  # an exception whose message quotes a token

    handlers.store.latest = broken  # type: ignore[method-assign]

    async def go() -> tuple[int, str, dict[str, str]]:
        async with TestClient(TestServer(build_app(handlers))) as client:
            r = await client.get("/api/next", headers=auth(tokens["ana"]))
            return r.status, await r.text(), dict(r.headers)

    try:
        with caplog.at_level("ERROR", logger="polyjudge.annotate.server"):
            status, text, headers = asyncio.run(go())
    finally:
        store.close()
    assert status == 500 and json.loads(text) == {"error": "internal error (the server's log says where)"}
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "internal error answering GET /api/next: ValueError" in logged and "in broken" in logged  # where
    assert tokens["ana"] not in logged  # not what


def test_a_body_cut_short_and_an_unreadable_header_are_one_bare_log_line_each(served):
    token = served.tokens["ana"]

    async def cut_short() -> None:
        host, port = served.base.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /api/annotations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode()
                     + b"\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{\"item")
        await writer.drain()
        writer.close()  # gone before the body's end
        await asyncio.sleep(0.5)

    asyncio.run(cut_short())
    head = (b"GET /api/next HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token.encode() + b"\x01"
            + b"\r\nConnection: close\r\n\r\n")
    assert _split(asyncio.run(_raw(served.base, head)))[0] == 400
    assert call("GET", f"{served.base}/api/next", headers=auth(token))[0] == 200  # still serving
    log = _log(served)
    assert "Traceback" not in log and token[:6] not in log and "Bearer" not in log and "internal error" not in log
