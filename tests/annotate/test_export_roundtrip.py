"""Every ``annotate export`` format read back by every reader the docs name gives the same items, scores
and spans (issue 43, item 5): several documents whose seg_ids restart, several annotators per item,
duplicate spans, and texts holding ``<v>``, ``</v>``, tabs, line ends and non-BMP characters.

Readers: ``mqm-tsv`` -> ``data.wmt_mqm.read_wmt_mqm`` (``human-mqm``, ``judge`` input), the MQM scorer
(``human-mqm``, ``meta-eval --human``), ``read_spans`` (``span-f1``); ``esa-jsonl`` -> ``read_scores``
(``meta-eval --human``), ``read_span_jsonl``/``read_spans`` (``span-f1``); ``ratings`` ->
``metaeval.ratings.calibration.read_ratings`` (``agreement``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyjudge.aggregate.mqm import human_mqm_scores, mqm_points
from polyjudge.annotate.schemes import check_annotation
from polyjudge.annotate.store import CampaignStore
from polyjudge.api.annotate import AnnotateConfig, export_campaign, init_campaign
from polyjudge.data.errors import InputError
from polyjudge.data.wmt_mqm import read_wmt_mqm, wmt_mqm_items
from polyjudge.metaeval.ratings.calibration import read_ratings
from polyjudge.metaeval.readers import read_scores
from polyjudge.metaeval.spans.readers import read_span_jsonl, read_spans
from polyjudge.metaeval.spans.scoring import span_f1
from tests.helpers.cli import cli

CAT = "Accuracy/Mistranslation"
AND_TGT = "The <v> cat sat on the mat and the </v> dog too."  # "and" at code points 27-30


def _campaign(tmp: Path, rows: list[dict[str, str]], scheme: str, annotators: str, per_item: int) -> Path:
    items = tmp / "items.jsonl"
    items.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    folder = tmp / "camp"
    init_campaign(AnnotateConfig(str(folder), str(items), scheme, annotators, per_item))
    return folder


def _row(system: str, doc: str, seg: str, tgt: str, src: str = "Quelle.", lp: str = "zh-en") -> dict[str, str]:
    s, t = lp.split("-")
    return {"src": src, "tgt": tgt, "src_lang": s, "tgt_lang": t, "system": system, "doc_id": doc, "seg_id": seg}


def _annotate_all(folder: Path, body_of) -> dict[tuple[str, str], dict]:
    """Every queued (annotator, item) gets ``body_of(annotator, item)``, saved through the server's check."""
    store = CampaignStore(folder)
    saved = {}
    try:
        for name, queue in store.queues().items():
            for item_id in queue:
                it = store.items[item_id]
                body = check_annotation(body_of(name, it), store.info.scheme, store.info.task, it.tgt)
                store.save(name, it.id, body)
                saved[(name, it.item_id)] = body
    finally:
        store.close()
    return saved


def _export(folder: Path, to: str, out: Path) -> Path:
    out.write_text(export_campaign(folder, to), encoding="utf-8")
    return out


# ---------------------------------------------------------------- the cases of the issue, one test each

def test_mqm_tsv_of_two_documents_whose_seg_ids_restart_reads_back(tmp_path, capsys):
    rows = [_row("alpha", "d1", "1", "One cat."), _row("alpha", "d2", "1", "Two dogs."),
            _row("beta", "d1", "1", "A cat."), _row("beta", "d2", "1", "Dogs.")]
    folder = _campaign(tmp_path, rows, "mqm", "ana", 1)
    spans = {"alpha:d1:1": [{"start": 0, "end": 3, "category": CAT, "severity": "major"}]}
    _annotate_all(folder, lambda _n, it: {"spans": spans[it.item_id]} if it.item_id in spans else {"no_error": True})
    out = tmp_path / "human-mqm.tsv"
    assert cli("annotate", "export", folder, "--to", "mqm-tsv", "-o", out) == 0
    # before: "error row for a segment this rater marked No-error" (d1/1 and d2/1 were one segment)
    assert cli("human-mqm", out) == 0
    capsys.readouterr()
    anns = {(a.system, a.doc, a.seg_id): a for a in read_wmt_mqm(out)}
    assert len(anns) == 4 and anns[("alpha", "d2", "1")].target == "Two dogs."
    assert [(e.start, e.end) for e in anns[("alpha", "d1", "1")].errors] == [(0, 3)]
    seg = {(s.system, s.doc, s.seg_id): s.score for s in human_mqm_scores(out).segments}
    assert seg == {("alpha", "d1", "1"): -5.0, ("alpha", "d2", "1"): 0.0, ("beta", "d1", "1"): 0.0,
                   ("beta", "d2", "1"): 0.0}


