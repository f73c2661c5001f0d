import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item, document_contexts


def test_jsonl_reads_core_and_extra_fields(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"src": "a", "tgt": "b", "seg_id": 7, "system": "s", "note": "x"}) + "\n\n"
                 + json.dumps({"src": "c", "tgt": "d"}) + "\n", encoding="utf-8")
    items = read_items(p, src_lang="en", tgt_lang="de")
    assert items[0] == Item(src="a", tgt="b", seg_id="7", system="s", src_lang="en", tgt_lang="de",
                            extra={"note": "x"})
    assert items[1].src == "c" and items[1].tgt_lang == "de"
    assert items[0].origin == f"{p}:1" and items[1].origin == f"{p}:3"


@pytest.mark.parametrize("content,line,field", [
    ('{"src": "a", "tgt": "b"}\n{"src": "a"}\n', 2, "tgt"),
    ('{"src": "a", "tgt": "b"}\n{"src": "a", "tgt": [1]}\n', 2, "tgt"),
    ('{"src": "a", "tgt": "b"}\n{"src": "a", "tgt": \n', 2, None),
    ('["src"]\n', 1, None),
])
def test_jsonl_errors_name_file_line_field(tmp_path, content, line, field):
    p = tmp_path / "bad.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.path == str(p) and exc.value.line == line and exc.value.field == field
    assert f"{p}:{line}" in str(exc.value)


def test_tsv_and_csv_same_columns(tmp_path):
    t = tmp_path / "in.tsv"
    t.write_text('src\ttgt\tref\tsystem\n"quoted" text\tb\t\tsys1\n', encoding="utf-8")
    c = tmp_path / "in.csv"
    c.write_text('src,tgt,ref,system\n"a, with comma",b,r,sys1\n', encoding="utf-8")
    ti, ci = read_items(t), read_items(c)
    assert ti[0].src == '"quoted" text' and ti[0].ref is None and ti[0].system == "sys1"
    assert ci[0].src == "a, with comma" and ci[0].ref == "r"


