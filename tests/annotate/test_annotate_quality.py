"""Issue 48 through the JSON API (in process) and the exports: source spans, omissions, comments, active
time, attention checks, AI pre-annotation and its provenance, guidelines, document positions, and a
campaign made before all of it (schema version 1) still opening."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polyjudge.annotate.server import CampaignApp, build_app
from polyjudge.annotate.store import APPLICATION_ID, CampaignStore
from polyjudge.api.annotate import AnnotateConfig, campaign_status, export_campaign, init_campaign
from polyjudge.data.errors import InputError
from polyjudge.data.wmt_mqm import read_wmt_mqm
from polyjudge.metaeval.spans.readers import read_span_jsonl
from tests.annotate.campaign_helpers import auth, span_run
from tests.helpers.cli import cli

SRC = "他昨天在北京买了三本书。"
TGT = "He bought books in Beijing."  # "three" and "yesterday" are missing
ROWS = [{"src": SRC, "tgt": TGT, "src_lang": "zh", "tgt_lang": "en", "system": "sysA", "doc_id": "news-7",
         "seg_id": "41", "doc_pos": 4},
        {"src": "书很贵。", "tgt": "The books were dear.", "src_lang": "zh", "tgt_lang": "en", "system": "sysA",
         "doc_id": "news-7", "seg_id": "42", "doc_pos": 5},
        {"src": "他很高兴。", "tgt": "He was happy.", "src_lang": "zh", "tgt_lang": "en", "system": "sysA",
         "doc_id": "news-7", "seg_id": "43", "doc_pos": 6},
        {"src": "完。", "tgt": "The end.", "src_lang": "zh", "tgt_lang": "en", "system": "sysA",
         "doc_id": "news-8", "seg_id": "1", "doc_pos": 1}]


def _items(tmp: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    path = tmp / "items.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _campaign(tmp: Path, scheme: str = "mqm", annotators: str = "ana", per_item: int = 1, **kw: Any
              ) -> tuple[Path, dict[str, str]]:
    folder = tmp / "camp"
    tmp.mkdir(parents=True, exist_ok=True)
    items = kw.pop("items", None) or _items(tmp)
    tokens = init_campaign(AnnotateConfig(str(folder), str(items), scheme, annotators, per_item, **kw))
    return folder, tokens


def _session(folder: Path, script: Callable[[Any], Any]) -> Any:
    """Run ``script(client)`` against the campaign's app in process (an aiohttp test client)."""
    from aiohttp.test_utils import TestClient, TestServer

    store = CampaignStore(folder)

    async def go() -> Any:
        async with TestClient(TestServer(build_app(CampaignApp(store, set())))) as client:
            return await script(client)

    try:
        return asyncio.run(go())
    finally:
        store.close()


async def _get(client: Any, path: str, token: str) -> Any:
    r = await client.get(path, headers=auth(token))
    assert r.status == 200, await r.text()
    return await r.json()


async def _post(client: Any, token: str, body: dict[str, Any]) -> tuple[int, Any]:
    r = await client.post("/api/annotations", data=json.dumps(body), headers={"Content-Type": "application/json",
                                                                              **auth(token)})
    return r.status, await r.json()


OMISSION = {"start": 8, "end": 8, "category": "Accuracy/Omission", "severity": "major",
            "comment": "'three' is missing"}
SOURCE_SPAN = {"side": "source", "start": 1, "end": 3, "category": "Accuracy/Omission", "severity": "major",
               "comment": "昨天 (yesterday) is not translated"}
OTHER = {"start": 19, "end": 26, "category": "Other", "severity": "minor", "comment": "odd\tword\norder"}


