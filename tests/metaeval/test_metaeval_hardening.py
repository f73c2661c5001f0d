"""Meta-evaluation never gives wrong numbers silently (issue 13, items 8, 9 and 13).

* item 8: with ``missing_metric="drop"`` system scores on both sides average the same cells;
* item 9: segments are keyed by doc_id + seg_id when seg_ids restart per document;
* item 13: every score file is read as UTF-8 with or without BOM, LF or CRLF, and bad
  bytes or huge header lines give a short InputError with the place.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from polyjudge.api import MetaEvalConfig, meta_eval
from polyjudge.data.errors import MAX_MESSAGE, InputError
from polyjudge.metaeval import readers, stats
from polyjudge.metaeval.matrices import ScoreMatrix, row_means
from polyjudge.metaeval.tasks import LanguagePair, evaluate

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
TED_AVG = DATA / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.avg_seg_scores.tsv"


def _tsv(path: Path, rows, header=("system", "seg_id", "score")) -> Path:
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


# ------------------------------------------------------------------ item 8: same cells on both sides
def _ted_30_segments(tmp_path: Path) -> tuple[Path, Path]:
    """Three TED systems on 30 segments; the metric copies the human scores exactly but has no
    score for Facebook-AI's first 10 segments (e.g. failed judgments)."""
    if not TED_AVG.is_file():
        pytest.skip("../shared/data/wmt-mqm/ted is absent")
    human, metric = [], []
    for line in TED_AVG.read_text(encoding="utf-8").splitlines()[1:]:
        system, score, seg = line.split()
        if system in ("Facebook-AI", "Nemo", "Online-W") and int(seg) <= 30:
            human.append((system, seg, score))
            if not (system == "Facebook-AI" and int(seg) <= 10):
                metric.append((system, seg, score))
    return _tsv(tmp_path / "human.tsv", human), _tsv(tmp_path / "metric.tsv", metric)


def test_ted_copy_metric_with_dropped_cells_ranks_systems_like_the_humans(tmp_path):
    """The issue's example: before the fix, system pairwise accuracy was 1/3 here (human
    means over 30 segments against metric means over 20 for one system)."""
    human, metric = _ted_30_segments(tmp_path)
    config = MetaEvalConfig(human=human, metrics={"copy": metric}, task=None, k=0, missing_metric="drop")
    s = meta_eval(config).per_lp["lp"]["copy"]
    assert s["sys_pairwise_accuracy"] == 1.0
    assert s["sys_pearson"] == pytest.approx(1.0) and s["sys_kendall"] == pytest.approx(1.0)
    assert s["n_scored_cells"] == 80 and s["seg_pearson"] == pytest.approx(1.0)
    # the human system score Facebook-AI is compared with is its mean over segments 11-30
    pair = readers.read_scores(human)
    p = LanguagePair("lp", pair, {"copy": readers.read_scores(metric)}, missing_metric="drop").prepare()
    fb = p.systems.index("Facebook-AI")
    assert p.human_scores("copy").sys[fb] == pytest.approx(np.nanmean(p.human[fb, 10:]))
    assert p.human_sys[fb] == pytest.approx(np.nanmean(p.human[fb]))  # the humans' own score is kept
    with pytest.raises(InputError, match="no score for 10 cell"):
        meta_eval(MetaEvalConfig(human=human, metrics={"copy": metric}, task=None, k=0))


cells = st.integers(2, 6).flatmap(lambda s: st.integers(2, 8).flatmap(lambda t: st.tuples(
    st.lists(st.lists(st.integers(-25, 0), min_size=t, max_size=t), min_size=s, max_size=s),
    st.lists(st.lists(st.booleans(), min_size=t, max_size=t), min_size=s, max_size=s))))


@settings(max_examples=100, deadline=None)
@given(cells)
def test_a_metric_equal_to_the_humans_on_its_cells_is_perfect_at_system_level(data):
    values, dropped = data
    h = np.array(values, dtype=float)
    m = np.where(np.array(dropped), np.nan, h)
    systems = tuple(f"s{i}" for i in range(h.shape[0]))
    items = tuple(str(i) for i in range(h.shape[1]))
    pair = LanguagePair("lp", ScoreMatrix(systems, items, h), {"copy": ScoreMatrix(systems, items, m)},
                        missing_metric="drop")
    p = pair.prepare()
    hs, ms = p.human_scores("copy").sys, p.metric_scores("copy").sys
    np.testing.assert_array_equal(np.isnan(hs), np.isnan(ms))
    np.testing.assert_allclose(hs[~np.isnan(hs)], ms[~np.isnan(ms)])
    if (~np.isnan(ms)).sum() >= 2:  # fewer than two scored systems make no pair (accuracy 0 by convention)
        assert stats.pairwise_accuracy(hs, ms) == 1.0


