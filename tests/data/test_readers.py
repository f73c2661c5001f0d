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
