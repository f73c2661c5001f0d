"""``polyjudge meta-eval``: ``-o/--out`` writes the printed result to a file."""

from __future__ import annotations

import json

from click.testing import CliRunner

from polyjudge.cli.metaeval_cmd import meta_eval
from tests.metaeval.test_metaeval_io import _write_mtme


def test_out_writes_what_would_be_printed(tmp_path):
    _write_mtme(tmp_path / "m")
    args = ["--mtme", str(tmp_path / "m"), "--lp", "en-de", "-k", "0", "--format", "json"]
    printed = CliRunner().invoke(meta_eval, args)
    assert printed.exit_code == 0, printed.output
    res = CliRunner().invoke(meta_eval, args + ["-o", str(tmp_path / "me.json")])
    assert res.exit_code == 0 and res.stdout == "" and "wrote" in res.stderr
    assert json.loads((tmp_path / "me.json").read_text()) == json.loads(printed.stdout)
    res = CliRunner().invoke(meta_eval, args + ["-o", str(tmp_path)])
    assert res.exit_code != 0