def test_esa_jsonl_of_two_annotators_per_item_is_read_by_meta_eval_and_span_f1(tmp_path, capsys):
    rows = [_row(s, "d1", str(k), f"Sentence {k} of {s}.") for s in ("alpha", "beta", "gamma") for k in (1, 2)]
    folder = _campaign(tmp_path, rows, "esa", "ana,ben", 2)
    score = {"ana": 60.0, "ben": 81.0}
    _annotate_all(folder, lambda n, it: {"score": score[n] - len(it.item_id),
                                         "spans": [{"start": 0, "end": 8 if n == "ana" else 4, "severity": "minor"}]})
    out = _export(folder, "esa-jsonl", tmp_path / "esa.jsonl")
    # before: "duplicate score for system 'alpha', item '1'" from both readers
    m = read_scores(out)
    assert m.values.shape == (3, 2)
    want = [[(60.0 + 81.0) / 2 - len(f"{s}:d1:{k}") for k in m.items] for s in m.systems]
    assert m.values.tolist() == want  # the mean of the two annotators, as WMT averages raters
    assert cli("meta-eval", "--human", out, "--metric", f"self={out}", "--lp", "zh-en") == 0
    assert cli("span-f1", "-g", out, "--pred", out) == 0
    assert "zh-en" in capsys.readouterr().out
    first = {(s.system, s.seg_id): s.spans for s in read_spans(out)[0]}
    assert {sp.end for spans in first.values() for sp in spans} == {8}  # --raters first: ana, who came first
    ben = read_span_jsonl(out, raters="ben")
    assert len(ben) == 6 and {sp.end for s in ben for sp in s.spans} == {4}
    pooled = read_spans(out, raters="all")[0]
    assert len(pooled) == 6 and all(len(s.spans) == 2 for s in pooled)


def test_literal_v_markup_is_refused_by_mqm_tsv_and_read_back_exactly_from_esa_jsonl(tmp_path, capsys):
    assert AND_TGT[27:30] == "and"
    folder = _campaign(tmp_path, [_row("alpha", "d1", "1", AND_TGT), _row("beta", "d1", "1", "Fine.")], "mqm",
                       "ana", 1)
    _annotate_all(folder, lambda _n, it: {"spans": [{"start": 27, "end": 30, "category": CAT, "severity": "minor"}]}
                  if it.tgt == AND_TGT else {"no_error": True})
    out = tmp_path / "human-mqm.tsv"
    # before: exit 0, and the reader took the literal <v> ... </v> for the span (8-23 instead of 27-30)
    assert cli("annotate", "export", folder, "--to", "mqm-tsv", "-o", out) == 2
    err = capsys.readouterr().err
    assert "'<v>'" in err and "esa-jsonl" in err and len(err.strip().splitlines()) == 1 and not out.exists()
    jsonl = _export(folder, "esa-jsonl", tmp_path / "esa.jsonl")
    segs = {s.system: s for s in read_span_jsonl(jsonl)}
    assert segs["alpha"].hypothesis == AND_TGT and [(s.start, s.end) for s in segs["alpha"].spans] == [(27, 30)]
    assert cli("span-f1", "-g", jsonl, "--pred", jsonl) == 0
    # before: span F1 of the annotator against herself 0.68 through the MQM TSV
    assert span_f1(read_span_jsonl(jsonl), read_span_jsonl(jsonl)).avg_f1 == 1.0


