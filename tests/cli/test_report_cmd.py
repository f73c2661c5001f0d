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