def test_complete_metrics_keep_both_sides_own_system_scores():
    """A metric that scores every human-scored cell is compared as mt-metrics-eval does:
    the humans' system scores against the metric's own (over all it scored)."""
    systems, items = ("a", "b", "c"), ("1", "2", "3")
    h = np.array([[1.0, 2.0, np.nan], [0.0, 0.0, 0.0], [3.0, np.nan, 1.0]])
    m = np.array([[1.0, 2.0, 6.0], [0.0, 0.0, 0.0], [3.0, -1.0, 1.0]])  # scores cells humans did not
    for missing in ("error", "drop"):
        p = LanguagePair("lp", ScoreMatrix(systems, items, h), {"m": ScoreMatrix(systems, items, m)},
                         human_sys={"a": 10.0, "b": 20.0, "c": 30.0}, missing_metric=missing).prepare()
        assert p.human_scores("m").sys.tolist() == [10.0, 20.0, 30.0]
        assert p.metric_sys["m"].tolist() == [3.0, 0.0, 1.0]


def test_after_a_drop_both_sides_leave_out_cells_the_humans_did_not_score():
    systems, items = ("a", "b"), ("1", "2", "3")
    h = np.array([[1.0, 2.0, np.nan], [4.0, 5.0, 6.0]])
    m = np.array([[1.0, 2.0, 90.0], [np.nan, 5.0, 6.0]])  # b's first cell dropped; a's third unrated
    p = LanguagePair("lp", ScoreMatrix(systems, items, h), {"m": ScoreMatrix(systems, items, m)},
                     missing_metric="drop").prepare()
    assert p.metric_sys["m"].tolist() == [1.5, 5.5] and p.human_scores("m").sys.tolist() == [1.5, 5.5]


def test_given_system_scores_are_used_unless_cells_are_dropped():
    systems, items = ("a", "b", "c"), ("1", "2")
    h = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 1.0]])
    full = ScoreMatrix(systems, items, h)
    holed = ScoreMatrix(systems, items, np.where([[True, False], [False, False], [False, False]], np.nan, h))
    given = {"a": 7.0, "b": 8.0, "c": 9.0}
    p = LanguagePair("lp", full, {"full": full, "holed": holed}, human_sys={"a": -1.0, "b": -2.0, "c": -3.0},
                     metric_sys={"full": given, "holed": given}, missing_metric="drop").prepare()
    assert p.metric_sys["full"].tolist() == [7.0, 8.0, 9.0]
    assert p.human_scores("full").sys.tolist() == [-1.0, -2.0, -3.0]
    # "holed" lacks a's first segment: both sides are recomputed over the cells it scored
    assert p.metric_sys["holed"].tolist() == [3.0, 2.0, 0.5]
    assert p.human_scores("holed").sys.tolist() == [3.0, 2.0, 0.5]


def test_tests_between_metrics_with_different_cells_use_the_cells_both_scored():
    rng = np.random.default_rng(3)
    systems, items = tuple(f"s{i}" for i in range(5)), tuple(str(i) for i in range(12))
    h = rng.normal(size=(5, 12))
    a = h + rng.normal(scale=0.1, size=h.shape)
    b = h + rng.normal(scale=2.0, size=h.shape)
    a[0, :4] = np.nan
    b[1, 6:] = np.nan
    pair = LanguagePair("lp", ScoreMatrix(systems, items, h), {"A": ScoreMatrix(systems, items, a),
                                                               "B": ScoreMatrix(systems, items, b)},
                        missing_metric="drop")
    p = pair.prepare()
    hs, sa, sb = p.compared("A", "B")
    both = ~np.isnan(a) & ~np.isnan(b)
    np.testing.assert_allclose(hs.sys, row_means(h, both))
    np.testing.assert_allclose(sa.sys, row_means(a, both))
    np.testing.assert_allclose(sb.sys, row_means(b, both))
    # the same cells for one metric alone are its own
    np.testing.assert_allclose(p.human_scores("A").sys, row_means(h, ~np.isnan(a)))
    res = evaluate([pair], "wmt23", k=50, seed=0)
    assert res.ranking()[0] == "A"
    # metrics with identical cells are tested exactly as before (the humans' own system scores)
    full = LanguagePair("lp", pair.human, {"A": pair.human, "B": pair.human}).prepare()
    h1, _, _ = full.compared("A", "B")
    assert h1.sys is full.human_sys


