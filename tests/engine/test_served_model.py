"""What the server says answered is kept with every answer (issue 51 item 2).

OpenAI's answers name a served snapshot and a ``system_fingerprint``, Anthropic's the served model: the
store keeps them per answer, the manifest lists them per judge, the signature names them when they say
more than the model asked for, and a resumed run whose server now answers as another model warns.
"""

from __future__ import annotations

import json
import sqlite3

from polyjudge.backends.reported import SERVED_CHARS, served_name
from tests.helpers.anthropic_server import AnthropicServer, MReply
from tests.helpers.cli import cli
from tests.helpers.openai_server import Reply, ScriptedServer


def write_items(path, n=4):
    path.write_text("".join(json.dumps({"src": f"source {i}", "tgt": f"translation {i}", "system": f"S{i % 2}",
                                        "seg_id": str(i), "src_lang": "en", "tgt_lang": "de"}) + "\n"
                            for i in range(n)))
    return path


def manifest(run):
    return json.loads((run / "manifest.json").read_text())


def served_column(run):
    db = sqlite3.connect(run / "store.sqlite")
    try:
        return sorted(r[0] for r in db.execute("SELECT served FROM responses"))
    finally:
        db.close()


def test_a_served_snapshot_and_fingerprint_are_stored_listed_and_signed(tmp_path):
    reply = Reply(content='{"score": 70}', model="m-2024-08-06", system_fingerprint="fp_44709d6fcb")
    with ScriptedServer(lambda body: reply) as srv:
        assert cli("judge", write_items(tmp_path / "in.jsonl"), "-o", tmp_path / "run",
                   "--judge", f"openai:m@{srv.base_url}", "-q", "--no-cache") == 0
    run = tmp_path / "run"
    assert served_column(run) == ['["m-2024-08-06", "fp_44709d6fcb"]'] * 4
    m = manifest(run)
    assert m["judges"][0]["served"] == [{"model": "m-2024-08-06", "system_fingerprint": "fp_44709d6fcb", "answers": 4}]
    assert "|served:m=m-2024-08-06@fp_44709d6fcb|version:" in m["signature"]


def test_a_server_that_echoes_the_model_leaves_the_signature_as_it_was(tmp_path):
    with ScriptedServer(lambda body: '{"score": 70}') as srv:
        assert cli("judge", write_items(tmp_path / "in.jsonl"), "-o", tmp_path / "run",
                   "--judge", f"openai:m@{srv.base_url}", "-q", "--no-cache") == 0
    m = manifest(tmp_path / "run")
    assert "served:" not in m["signature"] and "served" not in m["judges"][0]  # it said nothing new
    assert served_column(tmp_path / "run") == ['["m", null]'] * 4  # the store keeps it all the same


def test_a_resumed_run_warns_when_the_served_model_changed(tmp_path, capsys):
    state = {"model": "m-2025-01-01", "fail_odd": True}

    def answer(body):
        odd = "translation 1" in body["messages"][-1]["content"] or "translation 3" in body["messages"][-1]["content"]
        if odd and state["fail_odd"]:
            return Reply(status=400)
        return Reply(content='{"score": 70}', model=state["model"])

    inp = write_items(tmp_path / "in.jsonl")
    with ScriptedServer(answer) as srv:
        args = ["judge", inp, "-o", tmp_path / "run", "--judge", f"openai:m@{srv.base_url}", "-q", "--no-cache",
                "--max-failure-rate", "1"]
        assert cli(*args) == 0
        assert "served model changed" not in capsys.readouterr().err
        state.update(model="m-2025-06-01", fail_odd=False)
        assert cli(*args) == 0
    err = capsys.readouterr().err
    assert "the served model changed: m's server answered this session as m-2025-06-01" in err
    assert "earlier answers came from m-2025-01-01" in err
    m = manifest(tmp_path / "run")
    assert "served:m=m-2025-01-01,m-2025-06-01|" in m["signature"]
    assert {s["model"] for s in m["judges"][0]["served"]} == {"m-2025-01-01", "m-2025-06-01"}


def test_an_anthropic_judge_keeps_the_model_its_answers_name(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with AnthropicServer(lambda body: MReply(content='{"score": 70}', model="claude-x-20250514")) as srv:
        assert cli("judge", write_items(tmp_path / "in.jsonl"), "-o", tmp_path / "run",
                   "--judge", f"anthropic:claude-x@{srv.base_url}", "-q", "--no-cache") == 0
    m = manifest(tmp_path / "run")
    assert m["judges"][0]["served"][0]["model"] == "claude-x-20250514"
    assert "|served:claude-x=claude-x-20250514|" in m["signature"]


def test_what_a_server_says_about_itself_is_data_never_trusted():
    assert served_name({"not": "text"}) is None and served_name("  ") is None and served_name(None) is None
    assert served_name(" gpt-4o-2024-08-06 ") == "gpt-4o-2024-08-06"
    assert len(served_name("x" * 10_000) or "") == SERVED_CHARS


def test_what_the_server_said_comes_with_an_answer_from_the_shared_cache(tmp_path):
    reply = Reply(content='{"score": 70}', model="m-2024-08-06", system_fingerprint="fp_1")
    inp = write_items(tmp_path / "in.jsonl")
    with ScriptedServer(lambda body: reply) as srv:
        for name in ("first", "second"):
            assert cli("judge", inp, "-o", tmp_path / name, "--judge", f"openai:m@{srv.base_url}", "-q",
                       "--cache", tmp_path / "cache") == 0
        assert len(srv.requests) == 4  # the second run was answered by the cache
    first, second = manifest(tmp_path / "first"), manifest(tmp_path / "second")
    assert second["signature"] == first["signature"] and "served:m=m-2024-08-06@fp_1" in second["signature"]
    assert second["judges"][0]["served"] == first["judges"][0]["served"]


def test_a_study_re_run_into_a_new_directory_warns_when_the_cache_held_another_served_model(tmp_path, capsys):
    state = {"model": "m-2025-01-01"}
    inp = write_items(tmp_path / "in.jsonl")
    more = write_items(tmp_path / "more.jsonl", n=6)
    with ScriptedServer(lambda body: Reply(content='{"score": 70}', model=state["model"])) as srv:
        assert cli("judge", inp, "-o", tmp_path / "first", "--judge", f"openai:m@{srv.base_url}", "-q",
                   "--cache", tmp_path / "cache") == 0
        state["model"] = "m-2025-06-01"
        capsys.readouterr()
        assert cli("judge", more, "-o", tmp_path / "second", "--judge", f"openai:m@{srv.base_url}", "-q",
                   "--cache", tmp_path / "cache") == 0
    err = capsys.readouterr().err
    assert "answered this session as m-2025-06-01; the run's earlier answers came from m-2025-01-01" in err
