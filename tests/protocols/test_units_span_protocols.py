"""--unit document with the protocols whose answers hold errors (mqm, tsa, gemba-spans, direct-index):
one request per document, each segment's errors read as that segment's own answer, spans at exact offsets
of the segment's translation, failures kept to the segment they concern."""

from __future__ import annotations

import json

import pytest

from polyjudge.aggregate.rrwa import rrwa
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.protocols.base import ParseFailure, ProtocolOptions
from polyjudge.protocols.registry import document_protocols, get_protocol
from polyjudge.protocols.spans import tag_translation
from polyjudge.protocols.units import estimate_tokens, prepare_units
from tests.helpers.openai_server import Reply
from tests.protocols.test_units import BAD, DOCS, HOSTILE, NO_CONTEXT, blocks, rows, run_judge

# the scripted judge's MQM error for each bad word (one critical, two major), and a minor one it adds in run r > 0
MQM_SEVERITY = {"遅く": "major", "أمس": "critical", "klein": "major"}


def mqm_entry(tgt: str, run: int = 0) -> dict:
    errors: dict[str, list] = {"critical": [], "major": [], "minor": []}
    for w in BAD:
        if w in tgt:
            errors[MQM_SEVERITY[w]].append({"type": "accuracy/mistranslation", "desc": f"{w} is wrong", "span": w})
    for _ in range(run):
        errors["minor"].append({"type": "fluency/punctuation" if run % 2 else "style/awkward", "desc": "end",
                                "span": tgt[-1]})
    return {"errors": errors}


def mqm_judge(body: dict) -> Reply:
    run = int(body.get("seed") or 0)
    segments = [{"id": label, **mqm_entry(tgt, run)} for label, tgt in blocks(body["messages"][-1]["content"]).items()]
    return Reply(content=json.dumps({"segments": segments}, ensure_ascii=False))


def segment_level_score(protocol_name: str, answer: dict, item: Item) -> float | None:
    """What the segment-level protocol scores the same errors at (no unit)."""
    protocol = get_protocol(protocol_name)
    return protocol.score(protocol.parse(json.dumps(answer, ensure_ascii=False), item), item)


def test_the_document_protocols_are_the_span_and_score_protocols():
    assert document_protocols() == ["da", "direct-index", "error-free", "gemba-esa", "gemba-spans", "mqm", "tsa"]
    with pytest.raises(InputError, match="works with da, direct-index, error-free, gemba-esa, gemba-spans, mqm, tsa"):
        prepare_units([Item(src="a", tgt="b", doc_id="d")], get_protocol("rubric"), unit="document",
                      document_protocols=document_protocols())


def test_a_protocol_without_documents_exits_2_naming_those_with(tmp_path, capsys, monkeypatch):
    from polyjudge.cli.main import main

    monkeypatch.setenv("OPENAI_API_KEY", "k")  # nothing is sent: the refusal comes first

    inp = tmp_path / "items.jsonl"
    inp.write_text(json.dumps({"src": "a", "tgt": "b", "src_lang": "en", "tgt_lang": "de", "doc_id": "d"}) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["judge", str(inp), "--out", str(tmp_path / "run"), "-p", "pairwise", "--backend", "openai",
              "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--unit", "document"])
    assert exc.value.code == 2 and "gemba-spans, mqm, tsa" in capsys.readouterr().err


def test_mqm_one_request_per_document_spans_exact_scores_as_segment_level(tmp_path):
    items = rows()
    run, requests = run_judge(tmp_path, mqm_judge, items, "--unit", "document", "--runs", "1", protocol="mqm")
    assert len(requests) == 6 < len(items) == 16  # one per document and system, against one per segment
    for body in requests:
        schema = body["response_format"]["json_schema"]["schema"]
        entry = schema["properties"]["segments"]["items"]
        assert entry["properties"]["errors"]["properties"]["major"]["items"]["required"] == ["type", "desc", "span"]
    judgments = {(j.system, j.doc_id, j.seg_id): j for j in run.judgments}
    assert all(j.status == "ok" for j in judgments.values())
    n_spans = 0
    for it in items:
        j = judgments[(it["system"], it["doc_id"], it["seg_id"])]
        tgt = it["tgt"]
        for s in j.annotation["spans"]:
            assert tgt[s["start"]:s["end"]] == s["text"] and s["text"] in BAD
            n_spans += 1
        assert [s["text"] for s in j.annotation["spans"]] == [w for w in BAD if w in tgt]
        plain = {"errors": {k: [{"type": e["type"], "desc": e["desc"]} for e in v]
                            for k, v in mqm_entry(tgt)["errors"].items()}}
        assert j.score == segment_level_score("mqm", plain, Item(src=it["src"], tgt=tgt))
    assert n_spans == 3  # a CJK, an RTL and a Latin span, each in system A's translation
    assert {judgments[("A", d, s)].score for d, s in (("ja", "2"), ("ar", "2"), ("de", "1"))} == {-5.0, -25.0}


