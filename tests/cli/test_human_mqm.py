"""``polyjudge human-mqm`` and ``polyjudge variability`` through click."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.cli.mqm_cmd import human_mqm, variability

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "wmt-mqm" / "ted"
HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"


def test_small_file_and_outputs(tmp_path):
    f = tmp_path / "a.tsv"
    f.write_text(HEADER + "\n".join([
        "A\td\t1\t1\tr1\ts\t<v>t</v>\tAccuracy/Mistranslation\tMajor",
        "A\td\t2\t2\tr1\ts2\tt2\tNo-error\tNo-error",
        "B\td\t1\t1\tr1\ts\tt\tFluency/Punctuation\tMinor",
        "B\td\t2\t2\tr1\ts2\tt2\tStyle/Awkward\tMinor",
    ]) + "\n", encoding="utf-8")
    res = CliRunner().invoke(human_mqm, [str(f), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.stdout.splitlines() if "\t" in ln]
    assert lines == ["B\t0.550", "A\t2.500"]  # best first, positive points
    seg = (tmp_path / "o" / "segments.tsv").read_text().splitlines()
    assert seg[0] == "system\tdoc\tseg_id\tpoints\tscore\tn_raters"
    assert seg[1] == "A\td\t1\t5\t-5\t1"
    assert (tmp_path / "o" / "systems.tsv").read_text().splitlines()[1] == "B\t0.55\t-0.55\t2"


def test_bad_file_exits_2(tmp_path):
    from polyjudge.cli.errors import run_cli
    from polyjudge.cli.main import cli

    f = tmp_path / "bad.tsv"
    f.write_text(HEADER + "A\td\t1\t1\tr1\ts\tt\tOther\tHuge\n", encoding="utf-8")
    assert run_cli(cli, ["human-mqm", str(f)]) == 2


def test_ted_ende_table():
    path = DATA / "ende" / "mqm_ted_ende.tsv"
    if not path.is_file():
        pytest.skip(f"shared WMT MQM data not found at {path}")
    res = CliRunner().invoke(human_mqm, [str(path)])
    assert res.exit_code == 0
    rows = [ln.split("\t") for ln in res.stdout.splitlines() if "\t" in ln]
    assert rows[0] == ["ref", "0.912"] and rows[-1][0] == "Nemo" and len(rows) == 14


def test_variability_command(tmp_path):
    runs = [-50, -11, -6, -6, -11, -6, -6, -55, -6, -11]
    rows = [{"item_index": 0, "run_index": r, "judge": "m", "system": "A", "seg_id": "1",
             "status": "ok", "score": s} for r, s in enumerate(runs)]
    (tmp_path / "judgments.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "var.tsv"
    res = CliRunner().invoke(variability, [str(tmp_path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "max 49.000" in res.stdout
    header, row = out.read_text().splitlines()
    cells = dict(zip(header.split("\t"), row.split("\t")))
    assert cells["delta"] == "49" and cells["rrwa"].startswith("-8.496") and cells["max"] == "-6"


def test_variability_of_a_0_1_0_run_unchanged(tmp_path):
    """Same stdout and TSV as polyjudge 0.1.0 printed for its own run directory."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    out = tmp_path / "var.tsv"
    res = CliRunner().invoke(variability, [str(fixtures / "run-0.1.0"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stdout == (fixtures / "run-0.1.0-variability.txt").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == (fixtures / "run-0.1.0-variability.tsv").read_text(encoding="utf-8")


def test_duplicated_rows_count_once_with_a_warning(tmp_path):
    from polyjudge.cli.errors import run_cli
    from polyjudge.cli.main import cli

    row = "A\td\t1\t1\tr1\ts\t<v>t</v>\tAccuracy/Mistranslation\tMajor"
    f = tmp_path / "a.tsv"
    f.write_text(HEADER + "\n".join([row, row, "B\td\t1\t1\tr1\ts\tt\tStyle/Awkward\tMinor"]) + "\n",
                 encoding="utf-8")
    res = CliRunner().invoke(human_mqm, [str(f)])
    assert res.exit_code == 0, res.output
    assert [ln for ln in res.stdout.splitlines() if "\t" in ln] == ["B\t1.000", "A\t5.000"]  # not 10
    assert "dropped 1 duplicate annotation row" in res.stderr
    f.write_text(HEADER, encoding="utf-8")
    assert run_cli(cli, ["human-mqm", str(f)]) == 2


def test_header_only_file_exits_2_with_one_line(tmp_path, capsys):
    from polyjudge.cli.errors import run_cli
    from polyjudge.cli.main import cli

    f = tmp_path / "a.tsv"
    f.write_bytes(b"\xef\xbb\xbf" + HEADER.replace("\n", "\r\n").encode())
    assert run_cli(cli, ["human-mqm", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("polyjudge: error:") and "no annotation rows" in err
