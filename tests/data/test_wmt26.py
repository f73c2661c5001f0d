"""WMT26 MT-evaluation files: the test set in (``.jsonl`` and ``.jsonl.gz``, the layout of the task's
release and its public baseline) and the submission out (``polyjudge export --to wmt26``), judged
against the scripted OpenAI-compatible server."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from click.testing import CliRunner

from polyjudge.cli.main import cli
from polyjudge.data.errors import InputError
from polyjudge.data.readers import read_items
from polyjudge.data.wmt26 import read_wmt26, split_item_id, task1_entry
from tests.helpers.openai_server import Reply, ScriptedServer

DE = "official_###_eng_Latn_###_deu_Latn_###_social_###_1162_###_{k}"
JA = "official_###_eng_Latn_###_jpn_Jpan_###_news_###_doc7_###_0"
AR = "challenge_###_en_###_ar_###_speech_###_vid3_###_2"
LINES = [
    {"item_id": DE.format(k=0), "src": "The cat sleeps.", "ref": {"text": "Die Katze schläft.", "type": "postedit"},
     "hyps": {"Sys A": "Die Katze schläft.", "Sys B": "Der Hund schläft."}},
    {"item_id": DE.format(k=1), "src": "It rains.", "ref": None,
     "hyps": {"Sys A": "Es regnet.", "Sys B": "Es schneit."}},
    {"item_id": JA, "src": "I read a book.", "ref": {"text": "本を読みます。", "type": "human"},
     "hyps": {"Sys A": "私は本を読む。", "Sys B": "私は猫を読む。"}},
    {"item_id": AR, "src": "Good morning, friend.",
     "hyps": {"Sys A": "صباح الخير يا صديقي.", "Sys B": "مساء الخير يا صديقي."}},
]


def write(path, lines=LINES):
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(body) if path.name.endswith(".gz") else body)
    return path


@pytest.mark.parametrize("name", ["mteval-test26.jsonl", "mteval-test26.jsonl.gz"])
def test_the_test_set_is_read_one_item_per_system(tmp_path, name):
    items = read_items(write(tmp_path / name))
    assert len(items) == 8
    first = items[0]
    assert (first.system, first.src, first.tgt, first.ref) == ("Sys A", "The cat sleeps.", "Die Katze schläft.",
                                                               "Die Katze schläft.")
    assert (first.src_lang, first.tgt_lang, first.seg_id) == ("eng_Latn", "deu_Latn", "0")
    assert first.doc_id == "official_###_eng_Latn_###_deu_Latn_###_social_###_1162"
    assert first.extra == {"item_id": DE.format(k=0), "segment_type": "official", "domain": "social",
                           "ref_type": "postedit"}
    assert [it.system for it in items[:2]] == ["Sys A", "Sys B"]
    assert items[2].ref is None and items[-1].tgt_lang == "ar" and items[-1].extra["segment_type"] == "challenge"


def test_bad_lines_are_input_errors_with_their_line(tmp_path):
    bad = [LINES[0], {**LINES[1], "item_id": "official_###_eng_Latn_###_1"}]
    with pytest.raises(InputError) as exc:
        read_wmt26(write(tmp_path / "t.jsonl", bad))
    assert exc.value.line == 2 and "item_id" in str(exc.value)
    with pytest.raises(InputError) as exc:
        read_wmt26(write(tmp_path / "t.jsonl", [LINES[0], LINES[0]]))
    assert "twice" in str(exc.value)
    with pytest.raises(InputError):
        read_wmt26(write(tmp_path / "t.jsonl", [{**LINES[0], "hyps": ["x"]}]))
    with pytest.raises(InputError):
        split_item_id("a_###__###_c_###_d_###_e_###_f")


def test_task1_folds_omissions_into_their_worst_severity():
    got = task1_entry([{"start": 0, "end": 3, "severity": "minor", "category": ""},
                       {"start": None, "end": None, "severity": "minor"},
                       {"start": None, "end": None, "severity": "major"}])
    assert got == {"errors": [{"start": 0, "end": 3, "severity": "minor", "category": ""}],
                   "omission": "major", "instruction_fault": None}


# The judged segment's wrong word, quoted from the translation the prompt shows.
WRONG = {"Der Hund schläft.": "Hund", "Es schneit.": "schneit", "私は猫を読む。": "猫", "مساء الخير يا صديقي.": "مساء"}


def esa(body: dict) -> Reply:
    user = body["messages"][-1]["content"]
    tgt = re.search(r"Translation \([^)]*\):\n(.*)", user).group(1).strip()
    if tgt in WRONG:
        return Reply(content=json.dumps({"errors": [{"span": WRONG[tgt], "severity": "major"},
                                                    {"span": "", "severity": "minor"}], "score": 40}))
    return Reply(content='{"errors": [], "score": 95}')


def judge_and_export(tmp_path, protocol, responder):
    inp = write(tmp_path / "mteval-test26.jsonl.gz")
    run, sub = tmp_path / "run", tmp_path / "sub"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "k")
    try:
        with ScriptedServer(responder) as srv:
            res = CliRunner().invoke(cli, ["judge", str(inp), "--out", str(run), "-p", protocol, "--backend",
                                           "openai", "--model", "m", "--base-url", srv.base_url, "-q", "-c", "2"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output + str(res.exception)
    res = CliRunner().invoke(cli, ["export", str(run), "--to", "wmt26", "-o", str(sub)])
    assert res.exit_code == 0, res.output + str(res.exception)
    return [json.loads(line) for line in (sub / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_span_run_is_submitted_as_tasks_1_and_2_with_exact_offsets(tmp_path):
    rows = judge_and_export(tmp_path, "gemba-esa", esa)
    assert [r["item_id"] for r in rows] == [line["item_id"] for line in LINES]
    by_id = {r["item_id"]: r for r in rows}
    for line in LINES:
        row = by_id[line["item_id"]]
        assert set(row) == {"item_id", "task1_pred", "task2_pred"}
        assert list(row["task2_pred"]) == list(line["hyps"])
        for system, hyp in line["hyps"].items():
            pred = row["task1_pred"][system]
            if hyp in WRONG:
                start = hyp.index(WRONG[hyp])
                assert pred["errors"] == [{"start": start, "end": start + len(WRONG[hyp]), "severity": "major",
                                           "category": ""}]
                assert hyp[pred["errors"][0]["start"]:pred["errors"][0]["end"]] == WRONG[hyp]
                assert pred["omission"] == "minor" and row["task2_pred"][system] == 40.0
            else:
                assert pred == {"errors": [], "omission": None, "instruction_fault": None}
                assert row["task2_pred"][system] == 95.0


def test_an_error_free_run_is_submitted_as_task_3(tmp_path):
    def labels(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        return Reply(content=json.dumps({"error_free": int(not any(w in user for w in WRONG))}))

    rows = judge_and_export(tmp_path, "error-free", labels)
    assert all(set(r) == {"item_id", "task3_pred"} for r in rows)
    assert rows[0]["task3_pred"] == {"Sys A": True, "Sys B": False}
    assert rows[3]["task3_pred"] == {"Sys A": True, "Sys B": False}