def test_source_spans_omissions_and_comments_round_trip_through_the_api_and_both_exports(tmp_path):
    folder, tokens = _campaign(tmp_path)
    token = tokens["ana"]

    async def script(client: Any) -> Any:
        item = await _get(client, "/api/items/0", token)
        status, answer = await _post(client, token, {"item_id": item["item_id"],
                                                     "spans": [OMISSION, SOURCE_SPAN, OTHER], "active_ms": 4200})
        assert status == 200, answer
        for k in (1, 2, 3):
            nxt = await _get(client, f"/api/items/{k}", token)
            assert (await _post(client, token, {"item_id": nxt["item_id"], "no_error": True}))[0] == 200
        return await _get(client, "/api/items/0", token)

    item = _session(folder, script)
    spans = item["annotation"]["spans"]
    assert spans[0] == {"start": 8, "end": 8, "category": "Accuracy/Omission", "severity": "major",
                        "comment": "'three' is missing"}
    assert spans[1]["side"] == "source" and SRC[spans[1]["start"]:spans[1]["end"]] == "昨天"
    assert spans[2]["comment"] == "odd word order"  # one line: a TSV cell and a JSON string alike
    assert item["annotation"]["active_ms"] == 4200

    tsv = tmp_path / "m.tsv"
    tsv.write_text(export_campaign(folder, "mqm-tsv"), encoding="utf-8")
    ann = next(a for a in read_wmt_mqm(tsv) if a.seg_id == "41")
    assert (ann.source, ann.target, ann.doc, ann.doc_id) == (SRC, TGT, "news-7", "4")  # the real position
    got = [(e.start, e.end, e.source_start, e.source_end, e.category, e.comment) for e in ann.errors]
    assert got == [(8, 8, None, None, "Accuracy/Omission", "'three' is missing"),
                   (None, None, 1, 3, "Accuracy/Omission", "昨天 (yesterday) is not translated"),
                   (19, 26, None, None, "Other", "odd word order")]

    jsonl = tmp_path / "e.jsonl"
    jsonl.write_text(export_campaign(folder, "esa-jsonl"), encoding="utf-8")
    rec = json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])
    assert rec["lp"] == "zh-en" and rec["doc_id"] == "news-7" and rec["doc_pos"] == 4 and rec["active_ms"] == 4200
    assert rec["esa_spans"][0] == {"start_i": "missing", "end_i": "missing", "position": 8, "severity": "major",
                                   "category": "Accuracy/Omission", "comment": "'three' is missing"}
    assert rec["source_spans"] == [{"start_i": 1, "end_i": 3, "severity": "major", "category": "Accuracy/Omission",
                                    "comment": "昨天 (yesterday) is not translated"}]
    seg = next(s for s in read_span_jsonl(jsonl) if s.seg_id == "41")
    assert [(s.start, s.end) for s in seg.spans] == [(None, None), (19, 26)]  # WMT's "missing" omission


@pytest.mark.parametrize(("span", "field"), [
    ({**OTHER, "comment": "  "}, "spans[0].comment"),
    ({**OTHER, "comment": 5}, "spans[0].comment"),
    ({**OMISSION, "category": "Fluency/Grammar"}, "spans[0]"),
    ({**SOURCE_SPAN, "start": 2, "end": 2}, "spans[0]"),
    ({**SOURCE_SPAN, "end": len(SRC) + 1}, "spans[0]"),
    ({**SOURCE_SPAN, "side": "left"}, "spans[0].side"),
])
def test_what_a_new_span_field_does_not_allow_is_422_naming_it(tmp_path, span, field):
    folder, tokens = _campaign(tmp_path)

    async def script(client: Any) -> Any:
        item = await _get(client, "/api/items/0", tokens["ana"])
        return await _post(client, tokens["ana"], {"item_id": item["item_id"], "spans": [span]})

    status, answer = _session(folder, script)
    assert status == 422 and f"'{field}'" in answer["error"], answer


def test_active_time_adds_up_over_versions_and_is_exported_and_summarised(tmp_path):
    folder, tokens = _campaign(tmp_path, "esa", "ana,ben", 2)

    async def script(client: Any) -> None:
        for name, ms in (("ana", 10_000), ("ana", 2_000), ("ben", 30_000)):
            item = await _get(client, "/api/items/0", tokens[name])
            body = {"item_id": item["item_id"], "spans": [{"start": 0, "end": 2, "severity": "minor"}], "score": 70,
                    "active_ms": ms}
            assert (await _post(client, tokens[name], body))[0] == 200
        bad = {"item_id": item["item_id"], "score": 70, "active_ms": -1}
        assert (await _post(client, tokens["ben"], bad))[0] == 422

    _session(folder, script)
    st = campaign_status(folder)
    rows = {t.who: t for t in st.time}
    assert rows["ana"].mean_s == 12.0 and rows["ben"].mean_s == 30.0 and rows["all"].median_s == 21.0
    assert rows["all"].per_span_s == 21.0  # 42 s over two spans
    recs = {r["annotator"]: r for r in map(json.loads, export_campaign(folder, "esa-jsonl").splitlines())}
    assert recs["ana"]["active_ms"] == 12_000 and recs["ben"]["active_ms"] == 30_000
    assert cli("annotate", "status", folder) == 0


