"""Reader for the WMT MQM TSV: markup offsets, grouping, quirks, bad rows, real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.wmt_mqm import (
    guess_language_pair,
    read_wmt_mqm,
    read_wmt_mqm_report,
    strip_markup,
    wmt_mqm_items,
)

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "wmt-mqm" / "ted"
HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment\n"


def write(tmp_path: Path, rows: list[str], header: str = HEADER) -> Path:
    p = tmp_path / "mqm_ted_ende.tsv"
    p.write_text(header + "".join(r + "\n" for r in rows), encoding="utf-8")
    return p


def test_strip_markup_offsets_are_code_points():
    clean, span, quirk = strip_markup("Größe <v>ü中x</v> end")
    assert clean == "Größe ü中x end"
    assert span == (6, 9) and clean[6:9] == "ü中x" and quirk is None


@pytest.mark.parametrize("text,clean,span,quirk", [
    ("abc", "abc", None, None),
    ("ab <v>?", "ab ?", (3, 4), "unclosed"),
    ("ab</v> c", "ab c", (0, 2), "unopened"),
    ("<v>a</v> b <v>c</v>", "a b c", (0, 5), "multiple"),
    ("a</v>b<v>c", "abc", (1, 2), "multiple"),
    ("<v></v>x", "x", (0, 0), None),
])
def test_strip_markup_quirks(text, clean, span, quirk):
    assert strip_markup(text) == (clean, span, quirk)


def test_grouping_no_error_rows_and_quotes(tmp_path):
    rows = [
        # quote characters are literal text: the files are not CSV-quoted
        'A\ttalk.1\t1\t1\tr1\tHe said "hi\tEr sagte <v>"hallo</v>\tAccuracy/Mistranslation\tMajor\tbad',
        'A\ttalk.1\t1\t1\tr1\tHe said "hi\tEr <v>sagte</v> "hallo\tStyle/Awkward\tMinor\t',
        'B\ttalk.1\t1\t1\tr2\tHe said "hi\tEr sagte "hallo"\tNo-error\tNo-error\t',
        'A\ttalk.1\t1\t1\tr2\tHe said "hi\tEr sagte "hallo\tNo-error\tNo-error\t',
        'A\ttalk.1\t2\t2\tr1\tYes <v>really</v>\tJa\tAccuracy/Omission\tMajor\t',
    ]
    anns, rep = read_wmt_mqm_report(write(tmp_path, rows))
    assert [(a.system, a.seg_id, a.rater, len(a.errors), a.line) for a in anns] == [
        ("A", "1", "r1", 2, 2), ("B", "1", "r2", 0, 4), ("A", "1", "r2", 0, 5), ("A", "2", "r1", 1, 6)]
    a = anns[0]
    assert a.source == 'He said "hi' and a.target == 'Er sagte "hallo'
    assert [a.target[e.start:e.end] for e in a.errors] == ['"hallo', "sagte"]
    assert a.errors[0].comment == "bad" and a.errors[1].comment is None
    om = anns[3].errors[0]
    assert om.start is None and anns[3].source[om.source_start:om.source_end] == "really"
    assert rep.rows == 5 and rep.no_error_rows == 2 and rep.source_spans == 1
    items = wmt_mqm_items(anns, "en", "de")
    assert [(i.system, i.seg_id, i.doc_id, i.extra["doc_pos"]) for i in items] == [
        ("A", "1", "talk.1", "1"), ("B", "1", "talk.1", "1"), ("A", "2", "talk.1", "2")]
    assert items[0].tgt == 'Er sagte "hallo' and items[0].src_lang == "en"


def test_target_mismatch_is_counted_and_span_dropped(tmp_path):
    rows = [
        "A\td\t1\t1\tr1\ts\tEin <v>Haus</v>\tOther\tMinor\t",
        "A\td\t1\t1\tr2\ts\tEin <v>Hause</v>\tOther\tMinor\t",
    ]
    anns, rep = read_wmt_mqm_report(write(tmp_path, rows))
    assert rep.target_mismatches == 1
    assert anns[1].target == "Ein Haus" and anns[1].errors[0].start is None


def test_file_without_comment_column(tmp_path):
    header = HEADER.replace("\tcomment", "")
    anns = read_wmt_mqm(write(tmp_path, ["A\td\t1\t1\tr\ts\t<v>t</v>\tOther\tMinor"], header))
    assert anns[0].errors[0].comment is None and anns[0].errors[0].start == 0


@pytest.mark.parametrize("row,line,field", [
    ("A\td\t1\t1\tr\ts\tt\tOther", 2, "severity"),  # too few fields
    ("A\td\t1\t1\tr\ts\tt\tOther\tBlocker\t", 2, "severity"),
    ("\td\t1\t1\tr\ts\tt\tOther\tMinor\t", 2, "system"),
    ("A\td\t1\t\tr\ts\tt\tOther\tMinor\t", 2, "seg_id"),
])
def test_bad_rows_name_file_line_field(tmp_path, row, line, field):
    p = write(tmp_path, [row])
    with pytest.raises(InputError) as exc:
        read_wmt_mqm(p)
    assert exc.value.path == str(p) and exc.value.line == line and exc.value.field == field


def test_conflicting_no_error_and_missing_column(tmp_path):
    rows = ["A\td\t1\t1\tr\ts\tt\tNo-error\tNo-error\t", "A\td\t1\t1\tr\ts\t<v>t</v>\tOther\tMinor\t"]
    with pytest.raises(InputError) as exc:
        read_wmt_mqm(write(tmp_path, rows))
    assert exc.value.line == 3
    with pytest.raises(InputError) as exc:
        read_wmt_mqm(write(tmp_path, [], header="system\tdoc\n"))
    assert exc.value.line == 1 and exc.value.field == "doc_id"


def test_guess_language_pair():
    assert guess_language_pair("x/mqm_ted_ende.tsv") == ("en", "de")
    assert guess_language_pair("mqm_newstest2020_zh-en.avg_seg_scores.tsv") == ("zh", "en")
    assert guess_language_pair("annotations.tsv") is None


@pytest.mark.parametrize("pair,n_sys,n_ann,n_rows", [("ende", 14, 7406, 8435), ("zhen", 15, 7935, 9915)])
def test_real_ted_files(pair, n_sys, n_ann, n_rows):
    path = DATA / pair / f"mqm_ted_{pair}.tsv"
    if not path.is_file():
        pytest.skip(f"shared WMT MQM data not found at {path}")
    anns, rep = read_wmt_mqm_report(path)
    assert len(anns) == n_ann and rep.rows == n_rows
    # one rater per (system, segment); markup-free targets agree across rows
    assert rep.target_mismatches == 0 and rep.source_mismatches == 0
    assert rep.unclosed_spans == 1 and rep.multiple_spans == 0 and rep.rows_without_span == 0
    items = wmt_mqm_items(anns, *guess_language_pair(path))
    assert len(items) == n_sys * 529 and len({i.system for i in items}) == n_sys
    for a in anns:
        assert "<v>" not in a.target and "</v>" not in a.source
        for e in a.errors:
            if e.start is not None:
                assert 0 <= e.start <= e.end <= len(a.target)


# --------------------------------------------------------------------------- hostile input (issue 13)

def test_duplicate_rows_count_once_and_are_reported(tmp_path):
    row = "A\td\t1\t1\tr\ts\t<v>t</v>\tAccuracy/Mistranslation\tMajor\t"
    other = "A\td\t1\t1\tr\ts\tt<v>x</v>\tFluency/Grammar\tMinor\t"
    anns, rep = read_wmt_mqm_report(write(tmp_path, [row, row, other, row]))
    assert rep.duplicate_rows == 2 and rep.rows == 2
    assert [(e.category, e.severity) for e in anns[0].errors] == [("Accuracy/Mistranslation", "Major"),
                                                                  ("Fluency/Grammar", "Minor")]
    # the same error from another rater is not a duplicate
    anns, rep = read_wmt_mqm_report(write(tmp_path, [row, row.replace("\tr\t", "\tr2\t")]))
    assert rep.duplicate_rows == 0 and len(anns) == 2


def test_header_only_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as exc:
        read_wmt_mqm(write(tmp_path, []))
    assert "no annotation rows" in str(exc.value)


def test_bom_crlf_and_bad_bytes(tmp_path):
    p = write(tmp_path, ["A\td\t1\t1\tr\ts\t<v>t</v>\tOther\tMinor\t"])
    plain = read_wmt_mqm(p)
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes().replace(b"\n", b"\r\n"))
    assert read_wmt_mqm(p) == plain
    p.write_bytes(p.read_bytes().replace(b"<v>t", b"<v>t\xff"))
    with pytest.raises(InputError) as exc:
        read_wmt_mqm(p)
    assert exc.value.line == 2 and "column" in str(exc.value)


def test_guess_language_pair_needs_known_codes():
    assert guess_language_pair("data.tsv") is None  # not Danish -> Tamil
    assert guess_language_pair("mqm_test.tsv") is None
    assert guess_language_pair("mqm_generalMT2022_cs-uk.tsv") == ("cs", "uk")
    assert guess_language_pair("mqm_ted_zhen.tsv") == ("zh", "en")
    assert guess_language_pair("x_dede.tsv") is None
