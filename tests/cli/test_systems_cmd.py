"""``polyjudge compare-systems`` on a TED run judged through the scripted OpenAI server, and
``human-mqm``'s output conventions.

The run: four TED en-de systems x 40 segments judged with ``da``; the scripted judge gives each
system an offset plus the segment's noise and a little of its own (identical translations share one
answer), so two pairs are close and the rest far apart.
Numbers are checked against scipy on the run's own segments.tsv and against the human MQM
points computed from the annotation file.
"""

from __future__ import annotations

import csv
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss

from polyjudge.cli.main import main
from tests.helpers.openai_server import ScriptedServer

TED = Path(__file__).resolve().parents[3] / "shared" / "data" / "wmt-mqm" / "ted" / "ende" / "mqm_ted_ende.tsv"
OFFSETS = {"Facebook-AI": 20, "Online-W": 20, "UEdin": 5, "Nemo": 5}
HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\n"


def cli(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture(scope="module")
def ted_run(tmp_path_factory):
    if not TED.is_file():
        pytest.skip(f"TED MQM data not found at {TED} (../shared/data is absent)")
    from polyjudge.api import JudgeConfig, judge
    from polyjudge.data.wmt_mqm import read_wmt_mqm, wmt_mqm_items

    items = [it for it in wmt_mqm_items(read_wmt_mqm(TED)) if it.system in OFFSETS and int(it.seg_id) <= 40]
    root = tmp_path_factory.mktemp("ted")
    src = root / "in.jsonl"
    src.write_text("".join(json.dumps(it.to_dict()) + "\n" for it in items), encoding="utf-8")
    by_text = {it.tgt: it for it in items}

    def responder(body):
        text = body["messages"][-1]["content"]
        it = next(i for t, i in by_text.items() if t in text)
        noise = zlib.crc32(it.seg_id.encode()) % 21 - 10 + zlib.crc32(f"{it.system}/{it.seg_id}".encode()) % 3 - 1
        return json.dumps({"score": 50 + OFFSETS[it.system] + noise})

    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "k")
    with ScriptedServer(responder) as srv:
        judge(src, JudgeConfig(protocol="da", judges=(f"openai:m@{srv.base_url}",), progress=False, src_lang="en",
                               tgt_lang="de"), out=root / "run")
    mp.undo()
    return root / "run"