def _mark_everything(folder: Path, tokens: dict[str, str], body_of: Callable[[dict[str, Any]], dict[str, Any]]
                     ) -> list[dict[str, Any]]:
    async def script(client: Any) -> list[dict[str, Any]]:
        seen = []
        for token in tokens.values():
            queue = await _get(client, "/api/queue", token)
            for row in queue["items"]:
                item = await _get(client, f"/api/items/{row['position']}", token)
                status, answer = await _post(client, token, {"item_id": item["item_id"], **body_of(item)})
                assert status == 200, answer
                seen.append(item)
        return seen

    out: list[dict[str, Any]] = _session(folder, script)
    return out


def test_attention_checks_are_dealt_scored_per_annotator_and_left_out_of_exports(tmp_path):
    rows = [{**ROWS[0], "seg_id": str(k), "doc_pos": k, "tgt": f"The cat number {k} sat on the old red mat today."}
            for k in range(1, 9)]
    folder, tokens = _campaign(tmp_path, "mqm", "ana,ben", 1, items=_items(tmp_path, rows), attention_checks=0.5)
    store = CampaignStore(folder, readonly=True)
    try:
        checks = [it for it in store.items if it.check]
        queues = store.queues()
        by_id = {it.item_id: it for it in store.items}
    finally:
        store.close()
    assert sorted(c.check for c in checks) == ["bad", "bad", "repeat", "repeat"]  # 2 of 4 per queue
    assert all(len(q) == 6 for q in queues.values())
    for c in checks:
        assert c.check_of is not None and c.item_id.startswith("q") and c.seg_id == rows[c.check_of]["seg_id"]
        if c.check == "bad":
            assert c.tgt != rows[c.check_of]["tgt"] and c.injected is not None
    for q in queues.values():  # a check comes after the item it copies
        assert all(q.index(it) > q.index(store.items[it].check_of) for it in q if store.items[it].check)

    def body(item: dict[str, Any]) -> dict[str, Any]:
        row = by_id[item["item_id"]]
        assert "check" not in item and "injected" not in item  # the page cannot tell a check
        if row.check == "bad" and item["item_id"] in seen_bad:  # ana sees the injected error; ben does not
            a, b = row.injected or (0, 1)
            return {"spans": [{"start": a, "end": b, "category": "Fluency/Grammar", "severity": "major"}]}
        return {"no_error": True}

    seen_bad = {c.item_id for c in checks if c.check == "bad" and c.check_of in queues["ana"]}
    _mark_everything(folder, tokens, body)
    rates = {c.annotator: c for c in campaign_status(folder).checks}
    assert (rates["ana"].passed, rates["ana"].failed, rates["ana"].rate) == (2, 0, 1.0)
    assert (rates["ben"].passed, rates["ben"].failed, rates["ben"].rate) == (1, 1, 0.5)  # passed the repeat only
    st = campaign_status(folder)
    assert st.items == 8 and all(p.total == 6 and p.done == 6 for p in st.progress)
    for to in ("mqm-tsv", "esa-jsonl", "ratings"):
        text = export_campaign(folder, to)
        assert not any(c.item_id in text or c.tgt in text for c in checks if c.check == "bad"), to
    assert len(export_campaign(folder, "esa-jsonl").splitlines()) == 8
    assert cli("annotate", "status", folder, "--format", "tsv") == 0


