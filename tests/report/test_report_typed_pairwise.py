"""The pairwise study reaches the report as typed rows (issue 36 item 5): RankedSystem, the position-bias
statistics and the agreement with humans, the same from the study's result in memory and from the
pairwise.json it wrote. The study is real: three systems judged in both orders by the scripted server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from polyjudge.api import JudgeConfig
from polyjudge.api.pairwise_study import pairwise
from polyjudge.api.reporting import ReportConfig, report
from polyjudge.cli.main import main
from polyjudge.data.records import Item
from polyjudge.studies.pairwise import PairwiseConfig
from polyjudge.studies.pairwise_results import PairwiseRows, RankedSystem, read_pairwise
from tests.helpers.openai_server import ScriptedServer
from tests.report.test_report_pairwise import QUALITY, _responder


def _html(path: Path) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "TIME", path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("n_boot", [100, 0])
def test_the_report_is_the_same_from_the_result_in_memory_and_from_its_file(tmp_path, monkeypatch, n_boot):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items = [Item(f"source {s}", f"{name} q={q} s{s}", None, "en", "de", "d", str(s), name)
             for s in range(6) for name, q in QUALITY.items()]
    with ScriptedServer(_responder) as srv:
        cfg = PairwiseConfig(judge=JudgeConfig(protocol="pairwise", judges=(f"openai:m@{srv.base_url}",)),
                             n_boot=n_boot)
        result = pairwise(items, cfg, tmp_path / "out")
    typed = result.results()
    assert isinstance(typed, PairwiseRows) and all(isinstance(r, RankedSystem) for r in typed.ranking)
    assert [r.system for r in typed.ranking] == [r.system for r in result.ranking]
    assert typed.at("pairs") == result.position.pairs and typed.n_pairs == len(result.pairs)
    path = tmp_path / "out" / "pairwise.json"
    assert repr(read_pairwise(json.loads(path.read_text(encoding="utf-8")), str(path))) == repr(typed)
    report([], ReportConfig(out=tmp_path / "mem.html", pairwise=result))
    report([], ReportConfig(out=tmp_path / "file.html", pairwise=path))
    mem = _html(tmp_path / "mem.html")
    assert "Pairwise comparison" in mem and "Bradley–Terry ranking" in mem
    assert mem == _html(tmp_path / "file.html")


@pytest.mark.parametrize("change,where", [({"settings": {"level": "high"}}, "settings.level"),
                                          ({"unranked": "sysX"}, "unranked"),
                                          ({"n_pairs": "ten"}, "n_pairs")])
def test_a_bad_field_is_one_line_naming_the_file_and_the_place(tmp_path, capsys, change, where):
    doc = {"ranking": [{"system": "a", "score": 0.5, "ci_low": 0.1, "ci_high": 0.9, "win_rate": 0.7,
                        "comparisons": 4}], "position": {"pairs": 4, "a_share": 0.5}, **change}
    p = tmp_path / "pairwise.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SystemExit) as exc:
        main(["report", "--pairwise", str(p), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and err.startswith(f"polyjudge: error: {p}: {where}: ")
    assert not (tmp_path / "r.html").exists()
