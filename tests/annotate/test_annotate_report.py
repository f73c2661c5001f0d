"""Agreement with the judge in ``annotate status``, and the report's section on a campaign."""

from __future__ import annotations

import dataclasses
import html
import json
import re

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr

from polyjudge.annotate.schemes import check_annotation
from polyjudge.annotate.store import CampaignStore
from polyjudge.api import campaign_status
from polyjudge.api.annotate import PpiEstimate, read_status, status_json
from tests.annotate.campaign_helpers import BASE, judge_items, make
from tests.helpers.cli import cli


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    return judge_items(tmp_path_factory.mktemp("judged"))


def _fill(folder, score):
    store = CampaignStore(folder)
    try:
        for name, queue in store.queues().items():
            for i in queue:
                it = store.items[i]
                store.save(name, i, check_annotation({"score": score(name, i)}, store.info.scheme, None, it.tgt))
    finally:
        store.close()


def test_annotators_against_the_judge_match_scipy(judged, tmp_path):
    _, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", run, "--scheme", "da", "--annotators", "a,b",
               "--per-item", "2") == 0
    human = {"a": lambda i: (BASE[i] * 7) % 100, "b": lambda i: 100 - BASE[i]}
    _fill(folder, lambda name, i: human[name](i))
    rows = {j.who: j for j in campaign_status(folder).judge}
    store = CampaignStore(folder, readonly=True)
    judge = [it.judge_score for it in store.items]
    store.close()
    for name in "ab":
        x = [human[name](i) for i in range(len(judge))]
        assert rows[name].pearson == pytest.approx(pearsonr(x, judge).statistic)
        assert rows[name].kendall == pytest.approx(kendalltau(x, judge).statistic)
    means = [np.mean([human["a"](i), human["b"](i)]) for i in range(len(judge))]
    assert rows["humans (mean)"].pearson == pytest.approx(pearsonr(means, judge).statistic)


def test_the_report_shows_the_campaign(judged, tmp_path, capsys):
    _, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", run, "--scheme", "da", "--annotators", "a,b",
               "--per-item", "2") == 0
    _fill(folder, lambda name, i: BASE[i] + (3 if name == "b" else 0))
    status = campaign_status(folder)
    out = tmp_path / "report.html"
    assert cli("report", run, "--annotation", folder, "-o", out) == 0
    text = re.sub(r"<[^>]+>", " ", html.unescape(out.read_text(encoding="utf-8")))
    section = text[text.index("Human annotation campaign", text.index("Human annotation campaign") + 1):]
    assert "Krippendorff's alpha (interval)" in section and f"{status.alpha:.3g}" in section
    assert "annotators vs the judge" in section and "humans (mean)" in section
    assert cli("report", "--annotation", tmp_path / "nowhere", "-o", out) == 2


# `annotate status --format json` of this campaign, as the untyped status printed it before the status was typed
STATUS_JSON = """{
  "name": "camp",
  "scheme": "esa",
  "items": 4,
  "progress": [
    {
      "annotator": "a",
      "done": 3,
      "total": 4,
      "versions": 4
    },
    {
      "annotator": "b",
      "done": 2,
      "total": 4,
      "versions": 2
    }
  ],
  "alpha": 0.815068493150685,
  "alpha_level": "interval",
  "alpha_items": 2,
  "span_f1": [
    {
      "first": "a",
      "second": "b",
      "items": 2,
      "f1": 0.25
    }
  ],
  "ppi": null,
  "ppi_note": null,
  "judge": [],
  "mean_span_f1": 0.25
}
"""


