"""The temperature probe with a human ratings file: agreement with the humans
per temperature (Hada et al., Figure 23), end to end against the scripted server."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from polyjudge.cli.probes_cmd import probe
from polyjudge.data.errors import InputError
from polyjudge.studies import ProbeConfig, run_probe
from tests.cli.test_probes_cmd import responder  # 100 for words in order, 40 otherwise, minus 20 * T

TEXTS = ["a b c", "c b a", "b c d", "d c b"]
HUMAN = [2, 0, 2, 1]  # two raters agree on each item


def write(tmp_path):
    items = tmp_path / "in.jsonl"
    items.write_text("".join(json.dumps({"src": "s", "tgt": t, "src_lang": "en", "tgt_lang": "de",
                                         "item_id": f"q{i}"}) + "\n" for i, t in enumerate(TEXTS)),
                     encoding="utf-8")
    ratings = tmp_path / "ratings.tsv"
    lines = ["item_id\tlanguage\ttask\tmetric\trater\tkind\trating"]
    lines += [f"q{i}\tde\tmt\tLA\th{r}\thuman\t{v}" for i, v in enumerate(HUMAN) for r in (1, 2)]
    lines += ["q0\tde\tmt\tLA\tgpt\tjudge\t0"]  # the file's own judge rows are not part of this table
    ratings.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return items, ratings


def test_agreement_per_temperature(tmp_path, monkeypatch):
    from tests.helpers.openai_server import ScriptedServer

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    items, ratings = write(tmp_path)
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(probe, [str(items), "--judge", f"openai:m@{srv.base_url}", "-q",
                                         "--kind", "temperature", "--temperatures", "0,0.5,1",
                                         "--human", str(ratings), "--bins", "50,90", "-o", str(tmp_path / "t"),
                                         "--format", "tsv"])
    assert res.exit_code == 0, res.output
    rows = {r["temperature"]: r for r in
            csv.DictReader(io.StringIO((tmp_path / "t" / "agreement.tsv").read_text()), delimiter="\t")}
    assert list(rows) == ["T0", "T0.5", "T1"]
    # binned scores: T=0 100/40 -> 2 0 2 0; T=0.5 90/30 -> 2 0 2 0; T=1 80/20 -> 1 0 1 0; humans 2 0 2 1
    assert [float(rows[t]["pa_judge"]) for t in rows] == pytest.approx([3 / 4, 3 / 4, 1 / 4])
    sklearn = pytest.importorskip("sklearn.metrics")
    for t, judged in (("T0", [2, 0, 2, 0]), ("T1", [1, 0, 1, 0])):
        assert float(rows[t]["kappa_judge"]) == pytest.approx(
            sklearn.cohen_kappa_score(HUMAN, judged, labels=[0, 1, 2]), abs=1e-4)
    assert {r["language"] for r in rows.values()} == {"de"} and rows["T0"]["n_items"] == "4"
    # stdout: the probe table, a blank line, then the agreement table
    probe_part, agree_part = res.stdout.split("\n\n")
    assert probe_part.startswith("temperature\tgroup") and agree_part.startswith("language\ttask\tmetric\ttemperature")
    doc = json.loads((tmp_path / "t" / "probe.json").read_text())
    assert [m["matched"] for m in doc["matches"]] == [4, 4, 4] and len(doc["agreement"]) == 3


def test_ratings_file_is_checked_before_judging(tmp_path):
    items, ratings = write(tmp_path)
    bad = tmp_path / "bad.tsv"
    bad.write_text("item_id\trater\tkind\trating\nq0\th\tnobody\t1\n", encoding="utf-8")
    # nothing listens on port 9: reaching the judge would fail differently
    config = ProbeConfig(kind="temperature", human=bad)
    with pytest.raises(InputError, match="kind must be"):
        run_probe(items, config)
    with pytest.raises(InputError, match="temperature probe only"):
        run_probe(items, ProbeConfig(kind="repeat", human=ratings))
    with pytest.raises(InputError, match="need a human ratings file"):
        run_probe(items, ProbeConfig(kind="temperature", bins=(50.0,)))
    with pytest.raises(InputError, match="edges must increase"):
        run_probe(items, ProbeConfig(kind="temperature", human=ratings, bins=(50.0, 10.0)))
    with pytest.raises(InputError, match="need 3 labels"):
        run_probe(items, ProbeConfig(kind="temperature", human=ratings, bins=(10.0, 50.0), bin_labels=(0.0, 1.0)))
