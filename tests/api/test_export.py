"""export --to mtme|wmt25|wmt23 and COMET-style JSON: a TED test set in mt-metrics-eval's layout is
judged with the scripted server, exported, and read back by our readers following mt-metrics-eval's
documented rules (file names NAME-REF.LEVEL.score, every system but the reference used, every segment
in order, no None; the WMT23 submission's 9 and 7 fields)."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from polyjudge.api.exporting import ExportConfig, comet_json_text, export
from polyjudge.cli.main import cli, main
from polyjudge.data.errors import InputError
from polyjudge.metaeval.readers import metric_refs, read_mtme_score_file, scan_mtme
from tests.helpers.mtme_testset import LP, NAME, TedTestSet, build_ted_testset, judge_items
from tests.helpers.openai_server import ScriptedServer


def _score(body: dict) -> str:
    """A deterministic judge: a score from the translation's text."""
    text = body["messages"][-1]["content"]
    return json.dumps({"score": zlib.crc32(text.encode()) % 101})


def judge(items: Path, out: Path, *extra: str) -> Path:
    with ScriptedServer(_score) as srv:
        res = CliRunner().invoke(cli, ["judge", str(items), "--out", str(out), "--protocol", "da", "--backend",
                                       "openai", "--model", "m", "--base-url", srv.base_url, "-q", "-c", "2", *extra])
    assert res.exit_code == 0, res.output + str(res.exception)
    return out


@pytest.fixture(scope="module")
def ted(tmp_path_factory) -> tuple[TedTestSet, Path]:
    tmp = tmp_path_factory.mktemp("ted")
    ts = build_ted_testset(tmp / "mtme")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "test-key")
    try:
        run = judge(judge_items(ts, tmp / "items.jsonl"), tmp / "run")
    finally:
        mp.undo()
    return ts, run


