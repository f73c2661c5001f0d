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


def _main(argv, capsys):
    import pytest

    from polyjudge.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_item_key_option_and_one_line_errors(tmp_path, capsys):
    rows = "".join(f"{s}\t{d}\t{g}\t{k + g + (d == 'b')}\n" for k, s in enumerate("XYZ") for d in "ab" for g in (1, 2))
    human = tmp_path / "h.tsv"
    human.write_text("system\tdoc_id\tseg_id\tscore\n" + rows, encoding="utf-8")
    no_doc = tmp_path / "m.tsv"
    no_doc.write_text("system\tseg_id\tscore\nX\t1\t0\n", encoding="utf-8")
    base = ["meta-eval", "--human", human, "--task", "none", "-k", "0", "--format", "json"]
    code, out, err = _main(base + ["--metric", f"same={human}"], capsys)
    assert code == 0, err
    assert json.loads(out)["language_pairs"]["lp"]["same"]["n_items"] == 4  # a/1, a/2, b/1, b/2
    code, out, err = _main(base + ["--metric", f"same={human}", "--item-key", "seg"], capsys)
    assert code == 2 and out == "" and "duplicate score" in err and "--item-key doc-seg" in err
    code, out, err = _main(base + ["--metric", f"m={no_doc}"], capsys)
    assert code == 2 and f"{no_doc}, field 'doc_id'" in err and len(err.strip().splitlines()) == 1
    code, _, err = _main(base + ["--metric", f"same={human}", "--item-key", "docseg"], capsys)
    assert code == 2 and "docseg" in err


def test_missing_metric_drop_compares_the_same_cells(tmp_path, capsys):
    human = tmp_path / "h.tsv"
    human.write_text("system\tseg_id\tscore\n" + "".join(
        f"{s}\t{g}\t{v}\n" for s, vals in (("A", (0, 0, -9, -9)), ("B", (-2, -2, -2, -2)), ("C", (-3, -3, -3, -3)))
        for g, v in enumerate(vals, 1)), encoding="utf-8")
    metric = tmp_path / "m.tsv"  # the human scores, without A's two bad segments
    metric.write_text("".join(line + "\n" for line in human.read_text().splitlines()
                              if not line.startswith(("A\t3", "A\t4"))), encoding="utf-8")
    code, out, err = _main(["meta-eval", "--human", human, "--metric", f"m={metric}", "--missing-metric", "drop",
                            "--task", "none", "-k", "0", "--format", "json"], capsys)
    assert code == 0, err
    # over the same cells A (0) is best, as the metric says; averaging A over all four
    # segments on the human side only (-4.5) made this 1/3
    assert json.loads(out)["language_pairs"]["lp"]["m"]["sys_pairwise_accuracy"] == 1.0


def test_random_files_exit_0_or_2_with_one_line(tmp_path_factory, capsys):
    """Random bytes (with or without BOM/header, CRLF) as human and metric files: a result
    or one line naming the problem, never a traceback. 100 generated cases."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    header = st.sampled_from([b"", b"\xef\xbb\xbf", b"system\tseg_id\tscore\n", b"system\tdoc_id\tseg_id\tscore\r\n",
                              b"\xef\xbb\xbfsystem\tseg_id\tscore\r\n"])
    rows = st.lists(st.tuples(st.sampled_from([b"A", b"B", b"C", b"\xff"]), st.sampled_from([b"1", b"2", b"x"]),
                              st.sampled_from([b"0.5", b"1", b"", b"inf", b"nan", b"-2", b"\xc3"])),
                    max_size=8).map(lambda rs: b"".join(b"\t".join(r) + b"\n" for r in rs))

    @settings(max_examples=100, deadline=None)
    @given(header, rows | st.binary(max_size=200), st.sampled_from(["h.tsv", "h.jsonl", "en-de.h.seg.score"]))
    def check(head, body, name):
        d = tmp_path_factory.mktemp("fuzz")
        human = d / name
        human.write_bytes(head + body)
        code, out, err = _main(["meta-eval", "--human", human, "--metric", f"m={human}", "--task", "none",
                                "-k", "0", "--format", "tsv"], capsys)
        assert code in (0, 2), err
        assert "Traceback" not in err
        if code == 2:
            assert out == "" and len(err.strip().splitlines()) == 1

    check()


def test_help_lists_the_run_variant_flags():
    res = CliRunner().invoke(meta_eval, ["--help"])
    assert res.exit_code == 0
    assert "--aggregators" in res.output and "--single-runs" in res.output and "NAME@run1" in res.output
