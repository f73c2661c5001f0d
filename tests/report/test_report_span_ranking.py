"""The report's section of span metrics ranked under each span-F1 variant (``report --span-ranking FILE``,
FILE from ``span-f1 --rank ... --format json``): each variant's ranks as the file has them, a rank that
differs from the official WMT25 scorer's highlighted, Kendall's tau-b against it; on real TED spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.api import ReportConfig, SpanF1Config, report, span_f1_ranking
from polyjudge.data.errors import InputError
from polyjudge.metaeval.spans.ranking import read_variant_ranking
from polyjudge.report.format import number
from tests.cli.test_span_variants_cmd import write
from tests.helpers.cli import cli
from tests.report.test_report_rerank import section_rows

# the variants under which the best TED zh-en rater changes (tests/metaeval/spans/test_span_variants.py)
TED_VARIANTS = "wmt25/many/micro,exact/optimal/micro,overlap/optimal/micro,mpp/optimal/micro,mpp/optimal/macro"


def _cells(html: str, section_id: str) -> list[list[tuple[str, str]]]:
    """(text, class) of every row of the section's rank table."""
    import re

    start = html.index(f'<section id="{section_id}">')
    body = html[start:html.index("</section>", start)]
    table = body[body.index("<table>"):body.index("</table>")]
    return [[(text, cls or "") for cls, text in re.findall(r'<td(?: class="([^"]*)")?[^>]*>([^<]*)</td>', row)]
            for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1])]


def _check_against_file(html: str, doc: dict) -> None:
    """Every rank of the page equals the file's; exactly the ranks that differ from the official variant's
    are highlighted; the tau column is the file's changes against it (the official variant is first)."""
    official = doc["variants"][0]
    assert (official["match"], official["average"]) == ("wmt25", "micro")
    changes = {c["variant"]: c for c in doc["changes"]}
    rows = _cells(html, "span-ranking-study")
    assert [r[0][0] for r in rows] == [v["name"] for v in doc["variants"]]
    for row, v in zip(rows, doc["variants"]):
        ranks = row[1:1 + len(doc["metrics"])]
        assert [int(t) for t, _ in ranks] == [v["ranks"][m] for m in doc["metrics"]]
        assert [cls == "loss" for _, cls in ranks] == [v["ranks"][m] != official["ranks"][m] for m in doc["metrics"]]
        moved, best, tau = (t for t, _ in row[1 + len(doc["metrics"]):])
        if v is official:
            assert (moved, tau) == ("reference", "1")
        else:
            assert int(moved) == len(changes[v["name"]]["moved"]) and tau == number(changes[v["name"]]["kendall_tau"])
        assert best == ", ".join(m for m in doc["metrics"] if v["ranks"][m] == 1)


def test_a_ranking_that_flips_is_marked_from_the_cli(tmp_path, capsys):
    gold = write(tmp_path / "gold.jsonl", [[(0, 4), (10, 14)], [(5, 9)]], hyp=True)
    exact = write(tmp_path / "exact.jsonl", [[(0, 4)], []], hyp=False)
    wide = write(tmp_path / "wide.jsonl", [[(0, 20)], [(0, 20)]], hyp=False)
    out = tmp_path / "ranking.json"
    assert cli("span-f1", "--gold", gold, "--pred", exact, "--rank", f"broad={wide}", "--variants",
               "wmt25,exact,overlap/many", "--format", "json", "-o", out) == 0
    assert cli("report", "--span-ranking", out, "-o", tmp_path / "r.html") == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    html = (tmp_path / "r.html").read_text()
    _check_against_file(html, doc)
    assert "Span metrics ranked under each span-F1 variant" in html
    assert "the official WMT25 scorer (wmt25/many/micro)" in html


