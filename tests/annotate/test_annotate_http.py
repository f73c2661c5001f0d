"""The annotation server's HTTP contract, against a real ``annotate serve`` subprocess on 127.0.0.1.

Each case is a row of the security table in docs/how-to/annotate.md: tokens, another annotator's
data, cross-site posts, body size and type, hostile text, paths, headers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from polyjudge.annotate.server import SECURITY_HEADERS
from polyjudge.api.annotate import export_campaign
from tests.annotate.campaign_helpers import HOSTILE_SRC, HOSTILE_TGT, auth, call, make, raw_get, serve

MAJOR = {"start": 0, "end": 4, "category": "Accuracy/Mistranslation", "severity": "major"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("http")
    folder, tokens = make(tmp)
    s = serve(folder, len(tokens))
    yield s, folder
    s.stop()


def _post(s, token, body, **headers):
    data = json.dumps(body).encode()
    return call("POST", f"{s.base}/api/annotations", data=data,
                headers={"Content-Type": "application/json", **auth(token), **headers})


def test_links_carry_the_real_port_and_the_tokens_of_the_store(served):
    s, _ = served
    assert not s.base.endswith(":0") and s.base.startswith("http://127.0.0.1:")
    assert set(s.links) == {"ana", "ben"}
    assert all(len(t) == 32 for t in s.tokens.values())  # token_urlsafe(24)


@pytest.mark.parametrize("path", ["/api/next", "/api/campaign", "/api/annotations", "/api/items/0"])
def test_no_token_is_401_and_an_unknown_one_403(served, path):
    s, _ = served
    status, headers, body = call("GET", s.base + path)
    assert status == 401 and headers.get("WWW-Authenticate") == "Bearer" and "error" in body
    assert call("GET", s.base + path, headers={"Authorization": "Basic abc"})[0] == 401
    status, _, body = call("GET", s.base + path, headers=auth("not-a-token"))
    assert status == 403 and "not-a-token" not in json.dumps(body)  # the token is never echoed
    assert call("POST", s.base + "/api/annotations", data=b"{}",
                headers={"Content-Type": "application/json"})[0] == 401


def test_the_page_needs_its_token(served):
    s, _ = served
    assert call("GET", s.base + "/a/")[0] == 401
    assert call("GET", s.base + "/a")[0] == 401
    assert call("GET", s.base + "/a/wrong-token")[0] == 403
    status, headers, body = call("GET", s.links["ana"])
    assert status == 200 and headers["Content-Type"].startswith("text/html") and b"/static/annotate.js" in body


def test_every_response_carries_the_security_headers(served):
    s, _ = served
    for url, kw in [(s.links["ana"], {}), (s.base + "/api/next", {}), (s.base + "/nowhere", {}),
                    (s.base + "/static/annotate.js", {}), (s.base + "/api/next", {"headers": auth(s.tokens["ana"])})]:
        _, headers, _ = call("GET", url, **kw)
        for name, value in SECURITY_HEADERS.items():
            assert headers.get(name) == value, (url, name)


def test_an_annotator_sees_only_their_queue(served):
    s, _ = served
    ana = s.tokens["ana"]
    seen = {call("GET", f"{s.base}/api/items/{p}", headers=auth(ana))[2]["item_id"] for p in range(4)}
    assert seen == {"sys0:doc0:0", "sys0:doc0:2", "sys0:doc1:4", "sys0:doc1:6"}
    assert call("GET", f"{s.base}/api/items/4", headers=auth(ana))[0] == 404  # ben's items are not there
    assert call("GET", f"{s.base}/api/items/-1", headers=auth(ana))[0] == 404


def test_another_annotators_item_cannot_be_annotated_nor_read(served):
    s, _ = served
    ana, ben = s.tokens["ana"], s.tokens["ben"]
    assert _post(s, ben, {"item_id": "sys1:doc0:1", "spans": [MAJOR]})[0] == 200
    status, _, body = _post(s, ana, {"item_id": "sys1:doc0:1", "no_error": True})  # ben's item
    assert status == 422 and "item_id" in body["error"]
    mine = call("GET", f"{s.base}/api/annotations", headers=auth(ana))[2]["annotations"]
    assert all(a["item_id"] != "sys1:doc0:1" for a in mine)
    theirs = call("GET", f"{s.base}/api/annotations", headers=auth(ben))[2]["annotations"]
    assert [(a["item_id"], a["no_error"], a["version"]) for a in theirs] == [("sys1:doc0:1", False, 1)]


def test_a_body_over_64_kib_is_413_and_nothing_is_saved(served):
    s, _ = served
    big = {"item_id": "sys0:doc0:0", "no_error": True, "pad": "x" * (65 * 1024)}
    status, _, body = _post(s, s.tokens["ana"], big)
    assert status == 413 and body["error"].startswith("the body is larger")

    async def chunks():  # no Content-Length: aiohttp's own cap stops the read
        yield json.dumps(big).encode()

    status, _, body = call("POST", f"{s.base}/api/annotations", data=chunks(),
                           headers={"Content-Type": "application/json", **auth(s.tokens["ana"])})
    assert status == 413 and "error" in body
    assert all(a["item_id"] != "sys0:doc0:0" for a in
               call("GET", f"{s.base}/api/annotations", headers=auth(s.tokens["ana"]))[2]["annotations"])


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_post_that_is_not_json_is_415(served, ctype):
    s, _ = served
    status, _, body = call("POST", f"{s.base}/api/annotations", data=b'{"item_id": "sys0:doc0:0"}',
                           headers={"Content-Type": ctype, **auth(s.tokens["ana"])})
    assert status == 415 and "application/json" in body["error"]


def test_a_cross_origin_post_is_403_and_the_same_origin_is_accepted(served):
    s, _ = served
    ana = s.tokens["ana"]
    status, _, body = _post(s, ana, {"item_id": "sys0:doc1:6", "no_error": True}, Origin="http://evil.example")
    assert status == 403 and "origin" in body["error"]
    assert _post(s, ana, {"item_id": "sys0:doc1:6", "no_error": True}, Origin="null")[0] == 403
    assert _post(s, ana, {"item_id": "sys0:doc1:6", "no_error": True}, Origin=s.base)[0] == 200


@pytest.mark.parametrize(("body", "field"), [
    ({"item_id": "sys0:doc0:0"}, "spans"),
    ({"item_id": "sys0:doc0:0", "no_error": True, "spans": [MAJOR]}, "no_error"),
    ({"item_id": "sys0:doc0:0", "spans": [{**MAJOR, "end": 999}]}, "spans[0]"),
    ({"item_id": "sys0:doc0:0", "spans": [{**MAJOR, "start": 3, "end": 3}]}, "spans[0]"),
    ({"item_id": "sys0:doc0:0", "spans": [{**MAJOR, "severity": "fatal"}]}, "spans[0].severity"),
    ({"item_id": "sys0:doc0:0", "spans": [{**MAJOR, "category": "Made up"}]}, "spans[0].category"),
    ({"item_id": "sys0:doc0:0", "spans": [{**MAJOR, "start": "0"}]}, "spans[0].start"),
    ({"item_id": 7, "no_error": True}, "item_id"),
    ({"item_id": "nope", "no_error": True}, "item_id"),
])
def test_an_annotation_that_does_not_fit_is_422_naming_the_field(served, body, field):
    s, _ = served
    status, _, answer = _post(s, s.tokens["ana"], body)
    assert status == 422 and f"'{field}'" in answer["error"] and "\n" not in answer["error"]


def test_a_body_that_is_not_json_is_422(served):
    s, _ = served
    status, _, answer = call("POST", f"{s.base}/api/annotations", data=b"{not json",
                             headers={"Content-Type": "application/json", **auth(s.tokens["ana"])})
    assert status == 422 and answer == {"error": "the body is not JSON"}


def test_hostile_segment_text_comes_back_verbatim_as_json_strings(served):
    s, _ = served
    status, headers, item = call("GET", f"{s.base}/api/items/1", headers=auth(s.tokens["ana"]))
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert item["src"] == HOSTILE_SRC and item["tgt"] == HOSTILE_TGT
    before = call("GET", f"{s.base}/api/items/2", headers=auth(s.tokens["ana"]))[2]["context"]
    assert {"src": HOSTILE_SRC, "tgt": HOSTILE_TGT} not in before["before"]  # another document: not its context
    # A span over the bidi override is counted in code points, as Python indexes the text.
    k = HOSTILE_TGT.index("\u202e")
    span = {"start": k, "end": k + 5, "category": "Fluency/Character encoding", "severity": "minor"}
    assert _post(s, s.tokens["ana"], {"item_id": "sys0:doc0:2", "spans": [span]})[0] == 200


@pytest.mark.parametrize("path", ["/static/../campaign.sqlite", "/static/..%2fcampaign.sqlite",
                                  "/static/%2e%2e/campaign.sqlite", "/a/../../etc/passwd", "/../campaign.sqlite",
                                  "/static/annotate.html", "/static/", "/static//etc/passwd", "/campaign.sqlite",
                                  "/.polyjudge-owned.json"])
def test_no_path_reaches_the_file_system(served, path):
    s, _ = served
    status, data = asyncio.run(raw_get(s.base, path))
    assert status in (400, 404), (path, status)
    assert b"SQLite format" not in data and b"root:" not in data and b'"files"' not in data


def test_the_static_files_are_served_with_their_types(served):
    s, _ = served
    status, headers, _ = call("GET", f"{s.base}/static/annotate.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, headers, _ = call("GET", f"{s.base}/static/annotate.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")


def test_an_edit_is_a_new_version_and_the_newest_counts(served, tmp_path):
    s, folder = served
    ana = s.tokens["ana"]
    assert _post(s, ana, {"item_id": "sys0:doc1:4", "spans": [MAJOR]})[2]["version"] == 1
    answer = _post(s, ana, {"item_id": "sys0:doc1:4", "no_error": True})[2]
    assert answer["saved"] is True and answer["version"] == 2
    item = call("GET", f"{s.base}/api/items/2", headers=auth(ana))[2]
    assert item["item_id"] == "sys0:doc1:4" and item["annotation"]["version"] == 2
    assert item["annotation"]["no_error"] is True and item["annotation"]["spans"] == []
    rows = [r.split("\t") for r in export_campaign(folder, "mqm-tsv").splitlines()[1:]]
    assert [r[7:9] for r in rows if r[3] == "4"] == [["No-error", "No-error"]]


def test_next_and_campaign_follow_the_contract(served):
    s, _ = served
    ben = s.tokens["ben"]
    info = call("GET", f"{s.base}/api/campaign", headers=auth(ben))[2]
    assert info["scheme"] == "mqm" and info["annotator"] == "ben" and info["severities"] == ["minor", "major",
                                                                                             "critical"]
    assert "Accuracy/Mistranslation" in info["categories"] and info["score"] is None and info["options"] == []
    nxt = call("GET", f"{s.base}/api/next", headers=auth(ben))[2]
    keys = {"item_id", "position", "src", "tgt", "src_lang", "tgt_lang", "system", "doc_id", "seg_id", "context",
            "annotation", "progress"}
    assert keys <= set(nxt) and nxt["annotation"] is None and nxt["progress"]["total"] == 4
    for p in range(nxt["progress"]["total"]):
        item = call("GET", f"{s.base}/api/items/{p}", headers=auth(ben))[2]
        if item["annotation"] is None:
            assert _post(s, ben, {"item_id": item["item_id"], "no_error": True})[0] == 200
    done = call("GET", f"{s.base}/api/next", headers=auth(ben))[2]
    assert done == {"done": True, "progress": {"done": 4, "total": 4}}


def test_a_second_server_on_the_campaign_exits_2(served):
    import subprocess
    import sys

    _, folder = served
    r = subprocess.run([sys.executable, "-c", "from polyjudge.cli.main import main; main()", "annotate", "serve",
                        str(folder), "--port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "in use by process" in r.stderr and "Traceback" not in r.stderr


def test_the_campaign_folder_is_private(served):
    _, folder = served
    assert (Path(folder).stat().st_mode & 0o777) == 0o700
    assert (Path(folder) / "campaign.sqlite").stat().st_mode & 0o077 == 0


def test_a_wrong_page_link_gets_a_short_html_page_without_tokens(served):
    s, _ = served
    real = s.tokens["ana"]
    near = real[:-1] + ("A" if real[-1] != "A" else "B")  # one character off a real token
    for path, code in (("/a/WRONG", 403), ("/a/" + near, 403), ("/a/", 401), ("/a", 401)):
        status, headers, body = call("GET", s.base + path)
        text = body.decode("utf-8") if isinstance(body, bytes) else str(body)
        assert status == code and headers["Content-Type"].startswith("text/html"), path
        assert text.startswith("<!doctype html>") and len(text) < 600 and "<script" not in text
        assert "WRONG" not in text and near not in text and all(t not in text for t in s.tokens.values())
        assert headers["Content-Security-Policy"].startswith("default-src 'none'")


def test_history_lists_own_versions_newest_first(served):
    s, _ = served
    ana, ben = s.tokens["ana"], s.tokens["ben"]
    item = call("GET", s.base + "/api/items/0", headers=auth(ana))[2]
    before = call("GET", s.base + "/api/items/0/history", headers=auth(ana))[2]["versions"]
    marked = {**MAJOR, "start": 1, "end": 3, "severity": "minor"}
    assert _post(s, ana, {"item_id": item["item_id"], "no_error": True})[0] == 200
    assert _post(s, ana, {"item_id": item["item_id"], "spans": [marked]})[0] == 200
    got = call("GET", s.base + "/api/items/0/history", headers=auth(ana))[2]
    assert got["item_id"] == item["item_id"] and got["position"] == 0
    versions = got["versions"]
    assert len(versions) == len(before) + 2
    assert [v["version"] for v in versions] == list(range(len(versions), 0, -1))  # newest first
    assert versions[0]["spans"] == [marked] and versions[1]["no_error"] is True
    assert versions[0]["saved_at"] >= versions[1]["saved_at"]
    # ben's position 0 is an item of ben's queue: ana's versions never show there
    other = call("GET", s.base + "/api/items/0/history", headers=auth(ben))[2]
    assert other["item_id"] != item["item_id"] and all(v.get("spans") != [marked] for v in other["versions"])
    assert call("GET", s.base + "/api/items/99/history", headers=auth(ana))[0] == 404
    assert call("GET", s.base + "/api/items/0/history")[0] == 401
    assert call("GET", s.base + "/api/items/0/history", headers=auth("nope"))[0] == 403