# ------------------------------------------------------------------ item 9: doc_id + seg_id
def _per_doc(tmp_path: Path, name: str, shift: float = 0.0, doc: bool = True) -> Path:
    """Two documents whose seg_ids both start at 1, three systems."""
    rows = []
    for k, system in enumerate(("A", "B", "C")):
        for d, n in (("talk1", 3), ("talk2", 2)):
            for seg in range(1, n + 1):
                score = k + seg * 0.5 + (d == "talk2") + shift * ((seg + k) % 2)
                rows.append((system, d, seg, score) if doc else (system, seg, score))
    header = ("system", "doc_id", "seg_id", "score") if doc else ("system", "seg_id", "score")
    return _tsv(tmp_path / name, rows, header)


def _global(tmp_path: Path, name: str, shift: float = 0.0) -> Path:
    """The same scores with seg_ids numbered through both documents."""
    lines = _per_doc(tmp_path, name + ".src", shift).read_text().splitlines()[1:]
    rows = []
    for line in lines:
        system, d, seg, score = line.split("\t")
        rows.append((system, int(seg) + (3 if d == "talk2" else 0), score))
    return _tsv(tmp_path / name, rows)


def test_seg_ids_restarting_per_document_are_keyed_by_doc_and_seg(tmp_path):
    human, metric = _per_doc(tmp_path, "h.tsv"), _per_doc(tmp_path, "m.tsv", shift=0.3)
    table = readers.read_score_table(human)
    assert table.has_doc_id and table.seg_ids_repeat_across_docs()
    assert readers.resolve_item_key([table]) == "doc-seg"
    got = meta_eval(MetaEvalConfig(human=human, metrics={"m": metric}, task=None, k=0)).per_lp["lp"]["m"]
    assert got["n_items"] == 5 and got["n_scored_cells"] == 15
    want = meta_eval(MetaEvalConfig(human=_global(tmp_path, "hg.tsv"), metrics={"m": _global(tmp_path, "mg.tsv", 0.3)},
                                    task=None, k=0)).per_lp["lp"]["m"]
    assert got == want
    explicit = meta_eval(MetaEvalConfig(human=human, metrics={"m": metric}, task=None, k=0, item_key="doc-seg"))
    assert explicit.per_lp["lp"]["m"] == want


def test_both_sides_use_one_key_and_a_side_without_doc_id_is_named(tmp_path):
    human, metric = _per_doc(tmp_path, "h.tsv"), _per_doc(tmp_path, "m.tsv", doc=False)
    with pytest.raises(InputError) as err:
        meta_eval(MetaEvalConfig(human=human, metrics={"m": metric}, task=None, k=0))
    assert err.value.path == str(metric) and err.value.field == "doc_id"
    assert "seg_id repeats across documents" in str(err.value)
    # explicit doc-seg needs doc ids even where seg_ids do not repeat
    g = _global(tmp_path, "g.tsv")
    with pytest.raises(InputError) as err:
        meta_eval(MetaEvalConfig(human=g, metrics={"m": g}, task=None, k=0, item_key="doc-seg"))
    assert err.value.path == str(g) and err.value.field == "doc_id"
    # seg alone: the repeated ids are duplicates, with the lines and the way out
    with pytest.raises(InputError) as err:
        meta_eval(MetaEvalConfig(human=human, metrics={"m": human}, task=None, k=0, item_key="seg"))
    assert err.value.path == str(human) and err.value.line == 5
    assert "first at line 2" in str(err.value) and "--item-key doc-seg" in str(err.value)
    with pytest.raises(InputError, match="unknown item-key"):
        meta_eval(MetaEvalConfig(human=human, metrics={"m": metric}, item_key="doc"))


def test_run_directories_key_by_doc_id_too(tmp_path):
    from polyjudge.data.records import Item
    from polyjudge.engine.result import RunResult
    from polyjudge.protocols import get_protocol
    from polyjudge.rundir import OK
    from tests.helpers.judgments import judgment_at

    human = _per_doc(tmp_path, "h.tsv")
    rows = [line.split("\t") for line in human.read_text().splitlines()[1:]]
    items = [Item(src_lang="en", tgt_lang="de", src="s", tgt="t", system=s, doc_id=d, seg_id=g) for s, d, g, _ in rows]
    judgments = [judgment_at(items, i, 0, "m", OK, None, "", {"score": float(r[3])}, float(r[3]))
                 for i, r in enumerate(rows)]
    run = tmp_path / "run"
    RunResult(items, ["m"], get_protocol("da"), 1, "mean", judgments).write(run)
    res = meta_eval(MetaEvalConfig(human=human, metrics={"judge": run}, task=None, k=0))
    s = res.per_lp["en-de"]["judge"]  # the run's items name their pair (it was the unnamed "lp")
    assert s["n_items"] == 5 and s["seg_pearson"] == pytest.approx(1.0)