def _segment_scores(run: Path) -> dict[str, dict[str, float]]:
    with open(run / "segments.tsv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["score"]:
            out.setdefault(r["system"], {})[r["seg_id"]] = float(r["score"])
    return out


def _paired(scores: dict[str, dict[str, float]], a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(set(scores[a]) & set(scores[b]))
    return np.array([scores[a][k] for k in keys]), np.array([scores[b][k] for k in keys])


def test_json_pairs_equal_scipy_on_the_runs_segments(ted_run, capsys):
    code, out, err = cli(capsys, "compare-systems", ted_run, "--format", "json", "-k", "5000", "--seed", "1")
    assert code == 0, err
    doc = json.loads(out)
    scores = _segment_scores(ted_run)
    assert len(doc["pairs"]) == 6 and {s["system"] for s in doc["systems"]} == set(OFFSETS)
    for pair in doc["pairs"]:
        a, b = _paired(scores, pair["system_a"], pair["system_b"])
        assert pair["n"] == 40 and pair["delta"] == pytest.approx(float(np.mean(a - b)))
        assert pair["p_ttest"] == pytest.approx(ss.ttest_rel(a, b).pvalue, rel=1e-9)
        assert pair["p_value"] == pair["p_randomization"] == pair["p_adjusted"]  # the default test, uncorrected
        assert pair["ci_low"] <= pair["delta"] <= pair["ci_high"]
    # UEdin and Nemo (same offset) are not separated; the far pairs are. Facebook-AI shares many
    # translations, and so answers, with the others, which pulls it below Online-W: three clusters.
    assert doc["clusters"] == [["Online-W"], ["Facebook-AI"], ["Nemo", "UEdin"]]
    sig = {(p["system_a"], p["system_b"]): p["significant"] for p in doc["pairs"]}
    assert sig.pop(("Nemo", "UEdin")) is False and all(sig.values())
    assert doc["settings"]["permutations"] == 5000 and doc["settings"]["seed"] == 1
    code, again, _ = cli(capsys, "compare-systems", ted_run, "--format", "json", "-k", "5000", "--seed", "1")
    assert again == out  # seeded


def test_human_scores_side_by_side(ted_run, capsys):
    from polyjudge.aggregate.mqm import human_mqm_scores

    code, out, err = cli(capsys, "compare-systems", ted_run, "--human", TED, "--format", "json", "--bootstrap", "200")
    assert code == 0, err
    doc = json.loads(out)
    points = {(s.system, s.seg_id): s.points for s in human_mqm_scores(TED).segments}
    human_means = {r["system"]: r["mean"] for r in doc["human"]["systems"]}
    for system in OFFSETS:  # the human side reads the whole file: every TED segment the system has
        own = [-v for (s, _), v in points.items() if s == system]
        assert human_means[system] == pytest.approx(float(np.mean(own)))
    for pair in doc["pairs"]:
        h = pair["human"]
        assert (h["system_a"], h["system_b"]) == (pair["system_a"], pair["system_b"])  # the judge's orientation
        keys = sorted({g for s, g in points if s == pair["system_a"]} & {g for s, g in points if s == pair["system_b"]})
        d = [points[(pair["system_b"], g)] - points[(pair["system_a"], g)] for g in keys]
        assert h["n"] == len(keys) and h["delta"] == pytest.approx(float(np.mean(d)))
        assert pair["agreement"] in ("agree", "agree (neither)", "judge only", "human only", "opposite")
    code, text, _ = cli(capsys, "compare-systems", ted_run, "--human", TED, "--bootstrap", "200")
    assert "human delta" in text and "Human scores:" in text and "higher is better" in text


def test_text_tsv_and_out_file(ted_run, tmp_path, capsys):
    code, text, _ = cli(capsys, "compare-systems", ted_run, "--correction", "holm")
    assert code == 0 and "holm-adjusted over 6 pairs" in text and "judge segment scores, higher is better" in text
    code, tsv, _ = cli(capsys, "compare-systems", ted_run, "--format", "tsv", "--test", "t-test")
    rows = list(csv.DictReader(tsv.splitlines(), delimiter="\t"))
    assert len(rows) == 6 and all(r["p_value"] == r["p_ttest"] for r in rows)
    out = tmp_path / "pairs.json"
    code, printed, err = cli(capsys, "compare-systems", ted_run, "--format", "json", "-o", out)
    assert code == 0 and printed == "" and f"wrote {out}" in err
    code, direct, _ = cli(capsys, "compare-systems", ted_run, "--format", "json")
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(direct)
    code, _, err = cli(capsys, "compare-systems", ted_run, "-o", ted_run / "segments.tsv")
    assert code == 2 and "segments.tsv" in err  # never written onto the run it reads


def test_bad_input_exits_2_with_one_line(ted_run, tmp_path, capsys):
    code, out, err = cli(capsys, "compare-systems", tmp_path / "nothing")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    other = tmp_path / "other.tsv"
    other.write_text("system\tseg_id\tscore\nX\t1\t0.5\nY\t1\t0.2\n", encoding="utf-8")
    code, out, err = cli(capsys, "compare-systems", ted_run, "--human", other)
    assert code == 2 and str(other) in err and "0 of the run's systems" in err and len(err.strip().splitlines()) == 1
    broken = tmp_path / "broken.tsv"
    broken.write_text("system\tseg_id\tscore\nUEdin\t1\tabc\n", encoding="utf-8")
    code, out, err = cli(capsys, "compare-systems", ted_run, "--human", broken)
    assert code == 2 and f"{broken}:2" in err and "Traceback" not in err
    code, _, err = cli(capsys, "compare-systems", ted_run, "--alpha", "1.5")
    assert code == 2 and "--alpha" in err


def test_a_run_with_one_system_is_refused(tmp_path, capsys):
    run = tmp_path / "one"
    run.mkdir()
    (run / "segments.tsv").write_text("system\tdoc_id\tseg_id\tsrc_lang\ttgt_lang\tscore\truns_ok\truns_failed\n"
                                      "A\td\t1\t\t\t3\t1\t0\nA\td\t2\t\t\t4\t1\t0\n", encoding="utf-8")
    (run / "judgments.jsonl").write_text("", encoding="utf-8")
    code, _, err = cli(capsys, "compare-systems", run)
    assert code == 2 and "at least two systems" in err


# --------------------------------------------------------------------------- human-mqm conventions

def _mqm_file(tmp_path: Path) -> Path:
    f = tmp_path / "a.tsv"
    f.write_text(HEADER + "".join([
        "A\td\t1\t1\tr1\ts\t<v>t</v>\tAccuracy/Mistranslation\tMajor\n",
        "A\td\t2\t2\tr1\ts2\tt2\tNo-error\tNo-error\n",
        "B\td\t1\t1\tr1\ts\tt\tFluency/Punctuation\tMinor\n",
        "B\td\t2\t2\tr1\ts2\tt2\tStyle/Awkward\tMinor\n"]), encoding="utf-8")
    return f


def test_human_mqm_says_what_the_numbers_are(tmp_path, capsys):
    f = _mqm_file(tmp_path)
    code, text, _ = cli(capsys, "human-mqm", f)
    assert code == 0 and text.splitlines()[0].startswith("# MQM error points per system, lower is better")
    assert text.splitlines()[1:] == ["B\t0.550", "A\t2.500"]
    code, out, _ = cli(capsys, "human-mqm", f, "--format", "json")
    doc = json.loads(out)
    assert doc["unit"] == "MQM error points" and doc["lower_is_better"] is True
    assert [(r["system"], r["points"], r["score"], r["n_segments"]) for r in doc["systems"]] == [
        ("B", pytest.approx(0.55), pytest.approx(-0.55), 2), ("A", 2.5, -2.5, 2)]  # 0.1 + 1 over 2; 5 over 2
    code, out, _ = cli(capsys, "human-mqm", f, "--format", "tsv", "--classic")
    assert out.splitlines() == ["system\tpoints\tscore\tn_segments", "B\t1\t-1\t2", "A\t2.5\t-2.5\t2"]


def test_human_mqm_out_and_the_deprecated_spelling(tmp_path, capsys):
    f = _mqm_file(tmp_path)
    code, _, err = cli(capsys, "human-mqm", f, "-o", tmp_path / "new")
    assert code == 0 and "deprecated" not in err
    code, _, err = cli(capsys, "human-mqm", f, "-O", tmp_path / "old")
    assert code == 0 and "-O is deprecated" in err and "use -o/--out" in err
    for name in ("segments.tsv", "systems.tsv"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes()
    assert (tmp_path / "new" / "systems.tsv").read_text().splitlines()[1] == "B\t0.55\t-0.55\t2"
    code, _, err = cli(capsys, "human-mqm", f, "-o", tmp_path / "new", "--format", "xml")
    assert code == 2


def test_the_commands_choices_are_the_apis():
    from polyjudge.api import systems as api
    from polyjudge.cli import systems_cmd

    assert systems_cmd.TESTS == api.TESTS and systems_cmd.CORRECTIONS == api.CORRECTIONS
