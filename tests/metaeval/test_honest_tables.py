"""meta-eval's tables say what they rest on (issue 33): the language pair, each metric's coverage, correlations
that two systems cannot give, named value columns; CSV, TSV and JSONL score files are read by extension."""

from __future__ import annotations

import json
import random

import pytest

from polyjudge.cli.main import main


def _write(path, rows, sep="\t"):
    path.write_text(sep.join(["system", "seg_id", "score"]) + "\n" +
                    "".join(sep.join([s, str(i), f"{v:.3f}"]) + "\n" for s, i, v in rows), encoding="utf-8")
    return path


def _rows(systems, n, seed):
    rnd = random.Random(seed)
    return [(s, i, rnd.random()) for s in systems for i in range(n)]


@pytest.fixture
def _meta_eval(capsys):
    """``polyjudge meta-eval ARGS`` as the command line runs it: (exit code, stdout, stderr)."""
    def run(*args):
        with pytest.raises(SystemExit) as exc:
            main(["meta-eval", *map(str, args)])
        got = capsys.readouterr()
        return exc.value.code, got.out, got.err

    return run


def test_metrics_scored_on_different_segments_show_their_coverage_and_a_note(tmp_path, _meta_eval):
    human = _write(tmp_path / "human.tsv", _rows("ABC", 15, 1))
    m5 = _write(tmp_path / "m5.tsv", _rows("ABC", 5, 2))
    m15 = _write(tmp_path / "m15.tsv", _rows("ABC", 15, 3))
    code, out, err = _meta_eval("--human", human, "--metric", m5, "--metric", m15, "--missing-metric", "drop",
                                "-k", "0")
    assert code == 0, err
    table = out[out.index("unnamed pair (no --lp):\n"):].splitlines()
    head = table[1].split()
    assert head[:3] == ["Metric", "systems", "cells"]
    cells = {r.split()[0]: int(r.split()[2]) for r in table[3:5]}
    assert cells == {"m5": 15, "m15": 45}
    assert "note: unnamed pair (no --lp): the metrics were scored on different numbers of segments (m15 45, m5 15)" \
        in out
    code, out, err = _meta_eval("--human", human, "--metric", m5, "--metric", m15, "--missing-metric", "drop",
                                "-k", "0", "--format", "json")
    assert code == 0 and "different numbers of segments" in err  # machine-readable stdout, the note on stderr
    assert any("different numbers of segments" in n for n in json.loads(out)["notes"])


def test_two_systems_give_no_correlation_and_the_table_says_why(tmp_path, _meta_eval):
    human = _write(tmp_path / "human.tsv", _rows("AB", 15, 1))
    metric = _write(tmp_path / "m.tsv", _rows("AB", 15, 2))
    code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--lp", "en-de", "--format", "json")
    assert code == 0, err
    stats = json.loads(out)["language_pairs"]["en-de"]["m"]
    assert stats["n_systems"] == 2 and stats["sys_pearson"] is None  # JSON null (undefined), not +-1
    code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--lp", "en-de", "--task", "wmt23")
    lines = out.splitlines()
    at = next(i for i, r in enumerate(lines) if r.startswith("Metric  systems"))
    head, row = lines[at].split(), lines[at + 2].split()
    assert row[head.index("sys_pearson")] == "n/a"
    assert "en-de: only 2 systems: system-level correlations are undefined (n/a); the ranking's system-level " \
           "columns (sys (acc), sys (pearson)) rest on 1 system pair(s) and are unreliable" in out


def test_every_table_names_its_pair_and_its_value_columns(tmp_path, _meta_eval):
    human = _write(tmp_path / "human.tsv", _rows("ABC", 10, 1))
    metric = _write(tmp_path / "m.tsv", _rows("ABC", 10, 2))
    code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "10")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["Metric", "Avg"] and "unnamed pair (no --lp)" in lines[0]
    assert lines[2].split() == ["rank", "value", "rank", "value", "rank", "value"]
    assert "unnamed pair (no --lp) sys (pce)" in out and "\nunnamed pair (no --lp):\n" in out
    assert "\nlp:" not in out and " lp " not in lines[0]
    code, out, _ = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--lp", "en-de")
    assert out.splitlines()[0].split()[2] == "en-de" and "\nen-de:\n" in out


def test_csv_and_jsonl_are_read_by_extension_and_a_failure_names_the_format(tmp_path, _meta_eval):
    rows = _rows("ABC", 10, 1)
    tsv = _write(tmp_path / "human.tsv", rows)
    csv = _write(tmp_path / "human.csv", rows, sep=",")
    jsonl = tmp_path / "human.jsonl"
    jsonl.write_text("".join(json.dumps({"system": s, "seg_id": str(i), "score": round(v, 3)}) + "\n"
                             for s, i, v in rows), encoding="utf-8")
    metric = _write(tmp_path / "m.tsv", _rows("ABC", 10, 2))
    outs = []
    for human in (tsv, csv, jsonl):
        code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--format", "json")
        assert code == 0, (human.name, err)
        outs.append(json.loads(out)["language_pairs"])
    assert outs[0] == outs[1] == outs[2]
    code, out, err = _meta_eval("--human", csv, "--human-format", "tsv", "--metric", metric, "-k", "0")
    assert code == 2 and "read as TSV" in err and "human.csv:1" in err and "Traceback" not in err
    code, _, err = _meta_eval("--human", tsv, "--human-format", "csv", "--metric", metric, "-k", "0")
    assert code == 2 and "read as CSV" in err


def test_system_scores_of_two_systems_give_no_correlation(tmp_path, _meta_eval):
    human = _write(tmp_path / "human.tsv", _rows("AB", 5, 1))
    metric = tmp_path / "m.sys.score"
    metric.write_text("A\t0.9\nB\t0.1\n", encoding="utf-8")
    code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--lp", "en-de", "--format", "json")
    assert code == 0, err
    stats = json.loads(out)["system_level_only"]["en-de"]["m"]
    assert stats["n_systems"] == 2 and stats["sys_pearson"] is None and stats["sys_kendall"] is None
    assert "fewer than 3 systems" in err
    code, out, err = _meta_eval("--human", human, "--metric", metric, "-k", "0", "--lp", "en-de")
    assert "correlations need at least 3 systems, else n/a" in out
