"""--batch-import: a file's answers are validated as live answers are.

Before: ``completion_tokens: 1e300`` became 2^63-1 tokens and trillions of dollars (and every later
re-run and ``polyjudge cost`` failed); answers labelled with another model were filed as the judge's
and kept in the shared cache; a duplicate custom_id silently replaced the first answer.
"""

import dataclasses
import json
import sqlite3

import pytest

from polyjudge.api import InputError, judge
from tests.helpers.batch_providers import OPENAI, da
from tests.helpers.cli import cli
from tests.helpers.openai_server import ScriptedServer


def exported_and_answered(items, tmp_path, srv, edit=lambda n, out: out):
    """Export the run's requests, answer them as the server would, pass each output line through ``edit``."""
    cfg = OPENAI.config(srv, runs=1)
    exported = tmp_path / "requests.jsonl"
    judge(items, dataclasses.replace(cfg, batch_export=str(exported)), out=tmp_path / "run")
    outputs = []
    for n, line in enumerate(exported.read_text().splitlines()):
        line = json.loads(line)
        status, payload, *_ = srv.complete(line["body"])
        outputs.append(edit(n, {"id": f"b-{n}", "custom_id": line["custom_id"],
                                "response": {"status_code": status, "body": payload}, "error": None}))
    answered = tmp_path / "answers.jsonl"
    answered.write_text("".join(json.dumps(o) + "\n" for o in outputs))
    return cfg, answered


def test_a_huge_usage_count_is_bounded_and_the_run_stays_resumable(items, tmp_path, capsys):
    def huge(n, out):
        if n == 0:
            out["response"]["body"]["usage"] = {"prompt_tokens": 10, "completion_tokens": 1e300}
        return out

    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv, huge)
        result = judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
        assert result.status_counts() == {"ok": 6}
        assert result.manifest.tokens["completion"] < 10_000, result.manifest.tokens
        assert result.manifest.cost_usd < 1.0
        # the run can be resumed (nothing left to send) and priced again
        again = judge(items, cfg, out=tmp_path / "run")
        assert again.manifest.counts["sent_this_session"] == 0 and srv.requests == []
    capsys.readouterr()
    assert cli("cost", tmp_path / "run") == 0


def test_answers_of_another_model_are_refused_naming_the_line(items, tmp_path):
    def other(n, out):
        if n == 2:
            out["response"]["body"]["model"] = "some-other-local-model"
        return out

    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv, other)
        with pytest.raises(InputError, match="some-other-local-model") as exc:
            judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
    assert f"{answered}:3" in str(exc.value) and "model" in str(exc.value)
    db = sqlite3.connect(tmp_path / "run" / "store.sqlite")
    try:
        assert db.execute("SELECT COUNT(*) FROM responses WHERE status='done'").fetchone() == (0,)
    finally:
        db.close()


def test_a_dated_snapshot_of_the_judge_is_the_judge():
    from polyjudge.engine.batches import same_model

    assert same_model("gpt-4o-mini-2024-07-18", "gpt-4o-mini")
    assert same_model("claude-3-5-haiku-20241022", "claude-3-5-haiku")
    assert same_model("m", "m")
    assert not same_model("gpt-4o-mini-tts", "gpt-4o-mini")
    assert not same_model("gpt-4o", "gpt-4o-mini")
    assert not same_model("some-other-local-model", "m")


def test_a_snapshot_name_in_the_file_is_imported(items, tmp_path):
    def dated(n, out):
        out["response"]["body"]["model"] = "m-2024-07-18"
        return out

    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv, dated)
        result = judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
    assert result.status_counts() == {"ok": 6}


def test_a_duplicate_custom_id_is_refused_naming_it(items, tmp_path):
    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv)
        lines = answered.read_text().splitlines()
        twice = json.loads(lines[1])
        twice["response"]["body"]["choices"][0]["message"]["content"] = json.dumps({"score": 1})
        answered.write_text("\n".join([*lines, json.dumps(twice)]) + "\n")
        with pytest.raises(InputError, match="answered twice") as exc:
            judge(items, dataclasses.replace(cfg, batch_import=str(answered)), out=tmp_path / "run")
    assert twice["custom_id"][:20] in str(exc.value) and f"{answered}:7" in str(exc.value)


def test_a_malformed_answer_line_is_recorded_as_a_failure(items, tmp_path):
    def broken(n, out):
        if n == 0:
            out["response"]["body"] = {"choices": "not a list"}
        return out

    with ScriptedServer(da) as srv:
        cfg, answered = exported_and_answered(items, tmp_path, srv, broken)
        result = judge(items, dataclasses.replace(cfg, batch_import=str(answered), max_failure_rate=1.0),
                       out=tmp_path / "run")
    assert result.status_counts() == {"ok": 5, "request_failed": 1}