def test_tsv_errors(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("src\tother\na\tb\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (1, "tgt")
    p.write_text("src\ttgt\na\tb\nc\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 3 and "columns" in str(exc.value)


def test_parallel_files(tmp_path):
    (tmp_path / "s.txt").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "h.txt").write_text("eins\nzwei\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("eins\n", encoding="utf-8")
    items = read_parallel(tmp_path / "s.txt", tmp_path / "h.txt", src_lang="en", tgt_lang="de")
    assert [(i.src, i.tgt, i.seg_id, i.system) for i in items] == [("one", "eins", "1", "h"), ("two", "zwei", "2", "h")]
    with pytest.raises(InputError) as exc:
        read_parallel(tmp_path / "s.txt", tmp_path / "h.txt", tmp_path / "r.txt")
    assert exc.value.path == str(tmp_path / "r.txt") and "1 lines" in str(exc.value)


def test_document_context_is_all_sources_of_the_doc_in_order():
    items = [Item("s1", "a", doc_id="d", seg_id="1", system="A"), Item("s2", "b", doc_id="d", seg_id="2", system="A"),
             Item("x", "y"), Item("s1", "c", doc_id="d", seg_id="1", system="B"),
             Item("s2", "d", doc_id="d", seg_id="2", system="B"), Item("t1", "e", doc_id="e", seg_id="1")]
    ctx = document_contexts(items)
    assert ctx[0].sources == ("s1", "s2") and ctx[0].position == 0
    assert ctx[4].sources == ("s1", "s2") and ctx[4].position == 1
    assert ctx[2].sources == ("x",) and ctx[5].sources == ("t1",)


# --------------------------------------------------------------------------- hostile input (issue 13)

BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("name,content", [
    ("in.jsonl", b'{"src": "a", "tgt": "b", "system": "S"}\r\n{"src": "c", "tgt": "d", "system": "S"}\r\n'),
    ("in.tsv", b"src\ttgt\tsystem\r\na\tb\tS\r\nc\td\tS\r\n"),
    ("in.csv", b"src,tgt,system\r\na,b,S\r\n\"c\",d,S\r\n"),
])
def test_bom_and_crlf_read_like_plain_lf(tmp_path, name, content):
    plain = tmp_path / f"plain-{name}"
    plain.write_bytes(content.replace(b"\r\n", b"\n"))
    hostile = tmp_path / name
    hostile.write_bytes(BOM + content)
    got = read_items(hostile)
    assert [(i.src, i.tgt, i.system, i.extra) for i in got] == [
        (i.src, i.tgt, i.system, i.extra) for i in read_items(plain)]
    assert got[0].src == "a" and "\ufeffsrc" not in got[0].extra


@pytest.mark.parametrize("name,content,line", [
    ("in.jsonl", b'{"src": "a", "tgt": "b"}\n{"src": "a", "tgt": "\xff"}\n', 2),
    ("in.tsv", b"src\ttgt\n\xc3\n", 2),
    ("in.csv", b"src,tgt\na,b\nc,\xe2\x82\n", 3),
])
def test_bad_bytes_name_file_line_and_column(tmp_path, name, content, line):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.path == str(p) and exc.value.line == line
    assert "not UTF-8" in str(exc.value) and "column" in str(exc.value)


def test_huge_header_is_cut_in_the_message(tmp_path):
    p = tmp_path / "in.tsv"
    p.write_text("x" * 2_000_000 + "\ttgt\na\tb\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.field == "src" and len(str(exc.value)) < 300


def test_deep_nesting_and_huge_integers_are_input_errors(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text('{"src": "a", "tgt": "b"}\n' + "[" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 2 and "nested too deeply" in str(exc.value)
    p.write_text('{"src": "a", "tgt": "b", "n": ' + "9" * 5000 + "}\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 1 and len(str(exc.value)) < 300


def test_csv_with_a_bare_carriage_return_is_an_input_error(tmp_path):
    p = tmp_path / "in.csv"
    p.write_bytes(b"src,tgt\na\rb,c\n")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 2 and "CSV" in str(exc.value)


def test_a_long_csv_field_is_data(tmp_path):
    p = tmp_path / "in.csv"
    p.write_text("src,tgt\n" + "a" * 300_000 + ",b\n", encoding="utf-8")
    assert len(read_items(p)[0].src) == 300_000


def test_duplicate_ids_name_both_lines(tmp_path):
    p = tmp_path / "in.jsonl"
    rows = [{"src": "a", "tgt": "b", "system": "S", "doc_id": "d", "seg_id": "1"},
            {"src": "a", "tgt": "b", "system": "T", "doc_id": "d", "seg_id": "1"},  # other system: fine
            {"src": "a", "tgt": "b", "system": "S", "doc_id": "e", "seg_id": "1"},  # other document: fine
            {"src": "x", "tgt": "y", "system": "S", "doc_id": "d", "seg_id": 1}]  # same ids as line 1
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 4 and exc.value.field == "seg_id" and "line 1" in str(exc.value)
    t = tmp_path / "in.tsv"
    t.write_text("src\ttgt\tseg_id\na\tb\t7\nc\td\t8\ne\tf\t7\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(t)
    assert exc.value.line == 4 and "line 2" in str(exc.value)


def test_items_without_seg_id_never_clash(tmp_path):
    p = tmp_path / "in.tsv"
    p.write_text("src\ttgt\tsystem\tdoc_id\na\tb\tS\td\na\tb\tS\td\n", encoding="utf-8")
    assert len(read_items(p)) == 2


def test_parallel_files_bom_crlf_last_line_and_bad_bytes(tmp_path):
    (tmp_path / "s.txt").write_bytes(BOM + b"one\r\ntwo")  # no final line end: the last line still counts
    (tmp_path / "h.txt").write_bytes(b"eins\nzwei\n")
    items = read_parallel(tmp_path / "s.txt", tmp_path / "h.txt")
    assert [(i.src, i.tgt) for i in items] == [("one", "eins"), ("two", "zwei")]
    (tmp_path / "h.txt").write_bytes(b"eins\nzw\xffei\n")
    with pytest.raises(InputError) as exc:
        read_parallel(tmp_path / "s.txt", tmp_path / "h.txt")
    assert exc.value.path == str(tmp_path / "h.txt") and exc.value.line == 2


MQM_HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
MQM_ROW = "A\ttalk\t1\t1\tr1\tHello\t<v>Hallo</v>\tAccuracy/Mistranslation\tMajor\n"


def test_wmt_mqm_tsv_with_bom_is_recognised(tmp_path):
    p = tmp_path / "mqm_ted_ende.tsv"
    p.write_bytes(BOM + (MQM_HEADER + MQM_ROW).replace("\n", "\r\n").encode())
    (item,) = read_items(p)
    assert (item.src, item.tgt, item.doc_id, item.src_lang, item.tgt_lang) == ("Hello", "Hallo", "talk", "en", "de")


def test_wmt_mqm_languages_from_flags_name_or_error(tmp_path):
    named = tmp_path / "mqm_newstest2020_zh-en.tsv"
    named.write_text(MQM_HEADER + MQM_ROW, encoding="utf-8")
    assert (read_items(named)[0].src_lang, read_items(named)[0].tgt_lang) == ("zh", "en")
    assert read_items(named, tgt_lang="de")[0].tgt_lang == "de"  # a flag wins over the name
    anonymous = tmp_path / "annotations.tsv"
    anonymous.write_text(MQM_HEADER + MQM_ROW, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(anonymous)
    assert "src_lang" in str(exc.value) and "tgt_lang" in str(exc.value) and exc.value.field == "lp"
    assert exc.value.path == str(anonymous)
    with pytest.raises(InputError):
        read_items(anonymous, src_lang="en")
    got = read_items(anonymous, src_lang="en", tgt_lang="de")[0]
    assert (got.src_lang, got.tgt_lang) == ("en", "de")


def test_plain_is_one_line_cut_to_the_limit_and_still_reached_through_readers():
    from polyjudge.data import readers, textio

    assert textio.plain("a\nb\r\nc") == "a b c"
    assert textio.plain("x" * 100, 10) == "x" * 9 + "…" and len(textio.plain("y" * 500)) == textio.MAX_QUOTED
    assert readers.plain is textio.plain  # rundir imports it from readers