def test_mqm_runs_are_aggregated_per_segment_with_rrwa(tmp_path):
    items = rows(systems=("A",))
    run, requests = run_judge(tmp_path, mqm_judge, items, "--unit", "document", "--runs", "4", protocol="mqm")
    assert len(requests) == 3 * 4  # one per document and run
    per_item: dict[tuple, list[float]] = {}
    for j in run.judgments:
        assert j.status == "ok"
        per_item.setdefault((j.doc_id, j.seg_id), []).append(j.score)
    rows_by_seg = {(r.doc_id, r.seg_id): r for r in run.segment_rows}
    for key, scores in per_item.items():
        assert len(scores) == 4 and len(set(scores)) > 1
        assert rows_by_seg[key].score == pytest.approx(rrwa(scores))


def test_mqm_a_malformed_or_crossing_segment_fails_alone(tmp_path):
    def judge(body: dict) -> Reply:
        reply = json.loads(mqm_judge(body).content)
        user = body["messages"][-1]["content"]
        if "Das Haus" in user:  # S1 quotes across into S2
            reply["segments"][0]["errors"]["major"] = [{"type": "other", "desc": "x", "span": "klein.\nIch mag"}]
        if "猫が眠る" in user:  # S2's errors under an unknown severity
            reply["segments"][1]["errors"] = {"severe": [{"type": "other", "desc": "x", "span": "犬"}]}
        if "صباح" in user:  # S3 quotes S1's text
            reply["segments"][2]["errors"]["minor"] = [{"type": "other", "desc": "x", "span": "صباح الخير"}]
        return Reply(content=json.dumps(reply, ensure_ascii=False))

    run, _ = run_judge(tmp_path, judge, rows(systems=("A",)), "--unit", "document", "--runs", "1", protocol="mqm")
    failed = {(j.doc_id, j.seg_id): j.error for j in run.judgments if j.status != "ok"}
    assert set(failed) == {("de", "1"), ("ja", "2"), ("ar", "3")}
    assert "segment boundary" in failed[("de", "1")] and "another segment" in failed[("ar", "3")]
    assert all(j.score is None for j in run.judgments if j.status != "ok")


def test_mqm_a_split_document_is_recorded_and_judged_per_part(tmp_path):
    items = rows(systems=("A",))
    budget = max(estimate_tokens(s) + estimate_tokens(t) for _, (_, _, segs) in DOCS.items() for s, t in segs) + 1
    run, requests = run_judge(tmp_path, mqm_judge, items, "--unit", "document", "--unit-max-tokens", str(budget),
                              "--runs", "1", protocol="mqm")
    units = {(it.doc_id, it.seg_id): it.extra["unit"] for it in run.items}
    assert len(requests) == len({(d, u["part"]) for (d, _), u in units.items()}) == 8  # 3 + 3 + 2 parts
    assert all(u["parts"] == len(DOCS[d][2]) for (d, _), u in units.items())
    assert {j.annotation["unit"]["part"] for j in run.judgments if j.doc_id == "ja"} == {1, 2, 3}
    assert all(j.status == "ok" for j in run.judgments)


