"""--columns for table-like inputs, language pairs split, and the WMT24/25 ESA JSONL's langs and line_id."""

from __future__ import annotations

import json

import pytest

from polyjudge.data.columns import ColumnMap, parse_columns
from polyjudge.data.errors import InputError
from polyjudge.data.readers import ItemDefaults, read_items

# RicardoRei/wmt-mqm-human-evaluation's columns (a few rows in its layout).
MQM_HUMAN = ("lp,src,mt,ref,score,system,annotators,domain,year\n"
             "en-de,Hello.,Hallo.,Hallo!,-1.0,sysA,3,news,2022\n"
             "zh-en,你好。,Hello.,Hi.,0.0,sysB,3,news,2022\n")


def mapped(spec):
    return ItemDefaults(columns=parse_columns(spec))


def test_table_of_the_mqm_human_evaluation_layout_reads(tmp_path):
    path = tmp_path / "mqm.csv"
    path.write_text(MQM_HUMAN, encoding="utf-8")
    with pytest.raises(InputError, match="--columns tgt=COLUMN") as exc:
        read_items(path)
    assert exc.value.field == "tgt"
    items = read_items(path, how=mapped("tgt=mt"))
    assert [(it.src_lang, it.tgt_lang, it.src, it.tgt, it.ref, it.system) for it in items] == [
        ("en", "de", "Hello.", "Hallo.", "Hallo!", "sysA"), ("zh", "en", "你好。", "Hello.", "Hi.", "sysB")]
    assert items[0].extra == {"lp": "en-de", "score": "-1.0", "annotators": "3", "domain": "news", "year": "2022"}


def test_mapping_every_field_and_a_pair_column(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("pair\tsource\thyp\tdoc\tline\tengine\nen-cs_CZ\ta\tb\td1\t7\tE\n", encoding="utf-8")
    spec = "src=source,tgt=hyp,doc_id=doc", "seg_id=line,system=engine,lp=pair"  # comma-separated or repeated
    (it,) = read_items(path, how=mapped(spec))
    assert (it.src, it.tgt, it.doc_id, it.seg_id, it.system, it.src_lang, it.tgt_lang) == \
        ("a", "b", "d1", "7", "E", "en", "cs_CZ")
    # explicit language columns win over a pair
    path.write_text("lp\tsrc\ttgt\tsrc_lang\ttgt_lang\nen-de\ta\tb\tfr\tit\n", encoding="utf-8")
    assert (read_items(path)[0].src_lang, read_items(path)[0].tgt_lang) == ("fr", "it")


def test_bad_mappings_name_the_flag_and_the_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("src,mt\na,b\n", encoding="utf-8")
    with pytest.raises(InputError, match="maps tgt to column 'hyp', which is not there") as exc:
        read_items(path, how=mapped("tgt=hyp"))
    assert (exc.value.field, exc.value.path, exc.value.line) == ("columns", str(path), 1)
    for bad, message in (("tgt", "expected FIELD=COLUMN"), ("target=mt", "unknown field 'target'"),
                         ("tgt=mt,tgt=x", "mapped twice")):
        with pytest.raises(InputError, match=message) as exc:
            parse_columns(bad)
        assert exc.value.field == "columns"
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(json.dumps({"src": "a", "mt": "b"}) + "\n" + json.dumps({"src": "a", "hyp": "b"}) + "\n")
    with pytest.raises(InputError, match="column 'mt'") as exc:
        read_items(jsonl, how=mapped("tgt=mt"))
    assert exc.value.line == 2


def test_bad_language_pair_is_located(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("lp,src,tgt\nen-de,a,b\nende,c,d\n", encoding="utf-8")
    with pytest.raises(InputError, match="language pair like en-de") as exc:
        read_items(path)
    assert (exc.value.line, exc.value.field) == (3, "lp")


def test_esa_jsonl_languages_and_line_ids(tmp_path):
    rows = [{"line_id": 0, "doc_id": "doc-1", "system": "A", "src": "Hi", "tgt": "Ahoj", "langs": "en-cs_CZ",
             "esa_score": 80},
            {"line_id": 1, "doc_id": "doc-1", "system": "A", "src": "Bye", "tgt": "Čau", "langs": "en-cs_CZ",
             "esa_score": 95}]
    path = tmp_path / "wmt24_esa.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    items = read_items(path)
    assert [(it.src_lang, it.tgt_lang, it.seg_id) for it in items] == [("en", "cs_CZ", "0"), ("en", "cs_CZ", "1")]
    assert items[1].extra == {"line_id": 1, "langs": "en-cs_CZ", "esa_score": 95}
    path.write_text(json.dumps({**rows[0], "line_id": [1]}) + "\n")
    with pytest.raises(InputError, match="expected a number or a string") as exc:
        read_items(path)
    assert (exc.value.line, exc.value.field) == (1, "line_id")


def test_column_map_renames_only_what_it_names():
    cmap = ColumnMap((("tgt", "mt"),))
    assert cmap.apply({"src": "a", "mt": "b", "x": 1}) == {"src": "a", "tgt": "b", "x": 1}
    assert ColumnMap().apply({"a": 1}) == {"a": 1}