def _ted_files(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """TED zh-en raters as span metrics (tests/metaeval/spans/test_span_variants.py's construction), as files."""
    from tests.metaeval.spans.test_span_variants import rater_predictions

    gold, preds = rater_predictions("zh-en")  # skips when the data is absent

    def dump(path: Path, segs, *, hyp: bool) -> Path:
        rows = [{"system": s.system, "doc_id": s.doc_id, "seg_id": s.seg_id, "lp": s.lp or "zh-en",
                 **({"hypothesis": s.hypothesis} if hyp else {}),
                 "spans": [{"start": sp.start, "end": sp.end, "severity": sp.severity, "category": sp.category}
                           for sp in s.spans]} for s in segs]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path

    return dump(tmp_path / "gold.jsonl", gold, hyp=True), {r: dump(tmp_path / f"{r}.jsonl", p, hyp=False)
                                                          for r, p in sorted(preds.items())}


def test_real_ted_raters_ranked_under_each_variant(tmp_path, capsys):
    gold, preds = _ted_files(tmp_path)
    first, *others = preds.items()
    out = tmp_path / "ranking.json"
    assert cli("span-f1", "--gold", gold, "--pred", first[1], "--missing", "skip", "--variants", TED_VARIANTS,
               *[a for name, p in others for a in ("--rank", f"{name}={p}")], "--format", "json", "-o", out) == 0
    assert cli("report", "--span-ranking", out, "-o", tmp_path / "r.html") == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    html = (tmp_path / "r.html").read_text()
    _check_against_file(html, doc)
    best = {r[0][0]: r[-2][0] for r in _cells(html, "span-ranking-study")}
    # the winners tests/metaeval/spans/test_span_variants.py found with the library-checked scorer
    assert best == {"wmt25/many/micro": "rater9", "exact/optimal/micro": "rater1",
                    "overlap/optimal/micro": "rater4", "mpp/optimal/micro": "rater1", "mpp/optimal/macro": "rater4"}
    assert "the best metric changes under exact/optimal/micro, overlap/optimal/micro" in html
    f1 = [r for r in section_rows(html, "span-ranking-study") if r and r[0] == "mpp/optimal/macro"][-1]
    macro = next(v for v in doc["variants"] if v["name"] == "mpp/optimal/macro")
    assert f1[1:] == [number(macro["f1"][m]) for m in doc["metrics"]]


def test_the_api_result_and_its_file_render_alike(tmp_path):
    gold = write(tmp_path / "gold.jsonl", [[(0, 4), (10, 14)], [(5, 9)]], hyp=True)
    exact = write(tmp_path / "exact.jsonl", [[(0, 4)], []], hyp=False)
    wide = write(tmp_path / "wide.jsonl", [[(0, 20)], [(0, 20)]], hyp=False)
    ranked = span_f1_ranking(SpanF1Config(gold=gold, pred=exact), {"broad": wide}, "all")
    (tmp_path / "ranking.json").write_text(ranked.to_json(), encoding="utf-8")
    a = report(config=ReportConfig(out=tmp_path / "a.html", span_ranking=ranked))
    b = report(config=ReportConfig(out=tmp_path / "b.html", span_ranking=tmp_path / "ranking.json"))
    assert [s.blocks for s in a.sections] == [s.blocks for s in b.sections] and len(a.sections) == 1
    back = read_variant_ranking(json.loads(ranked.to_json()), "x")
    assert back.f1 == ranked.ranking.f1 and back.changes() == ranked.ranking.changes()


@pytest.mark.parametrize(("doc", "field"), [
    ({"metrics": ["a", "b"]}, "variants"),
    ({"metrics": ["a", "b"], "variants": [{"match": "fuzzy", "matching": "many", "average": "micro",
                                           "f1": {"a": 1, "b": 0}}]}, "variants[0]"),
    ({"metrics": ["a", "b"], "variants": [{"match": "exact", "matching": "optimal", "average": "micro",
                                           "f1": {"a": 1}}]}, "variants[0].f1"),
])
def test_a_file_of_another_shape_is_an_input_error(tmp_path, doc, field):
    path = tmp_path / "ranking.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError) as e:
        report(config=ReportConfig(out=tmp_path / "r.html", span_ranking=path))
    assert e.value.field == field and e.value.path == str(path)
