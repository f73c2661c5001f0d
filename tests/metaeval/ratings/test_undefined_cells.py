"""The agreement and consistency tables print an undefined statistic as n/a, never an empty cell
(issue 43 item 4); their JSON says null."""

from __future__ import annotations

import json
import math

from polyjudge.metaeval.ratings.calibration import RatingRow, calibrate, rows_text, rows_tsv
from polyjudge.metaeval.ratings.consistency import ConsistencyRow, LanguageStats, languages_tsv, summary_tsv


def _one_item_rows() -> list[RatingRow]:
    # one item, one human, one judge: no pair of humans, so the humans' agreement statistics are undefined
    return [RatingRow("i1", "zh-en", "t", "m", "h1", "human", 1.0),
            RatingRow("i1", "zh-en", "t", "m", "j", "judge", 1.0)]


def test_agreement_tsv_says_na() -> None:
    rows = calibrate(_one_item_rows())
    assert math.isnan(rows[0].fleiss_humans)
    header, line = rows_tsv(rows).splitlines()
    cells = dict(zip(header.split("\t"), line.split("\t"), strict=True))
    assert cells["fleiss_humans"] == "n/a" and cells["pa_humans_all"] == "n/a"
    assert "" not in cells.values()
    assert cells["pa_judge"] == "1.0000"
    assert json.loads(json.dumps(rows[0].to_dict()))["fleiss_humans"] is None


def test_agreement_text_says_na() -> None:
    line = rows_text(calibrate(_one_item_rows())).splitlines()[1]
    assert "n/a" in line.split() and "-" not in line.split()[4:]


def test_consistency_tables_say_na() -> None:
    row = ConsistencyRow("j", "t", "binary", "all", ["de"], 1, 0, None, math.nan, math.nan, math.nan,
                         {"de": LanguageStats(1, 0, None, math.nan, math.nan, None)})
    summary = summary_tsv([row]).splitlines()[1].split("\t")
    assert summary[6:10] == ["n/a"] * 4
    langs = languages_tsv([row]).splitlines()[1].split("\t")
    assert langs[7:] == ["n/a"] * 4
    assert json.loads(json.dumps(row.to_dict()))["fleiss_kappa"] is None
