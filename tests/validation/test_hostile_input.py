"""Bad task files, ratings and reverse matrices are input errors naming the file (issue 13)."""

from __future__ import annotations

import json

import pytest

from polyjudge.api.validation import ValidateConfig, validate
from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.validation.ratings import read_ratings
from polyjudge.validation.task import RatingTask, load_task
from tests.validation.test_cli import _files

TASK = RatingTask.build(["Toxic", "Not toxic"], "all")


def _cli(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return int(exc.value.code)


@pytest.mark.parametrize("matrix", [{"rows": [[1, 0]]}, [[1, 0], [0]], [1, 0, 0], "x", [[True, False]], []])
def test_reverse_matrix_of_the_wrong_shape_exits_2_naming_the_file(tmp_path, capsys, matrix):
    d = _files(tmp_path)
    m = d / "reverse.json"
    m.write_text(json.dumps(matrix))
    code = _cli(["validate", "--task", str(d / "task.json"), "--human", str(d / "human.jsonl"),
                 "--judge", f"good={d / 'good.jsonl'}", "--reverse-matrix", str(m)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"polyjudge: error: {m}")
    assert "Traceback" not in err


def test_reverse_matrix_with_wrong_dimensions_names_the_file(tmp_path):
    d = _files(tmp_path)
    m = d / "reverse.json"
    m.write_text("[[1, 0], [0, 1]]")
    with pytest.raises(InputError) as exc:
        validate(ValidateConfig(task=d / "task.json", human=d / "human.jsonl", judges=[d / "good.jsonl"],
                                reverse_matrix=m))
    assert exc.value.path == str(m) and "7 x 3" in str(exc.value)
    m.write_bytes(b"[[1, 0]\xff]")
    with pytest.raises(InputError) as exc:
        validate(ValidateConfig(task=d / "task.json", human=d / "human.jsonl", judges=[d / "good.jsonl"],
                                reverse_matrix=m))
    assert exc.value.path == str(m) and exc.value.line == 1 and "not UTF-8" in str(exc.value)


@pytest.mark.parametrize("content,field", [
    (b'{"options": ["a", "b"], "letters": 5}', "letters"),
    (b'{"options": ["a", "b"], "letters": [1, 2]}', "letters"),
    (b'{"options": ' + json.dumps([f"o{k}" for k in range(30)]).encode() + b"}", "response_sets"),
    (b'{"options": ["a", "b"], "response_sets": [[{"x": 1}]]}', "response_sets"),
    (b'\xef\xbb\xbf{"options": ["a", "b\xff"]}', None),
    (b"[" * 50_000, None),
])
def test_bad_task_files(tmp_path, content, field):
    p = tmp_path / "task.json"
    p.write_bytes(content)
    with pytest.raises(InputError) as exc:
        load_task(p)
    assert exc.value.path == str(p) and exc.value.field == field


def test_task_file_with_bom_and_crlf(tmp_path):
    p = tmp_path / "task.json"
    p.write_bytes(b'\xef\xbb\xbf{"options": ["a", "b"],\r\n "response_sets": "singletons"}\r\n')
    assert load_task(p).fully_specified


def test_ratings_tsv_bom_crlf_and_bad_bytes(tmp_path):
    p = tmp_path / "r.tsv"
    p.write_bytes(b"\xef\xbb\xbfitem\tprotocol\tanswer\r\ni1\tfc\tA\r\ni1\trs\tAB\r\n")
    counts = read_ratings(p, TASK)
    assert counts.items == ["i1"] and counts.fc.tolist() == [[1, 0]] and counts.rs[0].sum() == 1
    p.write_bytes(b"item\tprotocol\tanswer\ni1\tfc\t\xff\n")
    with pytest.raises(InputError) as exc:
        read_ratings(p, TASK)
    assert exc.value.line == 2 and "column 7" in str(exc.value)


@pytest.mark.parametrize("row", [
    {"item": "i", "response_sets": [[1, 2]]},
    {"item": "i", "response_sets": [["A", None]]},
    {"item": "i", "fc_counts": [1e400, 0]},
    {"item": "i", "fc_counts": [10**400, 0]},
    {"item": "i", "forced_choice": [{"a": 1}]},
])
def test_ratings_of_wrong_types_name_their_line(tmp_path, row):
    p = tmp_path / "r.jsonl"
    p.write_text('{"item": "j", "forced_choice": ["A"]}\n' + json.dumps(row) + "\n")
    with pytest.raises(InputError) as exc:
        read_ratings(p, TASK)
    assert exc.value.path == str(p) and exc.value.line == 2

