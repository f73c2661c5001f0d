"""``polyjudge probe`` end to end against the scripted local server, plus the
pure probe functions in ``polyjudge.studies.perturb``."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from polyjudge.cli.probes_cmd import probe
from polyjudge.data.records import Item
from polyjudge.studies.perturb import perturb_items, repeat_table, sensitivity_table, shuffle_words, temperature_table
from tests.helpers.openai_server import ScriptedServer

ORDERED = " ".join(f"w{k:02d}" for k in range(10))


def candidate(body):
    user = body["messages"][-1]["content"]
    return re.findall(r"translation: (.*)", user)[-1].strip()  # the last one is the candidate


def responder(body):
    """Scores 100 for words in ascending order, 40 otherwise; no score for 'broken';
    'flaky' depends on the seed (repeat probe); temperature lowers every score and
    T >= 1 breaks items containing 'fragile'."""
    words = candidate(body).split()
    t = body.get("temperature", 0.0)
    if "broken" in words or ("fragile" in words and t >= 1.0):
        return "I cannot tell."
    if "flaky" in words:
        return json.dumps({"score": 50 + body["seed"] % 2})
    base = 100 if words == sorted(words) else 40
    return json.dumps({"score": base - round(20 * t)})


def write_items(path):
    rows = [(ORDERED, "de")] * 2 + [(ORDERED, "fr")] * 2  # sorted: any shuffle drops the score
    rows += [("z y x w v u t s r q", "de"), ("z y x w v u t s r q", "fr")]  # unsorted: 40 either way
    rows += [("solo", "de"), ("w01 broken", "fr")]  # one word: nothing to shuffle; a failure
    lines = [json.dumps({"src": f"source {i}", "tgt": t, "src_lang": "en", "tgt_lang": lang, "seg_id": str(i)})
             for i, (t, lang) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def table(text):
    return {r["group"] + r.get("temperature", ""): r for r in csv.DictReader(io.StringIO(text), delimiter="\t")}


def run(tmp_path, srv, *args):
    res = CliRunner().invoke(probe, [str(tmp_path / "in.jsonl"), "--backend", "openai", "-m", "m",
                                     "--base-url", srv.base_url, "-q",
                                     *(() if "--format" in args else ("--format", "tsv")), *args])
    assert res.exit_code == 0, res.output
    return res.output


def test_sensitivity_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    write_items(tmp_path / "in.jsonl")
    with ScriptedServer(responder) as srv:
        out = run(tmp_path, srv, "--kind", "sensitivity", "--out", str(tmp_path / "s"))
    rows = table(out)
    a = rows["all"]
    # 'solo' has nothing to move: it is not a perturbation, so it is neither compared nor "unchanged"
    assert (a["n_items"], a["n_compared"], a["failures"], a["not_perturbed"], a["dropped"], a["unchanged"],
            a["rose"]) == ("8", "6", "1", "1", "4", "2", "0")
    assert float(a["drop_rate"]) == pytest.approx(4 / 6, abs=1e-4)
    assert (rows["de"]["dropped"], rows["de"]["unchanged"], rows["de"]["failures"], rows["de"]["not_perturbed"]) == \
        ("2", "1", "0", "1")
    assert (rows["fr"]["dropped"], rows["fr"]["unchanged"], rows["fr"]["failures"]) == ("2", "1", "1")
    assert (tmp_path / "s" / "probe.tsv").read_text() == out
    assert (tmp_path / "s" / "original" / "segments.tsv").exists()
    perturbed = [json.loads(x) for x in (tmp_path / "s" / "perturbed" / "items.jsonl").read_text().splitlines()]
    assert perturbed[0]["tgt"] != ORDERED and sorted(perturbed[0]["tgt"].split()) == ORDERED.split()


def test_repeat_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    p = tmp_path / "in.jsonl"
    write_items(p)
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"src": "s", "tgt": "flaky one", "src_lang": "en", "tgt_lang": "de"}) + "\n")
    with ScriptedServer(responder) as srv:
        out = run(tmp_path, srv, "--kind", "repeat", "--repeats", "3", "--out", str(tmp_path / "r"))
        assert {b["temperature"] for b in srv.requests} == {0.0} and len(srv.requests) == 27
    a = table(out)["all"]
    # 9 items: 'broken' fails all 3 runs; 'flaky' disagrees (seeds 0,1,2); the other 7 agree
    assert (a["n_items"], a["runs"], a["n_complete"], a["failures"], a["all_agree"]) == ("9", "3", "8", "3", "7")
    assert float(a["agree_rate"]) == pytest.approx(7 / 8)


def test_temperature_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    p = tmp_path / "in.jsonl"
    p.write_text("\n".join(json.dumps({"src": "s", "tgt": t, "src_lang": "en", "tgt_lang": "de"})
                           for t in ("a b c", "c b a", "fragile x")) + "\n", encoding="utf-8")
    with ScriptedServer(responder) as srv:
        out = run(tmp_path, srv, "--kind", "temperature", "--temperatures", "0,0.5,1", "--out", str(tmp_path / "t"))
    rows = table(out)
    # 'a b c' and 'fragile x' are in order (100 at T=0), 'c b a' is not (40); T lowers by 20*T
    expect = {0.0: [100, 40, 100], 0.5: [90, 30, 90], 1.0: [80, 20]}
    for t, vals in expect.items():
        r = rows[f"all{t:g}"]
        assert int(r["n_scored"]) == len(vals) and int(r["failures"]) == 3 - len(vals)
        assert float(r["mean"]) == pytest.approx(np.mean(vals))
        assert float(r["sd"]) == pytest.approx(np.std(vals, ddof=1), abs=1e-4)


def test_shuffle_words_properties():
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(40)]
    for _ in range(50):
        out = shuffle_words(" ".join(words), 0.1, rng).split()
        moved = sum(a != b for a, b in zip(words, out))
        assert sorted(out) == sorted(words) and moved == 4  # round(0.1 * 40), every chosen word moves
    assert shuffle_words("one", 0.1, rng) == "one"
    assert shuffle_words("a b c", 0.0, rng) == "a b c"
    items = [Item("s", ORDERED)] * 3
    assert perturb_items(items, 0.2, seed=5) == perturb_items(items, 0.2, seed=5)
    assert perturb_items(items, 0.2, seed=5)[0].extra == {"perturbed": 0.2, "perturb_unit": "word",
                                                          "perturb_changed": True}
    assert shuffle_words("a  b\tc", 1.0, rng).split() != ["a", "b", "c"]
    assert [len(x) for x in shuffle_words("a  b\tc", 1.0, rng).split(" ")] == [1, 0, 3]  # spacing kept
    assert shuffle_words("same same same", 0.5, rng) == "same same same"  # nothing can change


def test_tables_by_hand():
    (row,) = sensitivity_table([80, 70, None, 50], [60, 70, 10, 90])
    assert (row.n_compared, row.failures, row.dropped, row.unchanged, row.rose) == (3, 1, 1, 1, 1)
    (row,) = sensitivity_table([80, 70, None, 50], [60, 70, 10, 90], changed=[True, False, False, True])
    assert (row.n_compared, row.failures, row.not_perturbed, row.dropped, row.unchanged, row.rose) == \
        (2, 0, 2, 1, 0, 1)
    rows = repeat_table(np.array([[1, 1, 1], [1, 2, 1], [3, np.nan, 3]]), ["a", "a", "b"])
    assert [(r.group, r.n_complete, r.all_agree, r.failures) for r in rows] == \
        [("all", 2, 1, 1), ("a", 2, 1, 0), ("b", 0, 0, 1)]
    (t,) = temperature_table({0.7: [1.0, 3.0, None]})
    assert (t.n_scored, t.failures, t.mean, t.sd) == (2, 1, 2.0, pytest.approx(np.sqrt(2)))


def test_legacy_spellings_still_work_with_warnings(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    p = tmp_path / "in.txt"  # no telling extension: the input format must come from the flag
    p.write_text("\n".join(json.dumps({"src": "s", "tgt": t, "src_lang": "en", "tgt_lang": "de"})
                           for t in ("a b c", "c b a")) + "\n", encoding="utf-8")
    with ScriptedServer(responder) as srv:
        res = CliRunner().invoke(probe, [str(p), "--backend", "openai", "-m", "m", "--base-url", srv.base_url, "-q",
                                         "--kind", "temperature", "--temperatures", "0", "--format", "jsonl",
                                         "-O", str(tmp_path / "old")])
    assert res.exit_code == 0, res.output
    assert "-O is deprecated" in res.stderr and "--input-format jsonl" in res.stderr
    assert res.stdout == (tmp_path / "old" / "probe.tsv").read_text()
    assert table(res.stdout)["all0"]["n_scored"] == "2"


def test_input_format_and_output_formats(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    p = tmp_path / "in.txt"
    p.write_text(json.dumps({"src": "s", "tgt": "a b c", "src_lang": "en", "tgt_lang": "de"}) + "\n")
    with ScriptedServer(responder) as srv:
        base = [str(p), "--judge", f"openai:m@{srv.base_url}", "-q", "--kind", "temperature", "--temperatures", "0",
                "--input-format", "jsonl", "-o", str(tmp_path / "t")]
        doc = CliRunner().invoke(probe, base + ["--format", "json"])
        text = CliRunner().invoke(probe, base + ["--format", "text"])
    assert doc.exit_code == 0 and json.loads(doc.stdout)["rows"][0]["mean"] == 100
    assert json.loads(doc.stdout) == json.loads((tmp_path / "t" / "probe.json").read_text())
    assert text.stdout.split()[:3] == ["temperature", "group", "n_items"] and "\t" not in text.stdout