def test_identical_spans_of_one_annotator_count_once_in_every_export(tmp_path):
    folder = _campaign(tmp_path, [_row("alpha", "d1", "1", "One cat and dog."), _row("beta", "d1", "1", "Ok.")],
                       "mqm", "ana", 1)
    span = {"start": 8, "end": 11, "category": CAT, "severity": "major"}
    _annotate_all(folder, lambda _n, it: {"spans": [span, span, span]} if it.system == "alpha" else {"no_error": True})
    tsv = _export(folder, "mqm-tsv", tmp_path / "m.tsv")
    jsonl = _export(folder, "esa-jsonl", tmp_path / "e.jsonl")
    ratings = _export(folder, "ratings", tmp_path / "r.tsv")
    # before: -15 in esa-jsonl and ratings, -5 read back from the MQM TSV (the reader drops repeated rows)
    from_tsv = {s.system: s.score for s in human_mqm_scores(tsv).segments}
    from_jsonl = {json.loads(line)["system"]: json.loads(line)["mqm_points"] for line in jsonl.read_text().splitlines()}
    from_ratings = {r.item_id: r.rating for r in read_ratings(ratings)}
    assert from_tsv["alpha"] == -5.0
    assert from_jsonl["alpha"] == 5.0  # error points, in a field no score reader takes (issue 48)
    assert from_ratings["alpha:d1:1"] == -5.0
    assert [len(s.spans) for s in read_span_jsonl(jsonl) if s.system == "alpha"] == [1]


def test_ratings_name_the_pair_and_an_mqm_campaign_writes_no_esa_score(tmp_path):
    rows = [_row("alpha", "d1", "1", "Good day."), _row("alpha", "d1", "2", "Guten Tag.", lp="en-de")]
    folder = _campaign(tmp_path, rows, "mqm", "ana", 1)
    _annotate_all(folder, lambda _n, it: {"spans": [{"start": 0, "end": 4, "category": CAT, "severity": "major"}]})
    langs = {r.item_id: r.language for r in read_ratings(_export(folder, "ratings", tmp_path / "r.tsv"))}
    assert langs == {"alpha:d1:1": "zh-en", "alpha:d1:2": "en-de"}  # before: "en" and "de"
    recs = [json.loads(line) for line in export_campaign(folder, "esa-jsonl").splitlines()]
    assert all("score" not in r and r["mqm_points"] == 5.0 for r in recs)  # before: "score": -5.0 (an ESA field)
    # before (issue 48): "mqm_score" was read as the ESA score (the one field ending in "score"): -5 on 0-100
    assert not any(k.endswith("score") for r in recs for k in r)
    with pytest.raises(InputError, match="no 'score' column"):
        read_scores(_export(folder, "esa-jsonl", tmp_path / "e.jsonl"))


# ---------------------------------------------------------------- the round-trip property

_PIECES = ["a", "b", " ", "é", "\U0001f600", "\U00020000", "<v>", "</v>", "\t", "\n", "\u2028", "\r", "\u202e", "x"]
_TSV_UNSAFE = ("<v>", "</v>", "\t", "\n", "\r")


def _texts(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), min_size=1, max_size=8).map("".join).filter(lambda t: t.strip() != "")


_SEVERITY = {"mqm": ["minor", "major", "critical"], "esa": ["minor", "major"], "da": []}