def test_prefill_shows_suggestions_and_each_span_says_where_it_came_from(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    items = _items(tmp_path)
    run = span_run(tmp_path, items)
    folder, tokens = _campaign(tmp_path, "esa", "ana", 1, items=items, prefill=str(run))
    token = tokens["ana"]

    async def script(client: Any) -> Any:
        info = await _get(client, "/api/campaign", token)
        item = await _get(client, "/api/items/0", token)
        books, beijing = item["prefill"]
        assert TGT[books["start"]:books["end"]] == "books" and TGT[beijing["start"]:beijing["end"]] == "Beijing"
        spans = [{**books, "prefill": 0}, {**beijing, "severity": "major", "prefill": 1},
                 {"start": 0, "end": 2, "severity": "minor"}]
        assert (await _post(client, token, {"item_id": item["item_id"], "spans": spans, "score": 50}))[0] == 200
        twice = [{**books, "prefill": 0}, {**books, "prefill": 0}]
        assert (await _post(client, token, {"item_id": item["item_id"], "spans": twice, "score": 50}))[0] == 422
        second = await _get(client, "/api/items/1", token)
        assert second["prefill"] == []  # the judge found nothing there
        return info, await _get(client, "/api/items/0", token)

    info, item = _session(folder, script)
    assert info["prefill"] is True
    assert [s["origin"] for s in item["annotation"]["spans"]] == ["kept", "edited", "added"]
    # deleting: a second version keeps only the added span
    _mark_everything(folder, tokens, lambda it: {"spans": [{"start": 0, "end": 2, "severity": "minor"}],
                                                 "score": 60})
    rec = json.loads(export_campaign(folder, "esa-jsonl").splitlines()[0])
    assert [s.get("origin") for s in rec["esa_spans"]] == ["added"]
    assert [(s["start_i"], s["end_i"], s["origin"]) for s in rec["deleted_spans"]] == [(10, 15, "deleted"),
                                                                                        (19, 26, "deleted")]
    header = export_campaign(folder, "mqm-tsv").splitlines()[0].split("\t")
    assert header[-1] == "origin"
    rows = {p.group: p for p in campaign_status(folder).prefill}
    assert rows["with"].annotations == 4 and rows["with"].deleted == 2 and rows["with"].added == 4
    assert rows["without"].annotations == 0


def test_prefill_share_leaves_a_seeded_part_of_the_items_without_suggestions(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    items = _items(tmp_path)
    run = span_run(tmp_path, items)
    folder, _ = _campaign(tmp_path, "mqm", "ana", 1, items=items, prefill=str(run), prefill_share=0.5)
    store = CampaignStore(folder, readonly=True)
    try:
        assert sum(it.prefill is not None for it in store.items) == 2
        assert store.info.prefill == {"run": "run", "share": 0.5}
    finally:
        store.close()
    with pytest.raises(InputError, match="prefill"):
        _campaign(tmp_path / "x", "da", "ana", 1, items=items, prefill=str(run))


def test_guidelines_and_category_definitions_are_in_the_campaign_answer(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text("# How to annotate\n\nMark **every** error.\n", encoding="utf-8")
    folder, tokens = _campaign(tmp_path, guidelines=str(guide))
    info = _session(folder, lambda client: _get(client, "/api/campaign", tokens["ana"]))
    assert info["guidelines"] == "# How to annotate\n\nMark **every** error.\n"
    assert set(info["definitions"]) == set(info["categories"]) and info["comment_required"] == ["Other"]
    assert info["omission"] == "Accuracy/Omission"
    fc, fc_tokens = _campaign(tmp_path / "fc", "forced-choice")
    question = _session(fc, lambda client: _get(client, "/api/campaign", fc_tokens["ana"]))["question"]
    assert "forced choice" not in question and "response set" not in question  # before: the schemes' names


def test_the_document_is_the_whole_document_with_positions_and_the_segment_marked(tmp_path):
    folder, tokens = _campaign(tmp_path)
    item = _session(folder, lambda client: _get(client, "/api/items/1", tokens["ana"]))
    doc = item["document"]
    assert doc["doc_id"] == "news-7" and [s["doc_pos"] for s in doc["segments"]] == [4, 5, 6]
    assert [s["current"] for s in doc["segments"]] == [False, True, False] and item["doc_pos"] == 5
    queue = _session(folder, lambda client: _get(client, "/api/queue", tokens["ana"]))
    assert [(r["position"], r["seg_id"], r["done"]) for r in queue["items"]] == [(0, "41", False), (1, "42", False),
                                                                              (2, "43", False), (3, "1", False)]


def _v1_campaign(tmp: Path) -> Path:
    """The schema-1 store of tests/annotate/data/campaign_v1.sql (made by polyjudge before issue 48)."""
    folder = tmp / "old"
    folder.mkdir(mode=0o700)
    (folder / ".polyjudge-owned.json").write_text(json.dumps({"kind": "annotation campaign", "files": [
        "campaign.sqlite", "campaign.sqlite-journal", "campaign.sqlite-shm", "campaign.sqlite-wal"]}))
    con = sqlite3.connect(folder / "campaign.sqlite")
    con.execute(f"PRAGMA application_id={APPLICATION_ID}")
    con.execute("PRAGMA user_version=1")
    con.executescript((Path(__file__).parent / "data" / "campaign_v1.sql").read_text(encoding="utf-8"))
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    return folder


def test_a_campaign_made_before_issue_48_opens_serves_and_exports(tmp_path):
    folder = _v1_campaign(tmp_path)
    st = campaign_status(folder)
    assert st.items == 2 and st.progress[0].done == 1 and st.checks == () and st.time == ()
    assert "The <v>cat</v> sat on the mat." in export_campaign(folder, "mqm-tsv")
    store = CampaignStore(folder, readonly=True)
    try:
        token = store.annotators()[0][1]
        assert all(it.doc_pos is None and not it.check and it.prefill is None for it in store.items)
    finally:
        store.close()

    async def script(client: Any) -> Any:
        item = await _get(client, "/api/items/1", token)
        assert item["document"]["segments"][1]["current"] is True
        return await _post(client, token, {"item_id": item["item_id"], "no_error": True, "active_ms": 900})

    assert _session(folder, script)[0] == 200
    assert len(export_campaign(folder, "esa-jsonl").splitlines()) == 2
    with sqlite3.connect(folder / "campaign.sqlite") as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1  # read as it is, never rewritten


def test_checks_time_and_prefill_rows_read_back_from_the_status_file_and_reach_the_report(tmp_path, monkeypatch):
    from polyjudge.annotate.status import read_status, status_json
    from polyjudge.report.annotation import annotation_blocks

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    items = _items(tmp_path)
    run = span_run(tmp_path, items)
    folder, tokens = _campaign(tmp_path, "esa", "ana,ben", 2, items=items, prefill=str(run), prefill_share=0.5,
                               attention_checks=0.25)
    _mark_everything(folder, tokens, lambda it: {"spans": [{"start": 0, "end": 2, "severity": "minor"}],
                                                 "score": 60, "active_ms": 3000})
    st = campaign_status(folder)
    assert st.checks and st.time and [p.group for p in st.prefill] == ["with", "without"]
    assert [c.passed + c.failed + c.pending for c in st.checks] == [1, 1]  # one check in each queue of 4
    back = read_status(json.loads(status_json(st)), "status.json")
    assert back == st
    titles = [b.columns[0] for b in annotation_blocks(back)]
    assert titles[-3:] == ["attention checks", "active time", "AI suggestions"]


# ../shared/data beside the checkout (or beside the folder of worktrees it is one of)
TED_ZHEN = next((p for p in (Path(__file__).resolve().parents[k] / ".." / "shared" / "data" / "wmt-mqm" / "ted" / "zhen"
                             / "mqm_ted_zhen.tsv" for k in (2, 3)) if p.is_file()), Path("absent"))


def _expert_spans(errors: list[Any]) -> list[dict[str, Any]]:
    """The WMT experts' errors as campaign spans: target or source side (omissions marked in the source)."""
    from polyjudge.annotate.schemes import MQM_CATEGORIES

    out = []
    for e in errors:
        sev = e.severity.lower()
        if sev not in ("minor", "major", "critical") or e.category not in MQM_CATEGORIES:
            continue  # Neutral, and the one category the campaign does not offer (Locale convention/Name format)
        if e.start is not None and e.start < e.end:
            out.append({"start": e.start, "end": e.end, "category": e.category, "severity": sev})
        elif e.source_start is not None and e.source_start < e.source_end:
            out.append({"side": "source", "start": e.source_start, "end": e.source_end, "category": e.category,
                        "severity": sev})
    return out


@pytest.mark.skipif(not TED_ZHEN.is_file(), reason="needs ../shared/data (wmt-mqm/ted/zhen)")
def test_real_wmt_zh_en_expert_mqm_with_source_side_omissions_round_trips_with_real_positions(tmp_path):
    from polyjudge.annotate.schemes import check_annotation

    anns = [a for a in read_wmt_mqm(TED_ZHEN) if a.system == "SMU"][:150]
    rows = [{"src": a.source, "tgt": a.target, "src_lang": "zh", "tgt_lang": "en", "system": a.system,
             "doc_id": a.doc, "seg_id": a.seg_id, "doc_pos": a.doc_id} for a in anns]
    folder, _ = _campaign(tmp_path, "mqm", "expert", 1, items=_items(tmp_path, rows))
    store = CampaignStore(folder)
    want = {}
    try:
        for it, a in zip(store.items, anns):
            spans = _expert_spans(a.errors)
            body = check_annotation({"spans": spans} if spans else {"no_error": True}, store.info.scheme, None,
                                    it.tgt, src=it.src)
            store.save("expert", it.id, body)
            want[(a.system, a.doc, a.doc_id, a.seg_id)] = [(s.get("side", "target"), s["start"], s["end"],
                                                            s["category"], s["severity"]) for s in spans]
    finally:
        store.close()
    assert sum(s[0] == "source" for v in want.values() for s in v) >= 3  # omissions the experts marked in the source
    out = tmp_path / "back.tsv"
    out.write_text(export_campaign(folder, "mqm-tsv"), encoding="utf-8")
    got = {}
    for a in read_wmt_mqm(out):
        got[(a.system, a.doc, a.doc_id, a.seg_id)] = [
            ("source", e.source_start, e.source_end, e.category, e.severity.lower()) if e.start is None
            else ("target", e.start, e.end, e.category, e.severity.lower()) for e in a.errors if not e.is_no_error]
    assert got == want  # the real documents and positions (the TSV's doc and doc_id) too
