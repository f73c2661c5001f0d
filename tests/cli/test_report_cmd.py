"""``polyjudge report``: ``-o/--out`` and the 0.1.0 spelling ``--output``."""

from __future__ import annotations

from click.testing import CliRunner

from polyjudge.cli.main import cli
from tests.report.fixtures import build_run


def test_out_and_legacy_output(tmp_path):
    run = build_run(tmp_path)
    res = CliRunner().invoke(cli, ["report", str(run), "--out", str(tmp_path / "new.html")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "new.html").is_file() and "wrote" in res.stdout and res.stderr == ""
    res = CliRunner().invoke(cli, ["report", str(run), "--output", str(tmp_path / "old.html")],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "old.html").is_file()
    assert "--output is deprecated" in res.stderr and "use -o/--out" in res.stderr


def test_a_reranking_output_folder_gets_its_section(tmp_path, monkeypatch, capsys):
    """``polyjudge rerank ... -o OUT`` then ``polyjudge report OUT``: the judge's run and the reranking section,
    the gains as rerank.json has them; a damaged rerank.json is exit 2 with one line."""
    import json

    from polyjudge.report.rerank import gain_text
    from tests.helpers.openai_server import ScriptedServer

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    cands = tmp_path / "cands.jsonl"
    cands.write_text("".join(json.dumps(r) + "\n" for r in (
        {"src": "Der Hund bellt.", "candidates": ["dog q=20", "dog q=80"], "ref": "dog q=20"},
        {"src": "Es regnet.", "candidates": ["rain q=60", "rain q=10"], "ref": "rain q=60"})), encoding="utf-8")
    score = lambda body: json.dumps({"score": int(body["messages"][-1]["content"].rsplit("q=", 1)[1][:2])})  # noqa: E731
    with ScriptedServer(score) as srv:
        res = CliRunner().invoke(cli, ["rerank", str(cands), "--judge", f"openai:m@{srv.base_url}", "--src-lang",
                                       "de", "--tgt-lang", "en", "-o", str(tmp_path / "out")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('<section id="rerank-out-run">'):]
    section = section[:section.index("</section>")]
    gains = json.loads((tmp_path / "out" / "rerank.json").read_text())["gains"]
    assert [g["check"] for g in gains] == ["selection", "references"] and gains[0]["gain"] == 30.0
    for g in gains:
        assert f">{gain_text(g['gain'], sign=True)}<" in section
    assert "self-reward" in section and "n/a" in section  # no held-out judge was given
    (tmp_path / "out" / "rerank.json").write_text('{"method": "qe", "gains": 3}', encoding="utf-8")
    from tests.helpers.cli import cli as main

    assert main("report", tmp_path / "out", "-o", tmp_path / "r.html") == 2
    err = capsys.readouterr().err
    assert "rerank.json" in err and "'gains'" in err and len(err.strip().splitlines()) == 1


def test_a_report_never_writes_onto_the_reranking_files_it_reads(tmp_path, capsys):
    """`report OUT -o OUT/rerank.json` once replaced the reranking summary with the page (exit 0): the
    reranking folder's files and its judge's run are the report's inputs, so writing onto any of them is
    exit 2 naming it, and the files are left as they were."""
    import json

    from tests.helpers.cli import cli as main

    cands = tmp_path / "cands.jsonl"
    cands.write_text("".join(json.dumps({"src": f"Quelle {i}.", "candidates": [f"Source {i}.", f"A source {i}.",
                                                                               f"Source {i} it is."]}) + "\n"
                             for i in range(3)), encoding="utf-8")
    out = tmp_path / "out"
    made = CliRunner().invoke(cli, ["rerank", str(cands), "--method", "mbr", "--utility", "chrf", "--src-lang", "de",
                                    "--tgt-lang", "en", "-o", str(out)])
    assert made.exit_code == 0, made.output
    (out / "run").mkdir()  # the judge's run of a judged choice sits here; its files are inputs too
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    for target in ("rerank.json", "chosen.jsonl", "scores.jsonl", "run/segments.tsv"):
        assert main("report", out, "-o", out / target) == 2, target
        err = capsys.readouterr().err
        assert target.split("/")[-1] in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not (out / "run" / "segments.tsv").exists()
    ok = CliRunner().invoke(cli, ["report", str(out), "-o", str(tmp_path / "page.html")])
    assert ok.exit_code == 0, ok.output