def _esa_campaign(tmp_path):
    folder, _ = make(tmp_path, "esa", "a,b", per_item=2, n=4)
    store = CampaignStore(folder)
    try:
        bodies = [("a", 0, {"spans": [{"start": 0, "end": 4, "severity": "major"}], "score": 40}),
                  ("b", 0, {"spans": [{"start": 2, "end": 6, "severity": "minor"}], "score": 55}),
                  ("a", 1, {"spans": [], "score": 90}), ("b", 1, {"spans": [], "score": 80}),
                  ("a", 2, {"spans": [], "score": 70}), ("a", 1, {"spans": [], "score": 95})]
        for name, i, body in bodies:
            store.save(name, i, check_annotation(body, store.info.scheme, None, store.items[i].tgt))
    finally:
        store.close()
    return folder


def test_status_json_is_unchanged_and_reads_back_to_the_same_status(tmp_path, capsys):
    folder = _esa_campaign(tmp_path)
    assert cli("annotate", "status", folder, "--format", "json") == 0
    assert capsys.readouterr().out == STATUS_JSON
    status = campaign_status(folder)
    assert status_json(status) == STATUS_JSON
    back = read_status(json.loads(STATUS_JSON), "status.json")
    assert back == status and status_json(back) == STATUS_JSON
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.alpha = 1.0  # type: ignore[misc]
    assert cli("annotate", "status", folder, "--format", "tsv") == 0
    assert capsys.readouterr().out == ("measure\twho\tvalue\ndone\ta\t3\ntotal\ta\t4\nversions\ta\t4\n"
                                       "done\tb\t2\ntotal\tb\t4\nversions\tb\t2\n"
                                       "alpha\tinterval\t0.815068493150685\nspan_f1\ta|b\t0.25\n")
    assert cli("annotate", "status", folder) == 0
    assert capsys.readouterr().out == ("campaign camp (esa), 4 item(s)\n  a: 3/4 done, 4 version(s) saved\n"
                                       "  b: 2/4 done, 2 version(s) saved\n"
                                       "Krippendorff's alpha (interval): 0.815 over 2 item(s)\n"
                                       "span F1 a vs b: 0.250 on 2 item(s)\n")


def test_a_ppi_status_reads_back_field_for_field(judged, tmp_path):
    _, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", run, "--scheme", "da", "--annotators", "1",
               "--sample", "6", "--by", "ppi", "--seed", "5") == 0
    _fill(folder, lambda name, i: 100 - 3 * i)
    status = campaign_status(folder)
    assert isinstance(status.ppi, PpiEstimate) and status.ppi_note is None and status.judge
    text = status_json(status)
    assert read_status(json.loads(text), "s.json") == status
    assert json.loads(text)["ppi"]["lambda"] == status.ppi.lam


def _section(path):
    page = path.read_text(encoding="utf-8")
    start = page.index('id="annotation-study"')
    return page[start:page.index("</section>", start)]


def test_the_report_section_is_the_same_from_the_campaign_and_from_its_status_file(judged, tmp_path, capsys):
    _, run = judged
    folder = tmp_path / "camp"
    assert cli("annotate", "init", folder, "--items", run, "--scheme", "da", "--annotators", "a,b",
               "--per-item", "2", "--sample", "8", "--by", "ppi") == 0
    _fill(folder, lambda name, i: BASE[i] + (5 if name == "b" else 0))
    saved = tmp_path / "status.json"
    assert cli("annotate", "status", folder, "--format", "json", "-o", saved) == 0
    assert cli("report", "--annotation", folder, "-o", tmp_path / "live.html") == 0
    assert cli("report", "--annotation", saved, "-o", tmp_path / "file.html") == 0
    live = _section(tmp_path / "live.html")
    assert "PPI++ (people + judge)" in live and "humans (mean)" in live
    assert _section(tmp_path / "file.html") == live


def test_a_broken_status_file_is_one_line_naming_the_place(tmp_path, capsys):
    bad = tmp_path / "status.json"
    bad.write_text(STATUS_JSON.replace('"done": 3', '"done": "three"'), encoding="utf-8")
    capsys.readouterr()
    assert cli("report", "--annotation", bad, "-o", tmp_path / "r.html") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "status.json" in err and "progress[0].done" in err
    assert "Traceback" not in err