def test_mtme_positions_have_no_doc_id(tmp_path):
    from tests.metaeval.test_metaeval_io import _write_mtme

    _write_mtme(tmp_path / "m")
    per_doc = _per_doc(tmp_path, "x.tsv")
    with pytest.raises(InputError) as err:
        meta_eval(MetaEvalConfig(mtme_dir=tmp_path / "m", lps=("en-de",), metrics={"x": per_doc}, k=0))
    assert err.value.path.endswith("en-de.mqm.seg.score") and err.value.field == "doc_id"
    ok = meta_eval(MetaEvalConfig(mtme_dir=tmp_path / "m", lps=("en-de",), k=0, item_key="seg"))
    assert set(ok.per_lp["en-de"]) == {"Good-refA", "Bad-src"}


# ------------------------------------------------------------------ item 13: text input
def test_bom_and_crlf_read_like_plain_files(tmp_path):
    plain = _per_doc(tmp_path, "plain.tsv")
    text = plain.read_text(encoding="utf-8")
    odd = tmp_path / "odd.tsv"
    odd.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    a, b = readers.read_scores(plain), readers.read_scores(odd)
    assert a.systems == b.systems and a.items == b.items
    np.testing.assert_array_equal(a.values, b.values)
    mt = tmp_path / "en-de.x.seg.score"
    mt.write_bytes(b"\xef\xbb\xbfA\t1.5\r\nA\tNone\r\nB\t2\r\nB\t3\r\n")
    m = readers.read_mtme_matrix(mt)
    assert m.systems == ("A", "B") and np.isnan(m.values[0, 1]) and m.values[1, 1] == 3.0


def test_wmt_mqm_file_with_a_bom_is_recognised(tmp_path):
    header = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n"
    rows = "".join(f"{s}\ttalk\t{i}\t{i}\tr1\tsrc {i}\ttgt {i}\tFluency\t{sev}\t\n"
                   for s, sev in (("A", "Minor"), ("B", "Major")) for i in (1, 2))
    p = tmp_path / "mqm.tsv"
    p.write_bytes(b"\xef\xbb\xbf" + (header + rows).encode("utf-8"))
    assert readers.sniff_format(p) == "mqm"
    m = readers.read_scores(p)
    assert m.systems == ("A", "B") and m.values[0, 0] > m.values[1, 0]


@pytest.mark.parametrize("name,content,line", [
    ("s.tsv", b"system\tseg_id\tscore\nA\t1\t0.5\nB\t1\t\xff\n", 3),
    ("en-de.h.seg.score", b"A\t1\nA\t\xc3\x28\n", 2),
    ("s2.tsv", b"sys\xfftem\tseg_id\tscore\nA\t1\t0.5\n", 1),
])
def test_invalid_utf8_names_file_line_and_column(tmp_path, name, content, line):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(InputError) as err:
        readers.read_scores(p)
    assert err.value.path == str(p) and err.value.line == line and "column" in str(err.value)


def test_a_huge_header_is_cut_in_the_message(tmp_path):
    p = tmp_path / "wide.tsv"
    p.write_text("\t".join(f"column_{i}_" + "x" * 200 for i in range(5000)) + "\nA\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        readers.read_scores(p)
    msg = str(err.value)
    assert err.value.field == "system" and "…" in msg and len(msg) <= MAX_MESSAGE + 200
    assert "column_4999" not in msg


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from(["x.tsv", "en-de.h.seg.score", "y.txt"]),
       st.sampled_from([b"", b"\xef\xbb\xbf", b"system\tseg_id\tscore\n", b"system\tdoc_id\tseg_id\tscore\r\n"]))
def test_random_bytes_give_scores_or_an_input_error(tmp_path, blob, name, prefix):
    p = tmp_path / name
    p.write_bytes(prefix + blob)
    try:
        m = readers.read_scores(p)
    except InputError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= 2 * MAX_MESSAGE
    else:
        assert m.values.shape == (len(m.systems), len(m.items))