def _segments(run: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for line in (run / "segments.tsv").read_text().splitlines()[1:]:
        cells = line.split("\t")
        out.setdefault(cells[0], []).append(float(cells[5]))
    return out


def test_mtme_export_lands_in_the_test_set_and_reads_back_by_mt_metrics_eval_rules(ted, tmp_path):
    ts, run = ted
    copy = tmp_path / NAME
    shutil.copytree(ts.root, copy)
    target = copy / "metric-scores" / LP
    result = export(ExportConfig(run, "mtme", tmp_path / "out"))
    for p in result.files:  # an export folder of its own, copied in beside the submissions
        shutil.copy(p, target / p.name)
    found = scan_mtme(copy, LP)
    assert set(found.metrics["polyjudge-da-src"]) == {"seg", "sys", "doc", "domain"}
    assert metric_refs("polyjudge-da-src") == ("polyjudge-da", set())  # reference-free, as mt-metrics-eval reads it
    seg = read_mtme_score_file(found.metrics["polyjudge-da-src"]["seg"])
    expected = _segments(run)
    assert seg == expected and sorted(seg) == ts.systems  # every system, the reference refA included (src metric)
    assert all(len(v) == len(ts.sources) for v in seg.values())
    n = len(ts.sources)
    sys_ = read_mtme_score_file(found.metrics["polyjudge-da-src"]["sys"])
    assert sys_ == {s: [pytest.approx(round(sum(v) / n, 6))] for s, v in expected.items()}
    docs = list(dict.fromkeys(ts.docs))
    doc = read_mtme_score_file(found.metrics["polyjudge-da-src"]["doc"])
    for s, v in expected.items():  # per document in the documents file's order: the mean of its segments
        means = [sum(x for x, d in zip(v, ts.docs) if d == name) / ts.docs.count(name) for name in docs]
        assert doc[s] == [pytest.approx(round(m, 6)) for m in means]
    text = (target / "polyjudge-da-src.domain.score").read_text().splitlines()
    assert all(len(line.split()) == 3 for line in text) and "None" not in "".join(text)
    assert {line.split()[0] for line in text} == {"talks-0", "talks-1"}


def test_mtme_export_of_a_run_missing_systems_exits_2_saying_which(ted, tmp_path, monkeypatch, capsys):
    ts, _ = ted
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    run = judge(judge_items(ts, tmp_path / "some.jsonl", systems=["Nemo", "UEdin"]), tmp_path / "run")
    with pytest.raises(SystemExit) as exc:
        main(["export", str(run), "--to", "mtme", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert "system 'Facebook-AI' of the test set was not judged" in err
    assert not (tmp_path / "out").exists()


def test_wmt23_export_has_the_metrics_task_fields(ted, tmp_path):
    ts, run = ted
    res = CliRunner().invoke(cli, ["export", str(run), "--to", "wmt23", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    seg = [line.split("\t") for line in (tmp_path / "out" / "polyjudge-da.seg.score").read_text().splitlines()]
    assert {len(r) for r in seg} == {9} and len(seg) == len(ts.systems) * len(ts.sources)
    assert {(r[0], r[1], r[2], r[5]) for r in seg} == {("polyjudge-da", LP, NAME, "src")}
    expected = _segments(run)
    got: dict[str, list[float]] = {}
    for r in seg:
        got.setdefault(r[6], []).append(float(r[8]))
        assert r[4] == ts.docs[int(r[7]) - 1]  # 1-based segment numbers, the document of that line
    assert got == expected
    sys_ = [line.split("\t") for line in (tmp_path / "out" / "polyjudge-da.sys.score").read_text().splitlines()]
    assert {len(r) for r in sys_} == {7} and {r[3] for r in sys_} == {"all", "talks-0", "talks-1"}
    overall = {r[5]: float(r[6]) for r in sys_ if r[3] == "all"}
    assert overall == {s: pytest.approx(sum(v) / len(v), abs=1e-6) for s, v in expected.items()}


def test_wmt25_export_keys_and_overall(ted, tmp_path):
    ts, run = ted
    res = CliRunner().invoke(cli, ["export", str(run), "--to", "wmt25", "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "note: derived method empty" in res.output  # not a WMT25 task-1 input: said
    lines = (tmp_path / "out" / "segments.tsv").read_text().splitlines()
    header = "doc_id segment_id source_lang target_lang set_id system_id domain_name method overall".split()
    assert lines[0].split("\t") == header
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    assert len(rows) == len(ts.systems) * len(ts.sources)
    assert {r["set_id"] for r in rows} == {NAME} and {r["source_lang"] for r in rows} == {"en"}
    assert [float(r["overall"]) for r in rows if r["system_id"] == "Nemo"] == _segments(run)["Nemo"]
    systems = [dict(zip(header, line.split("\t"))) for line in
               (tmp_path / "out" / "systems.tsv").read_text().splitlines()[1:]]
    assert {r["system_id"]: float(r["overall"]) for r in systems} == {
        s: pytest.approx(sum(v) / len(v), abs=1e-6) for s, v in _segments(run).items()}


def test_wmt25_keys_of_a_task1_input_are_written_back(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    keys = {"set_id": "wmttest2025", "domain_name": "speech", "method": "ESA"}
    rows = [{"src": f"s{i}", "tgt": f"t{i}", "seg_id": str(i), "doc_id": "ted_1", "src_lang": "en", "tgt_lang": "de_DE",
             "system": "A", **keys, "testset": {"format": "wmt25", "root": "x.tsv", "name": "wmt25", "lp": "en-de_DE"}}
            for i in (1, 2)]
    inp = tmp_path / "task1.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = judge(inp, tmp_path / "run")
    res = export(ExportConfig(run, "wmt25", tmp_path / "out"))
    assert res.notes == []
    first = (tmp_path / "out" / "segments.tsv").read_text().splitlines()[1].split("\t")
    assert first[:8] == ["ted_1", "1", "en", "de_DE", "wmttest2025", "A", "speech", "ESA"]


def test_comet_json_has_comets_keys(ted):
    ts, run = ted
    data = json.loads(comet_json_text(run))
    assert sorted(data) == ts.systems
    first = data["Nemo"][0]
    assert set(first) == {"src", "mt", "ref", "COMET"} and first["mt"] == ts.outputs["Nemo"][0]
    assert [x["COMET"] for x in data["Nemo"]] == _segments(run)["Nemo"]


def test_an_unknown_format_is_an_input_error(ted, tmp_path):
    with pytest.raises(InputError, match="unknown export format"):
        export(ExportConfig(ted[1], "nope", tmp_path / "out"))


def test_the_mtme_example_of_export_help_works_on_a_test_set_as_it_is(ted, tmp_path, monkeypatch):
    """export --help's mtme example, run as written (the run and test set copied where it names them):
    the test set's metric-scores/en-de already holds other metrics' files, which an -o folder would refuse."""
    ts, run = ted
    help_text = CliRunner().invoke(cli, ["export", "--help"]).output
    lines = [ln.strip() for ln in help_text.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("polyjudge export") and "--to mtme" in ln)
    export_args = lines[start].split()[2:]
    copy_line = lines[start + 1]
    monkeypatch.chdir(tmp_path)
    shutil.copytree(run, Path(export_args[0]))
    shutil.copytree(ts.root, Path("wmt23"))
    target = Path("wmt23/metric-scores") / LP
    before = {p.name for p in target.iterdir()}
    assert before, "the test set should hold other metrics' scores"
    with pytest.raises(SystemExit) as stop:
        main(["export", *export_args])
    assert stop.value.code == 0
    assert copy_line.startswith("cp ") and copy_line.endswith(f"wmt23/metric-scores/{LP}/")
    pattern, dest = copy_line.split()[1:]
    for p in Path().glob(pattern):
        shutil.copy(p, Path(dest) / p.name)
    assert {p.name for p in target.iterdir()} > before
    assert "polyjudge-da-src" in scan_mtme(Path("wmt23"), LP).metrics
