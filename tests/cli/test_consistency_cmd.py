"""End to end: ``polyjudge consistency`` against the scripted local server,
with judges scripted to answer differently per language and known kappas."""

from __future__ import annotations

import csv
import json
import re

import pytest
from click.testing import CliRunner

from polyjudge.cli.consistency_cmd import consistency
from tests.helpers.openai_server import ScriptedServer

LANGS = {"en": "English", "de": "German", "sw": "Swahili", "te": "Telugu"}
N = 6


def write_mgsm(folder):
    for code in LANGS:
        rows = [f"Problem {i} in {code}?\t{10 * (i + 1)}" for i in range(N)]
        (folder / f"mgsm_{code}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def responder(body):
    system = body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    lang = next(code for code, name in LANGS.items() if f"written in {name}" in system)
    i = int(re.search(r"Problem (\d+) in", user).group(1))
    answer = int(re.search(r"Proposed answer: (\d+)", user).group(1))
    truth = answer == 10 * (i + 1)
    model = body["model"]
    if model == "m1" and lang == "te":
        said = True  # m1 accepts everything in Telugu
    elif model == "m3" and lang == "de":
        said = not truth  # m3 is inverted in German
    else:
        said = truth
    if model == "m2" and lang == "sw" and i == 0 and truth:
        return "Looks fine I suppose."  # no verdict -> parse failure
    if "<grade>" in system:
        return f"<justification>checked</justification><grade>{5 if said else 1}</grade>"
    return f"<justification>checked</justification><verdict>{'correct' if said else 'incorrect'}</verdict>"


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_consistency_study_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    write_mgsm(tmp_path)
    out = tmp_path / "study"
    with ScriptedServer(responder) as srv:
        args = ["--dataset", "mgsm", "--data-dir", str(tmp_path), "--languages", "en,de,sw,te",
                "--scale", "binary", "--scale", "grade", "--out", str(out), "-q"]
        for m in ("m1", "m2", "m3"):
            args += ["--judge", f"openai:{m}@{srv.base_url}"]
        res = CliRunner().invoke(consistency, args, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        # 4 languages x 6 questions x (gold + wrong) x 3 judges x 2 scales
        assert len(srv.requests) == 4 * N * 2 * 3 * 2

    rows = {(r["judge"], r["criterion"], r["subset"]): r for r in read_tsv(out / "consistency.tsv")}
    for crit in ("binary", "grade"):
        # m1: en/de/sw right, te says 'correct' to all: hand-computed Fleiss = 7/15
        assert float(rows[("m1", crit, "all")]["fleiss_kappa"]) == pytest.approx(7 / 15, abs=1e-4)
        # m2 is always right (one failure, left out): perfect agreement
        assert float(rows[("m2", crit, "all")]["fleiss_kappa"]) == pytest.approx(1.0)
        assert rows[("m2", crit, "all")]["n_complete"] == str(2 * N - 1)
        # m3 inverted in one of four languages: P_bar = 1/2 = P_e -> 0
        assert float(rows[("m3", crit, "all")]["fleiss_kappa"]) == pytest.approx(0.0, abs=1e-4)
        # the majority of the three is right everywhere
        assert float(rows[("ensemble", crit, "all")]["fleiss_kappa"]) == pytest.approx(1.0)
    assert float(rows[("m1", "binary", "all")]["accuracy"]) == pytest.approx((3 + 0.5) / 4)
    assert float(rows[("m1", "binary", "all")]["spearman_acc_kappa"]) == pytest.approx(1.0)
    assert float(rows[("m2", "binary", "gold")]["accuracy"]) == pytest.approx(1.0)
    assert float(rows[("m1", "grade", "wrong")]["mean"]) == pytest.approx((1 + 1 + 1 + 5) / 4)

    langs = {(r["judge"], r["criterion"], r["subset"], r["language"]): r
             for r in read_tsv(out / "languages.tsv")}
    assert float(langs[("m1", "binary", "all", "te")]["cohen_vs_ref"]) == pytest.approx(0.0)
    assert float(langs[("m1", "binary", "all", "de")]["cohen_vs_ref"]) == pytest.approx(1.0)
    assert float(langs[("m3", "binary", "all", "de")]["cohen_vs_ref"]) == pytest.approx(-1.0)
    assert langs[("m2", "binary", "all", "sw")]["failed"] == "1"
    assert langs[("m1", "binary", "all", "en")]["cohen_vs_ref"] == "n/a"  # the reference itself: undefined

    ens = {(r["criterion"], r["subset"]): r for r in read_tsv(out / "ensemble.tsv")}
    e = ens[("binary", "all")]
    assert e["min_judge"] == "m3" and float(e["delta"]) == pytest.approx(1.0, abs=1e-4)

    panel = {(r["criterion"], r["language"]): r for r in read_tsv(out / "panel.tsv")}
    # Telugu: m1 disagrees with m2, m3 on the 6 wrong answers -> 2/3 agreement there
    te = panel[("binary", "te")]
    assert te["n_items"] == str(2 * N) and te["n_judges"] == "3" and te["no_vote"] == "0"
    assert float(te["mean_agreement"]) == pytest.approx((6 * 1 + 6 * 2 / 3) / 12, abs=1e-4)
    assert float(te["unanimous"]) == pytest.approx(0.5) and float(te["ties"]) == 0.0
    # Swahili: one item has only two votes (m2 failed), both agree
    assert float(panel[("binary", "sw")]["unanimous"]) == pytest.approx(1.0)
    assert float(panel[("grade", "en")]["mean_agreement"]) == pytest.approx(1.0)

    study = json.loads((out / "study.json").read_text())
    assert study["judges"] == ["m1", "m2", "m3"] and study["n_items"] == 4 * N * 2
    assert set(study["timings_s"]) == {"binary", "grade"}
    assert any("no verdict" in k for k in study["failures"]["binary"])
    assert (out / "runs" / "binary" / "judgments.jsonl").is_file()

    # a second invocation is served from the run's store: nothing is sent again
    with ScriptedServer(responder) as srv2:
        args2 = [a if "@" not in a else re.sub(r"@.*", f"@{srv2.base_url}", a) for a in args]
        res = CliRunner().invoke(consistency, args2, catch_exceptions=False)
        assert res.exit_code == 0 and srv2.requests == []


def test_bad_input_exits_2(tmp_path):
    from polyjudge.cli.main import main
    with pytest.raises(SystemExit) as e:
        main(["consistency", "--dataset", "mgsm", "--data-dir", str(tmp_path / "nope"),
              "--judge", "openai:m@http://127.0.0.1:9/v1", "--out", str(tmp_path / "o")])
    assert e.value.code == 2


def test_legacy_out_spelling_still_works_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    write_mgsm(tmp_path)
    with ScriptedServer(responder) as srv:
        args = ["--dataset", "mgsm", "--data-dir", str(tmp_path), "--languages", "en,te", "--limit", "2",
                "--judge", f"openai:m1@{srv.base_url}", "-O", str(tmp_path / "old"), "-q", "--format", "tsv"]
        res = CliRunner().invoke(consistency, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "-O is deprecated" in res.stderr and "use -o/--out" in res.stderr
    assert res.stdout == (tmp_path / "old" / "consistency.tsv").read_text()
    assert (tmp_path / "old" / "runs" / "binary" / "segments.tsv").is_file()


def test_text_and_json_formats(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    write_mgsm(tmp_path)
    with ScriptedServer(responder) as srv:
        args = ["--dataset", "mgsm", "--data-dir", str(tmp_path), "--languages", "en,te", "--limit", "2",
                "--judge", f"openai:m1@{srv.base_url}", "-o", str(tmp_path / "s"), "-q"]
        text = CliRunner().invoke(consistency, args + ["--format", "text"], catch_exceptions=False)
        doc = CliRunner().invoke(consistency, args + ["--format", "json"], catch_exceptions=False)
    assert text.exit_code == 0 and text.stdout.splitlines()[0].split()[:4] == ["judge", "task", "criterion", "subset"]
    study = json.loads(doc.stdout)
    assert study["judges"] == ["m1"] and study == json.loads((tmp_path / "s" / "study.json").read_text())


def test_missing_out_exits_2(tmp_path):
    from polyjudge.cli.main import main
    with pytest.raises(SystemExit) as e:
        main(["consistency", "--dataset", "mgsm", "--data-dir", str(tmp_path), "--judge", "openai:m@http://x/v1"])
    assert e.value.code == 2
