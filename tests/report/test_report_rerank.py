"""The report's reranking section, from real ``polyjudge rerank -o OUT`` folders made against the scripted
server: the gains under the selecting judge and under each held-out check equal rerank.json's, side by
side, with the self-reward warning; checks not run read n/a; an incomplete choice shows no numbers."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from polyjudge.api import JudgeConfig, rerank
from polyjudge.data.errors import InputError
from polyjudge.engine import RetryPolicy
from polyjudge.report.html import write_report
from polyjudge.report.rerank import gain_text
from polyjudge.reranking.summary import read_rerank
from tests.helpers.openai_server import ScriptedServer

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02, give_up_after_s=0.2)
TRANSLATION = re.compile(r"^English translation: (.*)$", re.M)
SOURCES = ["Quelle eins.", "Quelle zwei."]
CANDIDATES = [["one q=40", "one q=90", "one q=70", "one q=90 again"], ["two q=55", "two q=55", "two q=30"]]


def _quality(body) -> int:
    return int(re.search(r"q=(\d+)", TRANSLATION.search(body["messages"][-1]["content"]).group(1)).group(1))


def qe_responder(body) -> str:
    return json.dumps({"score": _quality(body)})


def contrary(body) -> str:  # a held-out judge that prefers the opposite of the choosing one
    return json.dumps({"score": 100 - _quality(body)})


def judge_for(srv) -> JudgeConfig:
    return JudgeConfig(protocol="da", judges=(f"openai:m@{srv.base_url}",), src_lang="de", tgt_lang="en",
                       retry=FAST_RETRY)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")


class _Tables(HTMLParser):
    """The rows of every table in one section of the page, as cell texts (a key/value list: [key, value])."""

    def __init__(self, section_id: str) -> None:
        super().__init__()
        self.section_id, self.inside, self.rows, self.cell = section_id, False, [], None
        self.titles: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.inside = attrs.get("id") == self.section_id
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "dt":
            self.rows.append([])
            self.cell = ""
        elif self.inside and tag in ("td", "th", "dd"):
            self.cell = ""
            self.titles.append(attrs.get("title") or "")

    def handle_endtag(self, tag):
        if tag in ("td", "th", "dt", "dd") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def section_rows(html: str, section_id: str) -> list[list[str]]:
    p = _Tables(section_id)
    p.feed(html)
    return p.rows


def section_html(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}">')
    return html[start:html.index("</section>", start)]


def _made(tmp_path, *, held_out: bool, references: bool):
    out = tmp_path / "out"
    kw = {}
    if references:
        refs = tmp_path / "refs.txt"
        refs.write_text("one q=70\ntwo q=30\n", encoding="utf-8")
        kw["references"] = str(refs)
    with ScriptedServer(qe_responder) as srv, ScriptedServer(contrary) as other:
        if held_out:
            kw["held_out"] = f"openai:m@{other.base_url}"
        rerank(SOURCES, CANDIDATES, judge=judge_for(srv), method="qe", out=out, **kw)
    return out


def test_the_gains_under_each_check_equal_rerank_json_side_by_side(tmp_path):
    out = _made(tmp_path, held_out=True, references=True)
    summary = json.loads((out / "rerank.json").read_text())
    rep = write_report([out], tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert any(s.id == "rerank-out-run" for s in rep.sections)
    rows = section_rows(html, "rerank-out-run")
    table = [r for r in rows if len(r) == 4]
    header, chosen, baseline, gain, sources = table
    assert [g["check"] for g in summary["gains"]] == ["selection", "judge", "references"]
    assert header[1].startswith("selecting judge: da by openai:m") and "(self-reward)" in header[1]
    assert header[2].startswith("held-out judge: da by openai:m") and header[3] == "held out: chrF vs references"
    for k, g in enumerate(summary["gains"], start=1):
        assert chosen[k] == gain_text(g["chosen"]) and baseline[k] == gain_text(g["baseline"])
        assert gain[k] == gain_text(g["gain"], sign=True) and sources[k] == str(g["sources"])
    # the numbers themselves: QE chose q=90 and q=55 over the first candidates q=40 and q=55
    assert gain[1:3] == ["+25", "-25"]  # self-reward says better, the held-out judge says worse
    body = section_html(html, "rerank-out-run")
    assert "self-reward" in body and "Trust the held-out columns" in body
    facts = dict(r for r in rows if len(r) == 2)
    assert facts["sources"] == "2" and facts["candidates"] == "7"
    assert facts["requests sent"].startswith(f"{summary['requests']} distinct (the plain method: "
                                             f"{summary['requests_full']}")
    assert facts["method"].startswith("QE reranking")


def test_a_check_not_run_reads_n_a_and_the_page_says_there_is_no_evidence(tmp_path):
    out = _made(tmp_path, held_out=False, references=False)
    write_report([out], tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    rows = section_rows(html, "rerank-out-run")
    gain = next(r for r in rows if r[0] == "gain" and len(r) == 4)
    assert gain[1] == "+25" and gain[2:] == ["n/a", "n/a"]
    body = section_html(html, "rerank-out-run")
    assert "no evidence of a gain" in body and "rerank --held-out JUDGE" in body


def test_the_run_directory_inside_the_output_brings_the_section_too(tmp_path):
    out = _made(tmp_path, held_out=True, references=False)
    rep = write_report([out / "run"], tmp_path / "report.html")
    assert any(s.id == "rerank-out-run" for s in rep.sections)
    rep = write_report([out / "held-out"], tmp_path / "held.html")  # the held-out judge's run is not the choice
    assert not any(s.id.startswith("rerank") for s in rep.sections)


def test_an_incomplete_choice_is_shown_as_such_never_as_numbers(tmp_path):
    out = _made(tmp_path, held_out=False, references=False)
    (out / "rerank.json").write_text(json.dumps({"method": "qe", "status": "incomplete"}), encoding="utf-8")
    write_report([out], tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    body = section_html(html, "rerank-out-run")
    assert "incomplete" in body and "did not finish" in body
    assert not [r for r in section_rows(html, "rerank-out-run") if r and r[0] == "gain"]
    assert "+25" not in body


def test_an_mbr_choice_with_chrf_has_no_run_and_is_a_section_of_its_own(tmp_path):
    from polyjudge.api import RerankConfig

    refs = tmp_path / "refs.txt"
    refs.write_text("Good morning to you.\nThe cat sat.\n", encoding="utf-8")
    cands = [["Good morning.", "Good morning to you all.", "Morning good."], ["The cat sat.", "A cat sits.", "Cat."]]
    rerank(["Guten Morgen.", "Die Katze sass."], cands,
           RerankConfig(method="mbr", utility="chrf", references=str(refs)), out=tmp_path / "mbr")
    summary = read_rerank(tmp_path / "mbr")
    rep = write_report([tmp_path / "mbr"], tmp_path / "report.html")
    assert [s.id for s in rep.sections] == ["rerank-study"]
    rows = section_rows((tmp_path / "report.html").read_text(), "rerank-study")
    gain = next(r for r in rows if r[0] == "gain" and len(r) == 4)
    assert gain == ["gain", gain_text(summary.gains[0].gain, sign=True), "n/a",
                    gain_text(summary.gains[1].gain, sign=True)]
    assert summary.gains[1].check == "references" and summary.method == "mbr"


@pytest.mark.parametrize(("doc", "field"), [
    ({"method": "qe", "status": "done"}, "status"),
    ({"method": "qe", "scorer": "x", "sources": 2, "candidates": 4, "requests": 4, "requests_full": 4,
      "gains": [{"scorer": "x", "check": "selection", "chosen": "high", "baseline": 1, "gain": 1, "sources": 2}]},
     "chosen"),
    ({"method": "qe", "scorer": "x", "sources": 2, "candidates": 4, "requests": 4, "requests_full": 4}, "gains"),
])
def test_a_damaged_summary_is_an_input_error_naming_the_field(tmp_path, doc, field):
    out = tmp_path / "bad"
    out.mkdir()
    (out / "rerank.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as e:
        write_report([out], tmp_path / "report.html")
    assert e.value.field == field and "rerank.json" in str(e.value.path)
