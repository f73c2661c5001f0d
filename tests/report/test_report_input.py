"""Study files and run directories the report cannot use are exit 2, naming the file and the
shape expected, never a report with the section silently left out (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.metaeval.kappas import read_consistency
from polyjudge.metaeval.results import read_metaeval
from polyjudge.report import adapters
from polyjudge.report.load import load_run
from polyjudge.validation.selection import read_validation
from tests.report.fixtures import CONSISTENCY, METAEVAL, VALIDATION, build_run

OPTION = {"metaeval.json": "--metaeval", "consistency.json": "--consistency", "validation.json": "--validation"}
GOOD = {"metaeval.json": METAEVAL, "consistency.json": CONSISTENCY, "validation.json": VALIDATION}


def _report(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["report", *argv])
    return int(exc.value.code), capsys.readouterr().err


WRONG = [
    ("metaeval.json", {"scores": [1, 2]}),
    ("metaeval.json", [1, 2, 3]),
    ("metaeval.json", {"results": []}),
    ("metaeval.json", {"results": [{"metric": "m", "value": "high"}]}),
    ("metaeval.json", {"results": [{"metric": "m", "value": 1, "ci": [0]}]}),
    ("metaeval.json", {"ranking": [{"metric": "m", "columns": 5}]}),
    ("metaeval.json", {"language_pairs": {"en-de": ["not", "an", "object"]}}),
    ("metaeval.json", {"results": [{"metric": "m", "value": 10**400}]}),
    ("consistency.json", "a string"),
    ("consistency.json", {"rows": [{"per_language": [1]}]}),
    ("consistency.json", {"rows": [{"per_language": {}, "languages": [["de"]]}]}),
    ("consistency.json", {"results": [{"judge": "j", "language": "de", "kappa": {}}]}),
    ("validation.json", {"rows": [{"definition": "d", "beta": [0]}]}),
    ("validation.json", {"rows": [{"definition": "d"}], "per_judge": {"beta=0,tau=0.5": {"j": 3}}}),
    ("validation.json", {"selection": {"rows": [{"metric_values": [1]}]}}),
    ("validation.json", {"class_distribution": [{"count": None}]}),
    ("validation.json", {"notes": [["only notes", "x"]]}),
    ("validation.json", {"selection": {"rows": []}, "notes": ["abc"]}),
]


@pytest.mark.parametrize("kind,obj", WRONG)
def test_study_file_of_the_wrong_shape_exits_2(tmp_path, capsys, kind, obj):
    p = tmp_path / kind
    p.write_text(json.dumps(obj))
    code, err = _report([OPTION[kind], str(p), "-o", str(tmp_path / "r.html")], capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"polyjudge: error: {p}: ")
    assert "expected" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("kind", list(OPTION))
def test_study_files_with_bom_crlf_and_bad_bytes(tmp_path, capsys, kind):
    p = tmp_path / kind
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD[kind], indent=1).replace("\n", "\r\n").encode())
    assert adapters.read_study(p, kind) == adapters.check_study(GOOD[kind], kind, str(p))
    p.write_bytes(b'{"results": [\n{"metric": "\xff"}]}')
    code, err = _report([OPTION[kind], str(p), "-o", str(tmp_path / "r.html")], capsys)
    assert code == 2 and f"{p}:2: not UTF-8" in err and err.count("\n") == 1


@pytest.mark.parametrize("kind,obj", WRONG[:3] + WRONG[8:10] + WRONG[12:14])
def test_study_file_in_a_run_directory_of_the_wrong_shape(tmp_path, kind, obj):
    run = build_run(tmp_path, extras={kind: obj})
    with pytest.raises(InputError) as exc:
        load_run(run)
    assert exc.value.path == str(run / kind) and "expected" in str(exc.value)


def test_the_good_shapes_still_pass():
    # a validation file is read into its typed results
    assert adapters.check_study(VALIDATION, "validation.json", "v") == read_validation(VALIDATION, "v")
    assert adapters.check_study(CONSISTENCY, "consistency.json", "c") == read_consistency(CONSISTENCY, "c")
    # a meta-evaluation is read into its typed results; the bare list of results reads the same
    read = adapters.check_study(METAEVAL, "metaeval.json", "m")
    assert read == read_metaeval(METAEVAL, "m") and read.given
    assert adapters.check_study(METAEVAL["results"], "metaeval.json", "m").given == read.given


def test_unknown_aggregator_in_the_manifest(tmp_path: Path, capsys):
    run = build_run(tmp_path, manifest={"config": {"aggregator": "no-such-aggregator"}})
    code, err = _report([str(run), "-o", str(tmp_path / "r.html")], capsys)
    assert code == 2 and "config.aggregator" in err and "no-such-aggregator" in err
