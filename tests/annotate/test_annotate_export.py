"""Export, then read back with polyjudge's own readers: the same spans, scores and ratings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from polyjudge.annotate.schemes import check_annotation
from polyjudge.annotate.store import CampaignStore
from polyjudge.api.annotate import export_campaign
from polyjudge.data.wmt_mqm import read_wmt_mqm
from polyjudge.metaeval.ratings.calibration import read_ratings as read_long_ratings
from polyjudge.metaeval.readers import read_scores
from polyjudge.metaeval.spans.readers import read_span_jsonl, read_spans
from polyjudge.validation.ratings import read_ratings
from tests.annotate.campaign_helpers import HOSTILE_TGT, make
from tests.helpers.cli import cli

CAT = "Accuracy/Mistranslation"


def _annotate(folder: Path, bodies: dict[tuple[str, str], dict]) -> None:
    """Save ``(annotator, item_id) -> body`` through the server's own check."""
    store = CampaignStore(folder)
    try:
        index = {it.item_id: it for it in store.items}
        for (name, item_id), body in bodies.items():
            it = index[item_id]
            store.save(name, it.id, check_annotation(body, store.info.scheme, store.info.task, it.tgt))
    finally:
        store.close()


def _mqm_bodies() -> dict[tuple[str, str], dict]:
    k = HOSTILE_TGT.index("\u202e")
    return {
        ("ana", "sys0:doc0:0"): {"spans": [{"start": 0, "end": 4, "category": CAT, "severity": "major"},
                                           {"start": 5, "end": 11, "category": "Fluency/Grammar",
                                            "severity": "minor"}]},
        ("ana", "sys0:doc0:2"): {"spans": [{"start": k, "end": k + 5, "category": "Fluency/Character encoding",
                                            "severity": "critical"}]},
        ("ben", "sys1:doc0:1"): {"no_error": True},
        ("ben", "sys1:doc0:3"): {"spans": [{"start": 15, "end": 20, "category": "Fluency/Spelling",
                                            "severity": "minor"}]},
    }


def test_mqm_tsv_round_trip_through_the_wmt_reader_span_reader_and_scores(tmp_path):
    folder, _ = make(tmp_path, "mqm")
    bodies = _mqm_bodies()
    _annotate(folder, bodies)
    out = tmp_path / "human.tsv"
    assert cli("annotate", "export", folder, "--to", "mqm-tsv", "-o", out) == 0
    anns = {(a.rater, f"{a.system}:{a.doc}:{a.seg_id}"): a for a in read_wmt_mqm(out)}
    assert set(anns) == set(bodies)
    store = CampaignStore(folder, readonly=True)
    tgt = {it.item_id: it.tgt for it in store.items}
    store.close()
    for key, body in bodies.items():
        a = anns[key]
        assert a.target == tgt[key[1]]
        got = [(e.start, e.end, e.category, e.severity.lower()) for e in a.errors if not e.is_no_error]
        assert got == [(s["start"], s["end"], s["category"], s["severity"]) for s in body.get("spans", [])]
    # the span reader (span-f1's) sees the same character offsets
    segs = {(s.system, s.doc_id, s.seg_id): s for s in read_spans(out, raters="all")[0]}
    assert [(sp.start, sp.end) for sp in segs[("sys0", "doc0", "0")].spans] == [(0, 4), (5, 11)]
    # meta-eval's reader scores it: negated MQM points (major 5, minor 1, critical 10 as in aggregate.mqm)
    m = read_scores(out)
    col = {k: i for i, k in enumerate(m.items)}
    assert m.values[m.systems.index("sys0"), col["0"]] == -6.0
    assert m.values[m.systems.index("sys1"), col["1"]] == 0.0


