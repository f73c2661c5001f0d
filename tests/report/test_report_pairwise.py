"""The report's pairwise section: a real pairwise study against the scripted local server,
then `polyjudge report OUT/run` shows its Bradley–Terry ranking and position bias."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
import zlib

import pytest

from polyjudge.api import JudgeConfig
from polyjudge.api.pairwise_study import _verdict_shares, pairwise
from polyjudge.cli.main import main
from polyjudge.data.errors import InputError
from polyjudge.data.records import Item
from polyjudge.report.adapters import check_study, pairwise_verdict_shares
from polyjudge.report.html import render
from polyjudge.report.load import load_run
from polyjudge.report.sections import Figure, Table
from polyjudge.studies.pairwise import PairwiseConfig
from tests.helpers.openai_server import ScriptedServer

QUALITY = {"best": 9, "good": 6, "poor": 2}
PROMPT = re.compile(r"Translation A: (.*)\nTranslation B: (.*)\n\nAnswer with", re.S)


def _responder(body):
    """Prefers the higher q=N, but answers "A" for about a quarter of the prompts."""
    text = body["messages"][-1]["content"]
    a, b = PROMPT.search(text).groups()
    if zlib.crc32(text.encode()) % 4 == 0:
        return json.dumps({"winner": "A"})
    qa, qb = (int(re.search(r"q=(\d+)", x).group(1)) for x in (a, b))
    return json.dumps({"winner": "A" if qa > qb else "B" if qb > qa else "tie"})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("pw") / "out"
    items = [Item(f"source {s}", f"{name} q={q} s{s}", None, "en", "de", "d", str(s), name)
             for s in range(8) for name, q in QUALITY.items()]
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "k")
    try:
        with ScriptedServer(_responder) as srv:
            cfg = PairwiseConfig(judge=JudgeConfig(protocol="pairwise", judges=(f"openai:m@{srv.base_url}",)),
                                 n_boot=100)
            res = pairwise(items, cfg, out)
    finally:
        mp.undo()
    return res, out


def test_verdict_shares_by_hand():
    rows = [{"verdict_ab": "A", "verdict_ba": "B", "outcome": "win"},  # consistent: A, B
            {"verdict_ab": "A", "verdict_ba": "A", "outcome": "inconsistent"},  # A, A
            {"verdict_ab": "tie", "verdict_ba": "", "outcome": "missing"}]  # only in "all"
    s = pairwise_verdict_shares(rows)
    assert s["A"] == [3 / 5, 1 / 2, 1.0] and s["B"] == [1 / 5, 1 / 2, 0.0] and s["tie"] == [1 / 5, 0.0, 0.0]
    empty = pairwise_verdict_shares([])
    assert all(math.isnan(x) for v in empty.values() for x in v)


def test_report_of_the_run_shows_ranking_and_position_bias(study):
    res, out = study
    rep = render([load_run(out / "run")], n_boot=100)
    sec = next(s for s in rep.sections if s.title == "Pairwise comparison")
    figs = {b.name: b for b in sec.blocks if isinstance(b, Figure)}
    assert set(figs) == {"pairwise-ranking", "position-bias"}
    for f in figs.values():
        ET.fromstring(str(f.svg))
    # the figure shows the same shares as the pairwise command's own figure
    expected = _verdict_shares(res.pairs)
    shares = dict(load_run(out / "run").extras["pairwise.json"].verdict_shares)  # typed rows
    for v in ("A", "B", "tie"):
        assert list(shares[v]) == pytest.approx(expected[v], nan_ok=True)
    assert shares["A"][0] > shares["B"][0]  # the judge favours A
    ranking = next(b for b in sec.blocks if isinstance(b, Table) and b.caption == "Bradley–Terry ranking")
    assert [r[1] for r in ranking.rows] == [r.system for r in res.ranking] == ["best", "good", "poor"]
    pos = next(b for b in sec.blocks if isinstance(b, Table) and b.caption == "Position bias")
    assert pos.rows[0][0] == str(res.position.pairs) and pos.rows[0][3].startswith(str(res.position.inconsistent))


def test_cli_report_writes_the_pairwise_plots(study, tmp_path):
    _, out = study
    code = 0
    try:
        main(["report", str(out / "run"), "-o", str(tmp_path / "r.html"), "--plots-dir", str(tmp_path / "p")])
    except SystemExit as exc:
        code = exc.code
    assert code in (0, None)
    assert {"pairwise-ranking.svg", "position-bias.svg"} <= {p.name for p in (tmp_path / "p").iterdir()}
    assert "Pairwise comparison" in (tmp_path / "r.html").read_text()


def test_a_mismatched_or_broken_study_file(study, tmp_path):
    _, out = study
    import shutil
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    doc = json.loads((copy / "pairwise.json").read_text())
    doc["n_pairs"] += 1
    (copy / "pairwise.json").write_text(json.dumps(doc))
    assert "may belong to another run" in load_run(copy / "run").extras["pairwise.json"].note
    (copy / "pairwise.json").write_text(json.dumps({"ranking": [{"system": 3}]}))
    with pytest.raises(InputError, match=r"ranking\[0\]\.system"):
        load_run(copy / "run")
    with pytest.raises(InputError, match="no ranking and no position"):
        check_study({"ranking": []}, "pairwise.json", "x")


def test_hostile_system_names_are_escaped():
    doc = {"ranking": [{"system": "<script>x()</script>", "score": 0.5, "ci_low": 0.1, "ci_high": 0.9,
                        "win_rate": 0.7, "comparisons": 4},
                       {"system": "b", "score": -0.5, "ci_low": -0.9, "ci_high": -0.1, "win_rate": 0.3,
                        "comparisons": 4}],
           "position": {"pairs": 4, "a_share": 0.5, "a_share_consistent": 0.5, "a_share_inconsistent": None,
                        "p_value": 1.0}}
    rep = render([], studies={"pairwise.json": check_study(doc, "pairwise.json", "x")})
    assert "<script>x()" not in rep.html and "&lt;script&gt;x()" in rep.html
    assert [f.name for _, f in rep.figures] == ["pairwise-ranking", "position-bias"]  # without the TSV: A share