@st.composite
def _campaigns(draw):
    scheme = draw(st.sampled_from(["mqm", "esa", "da"]))
    # half the campaigns hold only what the MQM TSV can: the TSV's rows are then read back, else refused
    safe = draw(st.booleans())
    text = _texts([p for p in _PIECES if p not in _TSV_UNSAFE] if safe else _PIECES)
    n_docs, n_segs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    rows = [_row(system, f"doc{d}", str(k), draw(text), src=draw(text))
            for system in ("sysA", "sysB") for d in range(n_docs) for k in range(1, n_segs + 1)]
    raters = draw(st.sampled_from(["ana", "ana,ben", "ana,ben,cy"]))
    per_item = draw(st.integers(1, raters.count(",") + 1))
    seed = draw(st.integers(0, 2**16))
    return scheme, rows, raters, per_item, seed


def _body(scheme: str, seed: int, name: str, tgt: str, item_id: str) -> dict:
    rng = np.random.default_rng([seed, sum(map(ord, name + item_id))])
    spans: list[dict] = []
    for _ in range(int(rng.integers(0, 3)) if scheme != "da" else 0):
        start = int(rng.integers(0, len(tgt)))
        span = {"start": start, "end": int(rng.integers(start + 1, len(tgt) + 1)),
                "severity": str(rng.choice(_SEVERITY[scheme])), "category": CAT if scheme == "mqm" else ""}
        spans += [span] * int(rng.integers(1, 3))  # sometimes the same span twice (a double click)
    if scheme == "da":
        return {"score": float(rng.integers(0, 101))}
    if scheme == "esa":
        return {"spans": spans, "score": float(rng.integers(0, 101))}
    return {"spans": spans} if spans else {"no_error": True}


