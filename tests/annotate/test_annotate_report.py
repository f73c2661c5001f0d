"""Agreement with the judge in ``annotate status``, and the report's section on a campaign."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr

from polyjudge.annotate.schemes import check_annotation
from polyjudge.annotate.store import CampaignStore
from polyjudge.api import campaign_status
from tests.annotate.campaign_helpers import BASE, judge_items
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