def test_mqm_unknown_labels_and_bad_spans_are_failures():
    items = [Item(src="One.", tgt="Eins.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="1"),
             Item(src="Two.", tgt="Zwei.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="2")]
    protocol = get_protocol("mqm")
    units = prepare_units(items, protocol, unit="document")
    empty = {"critical": [], "major": [], "minor": []}
    unknown = {"segments": [{"id": "S1", "errors": empty}, {"id": "S2", "errors": empty},
                            {"id": "S3", "errors": {**empty, "major": [{"type": "other", "desc": "", "span": "x"}]}}]}
    for it in units:  # an error of no known segment could be anyone's: no segment is scored
        with pytest.raises(ParseFailure, match="S3"):
            protocol.parse_answer(json.dumps(unknown), it)
    made_up = {"segments": [{"id": "S1", "errors": {**empty, "minor": [{"type": "other", "desc": "", "span": "Drei"}]}},
                            {"id": "S2", "errors": {**empty, "minor": [{"type": "other", "desc": "", "span": 3}]}}]}
    for it in units:
        with pytest.raises(ParseFailure):
            protocol.parse_answer(json.dumps(made_up), it)
    omission = {"segments": [{"id": "S1", "errors": {**empty, "major": [{"type": "accuracy/omission", "desc": "",
                                                                          "span": ""}]}},
                             {"id": "S2", "errors": empty}]}
    ann = protocol.parse_answer(json.dumps(omission), units[0])
    assert ann["spans"] == [{"start": None, "end": None, "severity": "major", "category": "accuracy/omission",
                             "text": None}] and protocol.score(ann, units[0]) == -5.0


def test_mqm_document_refuses_references():
    items = [Item(src="a", tgt="b", ref="c", src_lang="en", tgt_lang="de", doc_id="d", seg_id="1")]
    with pytest.raises(InputError, match="references"):
        prepare_units(items, get_protocol("mqm", ProtocolOptions(extra={"with_reference": True})), unit="document")


@pytest.mark.parametrize("protocol_name", ["mqm", "tsa", "gemba-spans", "direct-index", "error-free"])
def test_a_hostile_segment_stays_inside_its_own_block(protocol_name):
    items = [Item(src="One.", tgt=HOSTILE, src_lang="en", tgt_lang="de", doc_id="d", seg_id="1"),
             Item(src="Two.", tgt="Zwei.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="2")]
    protocol = get_protocol(protocol_name)
    units = prepare_units(items, protocol, unit="document")
    user = protocol.messages(units[0], NO_CONTEXT)[-1].content
    assert blocks(user) == {"S1": HOSTILE, "S2": "Zwei."}
    assert list(blocks(user, "source").values()) == ["One.", "Two."]


# -- the span protocols of the TSA paper ------------------------------------------------------

def span_entry(protocol_name: str, tgt: str) -> dict:
    """The segment-level answer marking each bad word of ``tgt`` as a major mistranslation."""
    bad = [(tgt.index(w), tgt.index(w) + len(w)) for w in BAD if w in tgt]
    errors = [{"severity": "major", "category": "accuracy/mistranslation"} for _ in bad]
    if protocol_name == "tsa":
        return {"annotated_translation": tag_translation(tgt, bad), "errors": errors}
    if protocol_name == "gemba-spans":
        return {"errors": [{"span": tgt[s:e], **err} for (s, e), err in zip(bad, errors)]}
    return {"errors": [{"start": s, "end": e, **err} for (s, e), err in zip(bad, errors)]}


def span_judge(protocol_name: str):
    def respond(body: dict) -> Reply:
        shown = blocks(body["messages"][-1]["content"])
        segments = [{"id": label, **span_entry(protocol_name, tgt)} for label, tgt in shown.items()]
        return Reply(content=json.dumps({"segments": segments}, ensure_ascii=False))
    return respond


@pytest.mark.parametrize("protocol_name", ["tsa", "gemba-spans", "direct-index"])
def test_span_protocols_one_request_per_document_exact_offsets(tmp_path, protocol_name):
    items = rows()
    run, requests = run_judge(tmp_path, span_judge(protocol_name), items, "--unit", "document",
                              protocol=protocol_name)
    assert len(requests) == 6 < len(items)
    judgments = {(j.system, j.doc_id, j.seg_id): j for j in run.judgments}
    assert all(j.status == "ok" for j in judgments.values())
    for it in items:
        j = judgments[(it["system"], it["doc_id"], it["seg_id"])]
        tgt = it["tgt"]
        assert [s["text"] for s in j.annotation["spans"]] == [w for w in BAD if w in tgt]
        assert all(tgt[s["start"]:s["end"]] == s["text"] for s in j.annotation["spans"])
        assert j.score == segment_level_score(protocol_name, span_entry(protocol_name, tgt), Item(src="", tgt=tgt))
    assert (tmp_path / "run" / "spans.tsv").exists()


def test_span_protocols_a_segment_reaching_into_the_next_fails_alone():
    items = [Item(src="The house is big.", tgt="Das Haus ist klein.", src_lang="en", tgt_lang="de", doc_id="d",
                  seg_id="1"),
             Item(src="I like tea.", tgt="Ich mag Tee.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="2")]
    major = {"severity": "major", "category": "other"}
    for name, s1 in (("gemba-spans", {"errors": [{"span": "klein. Ich", **major}]}),
                     ("tsa", {"annotated_translation": "Das Haus ist <v0>klein.</v0>", "errors": [major, major]}),
                     ("tsa", {"annotated_translation": "Das Haus ist <v0>klein. Ich mag</v0> Tee.", "errors": [major]}),
                     ("direct-index", {"errors": [{"start": 13, "end": 25, **major}]})):
        protocol = get_protocol(name)
        units = prepare_units(items, protocol, unit="document")
        answer = json.dumps({"segments": [{"id": "S1", **s1}, {"id": "S2", **span_entry(name, "Ich mag Tee.")}]})
        with pytest.raises(ParseFailure):
            protocol.parse_answer(answer, units[0])
        assert protocol.parse_answer(answer, units[1])["spans"] == []


def test_mqm_a_hostile_segment_end_to_end(tmp_path):
    items = [{"src": "One.", "tgt": HOSTILE, "src_lang": "en", "tgt_lang": "de", "doc_id": "h", "seg_id": "1",
              "system": "A"},
             {"src": "Two.", "tgt": "Das Haus ist klein.", "src_lang": "en", "tgt_lang": "de", "doc_id": "h",
              "seg_id": "2", "system": "A"}]
    run, requests = run_judge(tmp_path, mqm_judge, items, "--unit", "document", "--runs", "1", protocol="mqm")
    assert len(requests) == 1
    by_seg = {j.seg_id: j for j in run.judgments}
    assert by_seg["1"].status == "ok" and by_seg["1"].score == 0.0 and by_seg["1"].annotation["spans"] == []
    assert by_seg["2"].score == -5.0 and by_seg["2"].annotation["spans"][0]["start"] == len("Das Haus ist ")


def test_esa_a_span_across_segments_fails_its_segment_even_when_unlocated_spans_are_kept():
    items = [Item(src="One.", tgt="Das Haus ist klein.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="1"),
             Item(src="Two.", tgt="Ich mag Tee.", src_lang="en", tgt_lang="de", doc_id="d", seg_id="2")]
    protocol = get_protocol("gemba-esa")  # on_unlocated=keep by default
    units = prepare_units(items, protocol, unit="document")
    answer = {"segments": [{"id": "S1", "errors": [{"span": "klein. Ich", "severity": "major"}], "score": 50},
                           {"id": "S2", "errors": [{"span": "nicht da", "severity": "minor"}], "score": 80}]}
    with pytest.raises(ParseFailure, match="segment boundary"):
        protocol.parse_answer(json.dumps(answer), units[0])
    kept = protocol.parse_answer(json.dumps(answer), units[1])  # a made-up quote is still kept without place
    assert kept["score"] == 80.0 and kept["spans"][0]["start"] is None


# -- error-free (WMT26's binary task) ----------------------------------------------------------

def error_free_judge(body: dict) -> Reply:
    shown = blocks(body["messages"][-1]["content"])
    segments = [{"id": label, "error_free": int(not any(w in tgt for w in BAD))} for label, tgt in shown.items()]
    if "Ich mag Tee." in shown.values():  # the de document's S2 answers out of range: it alone fails
        segments[1]["error_free"] = 2
    return Reply(content=json.dumps({"segments": segments}, ensure_ascii=False))


def test_error_free_one_request_per_document_labels_per_segment(tmp_path):
    items = rows()
    run, requests = run_judge(tmp_path, error_free_judge, items, "--unit", "document", protocol="error-free")
    assert len(requests) == 6
    assert requests[0]["response_format"]["json_schema"]["schema"]["required"] == ["segments"]
    judgments = {(j.system, j.doc_id, j.seg_id): j for j in run.judgments}
    for it in items:
        j = judgments[(it["system"], it["doc_id"], it["seg_id"])]
        if it["doc_id"] == "de" and it["seg_id"] == "2":
            assert j.status == "parse_failed" and j.score is None
            continue
        expected = float(not any(w in it["tgt"] for w in BAD))
        assert j.status == "ok" and j.score == expected
        assert j.score == segment_level_score("error-free", {"error_free": int(expected)}, Item(src="", tgt=""))
    with pytest.raises(InputError, match="expected"):
        prepare_units([Item(**items[0])], get_protocol("error-free", ProtocolOptions(
            extra={"score_mode": "expected"})), unit="document")