def test_esa_jsonl_round_trip_through_the_span_reader(tmp_path):
    folder, _ = make(tmp_path, "esa")
    bodies = {("ana", "sys0:doc0:0"): {"spans": [{"start": 2, "end": 6, "severity": "major"}], "score": 40},
              ("ben", "sys1:doc0:1"): {"spans": [], "score": 95.5},
              ("ana", "sys0:doc0:2"): {"spans": [{"start": 0, "end": 3, "severity": "minor", "category": CAT}],
                                       "score": 10}}
    _annotate(folder, bodies)
    out = tmp_path / "esa.jsonl"
    out.write_text(export_campaign(folder, "esa-jsonl"), encoding="utf-8")
    segs = {(s.system, s.doc_id, s.seg_id): s for s in read_span_jsonl(out)}
    assert [(sp.start, sp.end, sp.severity) for sp in segs[("sys0", "doc0", "0")].spans] == [(2, 6, "major")]
    assert segs[("sys1", "doc0", "1")].spans == () and segs[("sys0", "doc0", "2")].hypothesis == HOSTILE_TGT
    assert all(s.lp == "en-de" for s in segs.values())
    scores = read_scores(out)
    col = {k: i for i, k in enumerate(scores.items)}
    assert scores.values[scores.systems.index("sys1"), col["1"]] == 95.5
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["esa_spans"] == [{"start_i": 2, "end_i": 6, "severity": "major", "category": ""}]


@pytest.mark.parametrize(("scheme", "answers"), [
    ("forced-choice", {("ana", "sys0:doc0:0"): {"choice": "A"}, ("ben", "sys1:doc0:1"): {"choice": "C"},
                       ("ana", "sys0:doc0:2"): {"choice": "B"}}),
    ("response-set", {("ana", "sys0:doc0:0"): {"choices": ["B", "A"]}, ("ben", "sys1:doc0:1"): {"choices": ["C"]}}),
])
def test_ratings_round_trip_through_the_validation_reader(tmp_path, scheme, answers):
    folder, _ = make(tmp_path, scheme)
    _annotate(folder, answers)
    out = tmp_path / "ratings.tsv"
    out.write_text(export_campaign(folder, "ratings"), encoding="utf-8")
    store = CampaignStore(folder, readonly=True)
    task = store.info.task
    store.close()
    assert task is not None
    counts = read_ratings(out, task)
    row = {k: i for i, k in enumerate(counts.items)}
    for (_, item_id), body in answers.items():
        if scheme == "forced-choice":
            assert counts.fc[row[item_id]].tolist() == [1.0 if x == body["choice"] else 0.0 for x in task.letters]
        else:
            v = task.set_of_letters("".join(body["choices"]))
            assert counts.rs[row[item_id]].argmax() == v and counts.rs[row[item_id]].sum() == 1


def test_score_ratings_round_trip_through_the_agreement_reader(tmp_path):
    folder, _ = make(tmp_path, "da", "ana,ben", per_item=2)
    answers = {("ana", "sys0:doc0:0"): {"score": 70}, ("ben", "sys0:doc0:0"): {"score": 65.5},
               ("ben", "sys1:doc0:1"): {"score": 0}}
    _annotate(folder, answers)
    out = tmp_path / "ratings.tsv"
    out.write_text(export_campaign(folder, "ratings"), encoding="utf-8")
    rows = {(r.rater, r.item_id): r for r in read_long_ratings(out)}
    assert {k: rows[k].rating for k in rows} == {k: float(b["score"]) for k, b in answers.items()}
    assert {r.kind for r in rows.values()} == {"human"} and {r.language for r in rows.values()} == {"en-de"}


def test_only_the_newest_version_is_exported(tmp_path):
    folder, _ = make(tmp_path, "da")
    _annotate(folder, {("ana", "sys0:doc0:0"): {"score": 10}})
    _annotate(folder, {("ana", "sys0:doc0:0"): {"score": 90}})
    lines = export_campaign(folder, "ratings").splitlines()
    assert len(lines) == 2 and lines[1].endswith("\t90.0")
    assert np.isclose(read_scores(_write(tmp_path / "e.jsonl", export_campaign(folder, "esa-jsonl"))).values[0, 0], 90)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_export_refuses_a_format_the_scheme_has_no_data_for_and_its_own_folder(tmp_path, capsys):
    folder, _ = make(tmp_path, "forced-choice")
    assert cli("annotate", "export", folder, "--to", "mqm-tsv", "-o", tmp_path / "x.tsv") == 2
    assert "no error spans" in capsys.readouterr().err and not (tmp_path / "x.tsv").exists()
    assert cli("annotate", "export", folder, "--to", "ratings", "-o", folder / "r.tsv") == 2
    assert "inside the campaign folder" in capsys.readouterr().err and not (folder / "r.tsv").exists()
    (tmp_path / "link.tsv").symlink_to(tmp_path / "elsewhere.tsv")
    assert cli("annotate", "export", folder, "--to", "ratings", "-o", tmp_path / "link.tsv") == 2
    assert not (tmp_path / "elsewhere.tsv").exists()
