"""Input strings a run cannot carry are refused where they are read (issue 23, item 5).

Lone surrogates and NUL in any field; ids (system, doc_id, seg_id) with a tab,
line break or NUL; an empty system name. Each is exit 2 naming file, line and
field, never a traceback; nothing is sent.
"""

from __future__ import annotations

import json

import pytest

from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items, read_parallel
from polyjudge.data.records import Item
from polyjudge.engine.session import JudgeConfig, estimate
from polyjudge.metaeval.readers import read_scores
from tests.helpers.openai_server import ScriptedServer

ROW = {"src": "a", "tgt": "b", "system": "A", "doc_id": "d", "seg_id": "1"}


def jsonl(tmp_path, *rows, raw: str = ""):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows) + raw, encoding="utf-8")
    return p


@pytest.mark.parametrize("field", ["src", "tgt", "ref", "system", "doc_id", "seg_id", "note"])
@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\u0000"])
def test_surrogate_or_nul_from_a_json_escape(tmp_path, field, escape):
    p = jsonl(tmp_path, ROW, raw=f'{{"src": "a", "tgt": "b", "seg_id": "2", "{field}": "x{escape}y"}}\n')
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(p), 2, field)
    assert "surrogate" in exc.value.reason or "NUL" in exc.value.reason


def test_surrogate_deep_inside_an_extra_field(tmp_path):
    p = jsonl(tmp_path, raw='{"src": "a", "tgt": "b", "meta": {"notes": ["ok", "\\ud83d"]}}\n')
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 1 and exc.value.field == "meta.notes[1]"


@pytest.mark.parametrize("suffix,sep", [(".tsv", "\t"), (".csv", ",")])
def test_raw_nul_byte_in_a_delimited_file(tmp_path, suffix, sep):
    p = tmp_path / f"in{suffix}"
    p.write_bytes(f"src{sep}tgt\na{sep}b\nc\x00{sep}d\n".encode())
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert exc.value.line == 3 and "NUL" in exc.value.reason and "column 2" in exc.value.reason


@pytest.mark.parametrize("field", ["system", "doc_id", "seg_id"])
@pytest.mark.parametrize("char", ["\t", "\n", "\r", "\u2028"])
def test_ids_that_a_tsv_cell_cannot_carry(tmp_path, field, char):
    p = jsonl(tmp_path, ROW, {**ROW, "seg_id": "2", field: f"a{char}b"})
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (2, field)


def test_quoted_tab_in_a_csv_system_name(tmp_path):
    p = tmp_path / "in.csv"
    p.write_text('src,tgt,system\na,b,"x\ty"\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (2, "system")


def test_empty_system_name_is_refused_not_merged_with_dash(tmp_path):
    p = jsonl(tmp_path, {**ROW, "system": "-"}, {**ROW, "seg_id": "2", "system": ""})
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (2, "system") and "empty system" in exc.value.reason
    # an item without a system beside a real system "-": they would share the name "-"
    p = jsonl(tmp_path, {k: v for k, v in ROW.items() if k != "system"}, {**ROW, "seg_id": "2", "system": "-"})
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (2, "system")
    # with --system the empty cell takes that name, as before
    p = jsonl(tmp_path, {**ROW, "system": ""})
    assert read_items(p, system="S")[0].system == "S"


def test_parallel_files_and_system_name(tmp_path):
    (tmp_path / "src.txt").write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_bytes(b"x\ny\x00\n")
    with pytest.raises(InputError) as exc:
        read_parallel(tmp_path / "src.txt", tmp_path / "hyp.txt")
    assert exc.value.line == 2
    (tmp_path / "hyp.txt").write_text("x\ny\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_parallel(tmp_path / "src.txt", tmp_path / "hyp.txt", system="a\tb")
    assert exc.value.field == "system"


def test_wmt_mqm_tsv_ids(tmp_path):
    header = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"
    p = tmp_path / "mqm_newstest2020_ende.tsv"
    p.write_text(header + "A\td\t1\t1\tr1\ts\tt\tStyle/Awkward\tMinor\n"
                 "B\u2028C\td\t1\t1\tr1\ts\tt\tStyle/Awkward\tMinor\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_items(p)
    assert (exc.value.line, exc.value.field) == (3, "system")


def test_metaeval_jsonl_scores(tmp_path):
    p = tmp_path / "scores.jsonl"
    p.write_text('{"system": "A", "seg_id": "1", "score": 1}\n{"system": "B\\u0000", "seg_id": "1", "score": 2}\n',
                 encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_scores(p)
    assert (exc.value.line, exc.value.field) == (2, "system")


def test_items_given_in_code_follow_the_same_rules():
    cfg = JudgeConfig(judges=("openai:gpt-4o-mini@http://127.0.0.1:9/v1",))
    with pytest.raises(InputError) as exc:
        estimate([Item(src="a\ud800", tgt="b")], cfg)
    assert exc.value.field == "src" and exc.value.path == "item 1"
    with pytest.raises(InputError) as exc:
        estimate([Item(src="a", tgt="b"), Item(src="a", tgt="b", system="x\ny")], cfg)
    assert exc.value.field == "system" and exc.value.path == "item 2"


def test_cli_exits_2_and_sends_nothing(tmp_path, capsys):
    from polyjudge.cli.main import main

    p = jsonl(tmp_path, ROW, raw='{"src": "\\ud800", "tgt": "b", "seg_id": "9"}\n')
    with ScriptedServer(lambda body: '{"score": 50}') as srv:
        with pytest.raises(SystemExit) as exc:
            main(["judge", str(p), "-o", str(tmp_path / "run"), "--judge", f"openai:m@{srv.base_url}", "-q"])
        assert exc.value.code == 2 and not srv.requests
    err = capsys.readouterr().err
    assert f"{p}:2, field 'src'" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()