def _unique(spans: list[dict]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for s in spans:
        if (s["start"], s["end"], s["severity"]) not in out:
            out.append((s["start"], s["end"], s["severity"]))
    return out


def _value(scheme: str, body: dict) -> float:
    if scheme in ("esa", "da"):
        return float(body["score"])
    return 0.0 - mqm_points([(sev, CAT) for _, _, sev in _unique(body["spans"])])


def _check_mqm_tsv(folder, tmp, saved, items, scheme):
    if scheme == "da":  # no spans: refused (tested in test_annotate_export)
        return
    unsafe = any(u in it["src"] + it["tgt"] for it in items.values() for u in _TSV_UNSAFE)
    try:
        out = _export(folder, "mqm-tsv", tmp / "m.tsv")
    except InputError as exc:
        assert unsafe and "\n" not in str(exc)
        return
    assert not unsafe
    anns = {(a.rater, f"{a.system}:{a.doc}:{a.seg_id}"): a for a in read_wmt_mqm(out)}
    assert set(anns) == set(saved)
    as_items = {f"{i.system}:{i.doc_id}:{i.seg_id}": (i.src, i.tgt) for i in wmt_mqm_items(list(anns.values()))}
    assert as_items == {k: (items[k]["src"], items[k]["tgt"]) for _, k in saved}  # `judge` reads it as items
    for key, body in saved.items():
        a, it = anns[key], items[key[1]]
        assert (a.source, a.target) == (it["src"], it["tgt"])
        assert [(e.start, e.end, e.severity.lower()) for e in a.errors if not e.is_no_error] == _unique(body["spans"])
        for name in {key[0]}:
            seg = [s for s in read_spans(out, raters=name)[0] if f"{s.system}:{s.doc_id}:{s.seg_id}" == key[1]]
            assert [(sp.start, sp.end) for sp in seg[0].spans] == [(s, e) for s, e, _ in _unique(body["spans"])]
    if scheme == "mqm":
        got = {f"{s.system}:{s.doc}:{s.seg_id}": s.score for s in human_mqm_scores(out).segments}
        assert got == pytest.approx(_means(saved, scheme))


def _means(saved: dict, scheme: str) -> dict[str, float]:
    per: dict[str, list[float]] = {}
    for (_, item_id), body in saved.items():
        per.setdefault(item_id, []).append(_value(scheme, body))
    return {k: float(np.mean(v)) for k, v in per.items()}


def _check_esa_jsonl(folder, tmp, saved, items, scheme):
    out = _export(folder, "esa-jsonl", tmp / "e.jsonl")
    if scheme == "mqm":  # issue 48: MQM points are no ESA score: read as one, refused; kept as mqm_points
        with pytest.raises(InputError, match="no 'score' column"):
            read_scores(out)
        recs = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
        assert {(r["annotator"], r["item_id"]): -r["mqm_points"] for r in recs} == pytest.approx(
            {k: _value(scheme, b) for k, b in saved.items()})
    else:
        _check_esa_scores(out, saved, items, scheme)
    _check_esa_spans(out, saved, items)


def _check_esa_scores(out, saved, items, scheme):
    m = read_scores(out)
    got = {f"{system}:{item.replace(chr(0x241f), ':')}": m.values[i, j]
           for i, system in enumerate(m.systems) for j, item in enumerate(m.items) if not np.isnan(m.values[i, j])}
    if len({it["doc_id"] for it in items.values()}) == 1:  # keyed by seg_id alone: add the one document back
        doc = next(iter(items.values()))["doc_id"]
        got = {f"{k.split(':')[0]}:{doc}:{k.split(':')[1]}": v for k, v in got.items()}
    assert got == pytest.approx(_means(saved, scheme))


def _check_esa_spans(out, saved, items):
    for name in {n for n, _ in saved}:
        segs = {f"{s.system}:{s.doc_id}:{s.seg_id}": s for s in read_span_jsonl(out, raters=name)}
        mine = {k: b for (n, k), b in saved.items() if n == name}
        assert set(segs) == set(mine)
        for k, body in mine.items():
            assert segs[k].hypothesis == items[k]["tgt"]
            assert [(sp.start, sp.end, sp.severity) for sp in segs[k].spans] == _unique(body["spans"])


def _check_ratings(folder, tmp, saved, items, scheme):
    rows = {(r.rater, r.item_id): r for r in read_ratings(_export(folder, "ratings", tmp / "r.tsv"))}
    assert set(rows) == set(saved)
    for key, body in saved.items():
        assert rows[key].rating == pytest.approx(_value(scheme, body))
        assert rows[key].language == "zh-en"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(_campaigns())
def test_every_export_reads_back_equal(tmp_path_factory, case):
    scheme, rows, raters, per_item, seed = case
    tmp = tmp_path_factory.mktemp("rt")
    folder = _campaign(tmp, rows, scheme, raters, per_item)
    saved = _annotate_all(folder, lambda n, it: _body(scheme, seed, n, it.tgt, it.item_id))
    items = {f"{r['system']}:{r['doc_id']}:{r['seg_id']}": r for r in rows}
    _check_mqm_tsv(folder, tmp, saved, items, scheme)
    _check_esa_jsonl(folder, tmp, saved, items, scheme)
    _check_ratings(folder, tmp, saved, items, scheme)


def test_human_mqm_of_two_raters_is_their_mean_or_the_rater_asked_for(tmp_path, capsys):
    folder = _campaign(tmp_path, [_row("alpha", "d1", "1", "One cat."), _row("alpha", "d2", "1", "Two dogs.")],
                       "mqm", "ana,ben", 2)
    _annotate_all(folder, lambda n, _it: {"spans": [{"start": 0, "end": 3, "category": CAT, "severity": "major"}]}
                  if n == "ana" else {"no_error": True})
    out = _export(folder, "mqm-tsv", tmp_path / "m.tsv")
    capsys.readouterr()
    assert cli("human-mqm", out, "--format", "tsv") == 0
    assert capsys.readouterr().out.splitlines()[1] == "alpha\t2.5\t-2.5\t2"  # (5 + 0) / 2 per segment
    assert cli("human-mqm", out, "--format", "tsv", "--rater", "ana") == 0
    assert capsys.readouterr().out.splitlines()[1] == "alpha\t5\t-5\t2"
    assert cli("human-mqm", out, "--rater", "cy") == 2
    err = capsys.readouterr().err
    assert "no rater 'cy'" in err and "'ana', 'ben'" in err and len(err.strip().splitlines()) == 1
